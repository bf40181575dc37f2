"""Running the gateway: over stdio (the default) or streamable HTTP at `/mcp`.

Both run the hub and the front in one task group; SIGTERM, SIGINT and the end of stdin
all unwind it, which closes every upstream (on SIGKILL the upstreams' keeper ends them).
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio
import anyio.abc
import mcp_types as types
from mcp.server.runner import serve_dual_era_loop
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolreel.core import tracing
from toolreel.core.errors import ConfigError
from toolreel.gateway.front import Front
from toolreel.gateway.hook import ToolHook
from toolreel.gateway.links import CLIENT_HEADER, IDLE_GROUP_SECONDS
from toolreel.gateway.screen import screen_client_message
from toolreel.gateway.stdio import serve_stdio_streams
from toolreel.upstreams.config import GatewayConfig
from toolreel.upstreams.hub import Hub, open_hub
from toolreel.upstreams.wire import DEFAULT_MAX_BODY_MB, BadMessage, encode_json, error_response

if TYPE_CHECKING:
    from toolreel.ui import UiBackend

__all__ = ["HttpOptions", "parse_http", "run_gateway", "run_web_view"]

logger = logging.getLogger("toolreel.serve")

LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
MIB = 1024 * 1024
SOCKET_BACKLOG = 2048  # uvicorn's default
WILDCARD = {"0.0.0.0", "::", ""}
CLIENT_COOKIE = "toolreel_client"
# Connections remembered for clients that keep no cookie; the oldest are forgotten first.


@dataclass(frozen=True, slots=True)
class HttpOptions:
    host: str
    port: int
    token: str | None = None  # the first --token-env's: the web view's
    ui: bool = True  # the web view at /ui/ (`--no-ui` turns it off)
    max_body: int = int(DEFAULT_MAX_BODY_MB * MIB)
    tokens: tuple[str, ...] = ()  # every --token-env's: one per client (or team), each its own recordings


def parse_http(
    value: str,
    token_env: str | Sequence[str] | None,
    *,
    ui: bool = True,
    max_body_mb: float = DEFAULT_MAX_BODY_MB,
) -> HttpOptions:
    host, sep, port_text = value.rpartition(":")
    if not sep:
        host, port_text = "127.0.0.1", value
    try:
        port = int(port_text)
    except ValueError:
        raise ConfigError(f"--http takes [HOST:]PORT, not {value!r}", path="--http") from None
    tokens = _tokens([token_env] if isinstance(token_env, str) else token_env or [])
    if not 0 < max_body_mb <= 4096:
        raise ConfigError(
            f"--max-body-mb takes a size in MiB above 0 and up to 4096, not {max_body_mb:g}", path="--max-body-mb"
        )
    return HttpOptions(
        host=host.strip("[]") or "127.0.0.1",
        port=port,
        token=tokens[0] if tokens else None,
        ui=ui,
        max_body=int(max_body_mb * MIB),
        tokens=tokens,
    )


def _tokens(names: Sequence[str]) -> tuple[str, ...]:
    """The tokens of `--token-env VAR` (repeated, or `VAR1,VAR2`): each must be set, and unique (a token
    names whose recordings a client sees: two clients sharing one would share them unknowingly)."""
    found: dict[str, str] = {}
    for name in (part.strip() for names_given in names for part in names_given.split(",")):
        if not name:
            continue
        value = os.environ.get(name)
        if not value:
            raise ConfigError(f"environment variable {name} (from --token-env) is not set", path="--token-env")
        if value in found.values():
            twin = next(other for other, token in found.items() if token == value)
            raise ConfigError(f"{name} and {twin} hold the same token; give each client its own", path="--token-env")
        found[name] = value
    return tuple(found.values())


def _gil_interval() -> None:
    """Background threads (the recording writer, store calls) hand the GIL back to the event
    loop within 0.5 ms instead of Python's default 5 ms: a forwarded call takes less than that."""
    sys.setswitchinterval(0.0005)


