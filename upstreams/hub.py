"""The aggregation of upstreams: names, routing, and the bridge back to clients.

`Hub` owns every `Upstream` (started in parallel, each in its own task so one failure
stays with its server), maps listed names to (server, name), routes resources by URI, and
implements `core.caller.ToolCaller` so the replayer calls tools through the same sessions.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from toolreel.core import tracing
from toolreel.core.caller import ToolCall
from toolreel.core.errors import UpstreamError
from toolreel.core.names import prefixed_name, split_name
from toolreel.upstreams.config import GatewayConfig, ServerConfig
from toolreel.upstreams.names import NameMapping, listed_name
from toolreel.upstreams.pins import Pins
from toolreel.upstreams.upstream import Listing, ServerErrorAnswer, Upstream, UpstreamState, capabilities_key
from toolreel.upstreams.uris import inward as inward_uri
from toolreel.upstreams.uris import outward as outward_uri
from toolreel.upstreams.uris import outward_tool, template_matches

__all__ = [
    "ClientRouter",
    "Hub",
    "Reload",
    "Route",
    "error_result",
    "open_hub",
    "open_upstreams",
]

logger = logging.getLogger("toolreel.hub")

READY_BUDGET = 5.0  # seconds the first answers wait for slow upstreams

ALL_CLIENT_CAPABILITIES = types.ClientCapabilities(
    sampling=types.SamplingCapability(),
    elicitation=types.ElicitationCapability(
        form=types.FormElicitationCapability(), url=types.UrlElicitationCapability()
    ),
    roots=types.RootsCapability(list_changed=True),
)


@dataclass(frozen=True, slots=True)
class Route:
    upstream: Upstream
    name: str  # the upstream's own tool/prompt name
    shown: str = ""  # the tool's name as the agent sees it, unprefixed (`toolsOverride`); "" for prompts
    confirm: bool = False  # the user's yes is asked before each call (`confirm`)


@dataclass(frozen=True, slots=True)
class Reload:
    """What a new config changed: servers started, stopped, restarted, and re-filtered in place."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    restarted: tuple[str, ...] = ()
    refiltered: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.restarted or self.refiltered)


