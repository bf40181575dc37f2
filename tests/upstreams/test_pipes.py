"""Pipe ends handed to event-loop transports are closed exactly once, under asyncio and uvloop;
lines read from a pipe reach their callback whole, in order, however the bytes arrive.

uvloop closes a transport's descriptor in libuv and then closes the object it was given; a
second close(2) hits whatever descriptor the number was given to in between (in a gateway, an
import in a worker thread failed with EBADF). `_Bystander` opens a descriptor at exactly that
moment, deterministically, and the tests check that it survives.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import uvloop

from toolreel.upstreams.pipes import Backlog, LineReader, PipeEnd, adopt

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


class _Lines:
    """A `LineReader` on a real pipe that records what it hands over."""

    def __init__(self, limit: int = 1 << 20) -> None:
        self.lines: list[bytes] = []
        self.overruns = 0
        self.ended = asyncio.get_running_loop().create_future()
        self.got = asyncio.Event()
        self.reader = LineReader(self._line, self._end, self._overrun, limit)

    def _line(self, line: bytes) -> None:
        self.lines.append(line)
        self.got.set()

    def _end(self) -> None:
        assert not self.ended.done(), "on_end called twice"
        self.ended.set_result(None)

    def _overrun(self) -> None:
        self.overruns += 1

    async def wait_for(self, count: int) -> None:
        while len(self.lines) < count:
            self.got.clear()
            await asyncio.wait_for(self.got.wait(), 5)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


async def _open_lines(lines: _Lines) -> tuple[asyncio.BaseTransport, int]:
    r, w = os.pipe()
    transport, _ = await asyncio.get_running_loop().connect_read_pipe(lambda: lines.reader, PipeEnd(r))
    return transport, w


@pytest.mark.parametrize("loop", LOOPS)
def test_lines_reach_the_callback_whole_however_the_bytes_arrive(loop: str) -> None:
    async def main() -> None:
        lines = _Lines()
        transport, w = await _open_lines(lines)
        os.write(w, b'{"a":')  # a line in three writes
        os.write(w, b"1,")
        os.write(w, b'"b":2}\nsecond\nthi')  # the end of one, a whole one, the start of another
        await lines.wait_for(2)
        big = b"x" * (3 * 65536) + b"\n"  # larger than one read
        await asyncio.to_thread(_write_all, w, b"rd\n" + big)  # more than the pipe holds: not from the loop
        await lines.wait_for(4)
        os.write(w, b"no newline at the end")
        os.close(w)
        await asyncio.wait_for(lines.ended, 5)
        assert lines.lines == [b'{"a":1,"b":2}\n', b"second\n", b"third\n", big, b"no newline at the end"]
        transport.close()

    LOOPS[loop](main())


@pytest.mark.parametrize("loop", LOOPS)
def test_a_line_over_the_limit_is_dropped_up_to_its_newline(loop: str) -> None:
    async def main() -> None:
        lines = _Lines(limit=1000)
        transport, w = await _open_lines(lines)
        os.write(w, b"short\n" + b"y" * 600)
        await lines.wait_for(1)
        os.write(w, b"y" * 600)  # now past the limit: reported once, dropped
        os.write(w, b"y" * 5000 + b"\nafter\n")
        await lines.wait_for(2)
        os.close(w)
        await asyncio.wait_for(lines.ended, 5)
        assert lines.lines == [b"short\n", b"after\n"]
        assert lines.overruns == 1
        transport.close()

    LOOPS[loop](main())


@pytest.mark.parametrize("loop", LOOPS)
def test_a_backlog_pauses_reading_while_its_consumer_lags(loop: str) -> None:
    async def main() -> None:
        got: list[bytes] = []
        backlog: Backlog

        def on_line(line: bytes) -> None:
            backlog.put(line)

        reader = LineReader(on_line, lambda: backlog.end(), lambda: None, 1 << 20)
        backlog = Backlog(reader)
        r, w = os.pipe()
        os.set_blocking(w, False)
        transport, _ = await asyncio.get_running_loop().connect_read_pipe(lambda: reader, PipeEnd(r))
        sent = 0
        with contextlib.suppress(BlockingIOError):  # nobody takes from the backlog: the pipe fills up
            for _ in range(100_000):
                os.write(w, b"%d\n" % sent)
                sent += 1
                await asyncio.sleep(0)
        assert Backlog.HIGH < sent < 100_000, "reading never paused"
        os.set_blocking(w, True)
        os.close(w)
        while (item := await asyncio.wait_for(backlog.get(), 5)) is not None:
            got.append(item)
        assert got == [b"%d\n" % i for i in range(sent)]
        transport.close()

    LOOPS[loop](main())
