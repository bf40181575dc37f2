"""An in-process gateway: the `Front` and its hook run in the test's event loop, and each `mcp.Client`
talks to it through the SDK's in-memory streams, as the SDK tests its own servers.

The upstreams stay real MCP servers (stdio processes from `fixtures/`, or a fixture's HTTP URL): what
runs in-process is everything of toolreel between the client and them, so a failure has the gateway's
traceback and no process start-up is paid per test beyond the upstreams'. The store is whatever `db`
names (an in-memory `sqlite://` is written from this process).

`gateway_in_process` is a gateway with one client, as over stdio. `gateway_with_clients` is one that
many clients share, as over HTTP: each `connect()` is a connection of its own, which the gateway tells
apart by what an HTTP transport attaches to every message (an `Mcp-Session-Id`, or for a stateless-era
client the id the HTTP guard gives it), so each is its own client link and its own recording.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.runner import serve_dual_era_loop
from mcp.shared.memory import MessageStream, create_client_server_memory_streams
from mcp.shared.message import ServerMessageMetadata, SessionMessage

from tests.gw import Connected, OpenedStreams, Probe, client_for
from toolreel.gateway.assembly import hook_factory
from toolreel.gateway.front import Front
from toolreel.gateway.links import CLIENT_HEADER
from toolreel.upstreams.config import GatewayConfig, parse_config
from toolreel.upstreams.hub import open_hub

__all__ = ["SDK_LOG_DEPRECATION", "InProcessGateway", "gateway_in_process", "gateway_with_clients"]

# The gateway forwards upstream logs to a handshake-era client, for which logging is not deprecated, but
# the SDK's `send_log_message` warns on every call: a gateway process never shows it (a DeprecationWarning),
# while in the test's process `filterwarnings = error` would turn it into the gateway's failure.
SDK_LOG_DEPRECATION = "ignore:The logging capability is deprecated:mcp.shared.exceptions.MCPDeprecationWarning"


@dataclass(frozen=True)
class _Peer:
    """What the streamable HTTP transport hands the server with each message (`ctx.request`), reduced to
    the headers the gateway keys its clients on."""

    headers: Mapping[str, str]

    @property
    def session(self) -> str | None:
        return self.headers.get("mcp-session-id")


@dataclass(eq=False)
class InProcessGateway:
    """A running in-process gateway; `connect()` opens one more client on a connection of its own."""

    front: Front
    _lifespan_state: Any
    _numbers: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @contextlib.asynccontextmanager
    async def connect(
        self, *, mode: str = "legacy", probe: Probe | None = None, **client_options: Any
    ) -> AsyncIterator[Connected]:
        """A client in `mode` (`client_for`'s options: `answers=False`, `client_name`), connected until the
        block ends."""
        number = next(self._numbers)
        lone = self.front.hub.lone_client
        if lone and number > 1:
            raise RuntimeError("this gateway serves one client, as over stdio: use gateway_with_clients for more")
        peer = None if lone else _peer(number, mode)
        probe = probe or Probe()
        try:
            async with (
                create_client_server_memory_streams() as (client_streams, server_streams),
                anyio.create_task_group() as tg,
            ):
                tg.start_soon(self._serve, server_streams, peer)
                async with client_for(OpenedStreams(client_streams), mode, probe, **client_options) as client:
                    yield Connected(client, probe)
                tg.cancel_scope.cancel()
        finally:
            if peer is not None and peer.session is not None:
                self.front.forget(f"http:{peer.session}")  # as `serve` does when a client deletes its HTTP session

    async def _serve(self, streams: MessageStream, peer: _Peer | None) -> None:
        read, write = streams
        if peer is None:
            await serve_dual_era_loop(self.front.server, read, write, lifespan_state=self._lifespan_state)
            return
        tagged_send, tagged_read = anyio.create_memory_object_stream[SessionMessage | Exception](1)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_tag, read, tagged_send, peer)
            await serve_dual_era_loop(self.front.server, tagged_read, write, lifespan_state=self._lifespan_state)


def _peer(number: int, mode: str) -> _Peer:
    """Connection `number`'s headers: a handshake-era session's id, or a stateless-era client's id."""
    name = f"in-process-{number}"
    return _Peer({"mcp-session-id": name} if mode == "legacy" else {CLIENT_HEADER.decode(): name})


async def _tag(
    source: AsyncIterable[SessionMessage | Exception],
    sink: MemoryObjectSendStream[SessionMessage | Exception],
    peer: _Peer,
) -> None:
    async with sink:
        async for item in source:
            if isinstance(item, SessionMessage):
                item = SessionMessage(item.message, ServerMessageMetadata(request_context=peer))
            await sink.send(item)


@contextlib.asynccontextmanager
async def gateway_with_clients(
    servers: Mapping[str, Any] | GatewayConfig,
    *,
    db: str = "sqlite://",
    prefix: bool = True,
    record: bool = True,
    annotate: bool = False,
    lone_client: bool = False,
) -> AsyncIterator[InProcessGateway]:
    """The gateway over `servers` (an `mcpServers` mapping or a parsed config), no client connected yet;
    the keywords are `serve`'s options. `lone_client`: served as over stdio (one client), else as over HTTP."""
    config = servers if isinstance(servers, GatewayConfig) else parse_config({"mcpServers": dict(servers)})
    build = hook_factory(config, db=db, annotate=annotate, record=record, max_concurrency=16)
    async with anyio.create_task_group() as tg, open_hub(config, prefix=prefix, lone_client=lone_client) as hub:
        front = Front(hub, hook=build(hub))
        await tg.start(front.hook.run)
        await tg.start(front.run)
        async with front.server.lifespan(front.server) as state:
            yield InProcessGateway(front, state)
        tg.cancel_scope.cancel()


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
    """The gateway over `servers`, served as over stdio, its one client connected; the keywords are
    `serve`'s options, and the rest `client_for`'s (`answers=False`, `client_name`)."""
    async with (
        gateway_with_clients(
            servers, db=db, prefix=prefix, record=record, annotate=annotate, lone_client=True
        ) as gateway,
        gateway.connect(mode=mode, probe=probe, **client_options) as connected,
    ):
        yield connected
