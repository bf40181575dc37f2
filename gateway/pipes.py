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
import json
import os
from typing import IO, Any

__all__ = ["PipeEnd", "adopt", "json_line"]

# One encoder for every message on the fast lanes: `json.dumps` with any option builds a new
# encoder per call, a microsecond of each forwarded message's path.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def json_line(message: Any) -> bytes:
    """A JSON-RPC message as one newline-delimited line (stdio framing)."""
    return _ENCODER.encode(message).encode() + b"\n"


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

    def write(self, data: bytes) -> None:
        if not self._parts:
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
