"""Pipe ends handed to event-loop transports, closed exactly once.

asyncio's pipe transports close the object they are given; uvloop's close the descriptor
in libuv and then close the object too. Given a plain file object, uvloop therefore closes
the descriptor twice, and the second close(2) can land on a descriptor another thread has
just been given the same number for (an import in a worker thread then fails with EBADF
halfway through listing a directory). A `PipeEnd` closes its descriptor only when the
running loop's transports do not.
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from collections.abc import Callable
from typing import IO, Any, cast

from toolreel.upstreams.wire import encode_json

__all__ = ["Backlog", "Coalescer", "LineReader", "PipeEnd", "adopt", "json_line"]


def json_line(message: Any) -> bytes:
    """A JSON-RPC message as one newline-delimited line (stdio framing); lone surrogates stay escapes."""
    return encode_json(message) + b"\n"


def _loop_closes_descriptors() -> bool:
    return type(asyncio.get_running_loop()).__module__.partition(".")[0] == "uvloop"


class PipeEnd:
    """A descriptor for `connect_read_pipe` / `connect_write_pipe` that owns it alone."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._closed = False
        self._loop_closes = _loop_closes_descriptors()

    def fileno(self) -> int:
        return self._fd

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if not self._loop_closes:
            os.close(self._fd)

    def __repr__(self) -> str:
        return f"<PipeEnd fd={self._fd}{' closed' if self._closed else ''}>"


def adopt(file: IO[bytes]) -> PipeEnd:
    """Take a file object's descriptor over: the file is closed, a duplicate kept."""
    end = PipeEnd(os.dup(file.fileno()))
    file.close()
    return end


class Coalescer:
    """Writes made during one turn of the event loop leave in one system call.

    Under load several responses (or requests) finish in the same turn; one write(2) for
    all of them instead of one each is most of what a forwarded call costs the gateway's
    CPU. Order is kept: everything written to a pipe goes through its one coalescer.
    """

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._parts: list[bytes] = []
        self._loop = asyncio.get_running_loop()

    def write(self, data: bytes, *, alone: bool = False) -> None:
        """Queue `data` for this turn's write; `alone` (the caller's is the only call in
        flight, so nothing else will join it this turn) writes it now when nothing is queued
        before it: a sequential call then skips a turn of the loop each way."""
        if not self._parts:
            if alone and not self._writer.transport.is_closing():
                self._writer.write(data)
                return
            self._loop.call_soon(self.flush)
        self._parts.append(data)

    def flush(self) -> None:
        if not self._parts:
            return
        parts, self._parts = self._parts, []
        if self._writer.transport.is_closing():
            return  # the other end is gone; whoever waits on an answer hears it from the reader
        self._writer.write(parts[0] if len(parts) == 1 else b"".join(parts))

    async def drain(self) -> None:
        """Write what is pending now and wait for the pipe to take it (flow control)."""
        self.flush()
        await self._writer.drain()


class LineReader(asyncio.Protocol):
    """Hands each newline-terminated line to `on_line` in the callback that read it.

    A forwarded call's message is dealt with in the loop turn its bytes arrive in, with no
    hop to a reading task (a `StreamReader` wakes one per message). `on_overrun` hears of a
    line longer than `limit` (dropped up to its newline), `on_end` of the end of input (once).
    """

    def __init__(
        self, on_line: Callable[[bytes], None], on_end: Callable[[], None], on_overrun: Callable[[], None], limit: int
    ) -> None:
        self._on_line, self._on_end, self._on_overrun, self._limit = on_line, on_end, on_overrun, limit
        self._parts: list[bytes] = []
        self._size = 0
        self._skipping = False  # inside a line that was too long: drop bytes up to its newline
        self._ended = False
        self.transport: asyncio.ReadTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.ReadTransport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            line = data[start : end + 1]
            start = end + 1
            if self._skipping:
                self._skipping = False
                continue
            if self._parts:
                self._parts.append(line)
                line = b"".join(self._parts)
                self._parts, self._size = [], 0
            if len(line) > self._limit:
                self._on_overrun()
                continue
            self._on_line(line)
        if start < len(data) and not self._skipping:
            self._parts.append(data[start:])
            self._size += len(data) - start
            if self._size > self._limit:
                self._parts, self._size, self._skipping = [], 0, True
                self._on_overrun()

    def eof_received(self) -> bool:
        self._end()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._end()

    def _end(self) -> None:
        if self._ended:
            return
        self._ended = True
        if self._parts and not self._skipping:  # a last line without its newline still counts
            line, self._parts = b"".join(self._parts), []
            self._on_line(line)
        self._on_end()


class Backlog:
    """What a `LineReader` callback cannot finish itself, in order, for a task that can wait.

    Reading pauses while more than HIGH items wait and resumes below LOW: a slow consumer
    holds the sender back through the pipe rather than filling memory.
    """

    HIGH = 64
    LOW = 16

    def __init__(self, reader: LineReader) -> None:
        self._reader = reader
        self._items: deque[Any] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._ended = False
        self._paused = False

    @property
    def pending(self) -> bool:
        return bool(self._items)

    def put(self, item: Any) -> None:
        self._items.append(item)
        self._wake()
        if len(self._items) > self.HIGH and not self._paused and self._reader.transport is not None:
            self._paused = True
            self._reader.transport.pause_reading()

    def end(self) -> None:
        self._ended = True
        self._wake()

    async def get(self) -> Any:
        """The next item; None once the input has ended and everything was taken."""
        while not self._items:
            if self._ended:
                return None
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        item = self._items.popleft()
        if self._paused and len(self._items) < self.LOW and self._reader.transport is not None:
            self._paused = False
            self._reader.transport.resume_reading()
        return item

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