async def run_gateway(
    config: GatewayConfig,
    *,
    http: HttpOptions | None = None,
    prefix: bool = True,
    hook_factory: Callable[[Hub], ToolHook] | None = None,
    on_started: Callable[[Front], Awaitable[None]] | None = None,
) -> None:
    _gil_interval()
    tracing.configure()  # OTEL_* only; without the SDK nothing changes
    async with anyio.create_task_group() as tg:
        tg.start_soon(_cancel_on_signal, tg.cancel_scope)
        async with open_hub(config, prefix=prefix, lone_client=http is None) as hub:
            front = Front(hub, hook=hook_factory(hub) if hook_factory else None)
            web = _web_backend(front) if http is not None and http.ui else None  # before the hook runs its services
            await tg.start(front.hook.run)
            await tg.start(front.run)
            if config.source is not None:  # `serve --config`: hot reload
                from toolreel.upstreams.watch import watch_config

                await tg.start(watch_config, hub, config.source)
            if on_started is not None:
                await on_started(front)
            if http is None:
                await _serve_stdio(front)
            else:
                await _serve_http(front, http, web)
        tg.cancel_scope.cancel()


async def _cancel_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for signum in signals:
            logger.info("received %s; stopping", signal.Signals(signum).name)
            scope.cancel()
            return


async def _serve_stdio(front: Front) -> None:
    async with serve_stdio_streams(front.fast_call) as (read, write), front.server.lifespan(front.server) as state:
        # No fixed init options: the handshake answers with what the upstreams said by then.
        await serve_dual_era_loop(front.server, read, write, lifespan_state=state, init_options=None)


def _web_backend(front: Front) -> UiBackend | None:
    from toolreel.gateway.management import GatewayHook

    if not isinstance(front.hook, GatewayHook):
        return None  # a bare pipe has no store to show
    from toolreel.gateway.web import GatewayUiBackend

    return GatewayUiBackend(front.hook)


def _ui_apps(backend: UiBackend | None, options: HttpOptions) -> list[Starlette]:
    if backend is None:
        return []
    from toolreel.ui import ui_app

    return [ui_app(backend, token=options.token)]


async def _serve_http(front: Front, options: HttpOptions, web: UiBackend | None = None) -> None:
    from toolreel.gateway import http_escape

    http_escape.install()

    manager = StreamableHTTPSessionManager(
        app=front.server,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),  # _Guard does it
        max_request_body_size=options.max_body,  # _Guard refuses larger bodies before reading them
        session_idle_timeout=IDLE_GROUP_SECONDS,  # the session goes with the client's link (Front._expire_idle)
    )
    ui = _ui_apps(web, options)
    app = Starlette(routes=[Mount("/mcp", app=StreamableHTTPASGIApp(manager)), *(Mount("/ui", app=u) for u in ui)])
    async with manager.run():
        await _listen(app, options, "/mcp", ui, on_deleted=lambda session_id: front.forget(f"http:{session_id}"))


