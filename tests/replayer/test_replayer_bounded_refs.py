"""A template's ref filters are bounded on the replayer's path as on the gateway's (`core.bounded_refs`): a
hostile filter fails its step with `ref_budget_exceeded` in a worker process, while the run's other steps,
ready beside it, go on meanwhile and the run ends as its template says."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.callers import harness, saved
from toolreel.core.bounded_refs import REF_TIME_ENV
from toolreel.core.model import ExecutionStatus, StepStatus

# One worker for the tests that load the ref workers: a 2-second filter beside the other's p99 bound would spoil it.
pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("ref_workers")]

BUDGET = 2.0  # seconds a costly ref may take here
ITEMS = 10_000  # with CLAUSES, over ten seconds of pure Python unbounded: several budgets
CLAUSES = 100  # (a template ref's path stays under 2,048 characters)


def _filter(clauses: int) -> str:
    return "@big[?(" + " && ".join(f"@.v != {i}" for i in range(1, clauses + 1)) + ")].name"


HOSTILE = {
    "name": "hostile-filter",
    "inputs": {"data": {"type": "string"}},
    "steps": [
        {"name": "big", "tool": "features__echo", "input": {"text": "@input.data"}},
        # on_error: continue, so that the run's end shows the rest of its work was done
        {"name": "hostile", "tool": "features__echo", "input": {"text": _filter(CLAUSES)}, "on_error": "continue"},
        {"name": "calm", "tool": "features__echo", "input": {"text": "@big[1].name"}},
        {"name": "after", "tool": "features__echo", "input": {"text": "{{@calm}} and on"}},
    ],
    "output": "@after",
}


async def test_a_hostile_filter_in_a_replay_spends_its_budget_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(REF_TIME_ENV, str(BUDGET))
    data = json.dumps([{"v": -1, "name": f"n{i}"} for i in range(ITEMS)])
    async with harness(tmp_path) as h:
        template = saved(h.store, HOSTILE)
        with anyio.fail_after(120):  # generous: a worker starts slowly on a busy machine
            execution = await h.engine.run_template(template, {"data": data})
        assert execution.status == ExecutionStatus.SUCCEEDED, execution.error
        assert execution.output == "n1 and on"
        rows = {row.name: row for row in h.store.get_steps(execution.id)}
    hostile, calm, after = rows["hostile"], rows["calm"], rows["after"]
    assert hostile.status == StepStatus.FAILED
    assert (hostile.error or "").startswith("ref_budget_exceeded: input: "), hostile.error
    assert f"longer than {BUDGET:g} s" in (hostile.error or "")
    assert calm.status == StepStatus.SUCCEEDED and after.status == StepStatus.SUCCEEDED
    # The loop was free while the filter ran: the steps ready beside it finished before its budget ended.
    assert (after.ended_at or 0) < (hostile.ended_at or 0)
