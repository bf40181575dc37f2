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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
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

from toolreel.core.errors import ConfigError
from toolreel.gateway.front import Front, ToolHook
from toolreel.gateway.screen import screen_client_message
from toolreel.gateway.stdio import serve_stdio_streams
from toolreel.upstreams.config import GatewayConfig
from toolreel.upstreams.hub import Hub, open_hub
from toolreel.upstreams.wire import DEFAULT_MAX_BODY_MB, BadMessage, encode_json, error_response

__all__ = ["HttpOptions", "parse_http", "run_gateway"]

logger = logging.getLogger("toolreel.serve")

LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
MIB = 1024 * 1024
SOCKET_BACKLOG = 2048  # uvicorn's default


@dataclass(frozen=True, slots=True)
class HttpOptions:
    host: str
    port: int
    token: str | None = None
    max_body: int = int(DEFAULT_MAX_BODY_MB * MIB)


def parse_http(value: str, token_env: str | None, *, max_body_mb: float = DEFAULT_MAX_BODY_MB) -> HttpOptions:
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
    if not 0 < max_body_mb <= 4096:
        raise ConfigError(
            f"--max-body-mb takes a size in MiB above 0 and up to 4096, not {max_body_mb:g}", path="--max-body-mb"
        )
    return HttpOptions(host=host.strip("[]") or "127.0.0.1", port=port, token=token, max_body=int(max_body_mb * MIB))


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

    from toolreel.gateway import http_escape

    http_escape.install()

    manager = StreamableHTTPSessionManager(
        app=front.server,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),  # _Guard does it
        max_request_body_size=options.max_body,  # _Guard refuses larger bodies before reading them
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
    # Listening before the announcement: from the moment it is printed, connections queue in the kernel
    # (uvicorn starts accepting them a moment later) instead of being refused.
    sock.listen(SOCKET_BACKLOG)
    print(f"toolreel: serving streamable HTTP at http://{host}:{port}/mcp", file=sys.stderr, flush=True)
    async with manager.run():
        try:
            await server.serve(sockets=[sock])
        finally:
            server.should_exit = True
            sock.close()


class _Guard:
    """Refuses foreign Origins (DNS rebinding), with --token-env missing bearer tokens, bodies over
    --max-body-mb (before reading them), and messages the SDK would misread (see `screen`)."""

    def __init__(self, app: ASGIApp, options: HttpOptions) -> None:
        self.app = app
        self.options = options

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
            if scope["method"] == "POST":
                body = await self._screened_body(headers, receive, send)
                if body is None:
                    return
                receive = _replay(body, receive)
        await self.app(scope, receive, send)

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
