"""A stdio upstream transport with a fast lane for forwarded calls.

It yields the stream pair the SDK's `ClientSession` expects (so the handshake, callbacks
and notifications work as usual) plus a `FastLane`: requests sent on the lane are
written straight to the child's stdin and their responses resolve a future straight
from the stdout reader, skipping the task hops of the generic dispatcher. Responses are
told apart by id: lane ids are strings that the SDK (integer ids) never uses.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from toolreel.upstreams import keeper
from toolreel.upstreams.pipes import Backlog, Coalescer, LineReader, adopt, json_line
from toolreel.upstreams.wire import BadMessage, dump_message, parse_line

__all__ = ["ConnectionLost", "FastLane", "open_stdio_upstream"]

LINE_LIMIT = 256 * 1024 * 1024
STOP_GRACE = 2.0


class ConnectionLost(MCPError):
    """The pipe to the server closed under a request: a transport loss. A server's own error answer
    may carry the same code (-32000, JSON-RPC's generic server error), so the class says which it is."""

    def __init__(self) -> None:
        super().__init__(code=types.CONNECTION_CLOSED, message="Connection closed")


class _Expired(Exception):
    """A lane request's timeout passed."""


def _expire(future: asyncio.Future[dict[str, Any]]) -> None:
    if not future.done():
        future.set_exception(_Expired())


class FastLane:
    def __init__(self, writer: Coalescer) -> None:
        self._writer = writer
        self._ids = itertools.count(1)
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.closed = False

    async def request(self, method: str, params: Mapping[str, Any] | None, timeout: float) -> dict[str, Any]:
        """Send one request; its result dict, or MCPError (error response, timeout, closed)."""
        if self.closed:
            raise ConnectionLost()
        request_id = f"tr-{next(self._ids)}"
        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._pending[request_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        # A timer handle, not a cancel scope: this is every forwarded call's path, and the
        # deadline only ever fails the future (the caller's own cancellation still works).
        timer = loop.call_later(timeout, _expire, future)
        try:
            self._writer.write(json_line(message), alone=len(self._pending) == 1)
            return await future
        except _Expired:
            await self._cancel(request_id, f"timed out after {timeout:g}s")
            raise MCPError(code=types.REQUEST_TIMEOUT, message=f"Request {method!r} timed out") from None
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._cancel(request_id, "caller cancelled")
            raise
        finally:
            timer.cancel()
            self._pending.pop(request_id, None)

    async def _cancel(self, request_id: str, reason: str) -> None:
        if self.closed:
            return
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": reason},
        }
        with contextlib.suppress(ConnectionError, RuntimeError):
            self._writer.write(json_line(note))

    def resolve(self, message: dict[str, Any]) -> bool:
        """Deliver a response addressed to the lane; False if it is not one of ours."""
        future = self._pending.get(message.get("id"))  # type: ignore[arg-type]
        if future is None:
            return False
        if not future.done():
            if "error" in message:
                error = message["error"] if isinstance(message["error"], dict) else {}
                future.set_exception(
                    MCPError(
                        code=error.get("code", types.INTERNAL_ERROR),
                        message=error.get("message", ""),
                        data=error.get("data"),
                    )
                )
            else:
                future.set_result(message.get("result") or {})
        return True

    def close(self) -> None:
        self.closed = True
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionLost())


@contextlib.asynccontextmanager
async def open_stdio_upstream(
    process: subprocess.Popen[bytes], lost: anyio.Event, on_log: Callable[[], None] | None = None
) -> AsyncIterator[tuple[Any, Any, FastLane]]:
    """Talk MCP to a spawned process over its pipes; stop it (and its group) on exit."""
    assert process.stdin is not None and process.stdout is not None
    loop = asyncio.get_running_loop()
    lane: FastLane | None = None

    def on_line(line: bytes) -> None:
        # A response to the lane resolves its call here, in the turn it was read in; the rest
        # (and anything read while earlier messages still wait) goes through the session in order.
        if not line.strip():
            return
        try:
            raw = parse_line(line)
        except BadMessage as bad:
            backlog.put(ValueError(f"upstream sent a line toolreel cannot take ({bad.message}): {line[:200]!r}"))
            return
        if not backlog.pending and lane is not None and _lane_response(raw) and lane.resolve(raw):
            return
        if on_log is not None and isinstance(raw, dict) and raw.get("method") == "notifications/message":
            on_log()  # a log takes the long way round; the lane's responses must not overtake it
        backlog.put(raw)

    def on_overrun() -> None:  # a line past 256 MiB: the server is not speaking MCP; stop
        if reader.transport is not None:
            reader.transport.close()

    reader = LineReader(on_line, lambda: backlog.end(), on_overrun, LINE_LIMIT)
    backlog = Backlog(reader)
    try:
        out_end, in_end = adopt(process.stdout), adopt(process.stdin)
        read_transport, _ = await loop.connect_read_pipe(lambda: reader, out_end)
        write_transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, in_end)
    except BaseException:  # cleanup only, re-raised: a process we cannot talk to is stopped
        with anyio.CancelScope(shield=True):
            await _stop(process)
        raise
    stdin = asyncio.StreamWriter(write_transport, protocol, None, loop)
    out = Coalescer(stdin)
    lane = FastLane(out)
    to_session, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_server, from_session = anyio.create_memory_object_stream[SessionMessage](0)

    async def read() -> None:
        assert lane is not None
        async with to_session:
            while (item := await backlog.get()) is not None:
                await _route(item, lane, to_session)
        lane.close()
        lost.set()

    async def write() -> None:
        async with from_session:
            async for session_message in from_session:
                try:
                    out.write(dump_message(session_message.message))
                    await out.drain()
                except (ConnectionError, RuntimeError):
                    return

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            tg.start_soon(write)
            try:
                yield from_server, to_server, lane
            finally:
                tg.cancel_scope.cancel()
    finally:
        lane.close()
        with anyio.CancelScope(shield=True):
            write_transport.close()
            await _stop(process)
            read_transport.close()


def _lane_response(raw: Any) -> bool:
    return isinstance(raw, dict) and isinstance(raw.get("id"), str) and "method" not in raw


async def _route(item: Any, lane: FastLane, to_session: Any) -> None:
    """One message read from the server (or an error about a line), in the order read."""
    if isinstance(item, Exception):
        await to_session.send(item)
        return
    if _lane_response(item) and lane.resolve(item):
        return
    try:
        message = types.jsonrpc_message_adapter.validate_python(item, by_name=False)
    except Exception as exc:  # a malformed message is reported to the session, not fatal
        await to_session.send(exc)
        return
    await to_session.send(SessionMessage(message))


async def _stop(process: subprocess.Popen[bytes]) -> None:
    """Close stdin, give the server a moment to exit, then SIGTERM, then SIGKILL (its group); then end
    whatever the server left behind in its process group (`sh -c 'helper & exec server'`)."""
    with contextlib.suppress(OSError):
        if process.stdin is not None:
            process.stdin.close()
    for signum in (None, signal.SIGTERM, signal.SIGKILL):
        if signum is not None:
            _signal_group(process.pid, signum)
        with anyio.move_on_after(STOP_GRACE):
            # an abandoned wait() returns once the kill below lands
            await anyio.to_thread.run_sync(process.wait, abandon_on_cancel=True)
            break
    # The group outlives its leader while a member runs. The server was asked to stop and has: what it
    # left in its group (a background helper) is an orphan now, and is killed.
    _signal_group(process.pid, signal.SIGKILL)
    keeper.forget(process.pid)


def _signal_group(pgid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)
