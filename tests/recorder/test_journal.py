"""The gateway-to-recorder pipe format (`recorder._journal`) and the recorder process's
protocol: what it holds during a burst it writes on a flush or at end of input."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gw import REPO
from toolreel.core.store import open_store
from toolreel.recorder._journal import FrameReader, encode, pack
from toolreel.recorder._rows import ExecutionEntry, StepEntry


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read, write = os.pipe()
    yield read, write
    for fd in (read, write):
        with contextlib.suppress(OSError):
            os.close(fd)


def test_frames_split_across_reads_are_put_together(pipe: tuple[int, int]) -> None:
    read, write = pipe
    reader = FrameReader(read)
    data = encode(("batch", [b"one"])) + encode(("flush",))
    os.write(write, data[:3])
    assert reader.poll(0.0) == []  # half a header: nothing yet, and no waiting
    os.write(write, data[3:10])
    assert reader.poll(0.0) == []
    os.write(write, data[10:])
    assert reader.poll(None) == [("batch", [b"one"]), ("flush",)]


def test_poll_takes_at_most_the_limit_and_keeps_the_rest(pipe: tuple[int, int]) -> None:
    read, write = pipe
    reader = FrameReader(read)
    os.write(write, encode(("hello", None, [])) + encode(("batch", [])))
    assert reader.poll(None, limit=1) == [("hello", None, [])]
    assert reader.poll(0.0) == [("batch", [])]


def test_end_of_input_and_a_frame_that_is_not_a_message(pipe: tuple[int, int]) -> None:
    read, write = pipe
    reader = FrameReader(read)
    os.write(write, encode(("flush",)))
    os.close(write)
    assert reader.poll(None) == [("flush",)]
    assert reader.poll(None) is None
    bad_read, bad_write = os.pipe()
    try:
        os.write(bad_write, b"\x00\x00\x00\x02ab")
        with pytest.raises((ValueError, EOFError, TypeError)):
            FrameReader(bad_read).poll(None)
    finally:
        os.close(bad_read)
        os.close(bad_write)


def _entries(execution: str, count: int) -> list[bytes]:
    items: list[tuple[object, ...]] = [ExecutionEntry("execution", execution, 1.0, "test")]
    for n in range(1, count + 1):
        result = {"content": [{"type": "text", "text": f"out {n}"}]}
        items.append(StepEntry("step", execution, f"echo_{n}", n, "s", "echo", {}, {}, result, None, 1.0, 2.0))
    return [pack(item) for item in items]


def _reply(reader: FrameReader) -> tuple[object, ...]:
    messages = reader.poll(30, limit=1)
    assert messages, "the recorder process ended without replying"
    return tuple(messages[0])


@pytest.mark.slow
def test_the_recorder_process_writes_on_flush_and_at_end_of_input(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'r.db'}"
    drain = subprocess.Popen(
        [sys.executable, "-P", "-m", "toolreel.recorder.drain"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=REPO
    )
    assert drain.stdin is not None and drain.stdout is not None
    replies = FrameReader(drain.stdout.fileno())
    try:
        drain.stdin.write(encode(("hello", db, [])))
        drain.stdin.flush()
        assert _reply(replies) == ("ready",)
        drain.stdin.write(encode(("batch", _entries("e1", 3))) + encode(("flush",)))
        drain.stdin.flush()
        assert _reply(replies) == ("done", 4)
        with open_store(db) as store:
            assert [s.name for s in store.get_steps("e1")] == ["echo_1", "echo_2", "echo_3"]
        drain.stdin.write(encode(("batch", _entries("e2", 2))))
        drain.stdin.close()  # end of input: what is held is written before the process ends
        assert drain.wait(30) == 0
        assert _reply(replies) == ("done", 3)
        with open_store(db) as store:
            assert [s.output for s in store.get_steps("e2")] == ["out 1", "out 2"]
    finally:
        if drain.poll() is None:
            drain.kill()
            drain.wait()


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux's")
def test_the_recorder_process_starts_at_the_gateways_priority_and_writes_at_the_lowest(tmp_path: Path) -> None:
    """Its start (SQLAlchemy, the store, the first write) at SCHED_IDLE took minutes on a machine
    kept busy by other work, and no recording reached the store meanwhile."""
    drain = subprocess.Popen(
        [sys.executable, "-P", "-m", "toolreel.recorder.drain"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=REPO
    )
    assert drain.stdin is not None and drain.stdout is not None
    replies = FrameReader(drain.stdout.fileno())
    try:
        drain.stdin.write(encode(("hello", f"sqlite:///{tmp_path / 'r.db'}", [])))
        drain.stdin.flush()
        assert _reply(replies) == ("ready",)
        assert os.sched_getscheduler(drain.pid) == os.sched_getscheduler(0)  # the store opened at ours
        drain.stdin.write(encode(("batch", _entries("e1", 2))) + encode(("flush",)))
        drain.stdin.flush()
        assert _reply(replies) == ("done", 3)  # sent once the priority is lowered
        assert os.sched_getscheduler(drain.pid) == os.SCHED_IDLE
    finally:
        drain.kill()
        drain.wait()
