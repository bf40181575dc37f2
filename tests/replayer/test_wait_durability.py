"""Waits across crashes, with real processes (SPEC §7 `wait`): `toolreel run` returns once the execution
waits (exit 3), a worker is SIGKILLed while the execution waits for a time and another worker finishes it on
time; a worker is SIGKILLed while it waits for a signal, and `executions signal` in a new process finishes
it. The `features` fixture's `counter` file proves each call ran once."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from tests.callers import saved, wait_until
from tests.replayer.test_replayer_durability import counts, only_execution, replayer_process, stop, write_config
from toolreel.core.model import ExecutionStatus, StepStatus
from toolreel.core.store import open_store

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

WAIT = 6.0  # seconds: long enough to kill a worker while the execution waits, on a busy machine too

TEMPLATE = {
    "name": "patient",
    "steps": [
        {"name": "before", "tool": "features__counter", "input": {"key": "before"}},
        {"name": "nap", "wait": {"for": f"{WAIT:g}s"}, "depends_on": ["before"]},
        {"name": "middle", "tool": "features__counter", "input": {"key": "middle"}, "depends_on": ["nap"]},
        {
            "name": "go",
            "wait": {"signal": "go", "schema": {"type": "object", "required": ["who"]}},
            "depends_on": ["middle"],
        },
        {"name": "after", "tool": "features__counter", "input": {"key": "after-{{@go.who}}"}},
    ],
}


async def test_a_waiting_execution_survives_kill_9_and_resumes_on_time(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    config = write_config(tmp_path)
    store = open_store(db)
    saved(store, TEMPLATE)
    common = ["--config", str(config), "--db", db]
    ready = tmp_path / "worker1.err"
    # A worker is up before the run starts, so it is alive while the execution waits; it claims nothing.
    with replayer_process(tmp_path, "worker1", "worker", "--poll", "0.1", *common) as first:
        await wait_until(lambda: ready.exists() and b"ready" in ready.read_bytes(), timeout=60, what="worker 1")
        with replayer_process(tmp_path, "run", "run", "patient", "--json", *common) as runner:
            await wait_until(lambda: runner.poll() is not None, timeout=60, what="`run` to return once it waits")
        execution = only_execution(store)
        assert execution is not None
        due = execution.lease_until
        waiting = execution.status == ExecutionStatus.PAUSED and time.time() < (due or 0)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    assert runner.returncode == 3, (tmp_path / "run.err").read_text()
    shown = json.loads((tmp_path / "run.out").read_text())
    assert shown["status"] == "paused" and shown["prompt"]["wait"] == "time"
    assert due is not None and shown["prompt"]["until"] == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(due))
    if waiting:  # (on a very busy machine worker 1 may have woken it already: it is killed mid-drive instead)
        after_kill = store.get_execution(execution.id)
        assert after_kill.status == ExecutionStatus.PAUSED and after_kill.claimed_by is None
        assert counts(tmp_path) == {"before": 1}

    with replayer_process(tmp_path, "worker2", "worker", "--poll", "0.1", *common) as second:
        await wait_until(
            lambda: (store.get_execution(execution.id).prompt or {}).get("signal") == "go",
            timeout=60,
            what="the wait to end and the signal step to wait",
        )
        rows = {r.name: r for r in store.get_steps(execution.id)}
        assert rows["nap"].status == StepStatus.SUCCEEDED
        assert rows["nap"].ended_at is not None and rows["nap"].ended_at >= due
        second.send_signal(signal.SIGKILL)  # killed while the execution waits for its signal
        second.wait(timeout=30)
    assert counts(tmp_path) == {"before": 1, "middle": 1}

    bad = ["executions", "signal", execution.id, "go", "--data", '{"whom": 1}', *common]
    with replayer_process(tmp_path, "bad", *bad) as refused:
        await wait_until(lambda: refused.poll() is not None, timeout=60)
    assert refused.returncode == 2
    assert "[signal_refused]" in (tmp_path / "bad.err").read_text()

    good = ["executions", "signal", execution.id, "go", "--data", '{"who": "ops"}', "--json", *common]
    with replayer_process(tmp_path, "signal", *good) as sender:
        await wait_until(lambda: sender.poll() is not None, timeout=60)
    assert sender.returncode == 0, (tmp_path / "signal.err").read_text()
    final = store.get_execution(execution.id)
    assert final.status == ExecutionStatus.SUCCEEDED, final.error
    assert counts(tmp_path) == {"before": 1, "middle": 1, "after-ops": 1}
    store.close()


async def test_a_worker_wakes_a_queued_approval_when_its_timeout_passes(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    config = write_config(tmp_path)
    store = open_store(db)
    saved(
        store,
        {
            "name": "unanswered",
            "steps": [
                {"name": "ask", "approve": {"message": "Go?", "timeout": "2s", "on_timeout": "approve"}},
                {"name": "after", "tool": "features__counter", "input": {"key": "after"}, "depends_on": ["ask"]},
            ],
        },
    )
    common = ["--config", str(config), "--db", db]
    with replayer_process(tmp_path, "queue", "run", "unanswered", "--detach", "--json", "--db", db) as queued:
        await wait_until(lambda: queued.poll() is not None, timeout=60)
    execution_id = json.loads((tmp_path / "queue.out").read_text())["execution_id"]
    with replayer_process(tmp_path, "worker", "worker", "--poll", "0.1", *common) as worker:
        await wait_until(lambda: store.get_execution(execution_id).status.finished, timeout=60)
        stop(worker)
    final = store.get_execution(execution_id)
    assert final.status == ExecutionStatus.SUCCEEDED, final.error
    ask = {r.name: r for r in store.get_steps(execution_id)}["ask"]
    assert ask.output == {"approved": True, "response": None, "timed_out": True}
    assert counts(tmp_path) == {"after": 1}
    store.close()


async def test_a_switch_killed_while_its_branch_runs_is_finished_without_deciding_again(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    config = write_config(tmp_path)
    store = open_store(db)
    branch = [
        {"name": "work", "tool": "features__slow", "input": {"seconds": 3}},
        {"name": "mark", "tool": "features__counter", "input": {"key": "fast"}, "depends_on": ["work"]},
    ]
    saved(
        store,
        {
            "name": "branchy",
            "inputs": {"lane": {"type": "string"}},
            "steps": [
                {"name": "first", "tool": "features__counter", "input": {"key": "first"}},
                {
                    "name": "pick",
                    "switch": {
                        "ref": "@input.lane",
                        "cases": [{"eq": "fast", "steps": branch}],
                        "default": [{"name": "other", "tool": "features__counter", "input": {"key": "other"}}],
                    },
                    "depends_on": ["first"],
                },
                {"name": "end", "return": "@mark.count", "depends_on": ["mark", "other"], "wait_for": "any"},
            ],
        },
    )
    common = ["--config", str(config), "--db", db]
    with replayer_process(tmp_path, "run", "run", "branchy", "-i", "lane=fast", "--json", *common) as runner:
        await wait_until(
            lambda: (
                (e := only_execution(store)) is not None
                and any(r.name == "work" and r.status == StepStatus.RUNNING for r in store.get_steps(e.id))
            ),
            timeout=60,
            what="the branch's slow step to start",
        )
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=30)
    execution = only_execution(store)
    assert execution is not None
    with replayer_process(tmp_path, "worker", "worker", "--poll", "0.1", *common) as worker:
        await wait_until(lambda: store.get_execution(execution.id).status.finished, timeout=60)
        stop(worker)
    final = store.get_execution(execution.id)
    assert final.status == ExecutionStatus.SUCCEEDED, final.error
    assert final.output == 1
    rows = {r.name: r for r in store.get_steps(execution.id, all_attempts=True) if r.name == "pick"}
    assert [r.attempt for r in store.get_steps(execution.id, all_attempts=True) if r.name == "pick"] == [1]
    assert rows["pick"].output == {"case": 0, "value": "fast"}
    assert counts(tmp_path) == {"first": 1, "fast": 1}  # the other branch never ran; nothing ran twice
    store.close()
