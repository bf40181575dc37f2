"""The recorder process (`recorder.drain`) that writes a gateway's recordings: killed, it is
started again and loses nothing; at shutdown it is given every queued call; a database in
the gateway's own memory is written from the gateway itself.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.store import open_store
from tests.gw import (
    Connected,
    call,
    cmdline,
    fixture_entry,
    gateway_env,
    stdio_gateway,
    text_of,
    wait_until,
    write_config,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def config(tmp_path: Path) -> Iterator[Path]:
    yield write_config(tmp_path / "client.json", {"feat": fixture_entry("features")})


def _drains(s: Connected) -> list[int]:
    assert s.gateway is not None
    return [pid for pid in s.gateway.descendants() if "recorder.drain" in cmdline(pid)]


async def _one_drain(s: Connected) -> int:
    await wait_until(lambda: len(_drains(s)) == 1, 15, "one recorder process")
    return _drains(s)[0]


async def _stored_names(s: Connected, execution: str) -> list[str]:
    view = await call(s, "toolreel__get_execution", {"id": execution})  # waits for the recordings
    assert not view.is_error, text_of(view)
    assert isinstance(view.structured_content, dict)
    steps: list[dict[str, Any]] = view.structured_content["steps"]
    return [step["name"] for step in steps]


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


async def test_calls_queued_at_shutdown_are_written_before_the_gateway_exits(config: Path, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 's.db'}"
    async with stdio_gateway(["--config", str(config)], gateway_env(db)) as s:
        results = [await call(s, "feat__echo", {"text": f"n{i}"}) for i in range(40)]
        execution = (results[0].meta or {})["toolreel/execution"]
        assert s.gateway is not None
        gateway = s.gateway
    # the gateway has exited (stdin closed) without anyone asking for the recording first
    assert not any(alive_drain for alive_drain in gateway.descendants() if "recorder.drain" in cmdline(alive_drain))
    with open_store(db) as store:
        steps = store.get_steps(execution)
    assert [step.name for step in steps] == [f"echo_{i}" for i in range(1, 41)]
    assert steps[-1].resolved_input == {"text": "n39"} and steps[-1].output == "n39"


async def test_an_in_memory_store_is_written_by_the_gateway_itself(config: Path) -> None:
    async with stdio_gateway(["--config", str(config)], gateway_env("sqlite://")) as s:
        first = await call(s, "feat__echo", {"text": "kept in memory"})
        await call(s, "feat__echo", {"text": "@echo_1"})
        execution = (first.meta or {})["toolreel/execution"]
        assert await _stored_names(s, execution) == ["echo_1", "echo_2"]
        assert _drains(s) == []  # another process could not see this database


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
