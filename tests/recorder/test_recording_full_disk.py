"""A store that cannot be written (a full disk, a file deleted under the gateway) never loses what
was answered: recording backs up, `toolreel__status` and the results say so, management reads answer
promptly with the error, and writing resumes once the store can take it again.

The full disk is a real 4 MB tmpfs (mounting needs root: skipped otherwise)."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.gw import (
    Connected,
    call,
    fixture_entry,
    gateway_env,
    status,
    stdio_gateway,
    text_of,
    unsaved,
    wait_until,
    write_config,
)
from toolreel.core.store import open_store
from toolreel.recorder import pending_journals

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path / "client.json", {"feat": fixture_entry("features")})


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(path: Path) -> None:
    with contextlib.suppress(OSError), path.open("wb") as filler:
        while True:
            filler.write(b"\0" * 65536)
            filler.flush()


async def _echo(s: Connected, text: str) -> Any:
    result = await call(s, "feat__echo", {"text": text})
    assert text_of(result) == text
    return result


async def _saved(s: Connected) -> bool:
    return await unsaved(s) == 0


async def test_a_full_disk_backs_recording_up_until_space_is_freed(config: Path, small_disk: Path) -> None:
    db = f"sqlite:///{small_disk / 's.db'}"
    async with stdio_gateway(["--config", str(config)], gateway_env(db)) as s:
        first = await _echo(s, "before")
        execution = (first.meta or {})["toolreel/execution"]
        await wait_until(lambda: _saved(s), 30, "the first call saved")
        filler = small_disk / "filler"
        await anyio.to_thread.run_sync(_fill, filler)
        texts = [f"while full {n} " + "y" * 5_000 for n in range(40)]  # each stored about four times over
        answers = [await _echo(s, text) for text in texts]  # every call is answered

        async def told() -> bool:
            result = await _echo(s, "still full")
            answers.append(result)
            now = await status(s)
            return "toolreel/error" in (result.meta or {}) and now["recording_error"] is not None

        await wait_until(told, 30, "results and toolreel__status to say the writes fail")
        now = await status(s)
        assert now["unsaved"] >= len(answers), now  # never 0 while writes fail
        assert pending_journals(db), "the journal moved off the full disk"
        started = anyio.current_time()
        listing = await call(s, "toolreel__list_executions", {})
        assert listing.is_error and "not in the store yet" in text_of(listing)
        assert anyio.current_time() - started < 10  # promptly, with the error (was 15 s)

        filler.unlink()
        await wait_until(lambda: _saved(s), 60, "everything written once space is freed")
    with open_store(db) as store:
        steps = store.get_steps(execution)
    assert len(steps) == 1 + len(answers)
    assert not pending_journals(db)


async def test_a_store_file_deleted_under_the_gateway_is_created_again_and_nothing_later_is_lost(
    config: Path, tmp_path: Path
) -> None:
    path = tmp_path / "s.db"
    db = f"sqlite:///{path}"
    async with stdio_gateway(["--config", str(config)], gateway_env(db)) as s:
        first = await _echo(s, "one")
        execution = (first.meta or {})["toolreel/execution"]
        await wait_until(lambda: _saved(s), 30, "the first call saved")
        for leftover in (path, path.with_name("s.db-wal"), path.with_name("s.db-shm")):
            leftover.unlink(missing_ok=True)
        later = [await _echo(s, f"later {n}") for n in range(20)]
        await wait_until(lambda: _saved(s), 30, "the later calls saved")
        assert s.gateway is not None
        gateway = s.gateway
    assert "was deleted, emptied or replaced" in gateway.stderr()
    with open_store(db) as store:  # a new file, holding the execution again and every later call
        names = [step.name for step in store.get_steps(execution)]
    assert names == [f"echo_{n}" for n in range(2, 2 + len(later))]


async def test_management_reads_on_a_store_that_cannot_be_opened_answer_promptly(config: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the store's folder should be")
    db = f"sqlite:///{blocker / 's.db'}"
    async with stdio_gateway(["--config", str(config)], gateway_env(db)) as s:
        answered = await _echo(s, "recorded nowhere yet")  # the call itself goes on
        assert text_of(answered) == "recorded nowhere yet"
        started = anyio.current_time()
        listing = await call(s, "toolreel__list_executions", {})
        assert listing.is_error and "cannot be opened" in text_of(listing), text_of(listing)
        assert anyio.current_time() - started < 10  # was 30 s, then "the store is still opening"
        assert (await status(s))["unsaved"] >= 1
