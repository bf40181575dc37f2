"""The MCP server face of the gateway: one low-level `Server` in front of the hub.

`tools/call` takes a lean path (a server middleware that forwards raw dicts and never
re-validates the upstream's result); lists, resources, prompts and completions use
ordinary handlers. Each client connection is a `ClientLink`, the unit that recording,
routing of server-to-client requests, and notifications are keyed on; what the servers send
unasked goes to the clients through `gateway.relay`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any, get_args

import anyio
import anyio.abc
import anyio.lowlevel
import mcp_types as types
from mcp.server.caching import CacheableMethod, CacheHint
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp_types import CLIENT_CAPABILITIES_META_KEY, LOG_LEVEL_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from toolreel import __version__
from toolreel.core import tracing
from toolreel.core.errors import UpstreamError
from toolreel.gateway import tasks
from toolreel.gateway._trim import give_back
from toolreel.gateway.confirm import Confirmation, question
from toolreel.gateway.era import takes_handshake_connection
from toolreel.gateway.exchange import Exchange, Exchanges, quiet_progress
from toolreel.gateway.hook import LocalCall, ToolHook, UpstreamCall
from toolreel.gateway.links import (
    HOP_META,
    IDLE_GROUP_SECONDS,
    Call,
    ClientLink,
    ProgressOrder,
    capabilities_of,
    client_envelope,
    era_result,
    link_key,
    require_capability,
    span_attributes,
)
from toolreel.gateway.listen import Listen, UpstreamSubscriptions
from toolreel.gateway.pinned import check_pinned
from toolreel.gateway.questions import asking_through
from toolreel.gateway.relay import ClientRelay
from toolreel.gateway.search import unwrap
from toolreel.gateway.skills import install as install_skills
from toolreel.gateway.skills import is_local, read_skill_file, skill_resources
from toolreel.upstreams.hub import Hub, error_result
from toolreel.upstreams.upstream import START_TIMEOUT, AskFn, ServerErrorAnswer, Upstream

__all__ = ["ClientLink", "Front", "GatewayServer", "ToolHook"]

logger = logging.getLogger("toolreel.front")

INSTRUCTIONS = """\
toolreel records every tool call as a step named <tool>_<n> (the tool name without its server prefix, \
characters other than letters, digits and _ turned into _, n counting from 1 per name: read_file_1, \
read_file_2, get_tiny_image_1). Pass an earlier output on instead of copying it: an argument that is exactly \
"@read_file_1" is that step's whole output and "@list_directory_1.entries[0].name" a field of it (dotted keys, \
[n] indexes); inside a longer string write {{@step.path}}. Outputs are the structured content, else the JSON \
in the text, else the text. A literal leading @ is written @@. Tool results carry the step name in \
_meta["toolreel/step"]. toolreel__status lists the steps so far; toolreel__save_template saves the session \
as a reusable template."""


