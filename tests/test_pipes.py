"""Pipe ends handed to event-loop transports are closed exactly once, under asyncio and uvloop.

uvloop closes a transport's descriptor in libuv and then closes the object it was given; a
second close(2) hits whatever descriptor the number was given to in between (in a gateway, an
import in a worker thread failed with EBADF). `_Bystander` opens a descriptor at exactly that
moment, deterministically, and the tests check that it survives.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import uvloop

from gateway.pipes import PipeEnd, adopt

LOOPS: dict[str, Callable[[Coroutine[Any, Any, None]], None]] = {"asyncio": asyncio.run, "uvloop": uvloop.run}


class _Bystander:
    """Wraps a pipe end; opens a descriptor just before the end is closed, as another thread could."""

    def __init__(self, end: PipeEnd) -> None:
        self.end = end
        self.opened: int | None = None

    def fileno(self) -> int:
        return self.end.fileno()

    def close(self) -> None:
        self.opened = os.open(os.devnull, os.O_RDONLY)
        self.end.close()


class _Lost(asyncio.Protocol):
    def __init__(self) -> None:
        self.lost = asyncio.get_running_loop().create_future()
        self.received = asyncio.Event()
        self.data = b""

    def data_received(self, data: bytes) -> None:
        self.data += data
        self.received.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost.set_result(None)


def _survives(bystander: _Bystander) -> None:
    assert bystander.opened is not None, "the transport never closed the pipe end it was given"
    os.fstat(bystander.opened)  # raises EBADF if the pipe end's close hit the bystander's descriptor
    os.close(bystander.opened)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_read_end_is_closed_once(loop: str) -> None:
    async def main() -> None:
        r, w = os.pipe()
        bystander = _Bystander(PipeEnd(r))
        transport, protocol = await asyncio.get_running_loop().connect_read_pipe(_Lost, bystander)
        os.write(w, b"ping\n")
        await protocol.received.wait()
        transport.close()
        await protocol.lost
        for _ in range(3):  # uvloop finishes closing a handle on a later turn
            await asyncio.sleep(0)
        _survives(bystander)
        with pytest.raises(BrokenPipeError):  # the read end really is closed: no reader is left
            os.write(w, b"x")
        os.close(w)
        assert protocol.data == b"ping\n"

    LOOPS[loop](main())


@pytest.mark.parametrize("loop", LOOPS)
def test_a_write_end_is_closed_once(loop: str) -> None:
    async def main() -> None:
        r, w = os.pipe()
        bystander = _Bystander(PipeEnd(w))
        transport, protocol = await asyncio.get_running_loop().connect_write_pipe(_Lost, bystander)
        transport.write(b"pong\n")
        transport.close()
        await protocol.lost
        for _ in range(3):
            await asyncio.sleep(0)
        _survives(bystander)
        assert os.read(r, 100) == b"pong\n"
        assert os.read(r, 100) == b""  # end of file: the write end really is closed
        os.close(r)

    LOOPS[loop](main())


def test_adopt_takes_a_file_objects_descriptor_over() -> None:
    async def main() -> None:
        r, w = os.pipe()
        file = os.fdopen(w, "wb", buffering=0)
        end = adopt(file)
        assert file.closed and end.fileno() != w
        os.write(end.fileno(), b"still open")
        assert os.read(r, 100) == b"still open"
        end.close()  # outside uvloop, the end closes its descriptor itself
        assert end.closed and os.read(r, 100) == b""
        os.close(r)

    asyncio.run(main())
