"""The recorder process (`recorder.drain`) that writes a gateway's recordings: killed, it is
started again and loses nothing; at shutdown it is given every queued call; a database in
the gateway's own memory is written from the gateway itself; stalled, it holds calls back
for a bounded time once its backlog passes the mark (`StoreWriter.room`).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.gw import (
    Connected,
    call,
    cmdline,
    fixture_entry,
    gateway_env,
    status,
    stdio_gateway,
    text_of,
    wait_until,
    write_config,
)
from toolreel.core.errors import ConfigError, StoreError
from toolreel.core.store import Store, open_store
from toolreel.recorder import RecordingSession, StoreWriter
from toolreel.recorder._writer import BACKLOG, BACKLOG_ENV, HOLD, backlog_mark

pytestmark = [pytest.mark.anyio]
slow = pytest.mark.slow  # a real gateway and its recorder process


@pytest.fixture
def config(tmp_path: Path) -> Iterator[Path]:
    yield write_config(tmp_path / "client.json", {"feat": fixture_entry("features")})


def _drains(s: Connected) -> list[int]:
    assert s.gateway is not None
    return [pid for pid in s.gateway.descendants() if "toolreel.recorder.drain" in cmdline(pid)]


async def _one_drain(s: Connected) -> int:
    await wait_until(lambda: len(_drains(s)) == 1, 15, "one recorder process")
    return _drains(s)[0]


async def _stored_names(s: Connected, execution: str) -> list[str]:
    view = await call(s, "toolreel__get_execution", {"id": execution})  # waits for the recordings
    assert not view.is_error, text_of(view)
    assert isinstance(view.structured_content, dict)
    steps: list[dict[str, Any]] = view.structured_content["steps"]
    return [step["name"] for step in steps]


@slow
async def test_a_killed_recorder_process_is_started_again_and_nothing_is_lost(config: Path, tmp_path: Path) -> None:
    async with stdio_gateway(["--config", str(config)], gateway_env(f"sqlite:///{tmp_path / 's.db'}")) as s:
        first = await call(s, "feat__echo", {"text": "one"})
        execution = (first.meta or {})["toolreel/execution"]
        assert await _stored_names(s, execution) == ["echo_1"]
        killed = await _one_drain(s)
        os.kill(killed, signal.SIGKILL)
        for i in range(2, 7):
            assert text_of(await call(s, "feat__echo", {"text": f"call {i}"})) == f"call {i}"
        assert await _stored_names(s, execution) == [f"echo_{i}" for i in range(1, 7)]
        assert await _one_drain(s) != killed
        assert s.gateway is not None
        assert "the recorder process stopped" in s.gateway.stderr()


@slow
async def test_calls_queued_at_shutdown_are_written_before_the_gateway_exits(config: Path, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 's.db'}"
    async with stdio_gateway(["--config", str(config)], gateway_env(db)) as s:
        results = [await call(s, "feat__echo", {"text": f"n{i}"}) for i in range(40)]
        execution = (results[0].meta or {})["toolreel/execution"]
        assert s.gateway is not None
        gateway = s.gateway
    # the gateway has exited (stdin closed) without anyone asking for the recording first
    drains = [pid for pid in gateway.descendants() if "toolreel.recorder.drain" in cmdline(pid)]
    assert not drains
    with open_store(db) as store:
        steps = store.get_steps(execution)
    assert [step.name for step in steps] == [f"echo_{i}" for i in range(1, 41)]
    assert steps[-1].resolved_input == {"text": "n39"} and steps[-1].output == "n39"


@slow
async def test_an_in_memory_store_is_written_by_the_gateway_itself(config: Path) -> None:
    async with stdio_gateway(["--config", str(config)], gateway_env("sqlite://")) as s:
        first = await call(s, "feat__echo", {"text": "kept in memory"})
        await call(s, "feat__echo", {"text": "@echo_1"})
        execution = (first.meta or {})["toolreel/execution"]
        assert await _stored_names(s, execution) == ["echo_1", "echo_2"]
        assert _drains(s) == []  # another process could not see this database


@slow
async def test_status_counts_unsaved_calls_until_the_recorder_has_written_them(config: Path, tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    async with stdio_gateway(["--config", str(config)], gateway_env(f"sqlite:///{db}")) as s:
        for n in range(5):
            await call(s, "feat__echo", {"text": f"call {n}"})

        async def all_saved() -> bool:
            status = await call(s, "toolreel__status", {})
            assert isinstance(status.structured_content, dict)
            count = status.structured_content["unsaved"]
            assert isinstance(count, int) and 0 <= count <= 6  # 5 steps and their execution
            return count == 0

        await wait_until(all_saved, 15, "toolreel__status to report every call saved")
        # Once status says nothing is unsaved, every call is in the store, read by another process.
        with open_store(f"sqlite:///{db}") as store:
            executions, _ = store.list_executions()
            assert [len(store.get_steps(e.id)) for e in executions] == [5]


@slow
async def test_a_stalled_recorder_holds_calls_back_for_a_bounded_time_and_loses_nothing(
    config: Path, tmp_path: Path
) -> None:
    mark = 20
    env = gateway_env(f"sqlite:///{tmp_path / 's.db'}", **{BACKLOG_ENV: str(mark)})
    async with stdio_gateway(["--config", str(config)], env) as s:
        first = await call(s, "feat__echo", {"text": "call 1"})
        execution = (first.meta or {})["toolreel/execution"]
        assert await _stored_names(s, execution) == ["echo_1"]  # saved: the backlog is empty
        drain = await _one_drain(s)
        os.kill(drain, signal.SIGSTOP)  # a recorder that gets no CPU: nothing is confirmed from now on
        try:
            for n in range(2, mark + 2):  # calls 2..21 fill the backlog up to the mark
                result = await call(s, "feat__echo", {"text": f"call {n}"})
                assert text_of(result) == f"call {n}" and "toolreel/error" not in (result.meta or {})
            assert (await status(s))["held_back"] is False

            started = anyio.current_time()
            past = await call(s, "feat__echo", {"text": "past the mark"})
            waited = anyio.current_time() - started
            # (a) it completes, (b) after being held back (HOLD, less a margin for the event loops' clocks)
            assert text_of(past) == "past the mark"
            assert waited >= HOLD * 0.75
            # (c) and the agent is told that recording is behind
            assert f"recording is behind by {mark} calls" in (past.meta or {}).get("toolreel/error", "")
            now = await status(s)
            assert now["held_back"] is True and now["unsaved"] == mark + 1
        finally:
            os.kill(drain, signal.SIGCONT)

        async def caught_up() -> bool:
            now = await status(s)
            return now["unsaved"] == 0 and now["held_back"] is False

        await wait_until(caught_up, 15, "the recorder to write the backlog once it runs again")
        expected = [f"echo_{n}" for n in range(1, mark + 3)]
        assert await _stored_names(s, execution) == expected  # every call, each once
        assert _drains(s) == [drain]  # the same recorder process: it was slow, not lost
        assert s.gateway is not None
        stderr = s.gateway.stderr()
        assert stderr.count("recording is behind") == 1 and "recording has caught up" in stderr


# StoreWriter.room() in this process, with a store that opens only when the test says -----------


class _Gate:
    """A real in-memory store, handed to the writer one write at a time: the test is the drain's CPU."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.waiting = 0
        self._turns, self._receive = anyio.create_memory_object_stream[None](16)

    async def __call__(self) -> Store:
        self.waiting += 1
        try:
            await self._receive.receive()
        finally:
            self.waiting -= 1
        return self.store

    def let_one_write(self) -> None:
        self._turns.send_nowait(None)

    def close(self) -> None:
        self._turns.close()
        self._receive.close()