class ClientRouter:
    """What the hub needs from the client side; the front end implements it."""

    async def to_client(self, upstream: Upstream, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise MCPError(code=types.METHOD_NOT_FOUND, message=f"no client can answer {method}")

    async def notify_clients(self, upstream: Upstream, method: str, params: dict[str, Any] | None) -> None:
        return None

    def lists_changed(self, kinds: frozenset[str]) -> None:
        return None


class Hub:
    def __init__(self, config: GatewayConfig, *, prefix: bool = True, lone_client: bool = False) -> None:
        self.config = config
        self.prefix = prefix
        self.lone_client = lone_client  # served over stdio: the first client is the only one
        self._client_handshake = False
        self.router = ClientRouter()
        self.upstreams: dict[str, Upstream] = {s.name: Upstream(s, self) for s in config.servers}
        self.started = anyio.Event()  # every upstream had its first start attempt
        self._capabilities: types.ClientCapabilities | None = None
        self._capabilities_known = anyio.Event()
        self._tools: dict[str, Route] = {}
        self._canonical: dict[str, Route] = {}  # always server__tool: what recordings and templates name
        self._prompts: dict[str, Route] = {}
        self._listed_tools: list[dict[str, Any]] = []
        self._listed_prompts: list[dict[str, Any]] = []
        self._tg: anyio.abc.TaskGroup | None = None
        self._scopes: dict[str, anyio.CancelScope] = {}  # per upstream: stopping one leaves the others be
        self.config_error: str | None = None  # a reloaded config that was refused (the running one is kept)
        self.reloads = 0
        # handshake-era connections made for clients, by server and what they were told (handshake_twin)
        self._twins: dict[tuple[str, str], Upstream] = {}
        self._twin_lock = anyio.Lock()
        self._state_changed = anyio.Event()  # set (and renewed) whenever an upstream changes state
        self.pins = Pins()  # definitions first seen of pinned servers' tools
        self._digests: dict[tuple[str, str], str | None] = {}  # (server, tool) -> tool_digest (tool_digest())
        self._rebuild()

    # capabilities -----------------------------------------------------------------
    def set_client_capabilities(self, capabilities: types.ClientCapabilities, *, handshake: bool = False) -> None:
        """The first client's capabilities are what upstreams are told (once), and its era
        (`handshake`: it sent `initialize`) what a lone client's upstreams are spoken to in."""
        if not self._capabilities_known.is_set():
            self._capabilities = capabilities
            self._client_handshake = handshake
            self._capabilities_known.set()

    def prefers_handshake(self) -> bool:
        """An upstream of `protocol: auto` that speaks both eras is spoken to in the handshake era
        when the gateway's one client speaks it: the client then gets what it would get talking to
        the server directly, and nothing needs translating. With many clients (HTTP), the
        stateless era is what links a server's question to the call that caused it."""
        return self.lone_client and self._client_handshake

    async def client_capabilities(self) -> types.ClientCapabilities:
        await self._capabilities_known.wait()
        assert self._capabilities is not None
        return self._capabilities

    # lifecycle ----------------------------------------------------------------------
    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            for upstream in self.upstreams.values():
                tg.start_soon(self._start_one, tg, upstream)
            if not self.upstreams:
                self.started.set()
            tg.start_soon(self._ready_budget)
            task_status.started()

    async def _ready_budget(self) -> None:
        """A server that takes too long to start does not hold the others hostage: after
        READY_BUDGET the gateway answers with what is up, and announces the rest when it comes."""
        with anyio.move_on_after(READY_BUDGET):
            await self.started.wait()
        self.started.set()

    async def _start_one(self, tg: anyio.abc.TaskGroup, upstream: Upstream) -> None:
        with anyio.CancelScope() as scope:
            self._scopes[upstream.name] = scope
            try:
                await tg.start(upstream.serve)
                # One that waits for a sign-in retries with backoff (STARTING again) but cannot come up alone.
                if all(u.state is not UpstreamState.STARTING or u.sign_in for u in self.upstreams.values()):
                    self.started.set()
            finally:
                if self._scopes.get(upstream.name) is scope:
                    del self._scopes[upstream.name]

    # reload -------------------------------------------------------------------------
    def apply(self, config: GatewayConfig) -> Reload:
        """Bring the running servers to `config`: only what changed is started, stopped or restarted;
        a change of tool filters, overrides or confirmation only re-reads that server's tools.
        Calls in flight to untouched servers go on; clients hear `list_changed`."""
        old, new = {s.name: s for s in self.config.servers}, {s.name: s for s in config.servers}
        removed = tuple(name for name in old if name not in new)
        added = tuple(name for name in new if name not in old)
        changed = [name for name in new if name in old and new[name] != old[name]]
        refiltered = tuple(name for name in changed if _same_connection(old[name], new[name]))
        restarted = tuple(name for name in changed if name not in refiltered)
        self.config = config
        for name in (*removed, *restarted):
            self._stop(name)
        for name in refiltered:
            self.upstreams[name].config = new[name]
            if self._tg is not None:
                self._tg.start_soon(self._refilter, self.upstreams[name])
        fresh = {name: Upstream(new[name], self) for name in (*added, *restarted)}
        self.upstreams = {name: fresh.get(name) or self.upstreams[name] for name in new}  # the config's order
        for upstream in fresh.values():
            if self._tg is not None:
                self._tg.start_soon(self._start_one, self._tg, upstream)
        report = Reload(added, removed, restarted, refiltered)
        if report.changed:
            self.reloads += 1
            self._rebuild()
            self.router.lists_changed(frozenset({"tools", "prompts", "resources"}))
        return report

    def _stop(self, name: str) -> None:
        scope = self._scopes.pop(name, None)
        if scope is not None:
            scope.cancel()
        upstream = self.upstreams.get(name)
        if upstream is not None:
            upstream.state = UpstreamState.STOPPED
            upstream.listing = Listing()

    async def _refilter(self, upstream: Upstream) -> None:
        try:
            await upstream.refresh("tools")
        except (MCPError, UpstreamError) as exc:
            logger.warning("server %s: cannot re-read its tools after a config change: %s", upstream.name, exc)
        self._rebuild()
        self.router.lists_changed(frozenset({"tools"}))

    async def handshake_twin(
        self, upstream: Upstream, capabilities: types.ClientCapabilities | None
    ) -> Upstream | None:
        """A connection to `upstream`'s server in the handshake era, told `capabilities` at `initialize`
        (gateway.era): where a server that can only *push* its questions (sampling, elicitation, roots) can
        ask a handshake-era client mid-call, and where a server of the handshake era sees what the calling
        client declared, not what the gateway's first client did. One per server and set of capabilities,
        started on first need and kept; the server's own connection when it was told the same; None if it
        cannot start."""
        upstream = self.upstreams.get(upstream.name, upstream)  # a tool only a twin lists: the server's
        key = capabilities_key(capabilities)
        if not upstream.modern and upstream.told_key == key:
            return upstream
        if self.lone_client or self._tg is None or (upstream.modern and upstream.config.protocol != "auto"):
            return None
        twin = self._twins.get((upstream.name, key))  # every call of such a client asks: no lock once it is ready
        if twin is not None and twin.state is UpstreamState.READY:
            return twin
        async with self._twin_lock:  # one being started: its starter holds the lock until it is up
            twin = self._twins.get((upstream.name, key))
            if twin is None:
                told = _Told(self, capabilities or types.ClientCapabilities())
                twin = self._twins[upstream.name, key] = Upstream(
                    dataclasses.replace(upstream.config, protocol="legacy"), told
                )
                await self._tg.start(twin.serve)
        return twin if twin.state is UpstreamState.READY else None

    def _serving(self, upstream: Upstream) -> Upstream:
        """The connection a run's call (no client's) takes: for a server spoken to in the stateless era, its
        handshake-era one once a client's calls went there, so a replay meets the state those calls left (for
        a stdio server each connection is a process of its own); else the server's own."""
        if not upstream.modern:
            return upstream
        for (name, _), twin in self._twins.items():
            if name == upstream.name and twin.state is UpstreamState.READY:
                return twin
        return upstream

    def is_twin(self, upstream: Upstream) -> bool:
        return any(twin is upstream for twin in self._twins.values())

    def connections_of(self, server: str) -> list[Upstream]:
        """Every connection to `server`: its own, then the handshake-era ones made for clients (handshake_twin)."""
        own = [self.upstreams[server]] if server in self.upstreams else []
        return own + [twin for (name, _), twin in self._twins.items() if name == server]

    async def wait_settled(self, timeout: float) -> None:
        """Return once no upstream is starting (each is ready or failed), or after `timeout` seconds: unlike
        `wait_started`, past READY_BUDGET too (for a process with no client waiting on a first answer)."""
        await self._wait_while(lambda u: u.state is UpstreamState.STARTING and u.sign_in is None, timeout)

    async def _wait_while(self, starting: Callable[[Upstream], bool], timeout: float) -> None:
        """Until no upstream is `starting`, or `timeout` seconds (one waiting for a sign-in cannot come up alone)."""
        with anyio.move_on_after(timeout):
            while any(map(starting, self.upstreams.values())):
                await self._state_changed.wait()

    async def wait_started(self, timeout: float) -> None:
        with anyio.move_on_after(timeout):
            await self.started.wait()

    # Bridge (called by upstreams) ------------------------------------------------------
    async def upstream_request(self, upstream: Upstream, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await self.router.to_client(upstream, method, params)

    async def upstream_notification(self, upstream: Upstream, method: str, params: dict[str, Any] | None) -> None:
        kinds = {
            "notifications/tools/list_changed": "tools",
            "notifications/resources/list_changed": "resources",
            "notifications/prompts/list_changed": "prompts",
        }
        if method == "notifications/progress":
            return  # delivered to the call's own progress callback by the dispatcher
        if method in kinds:
            try:
                await upstream.refresh(kinds[method])
            except (MCPError, UpstreamError) as exc:
                logger.warning("server %s: cannot refresh %s: %s", upstream.name, kinds[method], exc)
            self._rebuild()
            self.router.lists_changed(frozenset({kinds[method]}))
            return
        await self.router.notify_clients(upstream, method, params)

    def upstream_changed(self, upstream: Upstream) -> None:
        self._state_changed.set()
        self._state_changed = anyio.Event()
        before = (set(self._tools), set(self._prompts))
        self._rebuild()
        # Before every upstream had its first start, nobody has listed anything yet: no news.
        if self.started.is_set() and (set(self._tools), set(self._prompts)) != before:
            self.router.lists_changed(frozenset({"tools", "prompts", "resources"}))

    # names --------------------------------------------------------------------------
    def _rebuild(self) -> None:
        tools: dict[str, Route] = {}
        canonical: dict[str, Route] = {}
        aliases: dict[str, Route] = {}
        listed_tools: list[dict[str, Any]] = []
        prompts: dict[str, Route] = {}
        listed_prompts: list[dict[str, Any]] = []
        for upstream in self.upstreams.values():
            if upstream.config.pin:
                self.pins.observe(upstream.name, upstream.listing.tools)
            policy = upstream.config.policy
            for tool in upstream.listing.tools:
                shown = policy.shown_name(tool["name"])
                name = listed_name(upstream.name, shown, prefix=self.prefix)
                route = Route(upstream, tool["name"], shown, policy.needs_confirmation(tool))
                if name in tools:
                    logger.warning("server %s: tool %r is listed as %r, which is taken", upstream.name, shown, name)
                    continue
                tools[name] = route
                canonical.setdefault(listed_name(upstream.name, tool["name"]), route)
                aliases.setdefault(listed_name(upstream.name, shown), route)
                listed_tools.append(self._present(upstream.name, policy.present(tool, name)))
            for prompt in upstream.listing.prompts:
                name = listed_name(upstream.name, prompt["name"], prefix=self.prefix)
                prompts.setdefault(name, Route(upstream, prompt["name"]))
                listed_prompts.append(prompt if name == prompt["name"] else {**prompt, "name": name})
        # A tool only a server's handshake-era connection lists (its state changed there, a stdio server's
        # being a second process) is listed too, and served there.
        for twin in self._twins.values():
            if twin.name not in self.upstreams:
                continue
            policy = twin.config.policy
            for tool in twin.listing.tools:
                shown = policy.shown_name(tool["name"])
                name = listed_name(twin.name, shown, prefix=self.prefix)
                if name not in tools:
                    tools[name] = route = Route(twin, tool["name"], shown, policy.needs_confirmation(tool))
                    canonical.setdefault(listed_name(twin.name, tool["name"]), route)
                    listed_tools.append(self._present(twin.name, policy.present(tool, name)))
        # A template may name a tool by the name the agent saw: the upstream's own names win.
        for alias, route in aliases.items():
            canonical.setdefault(alias, route)
        self._tools, self._listed_tools, self._canonical = tools, listed_tools, canonical
        self._digests = {}  # the listings changed: digests are taken again when asked
        self._prompts, self._listed_prompts = prompts, listed_prompts

    def _present(self, server: str, tool: dict[str, Any]) -> dict[str, Any]:
        """A listed tool's app (`_meta.ui.resourceUri`) under the name the aggregate lists it by (upstreams.uris)."""
        return dict(outward_tool(server, tool)) if self.prefix else tool

    # resources: `skill://` and `ui://` namespaced by server in aggregate mode (upstreams.uris) ---------------
    def listed_resources(self) -> list[dict[str, Any]]:
        return [self._listed_uri(u.name, r, "uri") for u in self.upstreams.values() for r in u.listing.resources]

    def listed_resource_templates(self) -> list[dict[str, Any]]:
        return [
            self._listed_uri(u.name, t, "uriTemplate")
            for u in self.upstreams.values()
            for t in u.listing.resource_templates
        ]

    def _listed_uri(self, server: str, item: dict[str, Any], key: str) -> dict[str, Any]:
        uri = item.get(key)
        if not self.prefix or not isinstance(uri, str):
            return item
        listed = outward_uri(server, uri)
        return item if listed == uri else {**item, key: listed}

    def resource_route(self, uri: str) -> tuple[Upstream, str]:
        """The server a listed URI is read from, and the URI that server knows it by."""
        namespaced = inward_uri(uri) if self.prefix else None
        if namespaced is not None and namespaced[0] in self.upstreams:
            return self.upstreams[namespaced[0]], namespaced[1]
        return self.resource_upstream(uri), uri

    def listed_uri(self, upstream: Upstream, uri: str) -> str:
        return outward_uri(upstream.name, uri) if self.prefix else uri

    def listed_tools(self) -> list[dict[str, Any]]:
        return self._listed_tools

    def listed_prompts(self) -> list[dict[str, Any]]:
        return self._listed_prompts

    def tool_route(self, listed: str) -> Route | None:
        return self._tools.get(listed)

    async def route_soon(self, listed: str, timeout: float) -> Route | None:
        """The tool's route, waiting for the ready budget, then for servers on their first start (not for one
        restarting after a failure: its calls say why it is down); None if it is still not listed."""
        route = self.tool_route(listed)
        if route is None and not self.started.is_set():
            await self.wait_started(timeout)
            route = self.tool_route(listed)
        if route is None:
            await self._wait_while(_on_first_start, timeout)
            route = self.tool_route(listed)
        return route

    def prompt_route(self, listed: str) -> Route | None:
        return self._prompts.get(listed)

    def mappings(self) -> list[NameMapping]:
        """Names changed by the mapping rule (too long or illegal) or by `toolsOverride`: shown in status."""
        out = []
        for table in (self._tools, self._prompts):
            for listed, route in table.items():
                natural = prefixed_name(route.upstream.name, route.name) if self.prefix else route.name
                if listed != natural:
                    out.append(NameMapping(listed=listed, server=route.upstream.name, name=route.name))
        return out

    def unknown_tool_message(self, listed: str) -> str:
        server = self.upstreams.get(listed.split("__", 1)[0]) if self.prefix and "__" in listed else None
        if server is not None and server.last_error:  # its tools are gone: say why (a sign-in, a crash)
            return (
                f"tool {listed!r} is not available: server {server.name!r} is {server.state.value}: {server.last_error}"
            )
        servers = ", ".join(f"{u.name} ({u.state.value})" for u in self.upstreams.values()) or "none"
        hint = ""
        if self.prefix and "__" not in listed:
            hint = " Tool names are listed as <server>__<tool>."
        return f"unknown tool {listed!r}; servers: {servers}.{hint} Call tools/list for the current names."

    # resources ------------------------------------------------------------------------
    def resource_upstream(self, uri: str) -> Upstream:
        for upstream in self.upstreams.values():
            if any(r.get("uri") == uri for r in upstream.listing.resources):
                return upstream
        for upstream in self.upstreams.values():
            if any(template_matches(t.get("uriTemplate", ""), uri) for t in upstream.listing.resource_templates):
                return upstream
        with_resources = [
            u for u in self.upstreams.values() if u.capabilities is not None and u.capabilities.resources is not None
        ]
        if len(with_resources) == 1:
            return with_resources[0]
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=f"no server lists resource {uri!r}; servers with resources: "
            + (", ".join(u.name for u in with_resources) or "none"),
        )

    # ToolCaller ---------------------------------------------------------------------
    def read_only_tools(self) -> set[str]:
        """`server__tool` names of tools that declare `readOnlyHint`: templates may replay them in parallel."""
        return {
            listed_name(upstream.name, tool["name"])
            for upstream in self.upstreams.values()
            for tool in upstream.listing.tools
            if (tool.get("annotations") or {}).get("readOnlyHint") is True
        }

    def input_schemas(self) -> dict[str, dict[str, Any]]:
        """`server__tool` -> the tool's `inputSchema`: evidence for which recorded values are a run's inputs."""
        return {
            listed_name(upstream.name, tool["name"]): schema
            for upstream in self.upstreams.values()
            for tool in upstream.listing.tools
            if isinstance(schema := tool.get("inputSchema"), dict)
        }

    def canonical_route(self, name: str) -> Route | None:
        """A tool by its `server__tool` name (templates), else by its listed name."""
        return self._canonical.get(name) or self._tools.get(name)

    def tool_digest(self, server: str, tool: str) -> str | None:
        """The digest of `server`'s definition of `tool` as listed now (core.tool_digest), computed once per listing."""
        key = (server, tool)
        if key not in self._digests:
            from toolreel.core.tool_digest import tool_digest

            upstream = self.upstreams.get(server)
            found = next((t for t in upstream.listing.tools if t.get("name") == tool), None) if upstream else None
            self._digests[key] = tool_digest(found) if found is not None else None
        return self._digests[key]

    def tool_definition(self, name: str) -> dict[str, Any] | None:
        """The upstream's own definition of tool `name` (core.tool_digest.DefinesTools), if a server lists it."""
        route = self.canonical_route(name)
        if route is None:
            return None
        return next((tool for tool in route.upstream.listing.tools if tool.get("name") == route.name), None)

    def server_of(self, name: str) -> str | None:
        route = self.canonical_route(name)
        if route is not None:
            return route.upstream.name
        waiting = self.upstreams.get(_server_hint(name))
        # Its tools come back with a person's sign-in: a run may start, and its calls wait for that.
        return waiting.name if waiting is not None and waiting.sign_in is not None else None

    async def call_tool(self, call: ToolCall) -> dict[str, Any]:
        route = self.canonical_route(call.name)
        if route is None:
            server = self.upstreams.get(_server_hint(call.name))
            if server is not None and server.sign_in is not None:  # its tools are gone until a person signs in
                raise server.unavailable()
            raise UpstreamError(self.unknown_tool_message(call.name), server=_server_hint(call.name), transient=True)
        params: dict[str, Any] = {"name": route.name, "arguments": dict(call.arguments)}
        if tracing.ENABLED:  # the replay step's span goes on in the upstream
            tracing.inject(params.setdefault("_meta", {}))
        upstream = self._serving(route.upstream)

        async def ask(method: str, request: dict[str, Any]) -> dict[str, Any]:
            return await self.router.to_client(upstream, method, request)

        try:
            return await upstream.request(
                "tools/call", params, timeout=call.timeout, on_progress=call.progress, tool=route.name, ask=ask
            )
        except ServerErrorAnswer as exc:
            return exc.tool_result(route.name)
        except MCPError as exc:
            return error_result(f"server {route.upstream.name!r}, tool {route.name!r}: {exc.message}")


class _Told:
    """The bridge of a connection made for clients that declared `capabilities` (Hub.handshake_twin): it is told
    those, and its server's traffic goes where the hub's own connections' does."""

    def __init__(self, hub: Hub, capabilities: types.ClientCapabilities) -> None:
        self._hub, self._capabilities = hub, capabilities

    async def client_capabilities(self) -> types.ClientCapabilities:
        return self._capabilities

    def prefers_handshake(self) -> bool:
        return True

    async def upstream_request(self, upstream: Upstream, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await self._hub.upstream_request(upstream, method, params)

    async def upstream_notification(self, upstream: Upstream, method: str, params: dict[str, Any] | None) -> None:
        await self._hub.upstream_notification(upstream, method, params)

    def upstream_changed(self, upstream: Upstream) -> None:
        self._hub.upstream_changed(upstream)


def _same_connection(old: ServerConfig, new: ServerConfig) -> bool:
    """Only the tool policy differs: the running session serves the new config as it is."""
    return dataclasses.replace(old, policy=new.policy) == new


def error_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _server_hint(name: str) -> str:
    return split_name(name)[0] or "?"


@contextlib.asynccontextmanager
async def open_hub(
    config: GatewayConfig,
    *,
    prefix: bool = True,
    capabilities: types.ClientCapabilities | None = None,
    wait: float = 0.0,
    lone_client: bool = False,
) -> AsyncIterator[Hub]:
    """Start every upstream of `config` in parallel and stop them all on exit."""
    hub = Hub(config, prefix=prefix, lone_client=lone_client)
    if capabilities is not None:
        hub.set_client_capabilities(capabilities)
    async with anyio.create_task_group() as tg:
        await tg.start(hub.run)
        if wait:
            await hub.wait_started(wait)
        try:
            yield hub
        finally:
            tg.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def open_upstreams(config: GatewayConfig, *, wait: float = 30.0) -> AsyncIterator[Hub]:
    """Upstreams for a process with no MCP client (`toolreel run`, `toolreel worker`): no one waits on a first
    answer, so it waits until every server is up or failed (at most `wait` seconds), not READY_BUDGET; a run
    would otherwise be refused for a tool "not listed" by a server that was merely slow to start."""
    async with open_hub(config, capabilities=types.ClientCapabilities()) as hub:
        await hub.wait_settled(wait)
        yield hub


def _on_first_start(upstream: Upstream) -> bool:
    return upstream.state is UpstreamState.STARTING and upstream.sign_in is None and not upstream.last_error
