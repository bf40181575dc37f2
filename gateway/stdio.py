"""Serving MCP over this process's stdin/stdout without a thread per line.

The SDK's `stdio_server` reads and writes through worker threads (`anyio.wrap_file`),
which costs more than the rest of a forwarded call. Here the pipes are read and written
by the event loop itself. fd 1 is pointed at stderr while serving so nothing stray
(a print, a child that inherits it) can corrupt the protocol channel; fd 0 at /dev/null.
When stdin/stdout are not pipes, sockets or terminals (a regular file, /dev/null), the SDK transport is used.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import anyio
import anyio.abc
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from toolreel.gateway.screen import screen_client_message
from toolreel.upstreams.pipes import Backlog, Coalescer, LineReader, PipeEnd, json_line
from toolreel.upstreams.wire import BadMessage, dump_message, parse_line, valid_id

__all__ = ["FastCall", "serve_stdio_streams"]

logger = logging.getLogger("toolreel.stdio")

FastCall = Callable[[Mapping[str, Any]], Awaitable[dict[str, Any]]]
"""Answers a `tools/call` (params -> result) without the SDK's server loop."""

LINE_LIMIT = 256 * 1024 * 1024  # one JSON-RPC message per line; large tool results are legitimate


def _pipe_like(fd: int) -> bool:
    """A pipe, a socket or a terminal; not another character device such as /dev/null, which the event
    loop's pipe transports cannot poll (uvloop aborts the process on it)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))


@contextlib.asynccontextmanager
async def serve_stdio_streams(fast_call: FastCall | None = None) -> AsyncIterator[tuple[Any, Any]]:
    if not (_pipe_like(0) and _pipe_like(1)) or os.isatty(0):
        async with stdio_server() as streams:
            yield streams
        return
    in_fd, out_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    os.close(devnull)
    try:
        async with _pipe_streams(os.dup(in_fd), os.dup(out_fd), fast_call) as streams:
            yield streams
    finally:
        os.dup2(out_fd, 1)
        os.dup2(in_fd, 0)
        os.close(out_fd)
        os.close(in_fd)


@contextlib.asynccontextmanager
async def _pipe_streams(in_fd: int, out_fd: int, fast_call: FastCall | None) -> AsyncIterator[tuple[Any, Any]]:
    loop = asyncio.get_running_loop()
    lane: _FastFront | None = None

    def on_line(line: bytes) -> None:
        # A fast call starts in the turn its line was read in, unless earlier lines still wait.
        if not line.strip():
            return
        if not backlog.pending and lane is not None and lane.take(line):
            return
        backlog.put(line)

    def on_overrun() -> None:
        backlog.put(ValueError("a message larger than 256 MiB was dropped"))

    reader = LineReader(on_line, lambda: backlog.end(), on_overrun, LINE_LIMIT)
    backlog = Backlog(reader)
    read_transport, _ = await loop.connect_read_pipe(lambda: reader, PipeEnd(in_fd))
    try:
        write_transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, PipeEnd(out_fd))
    except BaseException:  # cleanup only, re-raised
        read_transport.close()
        raise
    writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
    to_server, from_client = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_client, from_server = anyio.create_memory_object_stream[SessionMessage](0)
    out = Coalescer(writer)
    lane = _FastFront(out, fast_call)

    async def read_lines() -> None:
        assert lane is not None
        async with to_server:
            while (line := await backlog.get()) is not None:
                if isinstance(line, Exception):
                    await to_server.send(line)
                    continue
                if lane.take(line):
                    continue
                message = screen_client_message(line)
                if isinstance(message, BadMessage):
                    out.write(json_line(message.response()))
                elif message is not None:
                    await to_server.send(SessionMessage(message))

    async def write_lines() -> None:
        async with from_server:
            async for session_message in from_server:
                out.write(dump_message(session_message.message))
                await out.drain()

    try:
        async with anyio.create_task_group() as tg:
            await tg.start(lane.serve)
            tg.start_soon(read_lines)
            tg.start_soon(write_lines)
            try:
                yield from_client, to_client
            finally:
                tg.cancel_scope.cancel()
    finally:
        read_transport.close()
        write_transport.close()


class _FastFront:
    """The client half of the fast lane: handshake-era `tools/call` requests without a
    progress token are answered here, straight from the read loop to the pipe.

    Everything else (the handshake, lists, notifications, the stateless era) goes to the
    SDK's server loop. A `notifications/cancelled` naming a fast request cancels it.

    Each call is a task of an asyncio task group held open by `serve`: anyio's `start_soon` builds a
    handle, a cancel scope, an event and a wrapper coroutine per task, about a sixth of the gateway's
    CPU per forwarded call; the call's own cancel scope is all a fast call needs.
    """

    def __init__(self, writer: Coalescer, fast_call: FastCall | None) -> None:
        self.writer = writer
        self.fast_call = fast_call
        self.handshake = False
        self.scopes: dict[Any, anyio.CancelScope] = {}  # by request id: what `notifications/cancelled` cancels
        self._calls: asyncio.TaskGroup | None = None

    async def serve(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Hold the task group the fast calls run in, until cancelled; the calls in flight are cancelled then."""
        async with asyncio.TaskGroup() as calls:
            self._calls = calls
            task_status.started()
            try:
                await anyio.sleep_forever()
            finally:
                self._calls = None

    def take(self, line: bytes) -> bool:
        if self.fast_call is None or self._calls is None:
            return False
        if not self.handshake:
            if b'"initialize"' in line:
                message = _loads(line)
                self.handshake = isinstance(message, dict) and message.get("method") == "initialize"
            return False
        if b'"tools/call"' in line:
            message = _loads(line)
            if _fast_eligible(message):
                self._calls.create_task(self._answer(message))
                return True
        elif b"notifications/cancelled" in line and self.scopes:
            message = _loads(line)
            params = message.get("params") if isinstance(message, dict) else None
            request_id = params.get("requestId") if isinstance(params, dict) else None
            scope = self.scopes.get(request_id) if valid_id(request_id) else None
            if scope is not None:
                scope.cancel()
                return True
        return False

    async def _answer(self, message: dict[str, Any]) -> None:
        assert self.fast_call is not None
        request_id = message["id"]
        response: dict[str, Any] | None = None
        with anyio.CancelScope() as scope:
            self.scopes[request_id] = scope
            try:
                response = {"jsonrpc": "2.0", "id": request_id, "result": await self.fast_call(message["params"])}
            except MCPError as exc:
                error = {"code": exc.code, "message": exc.message}
                if exc.data is not None:
                    error["data"] = exc.data
                response = {"jsonrpc": "2.0", "id": request_id, "error": error}
            except Exception:  # one failed call must not take the read loop down
                logger.exception("tools/call failed inside the gateway")
                response = {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603, "message": "Internal error"}}
            finally:
                self.scopes.pop(request_id, None)
        if response is not None and not scope.cancelled_caught:  # a cancelled request gets no response
            self.writer.write(json_line(response), alone=not self.scopes)


def _loads(line: bytes) -> Any:
    try:
        return parse_line(line)
    except BadMessage:
        return None


def _fast_eligible(message: Any) -> bool:
    if not isinstance(message, dict) or message.get("method") != "tools/call" or not valid_id(message.get("id")):
        return False
    if message.get("jsonrpc") != "2.0":
        return False
    params = message.get("params")
    if not isinstance(params, dict):
        return False
    meta = params.get("_meta")
    # progress needs the SDK's per-request channel; the stateless era its own envelope
    return not (
        isinstance(meta, dict)
        and ("progressToken" in meta or any(k.startswith("io.modelcontextprotocol/") for k in meta))
    )