async def run_web_view(options: HttpOptions, backend: UiBackend) -> None:
    """`toolreel ui`: the web view alone, over a store (same credentials and Origin rules)."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(_cancel_on_signal, tg.cancel_scope)
        ui = _ui_apps(backend, options)
        await _listen(Starlette(routes=[Mount("/ui", app=u) for u in ui]), options, None, ui)
        tg.cancel_scope.cancel()


async def _listen(
    app: ASGIApp,
    options: HttpOptions,
    mcp_path: str | None,
    ui: list[Starlette],
    on_deleted: Callable[[str], None] | None = None,
) -> None:
    import uvicorn  # only HTTP mode pays for the web server

    guarded = _Guard(app, options, on_deleted=on_deleted)
    config = uvicorn.Config(
        guarded, host=options.host, port=options.port, log_level="warning", lifespan="off", access_log=False
    )
    server = uvicorn.Server(config)
    setattr(server, "install_signal_handlers", lambda: None)  # noqa: B010 - our task group owns signals
    # Bind first so the real port (with --http 0) can be announced before anyone connects.
    family = socket.AF_INET6 if ":" in options.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((options.host, options.port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {options.host}:{options.port}: {exc.strerror}", path="--http") from None
    port = sock.getsockname()[1]
    host = f"[{options.host}]" if family == socket.AF_INET6 else options.host
    # Listening before the announcement: from the moment it is printed, connections queue in the kernel
    # (uvicorn starts accepting them a moment later) instead of being refused.
    sock.listen(SOCKET_BACKLOG)
    if mcp_path is not None:
        print(f"toolreel: serving streamable HTTP at http://{host}:{port}{mcp_path}", file=sys.stderr, flush=True)
    if ui:
        login = "?token=<token>" if options.token else ""
        print(f"toolreel: web view at http://{host}:{port}/ui/{login}", file=sys.stderr, flush=True)
    try:
        await server.serve(sockets=[sock])
    finally:
        server.should_exit = True
        sock.close()
        with anyio.CancelScope(shield=True):
            for web_view in ui:  # open pages' live streams end as finished responses, not cut ones
                await web_view.state.stop_streams()


class _Guard:
    """Refuses foreign Origins and Hosts (DNS rebinding), with --token-env missing bearer tokens, bodies
    over --max-body-mb (before reading them), and messages the SDK would misread (see `screen`); tells
    stateless clients apart (`_ClientIds`)."""

    def __init__(self, app: ASGIApp, options: HttpOptions, *, on_deleted: Callable[[str], None] | None = None) -> None:
        self.app = app
        self.options = options
        self.clients = _ClientIds()
        host = options.host
        self._origins = LOOPBACK if host in LOOPBACK else LOOPBACK | {host}
        # Bound to every interface on purpose: any name of the machine may be used to reach it.
        self._hosts = None if host in WILDCARD else self._origins
        self.on_deleted = on_deleted  # a client ended its session (DELETE with its Mcp-Session-Id)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            problem = self._problem(headers, scope)
            if problem is not None:
                status, message = problem
                await _plain(send, status, message)
                return
            scope, send = self.clients.identify(scope, headers, send)
            if scope["path"] == "/mcp":  # Starlette's Mount would redirect /mcp to /mcp/
                scope = {**scope, "path": "/mcp/"}
            if scope["method"] == "POST" and scope["path"].startswith("/mcp/"):  # the web view posts its own JSON
                body = await self._screened_body(headers, receive, send)
                if body is None:
                    return
                receive = _replay(body, receive)
            session_id = headers.get("mcp-session-id")
            if scope.get("method") == "DELETE" and session_id and self.on_deleted is not None:
                await self._delete(scope, receive, send, session_id, self.on_deleted)
                return
        await self.app(scope, receive, send)

    async def _delete(
        self, scope: Scope, receive: Receive, send: Send, session_id: str, on_deleted: Callable[[str], None]
    ) -> None:
        """Pass a DELETE on; once the session is ended (a 2xx answer), release what was kept for it."""
        statuses: list[int] = []

        async def watched(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                statuses.append(int(message["status"]))
            await send(message)

        await self.app(scope, receive, watched)
        if statuses and 200 <= statuses[0] < 300:
            on_deleted(session_id)

    async def _screened_body(self, headers: dict[str, str], receive: Receive, send: Send) -> bytes | None:
        """The POST's body, or None once it has been answered here (too large, malformed, a bad notification)."""
        limit = self.options.max_body
        declared = headers.get("content-length", "")
        body = None if declared.isdigit() and int(declared) > limit else await _read_body(receive, limit)
        if body is None:
            message = f"the request body is larger than {limit / MIB:g} MiB; start toolreel with a larger --max-body-mb"
            await _json(send, 413, error_response(None, types.INVALID_REQUEST, message))
            return None
        verdict = screen_client_message(body)
        if isinstance(verdict, BadMessage):
            await _json(send, 400, verdict.response())
            return None
        if verdict is None:  # a malformed notification: dropped, as it would be on stdio
            await _json(send, 202, None)
            return None
        return body

    def _problem(self, headers: dict[str, str], scope: Scope) -> tuple[int, str] | None:
        origin = headers.get("origin")
        if origin is not None:
            host = urlsplit(origin).hostname or ""  # "null" (sandboxed pages, file://) has none: refused
            if host not in self._origins:
                return 403, f"Origin {origin} is not allowed: toolreel only accepts local origins"
        named = headers.get("host")
        # A page on another site whose name was re-pointed at 127.0.0.1 (DNS rebinding) sends its own
        # name as Host, and no Origin on simple requests: the Host header is what gives it away.
        if self._hosts is not None and named is not None and _hostname(named) not in self._hosts:
            allowed = ", ".join(sorted(self._hosts))
            return 403, f"Host {named} is not allowed: toolreel answers to {allowed} only (DNS rebinding protection)"
        if self.options.tokens and not self._authorized(headers, scope):
            return 401, "missing or wrong bearer token (Authorization: Bearer <token from --token-env>)"
        return None

    def _authorized(self, headers: dict[str, str], scope: Scope) -> bool:
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            # every token compared, so the time taken says nothing of which one (nearly) matched
            matches = [secrets.compare_digest(given.strip().encode(), token.encode()) for token in self.options.tokens]
            if any(matches):
                return True
        path: str = scope["path"]
        if self.options.token and (path == "/ui" or path.startswith("/ui/")):  # a browser: cookie, or ?token=
            from toolreel.ui import ui_authorized

            return ui_authorized(headers, scope.get("query_string", b""), self.options.token)
        return False


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole body, or None as soon as it passes `limit` bytes (the rest is never buffered)."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(parts)  # the client left; the app hears it on its own receive
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands the app the body already read, then the client's own events."""
    pending = True

    async def replay() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _json(send: Send, status: int, message: Any) -> None:
    body = b"" if message is None else encode_json(message)
    headers = [(b"content-length", str(len(body)).encode())]
    if message is not None:
        headers.append((b"content-type", b"application/json"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class _ClientIds:
    """Who a stateless (2026-07-28) client is, over HTTP, where the protocol has no session.

    Each client gets an id: the one in its `toolreel_client` cookie (minted by the gateway on its first
    request; cookie-keeping clients such as the SDK's HTTP client send it back on every request, over any
    connection), else a new one. Never its address and port: a port is reused by the next client, which
    would inherit the recording (and resolve refs into it). The id reaches the MCP layer as the
    `x-toolreel-client` header (one sent by the client is dropped): the recording groups by it.
    """

    def identify(self, scope: Scope, headers: dict[str, str], send: Send) -> tuple[Scope, Send]:
        given = _cookie(headers.get("cookie", ""))
        client = given or secrets.token_hex(16)
        kept = [(k, v) for k, v in scope["headers"] if k != CLIENT_HEADER]
        scope = {**scope, "headers": [*kept, (CLIENT_HEADER, client.encode())]}
        if given == client:
            return scope, send
        cookie = f"{CLIENT_COOKIE}={client}; Path=/mcp; HttpOnly; SameSite=Strict".encode()

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", cookie)]}
            await send(message)

        return scope, send_with_cookie


def _hostname(host_header: str) -> str:
    """`example.test:8080` -> `example.test`, `[::1]:80` -> `::1`."""
    return urlsplit(f"//{host_header}").hostname or ""


def _cookie(header: str) -> str | None:
    """The client id of a `toolreel_client` cookie, if well formed (32 hex digits, as minted)."""
    try:
        morsel = SimpleCookie(header).get(CLIENT_COOKIE)
    except CookieError:
        return None
    value = morsel.value if morsel is not None else ""
    return value if len(value) == 32 and all(c in "0123456789abcdef" for c in value) else None


async def _plain(send: Send, status: int, message: str) -> None:
    body = message.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