class GatewayServer(Server[Any]):
    """A low-level server that advertises list_changed for everything it forwards."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        options = notification_options or NotificationOptions(True, True, True)
        return super().create_initialization_options(options, experimental_capabilities, extensions)


class Front:
    def __init__(self, hub: Hub, *, hook: ToolHook | None = None, instructions: str | None = None) -> None:
        self.hub = hub
        self.hook = hook or ToolHook()
        self.links: dict[str, ClientLink] = {}
        self.bus = InMemorySubscriptionBus()
        self.relay = ClientRelay(hub, self.links, self.bus)
        self.exchanges = Exchanges()
        self.subscriptions = UpstreamSubscriptions(hub)
        self._tg: anyio.abc.TaskGroup | None = None
        self._extra_instructions = instructions
        self.server = self._build_server()
        self.hook.forward = self.call_as_client
        hub.router = self.relay

    def _build_server(self) -> GatewayServer:
        server = GatewayServer(
            "toolreel",
            version=__version__,
            instructions=INSTRUCTIONS,
            on_subscriptions_listen=Listen(
                self.bus, self.subscriptions, tasks.read_task(self.hub, lambda: self.hook.execution_tasks())
            ),
            # Aggregated lists change whenever an upstream does: never fresh for longer than now.
            cache_hints={method: CacheHint(ttl_ms=0) for method in get_args(CacheableMethod)},
        )
        # Handlers return wire dicts (forwarded unchanged), so they register untyped.
        handlers: list[tuple[str, type[Any], Any]] = [
            ("tools/list", types.PaginatedRequestParams, self._list_tools),
            ("resources/list", types.PaginatedRequestParams, self._list_resources),
            ("resources/templates/list", types.PaginatedRequestParams, self._list_resource_templates),
            ("resources/read", types.ReadResourceRequestParams, self._read_resource),
            ("resources/subscribe", types.SubscribeRequestParams, self._subscribe),
            ("resources/unsubscribe", types.UnsubscribeRequestParams, self._unsubscribe),
            ("prompts/list", types.PaginatedRequestParams, self._list_prompts),
            ("prompts/get", types.GetPromptRequestParams, self._get_prompt),
            ("completion/complete", types.CompleteRequestParams, self._complete),
            ("logging/setLevel", types.SetLevelRequestParams, self._set_level),
        ]
        for method, params_type, handler in handlers:
            server.add_request_handler(method, params_type, handler)
        server.add_notification_handler(
            "notifications/roots/list_changed", types.NotificationParams, self._roots_changed
        )
        install_skills(server, self.hook.skills, self.hook.tools_ready, self.hub)
        tasks.install(server, self.hub, lambda: self.hook.execution_tasks())
        server.middleware = [self._middleware]  # no tracing middleware on the hot path
        return server

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Own the task group that delivers notifications pushed outside any request."""
        async with anyio.create_task_group() as tg:
            self._tg = self.relay.tg = tg
            task_status.started()
            while True:  # clients that went quiet without closing are let go even when no new one comes
                await anyio.sleep(max(1.0, IDLE_GROUP_SECONDS / 10))
                self._expire_idle()
                # what clients that went away held is freed on timers of its own too (the SDK's transports, the
                # store's writer): it goes back to the system on every idle check, not only when links expire
                give_back()

    # links ------------------------------------------------------------------------------
    def link_for(self, ctx: ServerRequestContext[Any, Any]) -> ClientLink:
        key = link_key(ctx)
        link = self.links.get(key)
        if link is None:
            link = self.links[key] = ClientLink(key=key)
            self._expire_idle()
        link.session = ctx.session
        link.last_active = time.monotonic()
        if link.protocol_version is None:
            link.protocol_version = ctx.protocol_version
        if link.capabilities is None:
            link.capabilities = capabilities_of(ctx)
        if link.capabilities is not None:
            self.hub.set_client_capabilities(link.capabilities)
        return link

    def _expire_idle(self) -> None:
        cutoff = time.monotonic() - IDLE_GROUP_SECONDS
        # the one stdio client is there as long as the pipe is: it has no idle time
        idle = [k for k, link in self.links.items() if link.last_active < cutoff and k != "stdio"]
        for key in idle:
            self.forget(key)
        if idle:
            give_back()

    def forget(self, key: str) -> None:
        """The client of `key` is gone (an HTTP session deleted, a stateless group idle): its link
        and what the layers above kept for it are released."""
        link = self.links.pop(key, None)
        if link is not None:
            self.hook.link_closed(link)

    # middleware: initialize and the tools/call fast path ------------------------------------
    async def _middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Every request passes here. A failure that is not already a JSON-RPC error is logged and answered
        as -32603 without its Python text: the SDK would send code 0 and the exception's message."""
        try:
            return await self._route(ctx, call_next)
        except (MCPError, ValidationError):
            raise
        except Exception:
            if ctx.request_id is None:  # a notification: there is no one to answer; the SDK logs it
                raise
            logger.exception("%s failed inside toolreel", ctx.method)
            message = f"Internal error: toolreel could not handle {ctx.method}; its log (stderr) has the details"
            raise MCPError(code=types.INTERNAL_ERROR, message=message) from None

    async def _route(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        method = ctx.method
        if method == "tools/call":
            return await self._call_tool(ctx)
        if method == "initialize":
            params = ctx.params or {}
            caps = types.ClientCapabilities.model_validate(params.get("capabilities") or {})
            self.hub.set_client_capabilities(caps, handshake=True)
            link = self.link_for(ctx)  # a client that only calls tools still hears of list changes
            link.capabilities, link.protocol_version = caps, params.get("protocolVersion")
            await self.hub.wait_started(START_TIMEOUT)
            self._open_handshake_connections(link)
            self.server.instructions = self._instructions()
            return await call_next(ctx)
        if method == "server/discover":
            caps = capabilities_of(ctx) or types.ClientCapabilities()
            self.hub.set_client_capabilities(caps)
            await self.hub.wait_started(START_TIMEOUT)
            self.server.instructions = self._instructions()
        elif method in tasks.TASK_METHODS:
            tasks.check_routing_header(ctx)
            self.link_for(ctx)
        elif ctx.request_id is not None:
            self.link_for(ctx)
        return await call_next(ctx)

    def _open_handshake_connections(self, link: ClientLink) -> None:
        """Start, in the background, the handshake-era connections `link`'s calls will take (gateway.era),
        so that its first call does not wait for a server to start."""
        if self._tg is None:
            return
        for upstream in list(self.hub.upstreams.values()):
            if takes_handshake_connection(link, upstream, lone_client=self.hub.lone_client):
                self._tg.start_soon(self.hub.handshake_twin, upstream, link.capabilities)

    def _instructions(self) -> str:
        parts = [u.instructions for u in self.hub.upstreams.values() if u.instructions]
        if self._extra_instructions:
            parts.append(self._extra_instructions)
        parts.append(INSTRUCTIONS)
        return "\n\n".join(parts)

    async def _call_tool(self, ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
        params: Mapping[str, Any] = unwrap(ctx.params or {})  # toolreel__call_tool(t, a) is the call of t
        link = self.link_for(ctx)
        meta = params.get("_meta") or {}
        if not isinstance(meta, Mapping):
            raise MCPError(code=types.INVALID_PARAMS, message="tools/call: '_meta' must be an object")
        progress = quiet_progress(ctx.session.report_progress) if meta.get("progressToken") is not None else None
        route = self.hub.tool_route(str(params.get("name")))
        # a call that needs the user's yes asks through an exchange (this era pushes nothing)
        passthrough = link.modern and route is not None and route.upstream.modern and not route.confirm
        if not link.modern or passthrough or self._tg is None:
            return self._finish(link, await self.forward_call(link, params, progress=progress, ctx=ctx))

        async def run(exchange: Exchange) -> dict[str, Any]:
            # progress goes to whichever of the client's retries is waiting when it comes
            follow = exchange.progress if progress is not None else None
            return await self.forward_call(link, params, progress=follow, ctx=ctx, exchange=exchange)

        return self._finish(link, await self.exchanges.call(self._tg, params, run, ctx))

    async def fast_call(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """tools/call from the stdio fast lane (a handshake-era client, no progress token)."""
        link = self.links.get("stdio") or self.links.setdefault("stdio", ClientLink(key="stdio"))
        link.last_active = time.monotonic()
        return await self.forward_call(link, unwrap(params), progress=None, ctx=None)

    async def call_as_client(self, on_behalf: LocalCall, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A tool called on a client's behalf (a script's inner call): its policy, confirm and recording."""
        params = {"name": name, "arguments": arguments}
        return await self.forward_call(
            on_behalf.link, params, progress=None, ctx=on_behalf.ctx, exchange=on_behalf.exchange
        )

    async def forward_call(
        self, link: ClientLink, params: Mapping[str, Any], *, progress: Any, ctx: Any, exchange: Exchange | None = None
    ) -> dict[str, Any]:
        name = params.get("name")
        arguments = params.get("arguments") or {}
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise MCPError(code=types.INVALID_PARAMS, message="tools/call needs a string 'name' and object 'arguments'")
        with asking_through(self._asker(link, ctx, exchange)):  # the gateway's own tools ask in the client's era
            local = await self.hook.call_local(LocalCall(name, arguments, link, ctx, exchange))
        if local is not None:
            return local
        route = await self.hub.route_soon(name, START_TIMEOUT)
        if route is None:
            return error_result(self.hub.unknown_tool_message(name))
        meta_in = params.get("_meta") or {}
        meta = {k: v for k, v in meta_in.items() if k not in HOP_META}
        upstream = route.upstream

        passthrough = link.modern and upstream.modern and exchange is None
        # Only a stateless-era upstream reads an envelope or asks through `ask`: the handshake
        # era's fast path builds neither.
        envelope, ask = self._how_to_ask(link, ctx, passthrough, exchange) if upstream.modern else (None, None)
        tracker = ProgressOrder(progress) if progress is not None else None

        async def send(resolved: dict[str, Any]) -> dict[str, Any]:
            if upstream.config.pin:  # held tools of pinned servers ask first (gateway.pinned)
                refused = await check_pinned(self.hub.pins, route, name, self._asker(link, ctx, exchange))
                if refused is not None:
                    return refused
            confirmation = await self._confirm(link, ctx, exchange, name, resolved) if route.confirm else None
            if confirmation is not None and not confirmation.allowed:
                return confirmation.refusal()
            forwarded: dict[str, Any] = {"name": route.name, "arguments": resolved}
            if tracing.ENABLED:  # the call's span goes on in the upstream
                tracing.inject(meta)
            if meta:
                forwarded["_meta"] = meta
            if passthrough:  # the stateless era's retry of an input-required call
                forwarded.update({k: params[k] for k in ("inputResponses", "requestState") if k in params})
            entry = Call(ctx, link, exchange, tracker, envelope, ask)
            try:
                target = await self._connection_for(link, upstream)
                result = await self._send_call(
                    entry if target is upstream else entry.for_handshake_twin(), target, forwarded
                )
                return result if confirmation is None else confirmation.stamp(result)
            except UpstreamError as exc:
                return error_result(str(exc))
            except ServerErrorAnswer as exc:  # the server's own refusal: its code and message, as a tool error
                if exc.for_the_client or "requestState" in forwarded or "inputResponses" in forwarded:
                    raise  # MCP's own errors, and those answering a stateless client's retry, are the client's
                return exc.tool_result(route.name)

        call = UpstreamCall(link, name, upstream, route.name, arguments, send)
        if tracing.ENABLED:
            attributes = span_attributes(link, name, upstream)
            with tracing.span(f"tools/call {name}", attributes, kind="server", meta=meta_in) as current:
                traced = await self.hook.call_upstream(call)
                tracing.record_result(current, traced)
                return traced
        return await self.hook.call_upstream(call)

    async def _send_call(self, entry: Call, upstream: Upstream, forwarded: dict[str, Any]) -> dict[str, Any]:
        """One tools/call on one connection, known as in flight there (whom its questions and logs are for)."""
        inflight = self.relay.inflight.setdefault(upstream, [])
        inflight.append(entry)
        try:
            result = await upstream.request(
                "tools/call",
                forwarded,
                on_progress=entry.tracker,
                tool=forwarded["name"],
                envelope=entry.envelope,
                ask=entry.ask,
            )
            await upstream.settle()
            if entry.tracker is not None:
                await entry.tracker.drain()
            if result.get("resultType") == "task":  # the client polls it through the gateway (gateway.tasks)
                return tasks.outward(upstream.name, result)
            return result
        finally:
            inflight.remove(entry)

    async def _connection_for(self, link: ClientLink, upstream: Upstream) -> Upstream:
        """The connection `link`'s call to `upstream` takes (gateway.era): a handshake-era one told what the client
        declared, where the server's own was not told that or cannot ask it; else the server's own."""
        if takes_handshake_connection(link, upstream, lone_client=self.hub.lone_client):
            twin = await self.hub.handshake_twin(upstream, link.capabilities)
            if twin is not None:
                return twin
        return upstream

    def _how_to_ask(
        self, link: ClientLink, ctx: Any, passthrough: bool, exchange: Exchange | None = None
    ) -> tuple[dict[str, Any], AskFn | None]:
        """For a stateless-era upstream: what to say of the caller, and who answers its questions.
        A stateless-era caller answers them itself (passed through, or through the call's
        exchange when the gateway asks something too); any other is asked by us."""
        if passthrough:
            return client_envelope(ctx), None
        ask = self._asker(link, ctx, exchange)

        # a handshake-era client hears every log unless it set a level: as that era's servers do
        envelope: dict[str, Any] = {LOG_LEVEL_META_KEY: link.log_level or "debug"}
        if link.capabilities is not None:  # the server is told what this client declared, not the first client
            envelope[CLIENT_CAPABILITIES_META_KEY] = link.declared()
        return envelope, ask

    def _asker(self, link: ClientLink, ctx: Any, exchange: Exchange | None) -> AskFn:
        """Who puts a question to the calling client: its exchange (stateless era), else its session."""
        session = ctx.session if ctx is not None else link.session
        related = ctx.request_id if ctx is not None else None

        async def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
            if exchange is not None:
                require_capability(link, method)
                return await exchange.ask(method, params)
            if session is None:
                raise MCPError(code=types.INVALID_REQUEST, message=f"no client is connected to answer {method}")
            return await self.relay.ask_client(link, session, related, method, params)

        return ask

    async def _confirm(
        self, link: ClientLink, ctx: Any, exchange: Exchange | None, listed: str, arguments: dict[str, Any]
    ) -> Confirmation:
        try:
            answer = await self._asker(link, ctx, exchange)("elicitation/create", question(listed, arguments))
        except MCPError as exc:
            return Confirmation(listed, "unavailable", exc.message)
        return Confirmation.from_answer(listed, answer)

    def _finish(self, link: ClientLink, result: dict[str, Any]) -> dict[str, Any]:
        if link.modern and "resultType" not in result:
            result = {**result, "resultType": "complete"}
        return result

    # list handlers ------------------------------------------------------------------------
    async def _list_tools(self, ctx: ServerRequestContext[Any, Any], params: Any) -> dict[str, Any]:
        await self.hub.wait_started(START_TIMEOUT)
        await self.hook.tools_ready()
        return era_result(ctx, {"tools": self.hook.tool_listing(self.hub.listed_tools())})

    async def _list_resources(self, ctx: ServerRequestContext[Any, Any], params: Any) -> dict[str, Any]:
        await self.hub.wait_started(START_TIMEOUT)
        await self.hook.tools_ready()  # the skills come with the templates' listing
        return era_result(ctx, {"resources": [*self.hub.listed_resources(), *skill_resources(self.hook.skills())]})

    async def _list_resource_templates(self, ctx: ServerRequestContext[Any, Any], params: Any) -> dict[str, Any]:
        await self.hub.wait_started(START_TIMEOUT)
        return era_result(ctx, {"resourceTemplates": self.hub.listed_resource_templates()})

    async def _list_prompts(self, ctx: ServerRequestContext[Any, Any], params: Any) -> dict[str, Any]:
        await self.hub.wait_started(START_TIMEOUT)
        return era_result(ctx, {"prompts": self.hub.listed_prompts()})

    # routed requests ------------------------------------------------------------------------
    async def _read_resource(self, ctx: ServerRequestContext[Any, Any], params: Any) -> dict[str, Any]:
        if is_local(params.uri):
            await self.hook.tools_ready()
            return era_result(ctx, read_skill_file(self.hook.skills(), params.uri))
        upstream, own = self.hub.resource_route(params.uri)
        result = await self._upstream_call(upstream, "resources/read", ctx, {"uri": own} if own != params.uri else None)
        if own != params.uri:  # the contents say the URI the client asked for
            contents = [
                {**c, "uri": self.hub.listed_uri(upstream, c["uri"])} if isinstance(c.get("uri"), str) else c
                for c in result.get("contents") or []
            ]
            result = {**result, "contents": contents}
        return era_result(ctx, result)

    async def _subscribe(self, ctx: ServerRequestContext[Any, Any], params: Any) -> dict[str, Any]:
        link = self.link_for(ctx)
        if params.uri not in link.subscriptions:
            await self.subscriptions.subscribe(params.uri)
            link.subscriptions.add(params.uri)
        return era_result(ctx, {})

    async def _unsubscribe(self, ctx: ServerRequestContext[Any, Any], params: Any) -> dict[str, Any]:
        link = self.link_for(ctx)
        if params.uri in link.subscriptions:
            link.subscriptions.discard(params.uri)
            await self.subscriptions.unsubscribe(params.uri)
        return era_result(ctx, {})

    async def _get_prompt(self, ctx: ServerRequestContext[Any, Any], params: Any) -> dict[str, Any]:
        route = self.hub.prompt_route(params.name)
        if route is None:
            known = ", ".join(p["name"] for p in self.hub.listed_prompts()) or "none"
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown prompt {params.name!r}; prompts: {known}")
        return era_result(ctx, await self._upstream_call(route.upstream, "prompts/get", ctx, {"name": route.name}))

    async def _complete(self, ctx: ServerRequestContext[Any, Any], params: Any) -> dict[str, Any]:
        ref = params.ref
        if isinstance(ref, types.PromptReference):
            route = self.hub.prompt_route(ref.name)
            if route is None:
                raise MCPError(code=types.INVALID_PARAMS, message=f"unknown prompt {ref.name!r}")
            override = {"ref": {"type": "ref/prompt", "name": route.name}}
            return era_result(ctx, await self._upstream_call(route.upstream, "completion/complete", ctx, override))
        return era_result(
            ctx, await self._upstream_call(self.hub.resource_upstream(ref.uri), "completion/complete", ctx)
        )

    async def _set_level(self, ctx: ServerRequestContext[Any, Any], params: Any) -> dict[str, Any]:
        self.link_for(ctx).log_level = params.level  # stamped on calls to stateless-era servers
        for upstream in self.hub.upstreams.values():
            if upstream.modern:
                continue
            if upstream.capabilities is not None and upstream.capabilities.logging is not None:
                try:
                    await upstream.request("logging/setLevel", {"level": params.level})
                except (UpstreamError, MCPError) as exc:
                    logger.warning("server %s: logging/setLevel failed: %s", upstream.name, exc)
        return era_result(ctx, {})

    async def _roots_changed(self, ctx: ServerRequestContext[Any, Any], params: Any) -> None:
        for upstream in self.hub.upstreams.values():
            await upstream.notify("notifications/roots/list_changed", None)

    async def _upstream_call(
        self,
        upstream: Upstream,
        method: str,
        ctx: ServerRequestContext[Any, Any],
        override: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        params = {k: v for k, v in (ctx.params or {}).items() if k != "_meta"}
        if override:
            params.update(override)
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        envelope, ask = self._how_to_ask(self.link_for(ctx), ctx, modern and upstream.modern)
        try:
            return await upstream.request(method, params, envelope=envelope, ask=ask)
        except UpstreamError as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from None
