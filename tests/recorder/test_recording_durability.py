"""No answered call is lost: every recorded call is journaled before its answer goes out
(`recorder._spool`), and the next opening of the store writes what a dead gateway left.

A real `toolreel serve` in its own process group, a stream of calls over stdio, then SIGKILL
to the gateway, SIGKILL to its whole group, or SIGHUP to the group (a closing terminal);
afterwards every step name the client was told must be in the store.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from tests.gw import (
    REPO,
    TOOLREEL,
    Connected,
    GatewayProcess,
    OpenedStreams,
    Probe,
    alive,
    call,
    client_for,
    cmdline,
    fixture_entry,
    gateway_env,
    line_transport,
    running_gateway,
    text_of,
    wait_until,
    write_config,
)
from toolreel.core.store import open_store
from toolreel.recorder import journal_dir, pending_journals

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@contextlib.asynccontextmanager
async def grouped_gateway(config: Path, db: str) -> AsyncIterator[Connected]:
    """`toolreel serve` as the leader of its own process group (as in a terminal), one client."""
    stderr_file = tempfile.TemporaryFile()  # noqa: SIM115 - owned by the GatewayProcess
    process = await anyio.open_process(
        [str(TOOLREEL), "serve", "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr_file,
        env=gateway_env(db),
        cwd=str(REPO),
        start_new_session=True,
    )
    gateway = GatewayProcess(process, stderr_file)
    try:
        async with line_transport(process) as streams, client_for(OpenedStreams(streams), "legacy", Probe()) as client:
            yield Connected(client, Probe(), gateway)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        with anyio.CancelScope(shield=True):
            await gateway.wait_exit(10)


async def _stream_until(s: Connected, answered: list[str], count: int, in_flight: int = 8) -> str:
    """Calls `in_flight` at a time until `count` were answered; returns the execution id."""
    execution: list[str] = []

    async def caller(worker: int) -> None:
        n = 0
        while len(answered) < count:
            n += 1
            result = await call(s, "feat__echo", {"text": f"w{worker} n{n}"})
            assert text_of(result) == f"w{worker} n{n}"
            meta = result.meta or {}
            answered.append(meta["toolreel/step"])
            execution[:] = [meta["toolreel/execution"]]

    async with anyio.create_task_group() as tg:
        for worker in range(in_flight):
            tg.start_soon(caller, worker)
    return execution[0]


def _stored(db: str, execution: str) -> set[str]:
    with open_store(db) as store:  # opening the store writes the journals of dead gateways
        return {step.name for step in store.get_steps(execution)}


def _drain_of(gateway: GatewayProcess) -> list[int]:
    return [pid for pid in gateway.descendants() if "toolreel.recorder.drain" in cmdline(pid)]


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path / "client.json", {"feat": fixture_entry("features")})


@pytest.mark.parametrize("target", ["gateway", "group"])
async def test_calls_answered_before_a_kill_9_are_in_the_store_at_the_next_opening(
    config: Path, tmp_path: Path, target: str
) -> None:
    db = f"sqlite:///{tmp_path / 's.db'}"
    answered: list[str] = []
    async with grouped_gateway(config, db) as s:
        assert s.gateway is not None
        execution = await _stream_until(s, answered, 300)
        drains = _drain_of(s.gateway)
        if target == "group":  # the recorder process (a session of its own) is killed too: only the journal is left
            os.killpg(s.gateway.pid, signal.SIGKILL)
            for pid in drains:
                os.kill(pid, signal.SIGKILL)
        else:
            os.kill(s.gateway.pid, signal.SIGKILL)
        assert await s.gateway.wait_exit(10) == -signal.SIGKILL
    # a recorder process left behind writes what it holds and exits once its gateway is gone
    await wait_until(lambda: not any(alive(pid) for pid in drains), 30, "the recorder process to exit")
    if target == "group":
        assert pending_journals(db), "the killed gateway's journal is on disk"
    stored = _stored(db, execution)
    assert set(answered) <= stored, f"{len(set(answered) - stored)} answered calls lost"
    assert not pending_journals(db)  # written, then deleted


async def test_a_hangup_of_the_process_group_loses_nothing_and_the_gateway_exits_0(
    config: Path, tmp_path: Path
) -> None:
    db = f"sqlite:///{tmp_path / 's.db'}"
    answered: list[str] = []
    async with grouped_gateway(config, db) as s:
        assert s.gateway is not None
        execution = await _stream_until(s, answered, 300)
        drains = _drain_of(s.gateway)
        assert drains, "recording started its recorder process"
        os.killpg(s.gateway.pid, signal.SIGHUP)
        assert await s.gateway.wait_exit(30) == 0, s.gateway.stderr()
        assert "not saved" not in s.gateway.stderr()
    await wait_until(lambda: not any(alive(pid) for pid in drains), 30, "the recorder process to exit")
    assert not pending_journals(db)  # the recorder wrote everything before the gateway exited
    assert set(answered) <= _stored(db, execution)


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGINT])
async def test_a_hangup_or_ctrl_c_while_the_recorder_is_still_starting_loses_nothing(
    config: Path, tmp_path: Path, signum: signal.Signals
) -> None:
    # The first call starts the recorder process; the group's signal comes while it is still importing, before
    # it could ignore signals itself: its own session keeps it out of the group's way.
    db = f"sqlite:///{tmp_path / 's.db'}"
    answered: list[str] = []
    async with grouped_gateway(config, db) as s:
        assert s.gateway is not None
        execution = await _stream_until(s, answered, 1, in_flight=1)
        drains = _drain_of(s.gateway)
        os.killpg(s.gateway.pid, signum)
        assert await s.gateway.wait_exit(30) == 0, s.gateway.stderr()
        assert "not saved" not in s.gateway.stderr(), s.gateway.stderr()
    await wait_until(lambda: not any(alive(pid) for pid in drains), 30, "the recorder process to exit")
    assert not pending_journals(db)
    assert set(answered) <= _stored(db, execution)


def test_journals_live_next_to_a_sqlite_file_and_apart_per_database_elsewhere(tmp_path: Path) -> None:
    assert journal_dir(f"sqlite:///{tmp_path / 's.db'}") == tmp_path / "s.db.journal"
    assert journal_dir("sqlite://") is None  # a database in one process's memory: nothing survives it anyway
    first = journal_dir("postgresql://u:secret@h/db1")
    assert first == journal_dir("postgresql+psycopg://u:other@h/db1")  # the password does not matter
    assert first is not None and first != journal_dir("postgresql://u@h/db2")
    assert "secret" not in str(first)


_DIES_AFTER_JOURNALING = """
import os, signal, sys, time
from pathlib import Path
from toolreel.recorder._journal import pack
from toolreel.recorder._rows import ExecutionEntry, StepEntry
from toolreel.recorder._spool import Spool

