"""An in-process gateway: the `Front` and its hook run in the test's event loop, and an `mcp.Client`
talks to it through the SDK's in-memory streams, as the SDK tests its own servers.

The upstreams stay real MCP servers (stdio processes from `fixtures/`): what runs in-process is
everything of toolreel between the client and them, so a failure has the gateway's traceback and
no process start-up is paid per test beyond the upstreams'. The store is whatever `db` names (an
in-memory `sqlite://` is written from this process).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
from mcp.server.runner import serve_dual_era_loop
from mcp.shared.memory import create_client_server_memory_streams

from tests.gw import Connected, OpenedStreams, Probe, client_for
from toolreel.gateway.front import Front
from toolreel.gateway.management import hook_factory
from toolreel.upstreams.config import GatewayConfig, parse_config
from toolreel.upstreams.hub import open_hub

__all__ = ["SDK_LOG_DEPRECATION", "gateway_in_process"]

# The gateway forwards upstream logs to a handshake-era client, for which logging is not deprecated, but
# the SDK's `send_log_message` warns on every call: a gateway process never shows it (a DeprecationWarning),
# while in the test's process `filterwarnings = error` would turn it into the gateway's failure.
SDK_LOG_DEPRECATION = "ignore:The logging capability is deprecated:mcp.shared.exceptions.MCPDeprecationWarning"


@contextlib.asynccontextmanager
async def gateway_in_process(
    servers: Mapping[str, Any] | GatewayConfig,
    *,
    db: str = "sqlite://",
    mode: str = "legacy",
    prefix: bool = True,
    record: bool = True,
    annotate: bool = False,
    probe: Probe | None = None,
    **client_options: Any,
) -> AsyncIterator[Connected]:
    """The gateway over `servers` (an `mcpServers` mapping or a parsed config), one client connected;
    the keywords are `serve`'s options, and the rest `client_for`'s (`answers=False`, `client_name`)."""
    config = servers if isinstance(servers, GatewayConfig) else parse_config({"mcpServers": dict(servers)})
    build = hook_factory(config, db=db, annotate=annotate, record=record, max_concurrency=16)
    probe = probe or Probe()
    async with anyio.create_task_group() as tg, open_hub(config, prefix=prefix, lone_client=True) as hub:
        front = Front(hub, hook=build(hub))
        await tg.start(front.hook.run)
        await tg.start(front.run)
        async with create_client_server_memory_streams() as (client_streams, (read, write)):

            async def serve() -> None:
                async with front.server.lifespan(front.server) as state:
                    await serve_dual_era_loop(front.server, read, write, lifespan_state=state, init_options=None)

            tg.start_soon(serve)
            async with client_for(OpenedStreams(client_streams), mode, probe, **client_options) as client:
                yield Connected(client, probe)
        tg.cancel_scope.cancel()
