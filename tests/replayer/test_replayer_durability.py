"""Crash recovery and scale-out with real processes (SPEC §8, §9).

`python -m toolreel.replayer run` and `python -m toolreel.replayer worker` run as subprocesses over the `features`
fixture server; they are SIGKILLed mid-run, and another process finishes the execution. The
`counter` tool's file proves how many times each call really ran.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from fixtures._zygote import launch_command
from fixtures.servers import REPO_ROOT, fixture_command
from tests import pg
from tests.callers import fixture_env, harness, saved, wait_until
from tests.procs import program_pid
from toolreel.core.caller import ToolCall
from toolreel.core.model import Execution, ExecutionQuery, ExecutionStatus, StepKind, StepRecord, StepStatus
from toolreel.core.store import Store, open_store
from toolreel.replayer import Engine
from toolreel.replayer._policy import idempotency_store_key

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

LEASE = "1.0"
LONG_LEASE = "60"  # longer than the rest of a run: finishing before it lapses shows a claim was taken over


def chain(name: str, links: int, pause: float) -> dict[str, Any]:
    """c1 -> w1 -> c2 -> w2 -> ... -> c<links>: counters with slow steps between them (crash windows)."""
    steps: list[dict[str, Any]] = []
    for i in range(1, links + 1):
        after = [f"w{i - 1}"] if i > 1 else []
        steps.append({"name": f"c{i}", "tool": "features__counter", "input": {"key": f"c{i}"}, "depends_on": after})
        if i < links:
            steps.append(
                {"name": f"w{i}", "tool": "features__slow", "input": {"seconds": pause}, "depends_on": [f"c{i}"]}
            )
    return {"name": name, "steps": steps, "output": f"@c{links}.count"}


def write_config(tmp: Path, label: str = "") -> Path:
    """A config with the `features` server. Each process gets its own counter file (`label`): the
    fixture's read-modify-write of the file is atomic within one server, not across servers."""
    command, *args = fixture_command("features")
    env = {**fixture_env(tmp), "FIXTURE_COUNTER_FILE": str(tmp / f"counts{label}.json")}
    config = {"mcpServers": {"features": {"command": command, "args": args, "cwd": str(REPO_ROOT), "env": env}}}
    path = tmp / f"config{label}.json"
    path.write_text(json.dumps(config))
    return path


def counts(tmp: Path) -> dict[str, int]:
    """Every call counted, summed over the counter files of all processes."""
    total: dict[str, int] = {}
    for path in tmp.glob("counts*.json"):
        for key, count in json.loads(path.read_text()).items():
            total[key] = total.get(key, 0) + count
    return total