def _returns_at_once(writer: StoreWriter) -> bool:
    """room() finished without suspending: under the mark the call path awaits nothing."""
    coroutine = writer.room()
    try:
        coroutine.send(None)
    except StopIteration:
        return True
    coroutine.close()
    return False


def _echo(session: RecordingSession, text: str) -> None:
    live = session.begin("feat", "echo", {"text": text})
    session.end(live, {"content": [{"type": "text", "text": text}], "isError": False})


async def test_room_holds_calls_past_the_mark_until_the_backlog_is_under_half_of_it() -> None:
    errors: list[StoreError] = []
    hold = 0.05
    with open_store("sqlite://") as store:
        gate = _Gate(store)
        writer = StoreWriter(None, on_error=errors.append, local_store=gate, backlog=4, hold=hold)
        session = RecordingSession("test", writer)
        async with anyio.create_task_group() as tg:
            await tg.start(writer.run)
            _echo(session, "one")  # the execution and echo_1
            await wait_until(lambda: gate.waiting == 1, 5, "the writer to take its first batch")
            _echo(session, "two")
            assert writer.unsaved == 3 and _returns_at_once(writer)
            _echo(session, "three")  # 4 unsaved: the mark

            started = anyio.current_time()
            await writer.room()
            assert anyio.current_time() - started >= hold * 0.9 and writer.holding
            assert len(errors) == 1 and "recording is behind by 4 calls" in str(errors[0])

            gate.let_one_write()  # the first batch (2 records): 2 unsaved, not under half the mark yet
            await wait_until(lambda: writer.unsaved == 2, 5, "the first batch to be written")
            assert writer.holding  # hysteresis: under the mark, yet calls still wait
            started = anyio.current_time()
            await writer.room()
            assert anyio.current_time() - started >= hold * 0.9  # held again, and not reported again
            assert writer.holding and len(errors) == 1

            await wait_until(lambda: gate.waiting == 1, 5, "the writer to take its second batch")
            gate.let_one_write()
            await wait_until(lambda: writer.unsaved == 0, 5, "the second batch to be written")
            assert not writer.holding and _returns_at_once(writer)
            tg.cancel_scope.cancel()
        gate.close()
        assert [step.name for step in store.get_steps(session.execution_id or "")] == ["echo_1", "echo_2", "echo_3"]