spool = Spool([Path(sys.argv[1])], ["s3cret-Value-9"])
spool.append(pack(ExecutionEntry("execution", "ex1", time.time(), "session")))
for n in range(1, 4):
    result = {"content": [{"type": "text", "text": f"key s3cret-Value-9 n{n}"}]}
    step = StepEntry("step", "ex1", f"echo_{n}", n, "feat", "echo", {"text": "s3cret-Value-9"},
                     {"text": "s3cret-Value-9"}, result, None, time.time(), time.time())
    spool.append(pack(step))
with open(spool.path, "ab") as f:
    f.write(b"\\x00\\x00\\x01\\x00cut")  # a frame cut short by the kill
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_journal_is_written_back_only_by_a_process_that_knows_its_secrets(tmp_path: Path) -> None:
    from toolreel.core.errors import NotFoundError
    from toolreel.recorder._spool import know_secrets

    db = f"sqlite:///{tmp_path / 's.db'}"
    folder = journal_dir(db)
    assert folder is not None
    died = subprocess.run([sys.executable, "-c", _DIES_AFTER_JOURNALING, str(folder)], cwd=REPO, check=False)
    assert died.returncode == -signal.SIGKILL
    [journal] = pending_journals(db)
    assert journal.stat().st_mode & 0o777 == 0o600
    head = journal.read_bytes()
    assert b"s3cret-Value-9" not in head[: 4 + int.from_bytes(head[:4], "big")]  # the hello holds hashes only
    # this process does not know the dead one's secret: it leaves the journal alone
    with open_store(db) as store, pytest.raises(NotFoundError):
        store.get_execution("ex1")
    assert pending_journals(db) == [journal]
    know_secrets(["s3cret-Value-9"])
    with open_store(db) as store:
        steps = store.get_steps("ex1")
    assert [step.name for step in steps] == ["echo_1", "echo_2", "echo_3"]
    assert "s3cret-Value-9" not in repr([(s.input, s.resolved_input, s.result, s.output) for s in steps])
    assert steps[0].redacted
    assert not pending_journals(db)


async def test_what_the_recorder_cannot_write_in_the_shutdown_budget_stays_journaled(
    config: Path, tmp_path: Path
) -> None:
    from toolreel.recorder._writer import GRACE_ENV

    db = f"sqlite:///{tmp_path / 's.db'}"
    big = "x" * (1024 * 1024)
    env = gateway_env(db, **{GRACE_ENV: "1"})
    async with running_gateway(["--config", str(config)], env) as gateway:
        async with (
            line_transport(gateway.process) as streams,
            client_for(OpenedStreams(streams), "legacy", Probe()) as c,
        ):
            s = Connected(c, Probe(), gateway)
            first = await call(s, "feat__echo", {"text": "first"})
            execution = (first.meta or {})["toolreel/execution"]
            await wait_until(lambda: bool(_drain_of(gateway)), 15, "the recorder process")
            [drain] = _drain_of(gateway)
            os.kill(drain, signal.SIGSTOP)  # a recorder that cannot finish within the budget
            for n in range(10):
                assert text_of(await call(s, "feat__echo", {"text": f"{n}{big}"})).startswith(str(n))
        assert gateway.process.stdin is not None
        await gateway.process.stdin.aclose()  # the client is gone: the gateway shuts down
        assert await gateway.wait_exit(30) == 0
        assert "kept in the journal" in gateway.stderr(), gateway.stderr()
    assert pending_journals(db)
    with open_store(db) as store:  # the next opening of the store writes them
        steps = store.get_steps(execution)
    assert [step.name for step in steps] == [f"echo_{n}" for n in range(1, 12)]
    assert steps[-1].output == f"9{big}"
    assert not pending_journals(db)
