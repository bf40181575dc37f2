"""One long-lived MCP session to one upstream server, restarted with backoff when it dies.

The hot path (`request`) sends raw JSON-RPC dicts through the session's dispatcher: no
typed re-validation of results that are forwarded unchanged anyway. Server-to-client
traffic (sampling, elicitation, roots, notifications) goes to a `Bridge`, which routes it
to the client that caused it. Transport failures become `UpstreamError` naming the server.
Which era each connection speaks is `upstreams.handshake`'s to decide.
"""

from __future__ import annotations

import contextlib
import enum
import json
import logging
import os
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import IO, Any, Protocol, TypeVar

import anyio
import anyio.abc
import mcp_types as types
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost, listen
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    NAME_BEARING_METHODS,
    encode_header_value,
)
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated, ToolsListChanged
from pydantic import BaseModel

from toolreel import __version__
from toolreel.core import tracing
from toolreel.core.errors import UpstreamError, UpstreamTimeout
from toolreel.upstreams import prespawn
from toolreel.upstreams.answers import HTTP_ABANDONED, SERVER_ERROR_META, ServerErrorAnswer
from toolreel.upstreams.auth import SignInNeeded
from toolreel.upstreams.config import ServerConfig
from toolreel.upstreams.handshake import EraHistory, Greeting, greet, refused_handshake
from toolreel.upstreams.param_headers import ParamHeaders
from toolreel.upstreams.sign_in import sign_in_error
from toolreel.upstreams.stdio_upstream import ConnectionLost, FastLane, open_stdio_upstream

# ServerErrorAnswer and SERVER_ERROR_META live in `answers`; named here too, where callers met them first.
__all__ = [
    "SERVER_ERROR_META",
    "Bridge",
    "Listing",
    "ServerErrorAnswer",
    "Upstream",
    "UpstreamState",
    "capabilities_key",
]

logger = logging.getLogger("toolreel.upstream")

PAGE_LIMIT = 100  # pages followed per list call; a server that pages forever is cut off
START_TIMEOUT = 30.0  # spawn + initialize + listings
STDERR_TAIL = 2000
SETTLE_LIMIT = 0.5  # seconds a response waits for the logs read before it
INPUT_ROUNDS = 10  # InputRequiredResult rounds per request, as the SDK's own client allows
_ResultT = TypeVar("_ResultT", bound=BaseModel)
ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]
AskFn = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
"""Puts a server's request (elicitation, sampling, roots) to the client a call came from."""


def capabilities_key(capabilities: types.ClientCapabilities | None) -> str:
    """What a connection is told of its client at `initialize`, as a key: connections of equal keys are alike."""
    declared = capabilities.model_dump(by_alias=True, mode="json", exclude_none=True) if capabilities else {}
    return json.dumps(declared, sort_keys=True, separators=(",", ":"))


class UpstreamState(enum.StrEnum):
    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"  # waiting to restart
    DISABLED = "disabled"
    STOPPED = "stopped"


class Listing:
    """What an upstream serves, as raw wire dicts (forwarded unchanged)."""

    __slots__ = ("prompts", "resource_templates", "resources", "tools")

    def __init__(self) -> None:
        self.tools: list[dict[str, Any]] = []
        self.resources: list[dict[str, Any]] = []
        self.resource_templates: list[dict[str, Any]] = []
        self.prompts: list[dict[str, Any]] = []


class Bridge(Protocol):
    """The gateway side of an upstream: where server-to-client traffic goes."""

    async def client_capabilities(self) -> types.ClientCapabilities: ...

    def prefers_handshake(self) -> bool: ...

    async def upstream_request(self, upstream: Upstream, method: str, params: dict[str, Any]) -> dict[str, Any]: ...

    async def upstream_notification(self, upstream: Upstream, method: str, params: dict[str, Any] | None) -> None: ...

    def upstream_changed(self, upstream: Upstream) -> None: ...


