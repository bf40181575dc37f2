"""Retrying a failed execution under its id, and caller-chosen execution ids (SPEC §8): on the
`features` fixture server, whose `counter` counts in a file every call that reached it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.callers import harness, saved, wait_until
from toolreel.core.errors import ExecutionError
from toolreel.core.model import ExecutionStatus, StepStatus
from toolreel.replayer._ledger import Ledger
from toolreel.replayer._retry import RetryRequest, reset_for_retry

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# `later` fails while `a` is not a number (the server refuses it), after `side` had its side effect.
CHAIN: dict[str, Any] = {
    "name": "chain",
    "inputs": {"a": {"type": "string"}},
    "steps": [
        {"name": "first", "tool": "features__counter", "input": {"key": "first"}},
        {"name": "side", "tool": "features__counter", "input": {"key": "side"}, "depends_on": ["first"]},
        {"name": "later", "tool": "features__add", "input": {"a": "@input.a", "b": 1}, "depends_on": ["side"]},
        {"name": "after", "tool": "features__counter", "input": {"key": "after"}, "depends_on": ["later"]},
    ],
    "output": {"sum": "@later.sum", "after": "@after.count"},
}


def attempts(store: Any, execution_id: str, name: str) -> list[tuple[int, str]]:
    rows = [r for r in store.get_steps(execution_id, all_attempts=True) if r.name == name]
    return [(r.attempt, r.status.value) for r in sorted(rows, key=lambda r: r.attempt)]


async def test_a_retry_with_a_fixed_input_finishes_without_repeating_the_side_effect(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        t = saved(h.store, CHAIN)
        failed = await h.engine.run_template(t, {"a": "not a number"})
        assert failed.status == ExecutionStatus.FAILED and "later" in (failed.error or "")
        assert h.counts() == {"first": 1, "side": 1}

        done = await h.engine.retry(failed.id, inputs={"a": "2"})

        assert done.id == failed.id and done.attempt == 2
        assert done.status == ExecutionStatus.SUCCEEDED, done.error
        assert done.output == {"sum": 3.0, "after": 1}
        assert h.counts() == {"first": 1, "side": 1, "after": 1}  # the side effect was not repeated
        assert attempts(h.store, failed.id, "side") == [(1, "succeeded")]
        assert attempts(h.store, failed.id, "later") == [(1, "failed"), (2, "pending"), (3, "succeeded")]
        stored = h.store.get_execution(failed.id)
        assert stored.inputs == {"a": "2"} and stored.attempt == 2 and stored.error is None


async def test_retry_from_a_step_runs_it_and_everything_downstream_again(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        t = saved(h.store, CHAIN)
        failed = await h.engine.run_template(t, {"a": "x"})
        done = await h.engine.retry(failed.id, from_step="side", inputs={"a": "5"})
        assert done.status == ExecutionStatus.SUCCEEDED, done.error
        assert h.counts() == {"first": 1, "side": 2, "after": 1}
        assert done.output == {"sum": 6.0, "after": 1}


async def test_a_retry_that_fails_again_can_be_retried_again(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        t = saved(h.store, CHAIN)
        failed = await h.engine.run_template(t, {"a": "x"})
        again = await h.engine.retry(failed.id)
        assert again.status == ExecutionStatus.FAILED and again.attempt == 2
        done = await h.engine.retry(failed.id, inputs={"a": "1"})
        assert done.status == ExecutionStatus.SUCCEEDED and done.attempt == 3
        assert h.counts() == {"first": 1, "side": 1, "after": 1}


async def test_a_for_each_retried_keeps_the_items_that_succeeded(tmp_path: Path) -> None:
    data = {
        "name": "each",
        "inputs": {"xs": {"type": "array"}},
        "steps": [{"name": "say", "for_each": "@input.xs", "tool": "features__echo", "input": {"text": "@item"}}],
    }
    async with harness(tmp_path) as h:
        t = saved(h.store, data)
        failed = await h.engine.run_template(t, {"xs": ["a", 5]})  # echo refuses a number
        assert failed.status == ExecutionStatus.FAILED
        done = await h.engine.retry(failed.id, inputs={"xs": ["a", "b"]})
        assert done.status == ExecutionStatus.SUCCEEDED, done.error
        assert done.output == ["a", "b"]
        assert attempts(h.store, failed.id, "say[0]") == [(1, "succeeded")]  # not called again
        assert attempts(h.store, failed.id, "say[1]")[-1] == (2, "succeeded")


async def test_only_a_failed_or_cancelled_root_run_is_retried(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        t = saved(h.store, CHAIN)
        ok = await h.engine.run_template(t, {"a": "1"})
        with pytest.raises(ExecutionError, match="is succeeded, and only a failed or cancelled execution"):
            await h.engine.retry(ok.id)
        failed = await h.engine.run_template(t, {"a": "x"})
        with pytest.raises(ExecutionError, match="has no step 'nope' to retry from"):
            await h.engine.retry(failed.id, from_step="nope")
        with pytest.raises(ExecutionError, match="unknown input"):
            await h.engine.retry(failed.id, inputs={"b": "1"})
        # A refused retry changed nothing: the execution is as it was, and free for the next one.
        stored = h.store.get_execution(failed.id)
        assert stored.status == ExecutionStatus.FAILED and stored.attempt == 1 and stored.claimed_by is None
        assert (await h.engine.retry(failed.id, inputs={"a": "4"})).status == ExecutionStatus.SUCCEEDED


async def test_a_retry_interrupted_after_its_rows_is_driven_on_by_recovery(tmp_path: Path) -> None:
    async with harness(tmp_path, lease_seconds=0.3) as h:
        t = saved(h.store, CHAIN)
        failed = await h.engine.run_template(t, {"a": "x"})
        # Another process wrote the retry, then died before driving it: its claim lapses and recovery drives it.
        gone = Ledger(h.store, "elsewhere:1:dead", 0.3)
        request = RetryRequest(failed.id, t, inputs={"a": "7"})
        await anyio.to_thread.run_sync(reset_for_retry, gone, request)
        assert h.store.get_execution(failed.id).status == ExecutionStatus.PENDING

        async def recovered() -> bool:
            return failed.id in await h.engine.recover()

        # The lease of the dead process must lapse, which nothing signals: look again until it has.
        await wait_until(recovered, timeout=20, what="recovery to take the lapsed retry")
        await wait_until(lambda: h.store.get_execution(failed.id).status.finished, timeout=20, what="retried run")
        current = h.store.get_execution(failed.id)
        assert current.status == ExecutionStatus.SUCCEEDED, current.error
        assert current.output == {"sum": 8.0, "after": 1} and current.attempt == 2
        assert h.counts() == {"first": 1, "side": 1, "after": 1}


async def test_a_cancelled_run_is_retried_from_where_it_stopped(tmp_path: Path) -> None:
    data = {
        "name": "stopped",
        "steps": [
            {"name": "side", "tool": "features__counter", "input": {"key": "side"}},
            {"name": "wait", "tool": "features__slow", "input": {"seconds": 0.2}, "depends_on": ["side"]},
            {"name": "after", "tool": "features__counter", "input": {"key": "after"}, "depends_on": ["wait"]},
        ],
    }
    async with harness(tmp_path) as h:
        t = saved(h.store, data)
        run = await h.engine.run_template(t, {}, wait=False)
        with anyio.fail_after(20):
            await h.caller.called("features__slow")
        cancelled = await h.engine.cancel(run.id)
        assert cancelled.status == ExecutionStatus.CANCELLED
        done = await h.engine.retry(run.id)
        assert done.status == ExecutionStatus.SUCCEEDED, done.error
        assert h.counts() == {"side": 1, "after": 1}


async def test_a_start_with_a_chosen_id_runs_once(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        t = saved(h.store, CHAIN)
        first = await h.engine.run_template(t, {"a": "1"}, execution_id="order-42")
        second = await h.engine.run_template(t, {"a": "1"}, execution_id="order-42")
        assert first.id == second.id == "order-42"
        assert second.status == ExecutionStatus.SUCCEEDED and second.output == {"sum": 2.0, "after": 1}
        assert h.counts() == {"first": 1, "side": 1, "after": 1}
        queued = await h.engine.enqueue(t, {"a": "1"}, execution_id="order-42")
        assert queued == "order-42" and h.store.get_execution("order-42").status == ExecutionStatus.SUCCEEDED
        other = saved(h.store, {**CHAIN, "name": "other"})
        with pytest.raises(ExecutionError, match="is taken by a run of template 'chain'"):
            await h.engine.run_template(other, {"a": "1"}, execution_id="order-42")
        with pytest.raises(ExecutionError, match="is not usable"):
            await h.engine.run_template(t, {"a": "1"}, execution_id="no spaces/please")
        steps = {r.name: r.status for r in h.store.get_steps("order-42")}
        assert set(steps.values()) == {StepStatus.SUCCEEDED}
