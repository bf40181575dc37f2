"""Step policies and run limits on real fixture servers: timeout, retry, idempotency, deadline, cancel (SPEC §8)."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.callers import harness, template, wait_until
from tests.store_helpers import span
from toolreel.core.model import ExecutionStatus, StepRecord, StepStatus
from toolreel.core.template import RetryPolicy
from toolreel.replayer import Engine, retry_delay
from toolreel.replayer._policy import idempotency_store_key

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def attempts(h: Any, execution_id: str, name: str) -> list[StepRecord]:
    return [r for r in h.store.get_steps(execution_id, all_attempts=True) if r.name == name]


@pytest.mark.parametrize(
    ("backoff", "expected"),
    [("fixed", [0.5, 0.5, 0.5, 0.5]), ("linear", [0.5, 1.0, 1.5, 2.0]), ("exponential", [0.5, 1.0, 2.0, 3.0])],
)
def test_retry_delay_follows_the_formula(backoff: Any, expected: list[float]) -> None:
    policy = RetryPolicy(max_attempts=9, backoff=backoff, initial_delay=0.5, max_delay=3.0)
    assert [retry_delay(policy, n) for n in range(2, 6)] == expected
    assert retry_delay(policy, 1) == 0.0


def test_retry_delay_jitter_stays_within_its_band() -> None:
    policy = RetryPolicy(max_attempts=9, backoff="exponential", initial_delay=1.0, max_delay=10.0, jitter=0.2)
    rng = random.Random(7)
    delays = [retry_delay(policy, 4, rng=rng) for _ in range(500)]
    assert all(3.2 <= d <= 4.8 for d in delays)
    assert max(delays) - min(delays) > 1.0  # jitter is applied, not just allowed


async def test_a_timed_out_attempt_is_cancelled_upstream_and_retried(tmp_path: Path) -> None:
    retry = {"max_attempts": 2, "backoff": "fixed", "initial_delay": "50ms", "retry_on": ["timeout"]}
    t = template(
        {
            "name": "timeouts",
            "steps": [
                {"name": "wait", "tool": "features__slow", "input": {"seconds": 20}, "timeout": "300ms", "retry": retry}
            ],
        }
    )
    async with harness(tmp_path) as h:
        with anyio.fail_after(10):
            execution = await h.engine.run_template(t, {})
        assert execution.status == ExecutionStatus.FAILED
        rows = attempts(h, execution.id, "wait")
        assert [(r.attempt, r.status) for r in rows] == [(1, StepStatus.FAILED), (2, StepStatus.FAILED)]
        assert "'features'" in (rows[1].error or "") and "0.3 s" in (rows[1].error or "")
        await wait_until(lambda: len(h.cancellations()) >= 2)  # the server logs as it unwinds
        assert h.cancellations() == ["slow cancelled seconds=20.0"] * 2


async def test_tool_errors_are_not_retried_unless_retry_on_names_them(tmp_path: Path) -> None:
    t = template(
        {
            "name": "errors",
            "steps": [
                {"name": "once", "tool": "features__fail", "input": {"message": "bang"}, "retry": {"max_attempts": 3}}
            ],
        }
    )
    async with harness(tmp_path) as h:
        execution = await h.engine.run_template(t, {})
        assert execution.status == ExecutionStatus.FAILED
        once = attempts(h, execution.id, "once")
        assert len(once) == 1 and once[0].error == "tool features__fail returned an error: bang"
        assert once[0].is_error and once[0].result["isError"] is True


async def test_retries_follow_tool_errors_until_the_last_attempt(tmp_path: Path) -> None:
    retry = {"max_attempts": 3, "backoff": "linear", "initial_delay": "100ms", "retry_on": ["tool_error"]}
    t = template(
        {
            "name": "errors",
            "steps": [{"name": "retried", "tool": "features__fail", "input": {"message": "boom"}, "retry": retry}],
        }
    )
    async with harness(tmp_path) as h:
        execution = await h.engine.run_template(t, {})
        rows = attempts(h, execution.id, "retried")
        assert [r.attempt for r in rows] == [1, 2, 3] and all(r.status == StepStatus.FAILED for r in rows)
        gaps = [span(rows[i + 1])[0] - span(rows[i])[1] for i in range(2)]
        assert gaps[0] >= 0.1 and gaps[1] >= 0.2  # linear: initial*(n-1)
        assert execution.error == "step retried failed: tool features__fail returned an error: boom"


async def test_an_upstream_that_disappears_mid_run_is_retried_per_policy(tmp_path: Path) -> None:
    retry = {"max_attempts": 3, "backoff": "fixed", "initial_delay": "100ms", "retry_on": ["transient"]}
    t = template(
        {
            "name": "crashy",
            "steps": [
                {"name": "long", "tool": "features__slow", "input": {"seconds": 1}, "retry": retry},
                {"name": "boom", "tool": "features__crash", "input": {}, "include_failed": True},
            ],
        }
    )
    async with harness(tmp_path) as h:
        execution = await h.engine.run_template(t, {})
        assert execution.status == ExecutionStatus.SUCCEEDED, execution.error
        rows = attempts(h, execution.id, "long")
        assert rows[-1].status == StepStatus.SUCCEEDED and len(rows) >= 2
        assert "server 'features' closed the connection" in (rows[0].error or "")
        boom = attempts(h, execution.id, "boom")[0]
        assert boom.status == StepStatus.FAILED and "'features'" in (boom.error or "")
        assert h.caller.starts("features") >= 2


async def test_without_retry_a_vanished_upstream_fails_the_step_naming_the_server(tmp_path: Path) -> None:
    t = template(
        {
            "name": "crashy2",
            "steps": [
                {"name": "long", "tool": "features__slow", "input": {"seconds": 5}},
                {"name": "boom", "tool": "features__crash", "input": {}, "include_failed": True},
            ],
        }
    )
    async with harness(tmp_path) as h:
        with anyio.fail_after(10):
            execution = await h.engine.run_template(t, {})
        assert execution.status == ExecutionStatus.FAILED
        assert execution.error is not None and "step long failed: server 'features'" in execution.error


async def test_global_idempotency_keys_run_a_call_once_across_executions(tmp_path: Path) -> None:
    def keyed(scope: str) -> dict[str, Any]:
        return {
            "name": f"notify-{scope}",
            "inputs": {"repo": {"type": "string"}},
            "steps": [
                {
                    "name": "notify",
                    "tool": "features__counter",
                    "input": {"key": scope},
                    "idempotency_key": "notify-{{@input.repo}}",
                    "idempotency_scope": scope,
                    "idempotency_ttl": "1h",
                }
            ],
            "output": "@notify.count",
        }

    async with harness(tmp_path) as h:
        outputs = []
        for scope in ("global", "global", "execution", "execution"):
            execution = await h.engine.run_template(template(keyed(scope)), {"repo": "a/b"})
            assert execution.status == ExecutionStatus.SUCCEEDED
            outputs.append(execution.output)
        assert outputs == [1, 1, 1, 2]  # the second global run reused the stored result
        assert h.counts() == {"global": 1, "execution": 2}
        key = idempotency_store_key("notify-a/b", scope="global", execution_id="")
        assert h.store.get_idempotent(key, now=time.time()) is not None
        assert h.store.get_idempotent(key, now=time.time() + 3601) is None  # the TTL is stored with it


async def test_a_deadline_fails_the_run_and_cancels_calls_in_flight(tmp_path: Path) -> None:
    t = template({"name": "late", "steps": [{"name": "wait", "tool": "features__slow", "input": {"seconds": 30}}]})
    async with harness(tmp_path) as h:
        begun = time.monotonic()
        with anyio.fail_after(10):
            execution = await h.engine.run_template(t, {}, deadline=time.time() + 0.5)
        assert time.monotonic() - begun < 2.0
        assert execution.status == ExecutionStatus.FAILED
        assert (execution.error or "").startswith("deadline_exceeded")
        row = attempts(h, execution.id, "wait")[0]
        assert row.status == StepStatus.CANCELLED and (row.error or "").startswith("deadline_exceeded")
        await wait_until(lambda: bool(h.cancellations()))
        assert h.cancellations() == ["slow cancelled seconds=30.0"]


# `mark` is sent after `wait` on the same session: once it has counted, the server is running `wait`.
SLOW = {
    "name": "slow",
    "steps": [
        {"name": "wait", "tool": "features__slow", "input": {"seconds": 30}},
        {"name": "mark", "tool": "features__counter", "input": {"key": "mark"}},
        {"name": "after", "tool": "features__counter", "input": {}, "depends_on": ["wait"]},
    ],
}


async def test_cancel_stops_a_run_within_a_second_and_cancels_upstream(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        started = await h.engine.run_template(template(SLOW), {}, wait=False)
        await wait_until(lambda: "mark" in h.counts())
        begun = time.monotonic()
        execution = await h.engine.cancel(started.id)
        assert time.monotonic() - begun < 1.0
        assert execution.status == ExecutionStatus.CANCELLED and execution.claimed_by is None
        assert attempts(h, started.id, "wait")[0].status == StepStatus.CANCELLED
        await wait_until(lambda: bool(h.cancellations()))
        assert h.counts() == {"mark": 1}


async def test_cancel_from_another_process_reaches_the_driver(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        started = await h.engine.run_template(template(SLOW), {}, wait=False)
        await wait_until(lambda: "mark" in h.counts())
        async with Engine(h.store, h.caller, owner="elsewhere") as other:
            begun = time.monotonic()
            execution = await other.cancel(started.id)
            assert time.monotonic() - begun < 1.0
        assert execution.status == ExecutionStatus.CANCELLED
        assert execution.claimed_by is None  # the driver saw it and let go
        assert attempts(h, started.id, "wait")[0].status == StepStatus.CANCELLED
        await wait_until(lambda: bool(h.cancellations()))


async def test_cancelling_a_paused_run_needs_no_driver(tmp_path: Path) -> None:
    t = template({"name": "ask", "steps": [{"name": "confirm", "approve": "go?"}]})
    async with harness(tmp_path) as h:
        paused = await h.engine.run_template(t, {})
        assert paused.status == ExecutionStatus.PAUSED
        execution = await h.engine.cancel(paused.id)
        assert execution.status == ExecutionStatus.CANCELLED
        assert attempts(h, paused.id, "confirm")[0].status == StepStatus.CANCELLED