async def test_an_idle_writer_sleeps_until_the_next_entry_and_then_writes_it() -> None:
    # An idle gateway must not wake up every batch interval: the batching task waits for a first
    # entry with no timer, and that entry must still reach the store without anyone flushing.
    with open_store("sqlite://") as store:
        writer = StoreWriter(None, local_store=_opened(store))
        session = RecordingSession("test", writer)
        async with anyio.create_task_group() as tg:
            await tg.start(writer.run)
            _echo(session, "one")
            # idle: set only just before the wait that has no deadline
            await wait_until(lambda: writer.unsaved == 0 and writer.idle, 5, "the first batch to be written")
            _echo(session, "two")
            assert not writer.idle  # the entry woke the task
            await wait_until(lambda: writer.unsaved == 0, 5, "the entry after the idle spell to be written")
            tg.cancel_scope.cancel()
        assert [step.name for step in store.get_steps(session.execution_id or "")] == ["echo_1", "echo_2"]


def _opened(store: Store) -> Callable[[], Awaitable[Store]]:
    async def ready() -> Store:
        return store

    return ready


async def test_the_byte_mark_holds_calls_back_too() -> None:
    errors: list[StoreError] = []
    with open_store("sqlite://") as store:
        gate = _Gate(store)
        writer = StoreWriter(None, on_error=errors.append, local_store=gate, backlog_bytes=4096, hold=0.01)
        session = RecordingSession("test", writer)
        async with anyio.create_task_group() as tg:
            await tg.start(writer.run)
            _echo(session, "x" * 5000)  # two records, far under the call mark, over the byte mark
            assert writer.unsaved == 2 and writer.backlog_bytes > 4096
            await writer.room()
            assert writer.holding and len(errors) == 1
            gate.let_one_write()
            await wait_until(lambda: writer.unsaved == 0, 5, "the batch to be written")
            assert not writer.holding and writer.backlog_bytes == 0 and _returns_at_once(writer)
            tg.cancel_scope.cancel()
        gate.close()


def test_the_backlog_mark_comes_from_the_environment() -> None:
    assert backlog_mark({}) == BACKLOG
    assert backlog_mark({BACKLOG_ENV: " 20 "}) == 20
    for bad in ("lots", "0", "-3", "1.5"):
        with pytest.raises(ConfigError, match=f"{BACKLOG_ENV}={bad!r} is not a positive whole number"):
            backlog_mark({BACKLOG_ENV: bad})
