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
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.abc
from mcp.server.runner import serve_dual_era_loop
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.types import ASGIApp, Receive, Scope, Send

from toolreel.core.errors import ConfigError
from toolreel.gateway.front import Front, ToolHook
from toolreel.gateway.stdio import serve_stdio_streams
from toolreel.upstreams.config import GatewayConfig
from toolreel.upstreams.hub import Hub, open_hub

__all__ = ["HttpOptions", "parse_http", "run_gateway"]

logger = logging.getLogger("toolreel.serve")

LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


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
    guarded = _Guard(app, options, on_deleted=lambda session_id: front.forget(f"http:{session_id}"))
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
    """Refuses foreign Origins (DNS rebinding) and, with --token-env, missing bearer tokens."""

    def __init__(self, app: ASGIApp, options: HttpOptions, *, on_deleted: Callable[[str], None] | None = None) -> None:
        self.app = app
        self.options = options
        self.on_deleted = on_deleted  # a client ended its session (DELETE with its Mcp-Session-Id)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            problem = self._problem(headers)
            if problem is not None:
                status, message = problem
                await _plain(send, status, message)
                return
            if scope["path"] == "/mcp":  # Starlette's Mount would redirect /mcp to /mcp/
                scope = {**scope, "path": "/mcp/"}
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

    def _problem(self, headers: dict[str, str]) -> tuple[int, str] | None:
        origin = headers.get("origin")
        if origin is not None:
            host = urlsplit(origin).hostname or ""  # "null" (sandboxed pages, file://) has none: refused
            allowed = LOOPBACK if self.options.host in LOOPBACK else LOOPBACK | {self.options.host}
            if host not in allowed:
                return 403, f"Origin {origin} is not allowed: toolreel only accepts local origins"
        if self.options.token is not None:
            scheme, _, token = headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not secrets.compare_digest(
                token.strip().encode(), self.options.token.encode()
            ):
                return 401, "missing or wrong bearer token (Authorization: Bearer <token from --token-env>)"
        return None


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
