"""`timeout` and `retry` on `template` steps, over real fixture servers (SPEC §7, §8).

Children count their attempts with the `counter` tool (one file shared by every child), and fail or
wait on the count, so the n-th child of a step behaves differently from the first without a special
fixture: `check` fails the child while the count is low, `wait` calls `slow` only on the first try.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.callers import harness, saved, wait_until
from tests.store_helpers import span
from toolreel.core.model import ExecutionStatus, StepRecord, StepStatus
from toolreel.core.template import RetryPolicy
from toolreel.replayer import child_execution_id, retry_delay

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# Fails its first two runs (per `k`), succeeds on the third; its output is the count.
FLAKY = {
    "name": "flaky",
    "inputs": {"k": {"type": "string", "default": "flaky"}},
    "steps": [
        {"name": "count", "tool": "features__counter", "input": {"key": "@input.k"}},
        {
            "name": "check",
            "when": {"ref": "@count.count", "lt": 3},
            "tool": "features__fail",
            "input": {"message": "try {{@count.count}} failed"},
        },
    ],
    "output": "@count.count",
}

# Hangs in `slow` (30 s) on its first run only.
SLOW_ONCE = {
    "name": "slow-once",
    "steps": [
        {"name": "count", "tool": "features__counter", "input": {"key": "slow-once"}},
        {
            "name": "wait",
            "when": {"ref": "@count.count", "eq": 1},
            "tool": "features__slow",
            "input": {"seconds": 30},
        },
    ],
    "output": "@count.count",
}


def parent(step: dict[str, Any], name: str = "parent") -> dict[str, Any]:
    return {"name": name, "steps": [{"name": "sub", **step}], "output": "@sub"}


def attempts(h: Any, execution_id: str, name: str = "sub") -> list[StepRecord]:
    return [r for r in h.store.get_steps(execution_id, all_attempts=True) if r.name == name]


def children(h: Any, rows: list[StepRecord]) -> list[Any]:
    """The child execution of each attempt row, in attempt order."""
    return [h.store.get_execution(row.result["execution_id"]) for row in rows]


async def test_a_template_step_past_its_timeout_cancels_its_child_and_the_upstream_call(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        saved(h.store, SLOW_ONCE)
        t = saved(h.store, parent({"template": "slow-once", "timeout": "500ms"}))
        with anyio.fail_after(10):
            execution = await h.engine.run_template(t, {})
        assert execution.status == ExecutionStatus.FAILED
        (row,) = attempts(h, execution.id)
        assert row.status == StepStatus.FAILED
        assert "template 'slow-once' of step sub ran past the step's timeout of 0.5 s" in (row.error or "")
        (child,) = children(h, [row])
        assert child.id == child_execution_id(execution.id, "sub")
        assert child.status == ExecutionStatus.CANCELLED and child.claimed_by is None
        assert (child.error or "").startswith("cancelled: the parent step's timeout of 0.5 s passed (step sub")
        wait = {r.name: r for r in h.store.get_steps(child.id)}["wait"]
        assert wait.status == StepStatus.CANCELLED
        await wait_until(lambda: bool(h.cancellations()))  # the server logs as it unwinds
        assert h.cancellations() == ["slow cancelled seconds=30.0"]


async def test_a_timeout_cancels_grandchildren_too(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        saved(h.store, SLOW_ONCE)
        saved(h.store, {"name": "middle", "steps": [{"name": "inner", "template": "slow-once"}]})
        t = saved(h.store, parent({"template": "middle", "timeout": "500ms"}))
        with anyio.fail_after(10):
            execution = await h.engine.run_template(t, {})
        assert execution.status == ExecutionStatus.FAILED
        (middle,) = children(h, attempts(h, execution.id))
        grandchild = h.store.get_execution(child_execution_id(middle.id, "inner"))
        for run in (middle, grandchild):  # the grandchild unwinds first: it must not be left `running`
            assert run.status == ExecutionStatus.CANCELLED, run
            assert "the parent step's timeout of 0.5 s passed (step sub" in (run.error or "")
        await wait_until(lambda: bool(h.cancellations()))
        assert h.cancellations() == ["slow cancelled seconds=30.0"]


async def test_a_failed_child_is_retried_as_a_new_child_until_one_succeeds(tmp_path: Path) -> None:
    retry = {"max_attempts": 3, "backoff": "exponential", "initial_delay": "10ms", "retry_on": ["tool_error"]}
    async with harness(tmp_path) as h:
        saved(h.store, FLAKY)
        t = saved(h.store, parent({"template": "flaky", "retry": retry}))
        with anyio.fail_after(20):
            execution = await h.engine.run_template(t, {})
        assert execution.status == ExecutionStatus.SUCCEEDED, execution.error
        assert execution.output == 3
        rows = attempts(h, execution.id)
        assert [(r.attempt, r.status) for r in rows] == [
            (1, StepStatus.FAILED),
            (2, StepStatus.FAILED),
            (3, StepStatus.SUCCEEDED),
        ]
        assert "try 1 failed" in (rows[0].error or "") and "try 2 failed" in (rows[1].error or "")
        runs = children(h, rows)
        assert len({child.id for child in runs}) == 3  # each attempt ran a child of its own
        assert runs[0].id == child_execution_id(execution.id, "sub")  # the first keeps the plain id
        assert [child.status for child in runs] == [
            ExecutionStatus.FAILED,
            ExecutionStatus.FAILED,
            ExecutionStatus.SUCCEEDED,
        ]
        assert all((c.parent_id, c.parent_step) == (execution.id, "sub") for c in runs)
        assert h.counts() == {"flaky": 3}
        # Each retry started after the failed attempt ended plus the policy's delay, its child after that.
        policy = RetryPolicy(max_attempts=3, backoff="exponential", initial_delay=0.01, retry_on=("tool_error",))
        for n in (2, 3):
            failed_row, retry_row = rows[n - 2], rows[n - 1]
            assert span(retry_row)[0] - span(failed_row)[1] >= retry_delay(policy, n) - 0.002
            assert runs[n - 1].created_at >= span(retry_row)[0] >= runs[n - 2].updated_at


async def test_a_failure_whose_kind_retry_on_does_not_name_is_not_retried(tmp_path: Path) -> None:
    retry = {"max_attempts": 3, "backoff": "fixed", "initial_delay": "10ms", "retry_on": ["timeout", "transient"]}
    async with harness(tmp_path) as h:
        saved(h.store, FLAKY)
        t = saved(h.store, parent({"template": "flaky", "retry": retry}))
        with anyio.fail_after(10):
            execution = await h.engine.run_template(t, {})
        assert execution.status == ExecutionStatus.FAILED
        (row,) = attempts(h, execution.id)
        assert row.status == StepStatus.FAILED and "try 1 failed" in (row.error or "")
        (child,) = children(h, [row])
        assert child.status == ExecutionStatus.FAILED
        assert h.counts() == {"flaky": 1}
        assert "step sub failed: child execution" in (execution.error or "")


async def test_a_child_that_cannot_start_for_want_of_an_upstream_is_transient(tmp_path: Path) -> None:
    retry = {"max_attempts": 2, "backoff": "fixed", "initial_delay": "10ms", "retry_on": ["transient"]}
    async with harness(tmp_path) as h:
        saved(h.store, {"name": "orphan", "steps": [{"name": "call", "tool": "gone__tool", "input": {}}]})
        t = saved(h.store, parent({"template": "orphan", "retry": retry}))
        with anyio.fail_after(10):
            execution = await h.engine.run_template(t, {})
        assert execution.status == ExecutionStatus.FAILED
        rows = attempts(h, execution.id)
        assert [(r.attempt, r.status) for r in rows] == [(1, StepStatus.FAILED), (2, StepStatus.FAILED)]
        assert all("no upstream server lists tool 'gone__tool'" in (r.error or "") for r in rows)


async def test_a_timed_out_attempt_is_retried_with_a_new_child(tmp_path: Path) -> None:
    retry = {"max_attempts": 2, "backoff": "fixed", "initial_delay": "10ms", "retry_on": ["timeout"]}
    async with harness(tmp_path) as h:
        saved(h.store, SLOW_ONCE)
        t = saved(h.store, parent({"template": "slow-once", "timeout": "1s", "retry": retry}))
        with anyio.fail_after(15):
            execution = await h.engine.run_template(t, {})
        assert execution.status == ExecutionStatus.SUCCEEDED, execution.error
        assert execution.output == 2
        rows = attempts(h, execution.id)
        assert [(r.attempt, r.status) for r in rows] == [(1, StepStatus.FAILED), (2, StepStatus.SUCCEEDED)]
        assert "ran past the step's timeout of 1 s" in (rows[0].error or "")
        first, second = children(h, rows)
        assert first.id != second.id
        assert first.status == ExecutionStatus.CANCELLED and second.status == ExecutionStatus.SUCCEEDED
        await wait_until(lambda: bool(h.cancellations()))
        assert h.cancellations() == ["slow cancelled seconds=30.0"]
        assert h.counts() == {"slow-once": 2}


async def test_for_each_items_of_a_template_step_each_get_the_retry_policy(tmp_path: Path) -> None:
    retry = {"max_attempts": 3, "backoff": "linear", "initial_delay": "10ms", "retry_on": ["tool_error"]}
    async with harness(tmp_path) as h:
        saved(h.store, FLAKY)
        step = {"for_each": "@input.keys", "concurrency": 1, "template": "flaky", "input": {"k": "@item"}}
        t = saved(h.store, {**parent({**step, "retry": retry}), "inputs": {"keys": {"type": "array"}}})
        with anyio.fail_after(30):
            execution = await h.engine.run_template(t, {"keys": ["a", "b"]})
        assert execution.status == ExecutionStatus.SUCCEEDED, execution.error
        assert execution.output == [3, 3]
        assert h.counts() == {"a": 3, "b": 3}
        for index in (0, 1):
            rows = attempts(h, execution.id, f"sub[{index}]")
            assert [r.status for r in rows] == [StepStatus.FAILED, StepStatus.FAILED, StepStatus.SUCCEEDED]
            assert len({r.result["execution_id"] for r in rows}) == 3
        # concurrency 1 is kept: item 1 started once item 0 had succeeded, retries included.
        assert span(attempts(h, execution.id, "sub[1]")[0])[0] >= span(attempts(h, execution.id, "sub[0]")[-1])[1]


# Fails on its first run; on later runs asks for approval (the run pauses without an approver).
FAIL_THEN_ASK = {
    "name": "fail-then-ask",
    "steps": [
        {"name": "count", "tool": "features__counter", "input": {"key": "ask"}},
        {"name": "check", "when": {"ref": "@count.count", "eq": 1}, "tool": "features__fail", "input": {}},
        {"name": "confirm", "approve": "go on after try {{@count.count}}?", "depends_on": ["check"]},
    ],
    "output": "@count.count",
}


async def paused_on_a_retry(h: Any) -> tuple[Any, list[Any]]:
    saved(h.store, FAIL_THEN_ASK)
    retry = {"max_attempts": 3, "backoff": "fixed", "initial_delay": "10ms", "retry_on": ["tool_error"]}
    t = saved(h.store, parent({"template": "fail-then-ask", "timeout": "5s", "retry": retry}))
    with anyio.fail_after(10):
        paused = await h.engine.run_template(t, {})
    assert paused.status == ExecutionStatus.PAUSED and paused.prompt == "go on after try 2?"
    rows = attempts(h, paused.id)
    assert [(r.attempt, r.status) for r in rows] == [(1, StepStatus.FAILED), (2, StepStatus.RUNNING)]
    waiting = rows[1].result
    assert waiting["awaiting"] == "child" and 0 <= waiting["elapsed"] < 5  # timeout used before the pause
    return paused, children(h, rows)


async def test_resuming_a_paused_retry_answers_that_attempts_child(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        paused, (first, second) = await paused_on_a_retry(h)
        assert first.status == ExecutionStatus.FAILED and second.status == ExecutionStatus.PAUSED
        with anyio.fail_after(10):
            done = await h.engine.resume(paused.id, "yes")
        assert done.status == ExecutionStatus.SUCCEEDED, done.error
        assert done.output == 2  # the second child went on; no third child counted
        assert h.counts() == {"ask": 2}
        rows = attempts(h, paused.id)
        assert [(r.attempt, r.status) for r in rows] == [(1, StepStatus.FAILED), (2, StepStatus.SUCCEEDED)]
        assert rows[1].result["execution_id"] == second.id
        assert h.store.get_execution(second.id).status == ExecutionStatus.SUCCEEDED
        assert h.store.get_execution(first.id).status == ExecutionStatus.FAILED  # left as it was


async def test_cancelling_a_paused_parent_cancels_its_retry_child(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        paused, (first, second) = await paused_on_a_retry(h)
        cancelled = await h.engine.cancel(paused.id)
        assert cancelled.status == ExecutionStatus.CANCELLED
        assert h.store.get_execution(second.id).status == ExecutionStatus.CANCELLED
        assert h.store.get_execution(first.id).status == ExecutionStatus.FAILED


# Fails on its first run; on later runs waits in `slow` for a second.
FAIL_THEN_WAIT = {
    "name": "fail-then-wait",
    "steps": [
        {"name": "count", "tool": "features__counter", "input": {"key": "wait"}},
        {"name": "check", "when": {"ref": "@count.count", "eq": 1}, "tool": "features__fail", "input": {}},
        {"name": "wait", "tool": "features__slow", "input": {"seconds": 1}, "depends_on": ["check"]},
    ],
    "output": "@count.count",
}


async def test_a_parent_resumed_after_a_shutdown_adopts_its_retry_child(tmp_path: Path) -> None:
    retry = {"max_attempts": 3, "backoff": "fixed", "initial_delay": "10ms", "retry_on": ["tool_error"]}
    async with harness(tmp_path) as h:
        saved(h.store, FAIL_THEN_WAIT)
        t = saved(h.store, parent({"template": "fail-then-wait", "retry": retry}))
        started = await h.engine.run_template(t, {}, wait=False)
        with anyio.fail_after(10):
            await h.caller.called("features__slow")  # the second child is in flight
    # Leaving the harness shut the engine down: the runs were interrupted, left `running` for a resume.
    assert h.store.get_execution(started.id).status == ExecutionStatus.RUNNING
    async with harness(tmp_path) as h2:
        with anyio.fail_after(15):
            done = await h2.engine.resume(started.id)
        assert done.status == ExecutionStatus.SUCCEEDED, done.error
        assert done.output == 2
        assert h2.counts() == {"wait": 2}  # the second child's count was not run again, no third child
        rows = attempts(h2, started.id)
        assert [(r.attempt, r.status) for r in rows] == [
            (1, StepStatus.FAILED),
            (2, StepStatus.CANCELLED),  # interrupted by the shutdown
            (3, StepStatus.SUCCEEDED),
        ]
        first = rows[0].result["execution_id"]
        adopted = rows[2].result["execution_id"]
        assert adopted != first and h2.store.get_execution(first).status == ExecutionStatus.FAILED
        assert h2.store.get_execution(adopted).status == ExecutionStatus.SUCCEEDED


# Fails for the item "fail"; waits in `slow` (30 s) for any other.
FAIL_OR_WAIT = {
    "name": "fail-or-wait",
    "inputs": {"mode": {"type": "string"}},
    "steps": [
        {  # fails once the other item's call is in flight: that call is what the failure must cancel
            "name": "boom",
            "when": {"ref": "@input.mode", "eq": "fail"},
            "tool": "features__fail",
            "input": {"after_start_of": "slow"},
        },
        {
            "name": "wait",
            "when": {"ref": "@input.mode", "neq": "fail"},
            "tool": "features__slow",
            "input": {"seconds": 30},
        },
    ],
}


async def test_a_failed_for_each_item_cancels_its_siblings_children(tmp_path: Path) -> None:
    """The failed item fails the step: the children of the items still running are cancelled with
    their upstream calls, not left `running` for a later recovery to resume."""
    async with harness(tmp_path) as h:
        saved(h.store, FAIL_OR_WAIT)
        step = {"for_each": "@input.modes", "template": "fail-or-wait", "input": {"mode": "@item"}}
        t = saved(h.store, {**parent(step), "inputs": {"modes": {"type": "array"}}})
        with anyio.fail_after(10):
            execution = await h.engine.run_template(t, {"modes": ["wait", "fail"]})
        assert execution.status == ExecutionStatus.FAILED
        waiting = h.store.get_execution(child_execution_id(execution.id, "sub[0]"))
        assert waiting.status == ExecutionStatus.CANCELLED, waiting
        assert "item 1 of the parent's for_each step failed" in (waiting.error or "")
        assert waiting.claimed_by is None
        await wait_until(lambda: bool(h.cancellations()))
        assert h.cancellations() == ["slow cancelled seconds=30.0"]