class Upstream:
    def __init__(self, config: ServerConfig, bridge: Bridge) -> None:
        self.config = config
        self.name = config.name
        self.state = UpstreamState.DISABLED if config.disabled else UpstreamState.STARTING
        self.last_error: str | None = None
        self.sign_in: SignInNeeded | None = None  # why it failed, when only a person's sign-in helps
        self.restarts = 0
        self.listing = Listing()
        self.capabilities: types.ServerCapabilities | None = None
        self.instructions: str | None = None
        self.server_info: types.Implementation | None = None
        self.protocol_version: str | None = None
        self.told_key = capabilities_key(None)  # the client capabilities this connection was told (capabilities_key)
        self._bridge = bridge
        self._session: ClientSession | None = None
        self._dispatcher: JSONRPCDispatcher[Any] | None = None
        self._lane: FastLane | None = None
        self._envelope: dict[str, Any] | None = None  # stateless era: the _meta every request carries
        self._tg: anyio.abc.TaskGroup | None = None  # stateless era: the listen streams
        self._resource_streams: dict[str, anyio.CancelScope] = {}
        self._logs_in_transit = 0  # logs read but not yet handed to the bridge
        self._logs_settled = anyio.Event()
        self._headers: dict[str, str] = {}
        self._param_headers = ParamHeaders()
        self._stderr: IO[str] | None = None
        self._eras = EraHistory()
        self._lost: anyio.Event | None = None  # set when the current connection's transport has ended

    # lifecycle ----------------------------------------------------------------------
    async def serve(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run until cancelled: connect, serve, and on failure restart with backoff.

        `task_status.started()` fires after the first attempt either succeeded or failed,
        so a gateway can start answering once every upstream had its chance.
        """
        if self.config.disabled:
            task_status.started()
            return
        started = False
        failures = 0
        while True:
            lost = anyio.Event()
            try:
                async with self._connected(lost):
                    failures = 0
                    self._set_state(UpstreamState.READY, None)
                    if not started:
                        started = True
                        task_status.started()
                    await lost.wait()
                    raise UpstreamError(f"server {self.name!r} closed the connection", server=self.name)
            except Exception as exc:  # any failure of one upstream stays with that upstream
                if refused_handshake(exc):
                    continue  # at once, and no failure: the next connection starts stateless
                self._set_state(UpstreamState.FAILED, self._describe_failure(exc))
            if not started:
                started = True
                task_status.started()
            failures += 1
            self.restarts += 1
            await anyio.sleep(min(30.0, 0.5 * 2 ** min(failures - 1, 6)))
            self._set_state(UpstreamState.STARTING, self.last_error)

    def stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.flush()
            size = os.fstat(self._stderr.fileno()).st_size
            with open(self._stderr.fileno(), closefd=False, encoding="utf-8", errors="replace") as reader:
                reader.seek(max(0, size - STDERR_TAIL))
                return reader.read().strip()
        except (OSError, ValueError):
            return ""

    # calls --------------------------------------------------------------------------
    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        *,
        timeout: float | None = None,
        on_progress: ProgressFn | None = None,
        tool: str | None = None,
        envelope: Mapping[str, Any] | None = None,
        ask: AskFn | None = None,
        starting: bool = False,
    ) -> dict[str, Any]:
        """One request. To a stateless-era server it carries our envelope (plus `envelope`, what
        a stateless-era caller says of itself); an `InputRequiredResult` is answered through
        `ask` (the calling client, pushed) and retried, or returned as is when `ask` is None,
        for a stateless-era client to answer itself. `starting`: allowed before READY (listings)."""
        if self.state is not UpstreamState.READY and not starting:
            raise self.unavailable()
        limit = self.config.timeout if timeout is None else timeout
        if self._envelope is None:
            return await self._once(method, params, limit, on_progress, tool, None)
        out = dict(params or {})
        out["_meta"] = {**(out.get("_meta") or {}), **self._envelope, **(envelope or {})}
        headers = {MCP_METHOD_HEADER: method}
        name = out.get(NAME_BEARING_METHODS.get(method, "taskId" if method.startswith("tasks/") else ""))
        if isinstance(name, str):
            headers[MCP_NAME_HEADER] = encode_header_value(name)
            if method == "tools/call" and self.config.url:  # arguments the tool mirrors into headers (SEP-2243)
                headers.update(self._param_headers.for_call(self.listing.tools, name, out.get("arguments")))
        for _ in range(INPUT_ROUNDS):
            result = await self._once(method, out, limit, on_progress, tool, headers)
            if result.get("resultType") != "input_required" or ask is None:
                return result
            requests = result.get("inputRequests") or {}
            responses = {key: await ask(req["method"], req.get("params") or {}) for key, req in requests.items()}
            out = {**out, "inputResponses": responses, "requestState": result.get("requestState")}
        raise UpstreamError(
            f"server {self.name!r} kept asking for input past {INPUT_ROUNDS} rounds during {method}", server=self.name
        )

    async def _once(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        limit: float,
        on_progress: ProgressFn | None,
        tool: str | None,
        headers: dict[str, str] | None,
    ) -> dict[str, Any]:
        dispatcher, lane = self._dispatcher, self._lane
        if dispatcher is None:
            raise self.unavailable()
        try:
            if lane is not None and on_progress is None:
                return await lane.request(method, params, limit)
            return await dispatcher.send_raw_request(method, params, self._options(limit, on_progress, headers))
        except MCPError as exc:
            raise self._convert(exc, method, tool, limit) from None

    def _connection_lost(self, exc: MCPError) -> bool:
        """Told by what happened, not by the code: -32000 is also JSON-RPC's generic server error, which
        servers answer for their own failures. A loss is the lane's pipe closing, the transport's stream
        having ended, or the SDK's HTTP client abandoning the request's stream."""
        if isinstance(exc, ConnectionLost):
            return True
        if exc.code != types.CONNECTION_CLOSED or exc.error.data is not None:
            return False
        if self._lost is not None and self._lost.is_set():
            return True
        return bool(self.config.url) and exc.error.message.startswith(HTTP_ABANDONED)

    def _options(
        self, limit: float, on_progress: ProgressFn | None, extra: dict[str, str] | None = None
    ) -> CallOptions:
        opts: CallOptions = {"timeout": limit}
        if tracing.ENABLED and self.config.url:  # over HTTP the trace context also travels in headers
            extra = {**(extra or {}), **_trace_headers()}
        if self._headers or extra:
            opts["headers"] = {**self._headers, **(extra or {})}
        if on_progress is not None:
            opts["on_progress"] = on_progress  # type: ignore[typeddict-item]  # same call shape as ProgressFnT
        return opts

    def _convert(self, exc: MCPError, method: str, tool: str | None, limit: float) -> Exception:
        if exc.code == types.REQUEST_TIMEOUT:
            return UpstreamTimeout(server=self.name, tool=tool or method, seconds=limit)
        if self.sign_in is not None and exc.code == types.CONNECTION_CLOSED:
            return self.unavailable()  # its sign-in was refused mid-call: the request never reached the tool
        if self._connection_lost(exc):
            return UpstreamError(
                f"server {self.name!r} closed the connection during {method}"
                + (f" {tool!r}" if tool else "")
                + "; it is being restarted",
                server=self.name,
                transient=True,
            )
        return ServerErrorAnswer(self.name, exc.error)

    async def notify(self, method: str, params: Mapping[str, Any] | None) -> None:
        if self._dispatcher is not None and self.state is UpstreamState.READY:
            await self._dispatcher.notify(method, params, {"headers": dict(self._headers)} if self._headers else None)

    def unavailable(self) -> UpstreamError:
        """The error of a call it cannot take now: `SignInNeeded` when only a person's sign-in helps."""
        if self.sign_in is not None:
            return SignInNeeded(self.name, self.sign_in.command)
        return UpstreamError(self._unavailable_message(), server=self.name, transient=True)

    def _needs_sign_in(self, exc: SignInNeeded) -> None:
        self.sign_in = exc

    def _unavailable_message(self) -> str:
        cause = f": {self.last_error}" if self.last_error else ""
        return f"server {self.name!r} is not available ({self.state.value}{cause})"

    # connection ---------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def _connected(self, lost: anyio.Event) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            # Timeouts wrap single awaits, never a context entry: a cancel scope must not
            # straddle the task groups these contexts own.
            self._lost = lost
            read, write, lane = await stack.enter_async_context(self._transport(lost))
            capabilities = await self._bridge.client_capabilities()
            self.told_key = capabilities_key(capabilities)
            dispatcher: JSONRPCDispatcher[Any] = JSONRPCDispatcher(read, write)
            session = await stack.enter_async_context(self._session_for(dispatcher, capabilities))
            self._envelope = None
            with anyio.fail_after(START_TIMEOUT):
                first = self._bridge.prefers_handshake()
                self._greeted(await greet(session, self.config, capabilities, self._eras, handshake_first=first))
            self._session, self._dispatcher, self._lane = session, dispatcher, lane
            with anyio.fail_after(START_TIMEOUT):
                await self.refresh()
            if self.modern:
                self._tg = await stack.enter_async_context(anyio.create_task_group())
                self._tg.start_soon(self._listen, session)
            try:
                yield
            finally:
                self._tg = None
                self._resource_streams.clear()
                self._session = self._dispatcher = self._lane = None

    def _greeted(self, greeting: Greeting) -> None:
        self.protocol_version = greeting.protocol_version
        self.capabilities, self.instructions = greeting.capabilities, greeting.instructions
        self.server_info = greeting.server_info
        self._headers, self._envelope = greeting.headers, greeting.envelope

    async def _listen(self, session: ClientSession) -> None:
        """Stateless-era list changes arrive on a `subscriptions/listen` stream, not pushed."""
        methods = {
            ToolsListChanged: "notifications/tools/list_changed",
            PromptsListChanged: "notifications/prompts/list_changed",
            ResourcesListChanged: "notifications/resources/list_changed",
        }
        caps = self.capabilities
        try:
            async with listen(
                session,
                tools_list_changed=bool(caps and caps.tools and caps.tools.list_changed),
                prompts_list_changed=bool(caps and caps.prompts and caps.prompts.list_changed),
                resources_list_changed=bool(caps and caps.resources and caps.resources.list_changed),
            ) as subscription:
                async for event in subscription:
                    method = methods.get(type(event))
                    if method is not None:
                        await self._bridge.upstream_notification(self, method, None)
        except (MCPError, ListenNotSupportedError, SubscriptionLost) as exc:
            logger.info("server %s: no change notifications (%s)", self.name, exc)

    async def subscribe(self, uri: str) -> None:
        """Hear of changes to `uri`: `resources/subscribe`, or in the stateless era a listen stream."""
        if not self.modern:
            await self.request("resources/subscribe", {"uri": uri})
            return
        if self._tg is None or self._session is None:
            raise self.unavailable()
        if uri not in self._resource_streams:
            self._resource_streams[uri] = scope = anyio.CancelScope()
            await self._tg.start(self._listen_resource, self._session, uri, scope)

    async def unsubscribe(self, uri: str) -> None:
        if not self.modern:
            await self.request("resources/unsubscribe", {"uri": uri})
            return
        scope = self._resource_streams.pop(uri, None)
        if scope is not None:
            scope.cancel()

    async def _listen_resource(
        self,
        session: ClientSession,
        uri: str,
        scope: anyio.CancelScope,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        started = False
        with scope:
            try:
                async with listen(session, resource_subscriptions=[uri]) as subscription:
                    task_status.started()
                    started = True
                    async for event in subscription:
                        if isinstance(event, ResourceUpdated):
                            await self._bridge.upstream_notification(
                                self, "notifications/resources/updated", {"uri": event.uri}
                            )
            except (MCPError, ListenNotSupportedError, SubscriptionLost) as exc:
                logger.info("server %s: subscription to %s ended (%s)", self.name, uri, exc)
        if not started:
            task_status.started()
        if self._resource_streams.get(uri) is scope:
            del self._resource_streams[uri]

    @property
    def modern(self) -> bool:
        """Speaks the stateless era: its input-required results can pass through to such clients."""
        return self._envelope is not None

    def _session_for(self, dispatcher: JSONRPCDispatcher[Any], caps: types.ClientCapabilities) -> ClientSession:
        return ClientSession(
            dispatcher=dispatcher,
            sampling_callback=self._on_sampling if caps.sampling is not None else None,
            elicitation_callback=self._on_elicitation if caps.elicitation is not None else None,
            list_roots_callback=self._on_roots if caps.roots is not None else None,
            message_handler=self._on_message,
            client_info=types.Implementation(name="toolreel", version=__version__),
        )

    def _transport(self, lost: anyio.Event) -> contextlib.AbstractAsyncContextManager[tuple[Any, Any, FastLane | None]]:
        cfg = self.config
        if cfg.transport == "stdio":
            spawned = prespawn.take(self.name)
            if spawned is not None:
                self._stderr = spawned.stderr
                process = spawned.process
            else:
                if self._stderr is None:
                    self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8")  # noqa: SIM115 - lives with us
                self._stderr.seek(0)
                self._stderr.truncate()
                process = prespawn.spawn(cfg, self._stderr)
            return open_stdio_upstream(process, lost, self._log_queued)
        from toolreel.upstreams.http_transport import open_http  # with the first HTTP server: httpx2 loads then

        return open_http(cfg, lost, self._needs_sign_in)

    async def refresh(self, *kinds: str) -> None:
        """Re-read the upstream's lists (all, or the given kinds) and tell the bridge."""
        caps = self.capabilities
        if caps is None:
            return
        wanted = set(kinds or ("tools", "resources", "prompts"))
        if "tools" in wanted and caps.tools is not None:
            tools = await self._list_all("tools/list", "tools")
            policy = self.config.policy
            self.listing.tools = [t for t in tools if policy.shows(str(t.get("name")))]
        if "resources" in wanted and caps.resources is not None:
            self.listing.resources = await self._list_all("resources/list", "resources")
            self.listing.resource_templates = await self._list_all("resources/templates/list", "resourceTemplates")
        if "prompts" in wanted and caps.prompts is not None:
            self.listing.prompts = await self._list_all("prompts/list", "prompts")

    async def _list_all(self, method: str, key: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(PAGE_LIMIT):
            page = await self.request(method, {"cursor": cursor} if cursor else None, starting=True)
            items.extend(page.get(key) or [])
            cursor = page.get("nextCursor")
            if not cursor:
                break
        return items

    def _set_state(self, state: UpstreamState, error: str | None) -> None:
        self.state = state
        self.last_error = error
        if state is UpstreamState.READY:
            self.sign_in = None
        if state is UpstreamState.FAILED:
            self.listing = Listing()
        self._bridge.upstream_changed(self)

    def _describe_failure(self, exc: BaseException) -> str:
        needed = sign_in_error(exc)
        if needed is not None:
            self.sign_in = needed
            return str(needed)
        text = _describe(exc)
        tail = self.stderr_tail()
        return f"{text} (stderr: {tail[-500:]})" if tail else text

    # server -> client ---------------------------------------------------------------
    async def _on_sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        return await self._forward(types.CreateMessageResult, "sampling/createMessage", params)

    async def _on_elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        return await self._forward(types.ElicitResult, "elicitation/create", params)

    async def _on_roots(self, context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        return await self._forward(types.ListRootsResult, "roots/list", None)

    async def _forward(self, result_type: type[_ResultT], method: str, params: Any) -> _ResultT | types.ErrorData:
        raw = params.model_dump(by_alias=True, mode="json", exclude_none=True) if params is not None else {}
        try:
            result = await self._bridge.upstream_request(self, method, raw)
        except MCPError as exc:
            return types.ErrorData(code=exc.code, message=exc.message, data=exc.data)
        return result_type.model_validate(result)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            logger.debug("server %s: transport error: %s", self.name, message)
            return
        root = getattr(message, "root", message)
        dumped = root.model_dump(by_alias=True, mode="json", exclude_none=True)
        method = dumped.get("method")
        try:
            if isinstance(method, str):
                await self._bridge.upstream_notification(self, method, dumped.get("params"))
        finally:
            if method == "notifications/message" and self._logs_in_transit:
                self._logs_in_transit -= 1
                if not self._logs_in_transit:
                    self._logs_settled.set()

    def _log_queued(self) -> None:
        if not self._logs_in_transit:
            self._logs_settled = anyio.Event()
        self._logs_in_transit += 1

    async def settle(self) -> None:
        """Wait (briefly) for logs read before a response to reach the bridge: responses on the
        fast lane arrive sooner than notifications, and a call's logs belong to its caller."""
        if self._logs_in_transit:
            with anyio.move_on_after(SETTLE_LIMIT) as late:
                await self._logs_settled.wait()
            if late.cancelled_caught:  # a log the session dropped (malformed): stop waiting for it
                self._logs_in_transit = 0
                self._logs_settled.set()


def _trace_headers() -> dict[str, str]:
    carrier: dict[str, Any] = {}
    tracing.inject(carrier)
    return {key: str(value) for key, value in carrier.items()}


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        text = f"did not finish starting within {START_TIMEOUT:g} s"
    elif isinstance(exc, UpstreamError):
        text = str(exc)
    elif isinstance(exc, BaseExceptionGroup):
        text = "; ".join(_describe(e) for e in exc.exceptions)
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text
