"""Templates run wherever they are listed: the servers a template remembers, started when a run needs them.

Every gateway lists every saved template as a `reel__*` tool, but its config may lack the servers a template
was recorded on (a wrapped single server, another machine's config). Before a run, `OnDemand.prepare` starts
the servers the template and its child templates remember (`Template.servers`, secrets as `${env:VAR}`
references, expanded from this process's environment, as `toolreel run` does) that the gateway's config lacks.
They run in a hub of their own, which no client lists: the gateway's tools stay its config's. A server that
cannot start fails the run with an error that names the template and the server.

`OnDemand` is the engine's `ToolCaller`: a tool of the gateway's config goes to its hub, any other to the
servers started on demand, which stay up for later runs until the gateway stops.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import mcp_types as types

from toolreel.core.caller import ToolCall
from toolreel.core.errors import UpstreamError
from toolreel.upstreams.config import GatewayConfig
from toolreel.upstreams.hub import ClientRouter, Hub
from toolreel.upstreams.needed import TemplateLoader, remembered_servers, template_family
from toolreel.upstreams.upstream import START_TIMEOUT, Upstream, UpstreamState

if TYPE_CHECKING:
    from toolreel.core.store import Store
    from toolreel.core.template import Template

__all__ = ["OnDemand"]


class _Unlisted(ClientRouter):
    """Questions and notices of the servers started on demand go to the gateway's clients; their tools are
    not listed, so a change of them is nothing to announce."""

    def __init__(self, front: ClientRouter) -> None:
        self.front = front

    async def to_client(self, upstream: Upstream, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await self.front.to_client(upstream, method, params)

    async def notify_clients(self, upstream: Upstream, method: str, params: dict[str, Any] | None) -> None:
        await self.front.notify_clients(upstream, method, params)


class _Remembered(Hub):
    """A hub of servers started on demand, whose changes are not announced to clients."""

    def __init__(self, config: GatewayConfig, front: ClientRouter) -> None:
        super().__init__(config, prefix=True)
        self.set_client_capabilities(types.ClientCapabilities())
        self.router = _Unlisted(front)

    async def ready(self, owners: Mapping[str, str]) -> None:
        """Return once every server has started; else an UpstreamError naming the template and the server."""
        await self.wait_settled(START_TIMEOUT)
        for name, upstream in self.upstreams.items():
            if upstream.state is not UpstreamState.READY:
                why = upstream.last_error or f"it did not start within {START_TIMEOUT:g} s"
                raise UpstreamError(
                    f"template {owners[name]!r} needs server {name!r}, which is not in this gateway's config, and "
                    f"starting it as the template remembers it failed: {why}",
                    server=name,
                )


class OnDemand:
    """The gateway's hub, and the remembered servers its config lacks, as one `ToolCaller`."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self._started: list[_Remembered] = []  # one hub per batch of servers started together
        self._tg: anyio.abc.TaskGroup | None = None
        self._lock = anyio.Lock()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[OnDemand]:
        """Keep the servers started on demand for as long as the block runs; they stop with it."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield self
            finally:
                self._tg = None
                tg.cancel_scope.cancel()

    # ToolCaller ---------------------------------------------------------------------------
    def _serving(self, name: str) -> Hub:
        if self.hub.canonical_route(name) is None:
            for hub in self._started:
                if hub.canonical_route(name) is not None:
                    return hub
        return self.hub

    def server_of(self, name: str) -> str | None:
        return self._serving(name).server_of(name)

    async def call_tool(self, call: ToolCall) -> dict[str, Any]:
        return await self._serving(call.name).call_tool(call)

    def tool_definition(self, name: str) -> Mapping[str, Any] | None:
        """The upstream's own definition of `name` (core.tool_digest.DefinesTools)."""
        return self._serving(name).tool_definition(name)

    def read_only_tools(self) -> set[str]:
        return self.hub.read_only_tools().union(*(hub.read_only_tools() for hub in self._started))

    # starting -------------------------------------------------------------------------------
    async def prepare(self, store: Store, template: Template, load: TemplateLoader) -> None:
        """Start the servers `template` (and its children) remember that neither the config nor an earlier
        run started; return once they serve. A ConfigError (a missing `${env:VAR}`) or UpstreamError names the
        template and the server."""
        wanted = await anyio.to_thread.run_sync(lambda: remembered_servers(template_family(template, load)))
        async with self._lock:
            known = {*self.hub.upstreams, *(name for hub in self._started for name in hub.upstreams)}
            missing = {name: entry for name, entry in wanted.items() if name not in known}
            if not missing or self._tg is None:
                return
            config = GatewayConfig(servers=tuple(server for _, server in missing.values()))
            store.redactor.add(config.secret_values())
            hub = _Remembered(config, self.hub.router)
            await self._tg.start(hub.run)
            try:
                await hub.ready({name: owner for name, (owner, _) in missing.items()})
            except UpstreamError:
                hub.apply(GatewayConfig(servers=()))  # stopped: the next run tries again
                raise
            self._started.append(hub)