@contextmanager
def replayer_process(tmp: Path, label: str, *args: str) -> Iterator[subprocess.Popen[bytes]]:
    """`python -m toolreel.replayer ARGS` with its output in files; killed at the end if still alive."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    with (tmp / f"{label}.out").open("wb") as out, (tmp / f"{label}.err").open("wb") as err:
        process = subprocess.Popen(
            launch_command([sys.executable, "-m", "toolreel.replayer", *args]),
            cwd=REPO_ROOT,
            env=env,
            stdout=out,
            stderr=err,
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)


def finished_steps(store: Store, execution_id: str) -> dict[str, StepRecord]:
    return {r.name: r for r in store.get_steps(execution_id) if r.status == StepStatus.SUCCEEDED}


def only_execution(store: Store) -> Execution | None:
    page, _ = store.list_executions(ExecutionQuery(limit=1))
    return page[0] if page else None


@pytest.mark.parametrize("kill_after", [0, 1, 3])
async def test_a_killed_run_is_finished_by_a_worker_without_rerunning_finished_steps(
    tmp_path: Path, kill_after: int
) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    config = write_config(tmp_path)
    store = open_store(db)
    # 1.5 s slow steps: the test must see c<kill_after> finish and kill before the next counter, on a busy machine
    saved(store, chain("crashy", 4, 1.5))
    common = ["--config", str(config), "--db", db, "--lease-seconds", LEASE]
    with replayer_process(tmp_path, "run", "run", "crashy", "--json", *common) as runner:
        if kill_after == 0:
            await wait_until(lambda: only_execution(store) is not None, timeout=60)
        else:
            await wait_until(
                lambda: (e := only_execution(store)) is not None and f"c{kill_after}" in finished_steps(store, e.id),
                timeout=60,
            )
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=30)
    execution = only_execution(store)
    assert execution is not None and execution.status in (ExecutionStatus.RUNNING, ExecutionStatus.PENDING)
    done_at_kill = finished_steps(store, execution.id)
    with replayer_process(tmp_path, "worker", "worker", "--poll", "0.1", *common) as worker:
        await wait_until(lambda: store.get_execution(execution.id).status.finished, timeout=60)
        stop(worker)
    final = store.get_execution(execution.id)
    assert final.status == ExecutionStatus.SUCCEEDED, final.error
    assert f"driving {execution.id}" in (tmp_path / "worker.err").read_text()
    seen = counts(tmp_path)
    assert set(seen) == {"c1", "c2", "c3", "c4"}
    for name, record in done_at_kill.items():
        if name.startswith("c"):
            assert seen[name] == 1, f"{name} finished before the kill and ran again"
        assert finished_steps(store, execution.id)[name].attempt == record.attempt  # never re-run
    assert sum(seen.values()) <= 5  # at most the one call in flight at the kill ran twice
    store.close()


async def test_recovery_reruns_only_the_step_in_flight(tmp_path: Path) -> None:
    """The store as a crash leaves it: `a` finished, `b` running with no live claim."""
    async with harness(tmp_path) as h:
        t = saved(
            h.store,
            {
                "name": "two",
                "steps": [
                    {"name": "a", "tool": "features__counter", "input": {"key": "a"}},
                    {"name": "b", "tool": "features__counter", "input": {"key": "b"}, "depends_on": ["a"]},
                    {
                        "name": "c",
                        "tool": "features__counter",
                        "input": {"key": "c"},
                        "idempotency_key": "c-once",
                        "depends_on": ["a"],
                    },
                ],
            },
        )
        execution_id = await h.engine.start(t, {})
        now = time.time()
        base = StepRecord(execution_id=execution_id, name="a", seq=1, kind=StepKind.TOOL, status=StepStatus.SUCCEEDED)
        h.store.put_steps(
            [
                base.replace(output={"key": "a", "count": 7}, started_at=now, ended_at=now),
                base.replace(name="b", seq=2, status=StepStatus.RUNNING, started_at=now),
                base.replace(name="c", seq=3, status=StepStatus.RUNNING, started_at=now, idempotency_key="c-once"),
            ]
        )
        stored = {"content": [], "structuredContent": {"key": "c", "count": 41}, "isError": False}
        h.store.put_idempotent(
            idempotency_store_key("c-once", scope="execution", execution_id=execution_id), stored, expires_at=None
        )
        h.store.update_execution(execution_id, status=ExecutionStatus.RUNNING, claimed_by="dead", lease_until=now - 1)
        assert await h.engine.recover() == [execution_id]
        await wait_until(lambda: h.store.get_execution(execution_id).status.finished)
        final = h.store.get_execution(execution_id)
        assert final.status == ExecutionStatus.SUCCEEDED, final.error
        assert h.counts() == {"b": 1}  # a finished, c's result was stored under its key
        rows = h.store.get_steps(execution_id, all_attempts=True)
        b = [r for r in rows if r.name == "b"]
        assert [(r.attempt, r.status) for r in b] == [(1, StepStatus.CANCELLED), (2, StepStatus.SUCCEEDED)]
        assert "interrupted" in (b[0].error or "")
        assert {r.name: r.output for r in h.store.get_steps(execution_id)}["c"] == {"key": "c", "count": 41}


# --------------------------------------------------------------------------- PostgreSQL: several workers


class _Lists:
    """Enough of a ToolCaller to create executions in the test process (nothing is called here)."""

    def server_of(self, name: str) -> str | None:
        return name.partition("__")[0]

    async def call_tool(self, call: ToolCall) -> dict[str, Any]:
        raise AssertionError("the test process calls no tool")


async def create_unclaimed(store: Store, template: Any, inputs: list[dict[str, Any]]) -> list[str]:
    async with Engine(store, _Lists(), owner="test") as engine:
        ids = [await engine.start(template, given) for given in inputs]
    for execution_id in ids:
        store.release_claim(execution_id, "test")
    return ids


@pytest.fixture
def pg_db(pg_cluster: pg.PgCluster) -> Iterator[str]:
    url = pg_cluster.create_database()
    yield url
    pg_cluster.drop_database(url.rsplit("/", 1)[1])


@pytest.mark.postgres
async def test_a_second_worker_takes_over_at_once_when_the_first_dies(tmp_path: Path, pg_db: str) -> None:
    """Both workers on this host: the dead one's claim is taken over without waiting for its lease (a
    lease far longer than the rest of the run, so finishing proves it)."""
    store = open_store(pg_db)
    (execution_id,) = await create_unclaimed(store, saved(store, chain("handover", 4, 0.4)), [{}])
    common = ["worker", "--db", pg_db, "--lease-seconds", LONG_LEASE, "--poll", "0.1"]
    with (
        replayer_process(tmp_path, "a", *common, "--config", str(write_config(tmp_path, "a"))) as a,
        replayer_process(tmp_path, "b", *common, "--config", str(write_config(tmp_path, "b"))) as b,
    ):
        await wait_until(lambda: "c2" in finished_steps(store, execution_id), timeout=60)
        owner = store.get_execution(execution_id).claimed_by or ""
        first, second = (a, b) if f":{program_pid(a.pid)}:" in owner else (b, a)
        assert f":{program_pid(first.pid)}:" in owner
        done_at_kill = finished_steps(store, execution_id)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        lease_until = store.get_execution(execution_id).lease_until or 0
        await wait_until(lambda: store.get_execution(execution_id).status.finished, timeout=60)
        assert time.time() < lease_until  # finished while the dead worker's lease still ran
        stop(second)
    final = store.get_execution(execution_id)
    assert final.status == ExecutionStatus.SUCCEEDED, final.error
    seen = counts(tmp_path)
    assert all(seen[name] == 1 for name in done_at_kill if name.startswith("c"))
    assert set(seen) == {"c1", "c2", "c3", "c4"} and sum(seen.values()) <= 5
    store.close()


async def test_resume_right_after_a_kill_9_takes_the_dead_claim_over(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    config = write_config(tmp_path)
    store = open_store(db)
    saved(store, chain("resumable", 3, 0.4))
    common = ["--config", str(config), "--db", db]
    with replayer_process(tmp_path, "run", "run", "resumable", "--json", "--lease-seconds", LONG_LEASE, *common) as r:
        await wait_until(
            lambda: (e := only_execution(store)) is not None and "c1" in finished_steps(store, e.id), timeout=60
        )
        r.send_signal(signal.SIGKILL)
        r.wait(timeout=30)
    execution = only_execution(store)
    assert execution is not None and execution.lease_until is not None and execution.lease_until > time.time()
    with replayer_process(tmp_path, "resume", "executions", "resume", execution.id, "--json", *common) as resume:
        await wait_until(lambda: resume.poll() is not None, timeout=60)
    assert resume.returncode == 0, (tmp_path / "resume.err").read_text()
    final = store.get_execution(execution.id)
    assert final.status == ExecutionStatus.SUCCEEDED and time.time() < execution.lease_until
    assert counts(tmp_path)["c1"] == 1  # finished before the kill: not run again
    store.close()


async def test_resume_waits_for_a_live_claim_s_lease_saying_how_long(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(db)
    (execution_id,) = await create_unclaimed(store, saved(store, chain("elsewhere", 1, 0)), [{}])
    store.update_execution(execution_id, status=ExecutionStatus.RUNNING)
    # held by a process on another host, whose lease runs for 8 more seconds (longer than the resume takes to start)
    assert store.claim_execution(execution_id, "another-host:1:abc", lease_seconds=8, now=time.time()) is not None
    args = ["executions", "resume", execution_id, "--json", "--config", str(write_config(tmp_path)), "--db", db]
    with replayer_process(tmp_path, "resume", *args) as resume:
        await wait_until(lambda: resume.poll() is not None, timeout=60)
    err = (tmp_path / "resume.err").read_text()
    assert resume.returncode == 0, err
    assert "is being driven by another-host:1:abc" in err and "waiting" in err and "for the lease to lapse" in err
    assert store.get_execution(execution_id).status == ExecutionStatus.SUCCEEDED
    store.close()


@pytest.mark.postgres
async def test_two_workers_share_200_executions_each_run_once(tmp_path: Path, pg_db: str) -> None:
    store = open_store(pg_db)
    t = saved(
        store,
        {
            "name": "one-call",
            "inputs": {"n": {"type": "integer"}},
            "steps": [{"name": "count", "tool": "features__counter", "input": {"key": "n{{@input.n}}"}}],
        },
    )
    ids = await create_unclaimed(store, t, [{"n": n} for n in range(200)])
    common = ["worker", "--db", pg_db, "--lease-seconds", "5", "--poll", "0.05"]
    with (
        replayer_process(tmp_path, "a", *common, "--config", str(write_config(tmp_path, "a"))) as a,
        replayer_process(tmp_path, "b", *common, "--config", str(write_config(tmp_path, "b"))) as b,
    ):
        await wait_until(
            lambda: len(store.list_executions(ExecutionQuery(status=ExecutionStatus.SUCCEEDED, limit=500))[0]) == 200,
            timeout=120,
        )
        stop(a)
        stop(b)
    assert counts(tmp_path) == {f"n{n}": 1 for n in range(200)}
    driven = {label: (tmp_path / f"{label}.err").read_text().count("driving ") for label in ("a", "b")}
    assert driven["a"] + driven["b"] == 200 and min(driven.values()) > 0, driven
    assert all(len(store.get_steps(i, all_attempts=True)) == 1 for i in ids)
    store.close()


async def test_a_process_that_lost_its_claim_stops_without_writing(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        t = saved(
            h.store, {"name": "hold", "steps": [{"name": "wait", "tool": "features__slow", "input": {"seconds": 30}}]}
        )
        started = await h.engine.run_template(t, {}, wait=False)
        await wait_until(lambda: h.store.get_steps(started.id) != [])  # the start row is written
        # Our lease lapses (a long GC pause, a partition) and another process claims the execution.
        h.store.update_execution(started.id, lease_until=time.time() - 1)
        newer = h.store.claim_execution(started.id, "newer", lease_seconds=60, now=time.time())
        assert newer is not None and newer.fence > started.fence
        await wait_until(lambda: h.engine.driving == 0, timeout=5)
        await wait_until(lambda: bool(h.cancellations()))  # its upstream call was cancelled too
        (row,) = h.store.get_steps(started.id, all_attempts=True)
        assert row.status == StepStatus.RUNNING  # the stale process wrote nothing after losing the claim
        assert h.store.get_execution(started.id).claimed_by == "newer"


async def test_a_resumed_parent_takes_over_its_dead_driver_s_child_claim(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    config = write_config(tmp_path)
    store = open_store(db)
    saved(store, chain("inner", 3, 0.4))
    saved(store, {"name": "outer", "steps": [{"name": "child", "template": "inner"}], "output": "@child"})
    common = ["--config", str(config), "--db", db]

    def child_under_way() -> bool:
        page, _ = store.list_executions(ExecutionQuery(limit=10))
        return any(e.parent_id is not None and "c1" in finished_steps(store, e.id) for e in page)

    with replayer_process(tmp_path, "run", "run", "outer", "--json", "--lease-seconds", LONG_LEASE, *common) as r:
        await wait_until(child_under_way, timeout=60)
        r.send_signal(signal.SIGKILL)
        r.wait(timeout=30)
    page, _ = store.list_executions(ExecutionQuery(limit=10))
    (parent,) = [e for e in page if e.parent_id is None]
    (child,) = [e for e in page if e.parent_id is not None]
    assert child.claimed_by is not None and (child.lease_until or 0) > time.time()  # the dead run's claim
    with replayer_process(tmp_path, "resume", "executions", "resume", parent.id, "--json", *common) as resume:
        await wait_until(lambda: resume.poll() is not None, timeout=50)  # well within the 60 s lease
    assert resume.returncode == 0, (tmp_path / "resume.err").read_text()
    assert store.get_execution(child.id).status == ExecutionStatus.SUCCEEDED
    assert store.get_execution(parent.id).status == ExecutionStatus.SUCCEEDED
    assert counts(tmp_path)["c1"] == 1
    store.close()
