"""Running the gateway: over stdio (the default) or streamable HTTP at `/mcp`.

Both run the hub and the front in one task group; SIGTERM, SIGINT and the end of stdin
all unwind it, which closes every upstream (and `setpriv --pdeathsig` covers SIGKILL).
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import socket
import sys
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from urllib.parse import urlsplit

import anyio
import anyio.abc
from mcp.server.runner import serve_dual_era_loop
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolreel.core.errors import ConfigError
from toolreel.gateway.front import Front, ToolHook
from toolreel.gateway.links import CLIENT_HEADER
from toolreel.gateway.stdio import serve_stdio_streams
from toolreel.upstreams.config import GatewayConfig
from toolreel.upstreams.hub import Hub, open_hub

__all__ = ["HttpOptions", "parse_http", "run_gateway"]

logger = logging.getLogger("toolreel.serve")

LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
WILDCARD = {"0.0.0.0", "::", ""}
CLIENT_COOKIE = "toolreel_client"
# Connections remembered for clients that keep no cookie; the oldest are forgotten first.
_CONNECTIONS_KEPT = 4096


@dataclass(frozen=True, slots=True)
class HttpOptions:
    host: str
    port: int
    token: str | None = None


def parse_http(value: str, token_env: str | None) -> HttpOptions:
    host, sep, port_text = value.rpartition(":")
    if not sep:
        host, port_text = "127.0.0.1", value
    try:
        port = int(port_text)
    except ValueError:
        raise ConfigError(f"--http takes [HOST:]PORT, not {value!r}", path="--http") from None
    token = None
    if token_env:
        token = os.environ.get(token_env)
        if not token:
            raise ConfigError(f"environment variable {token_env} (from --token-env) is not set", path="--token-env")
    return HttpOptions(host=host.strip("[]") or "127.0.0.1", port=port, token=token)


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
    async with anyio.create_task_group() as tg:
        tg.start_soon(_cancel_on_signal, tg.cancel_scope)
        async with open_hub(config, prefix=prefix, lone_client=http is None) as hub:
            front = Front(hub, hook=hook_factory(hub) if hook_factory else None)
            await tg.start(front.hook.run)
            await tg.start(front.run)
            if on_started is not None:
                await on_started(front)
            if http is None:
                await _serve_stdio(front)
            else:
                await _serve_http(front, http)
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


async def _serve_http(front: Front, options: HttpOptions) -> None:
    import uvicorn  # only HTTP mode pays for the web server

    manager = StreamableHTTPSessionManager(
        app=front.server,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),  # _Guard does it
        max_request_body_size=256 * 1024 * 1024,  # large arguments are legitimate, as on stdio
    )
    app = Starlette(routes=[Mount("/mcp", app=StreamableHTTPASGIApp(manager))])
    guarded = _Guard(app, options)
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
    print(f"toolreel: serving streamable HTTP at http://{host}:{port}/mcp", file=sys.stderr, flush=True)
    async with manager.run():
        try:
            await server.serve(sockets=[sock])
        finally:
            server.should_exit = True
            sock.close()


class _Guard:
    """Refuses foreign Origins and Hosts (DNS rebinding) and, with --token-env, missing bearer tokens;
    tells stateless clients apart (`_ClientIds`)."""

    def __init__(self, app: ASGIApp, options: HttpOptions) -> None:
        self.app = app
        self.options = options
        self.clients = _ClientIds()
        host = options.host
        self._origins = LOOPBACK if host in LOOPBACK else LOOPBACK | {host}
        # Bound to every interface on purpose: any name of the machine may be used to reach it.
        self._hosts = None if host in WILDCARD else self._origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            problem = self._problem(headers)
            if problem is not None:
                status, message = problem
                await _plain(send, status, message)
                return
            scope, send = self.clients.identify(scope, headers, send)
            if scope["path"] == "/mcp":  # Starlette's Mount would redirect /mcp to /mcp/
                scope = {**scope, "path": "/mcp/"}
        await self.app(scope, receive, send)

    def _problem(self, headers: dict[str, str]) -> tuple[int, str] | None:
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
        if self.options.token is not None:
            scheme, _, token = headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not secrets.compare_digest(
                token.strip().encode(), self.options.token.encode()
            ):
                return 401, "missing or wrong bearer token (Authorization: Bearer <token from --token-env>)"
        return None


class _ClientIds:
    """Who a stateless (2026-07-28) client is, over HTTP, where the protocol has no session.

    Each client gets an id: the one in its `toolreel_client` cookie (minted by the gateway on its first
    request; cookie-keeping clients such as the SDK's HTTP client send it back on every request, over any
    connection), else the id already given to its TCP connection. The id reaches the MCP layer as the
    `x-toolreel-client` header (one sent by the client is dropped): the recording groups by it.
    """

    def __init__(self) -> None:
        self._by_connection: OrderedDict[object, str] = OrderedDict()

    def identify(self, scope: Scope, headers: dict[str, str], send: Send) -> tuple[Scope, Send]:
        given = _cookie(headers.get("cookie", ""))
        peer = tuple(scope.get("client") or ())
        client = given or self._by_connection.get(peer) or secrets.token_hex(16)
        if peer:
            self._by_connection[peer] = client
            self._by_connection.move_to_end(peer)
            while len(self._by_connection) > _CONNECTIONS_KEPT:
                self._by_connection.popitem(last=False)
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
