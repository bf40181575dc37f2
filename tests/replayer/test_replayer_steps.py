"""Auto mode on real fixture servers: scheduling and every step kind (SPEC §7, §8).

The `counter` tool counts in a file how often each call really reached the server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.callers import harness, saved, template
from toolreel.core.model import ExecutionStatus, StepStatus, TemplateDraft

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def counter(name: str, key: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"name": name, "tool": "features__counter", "input": {"key": key or name}, **extra}


def slow(name: str, seconds: float, **extra: Any) -> dict[str, Any]:
    return {"name": name, "tool": "features__slow", "input": {"seconds": seconds}, **extra}


def steps_of(h: Any, execution_id: str) -> dict[str, Any]:
    return {record.name: record for record in h.store.get_steps(execution_id)}


async def test_refs_flow_between_steps_and_each_call_runs_once(tmp_path: Path) -> None:
    t = template(
        {
            "name": "flow",
            "inputs": {"text": {"type": "string"}},
            "steps": [
                {"name": "say", "tool": "features__echo", "input": {"text": "@input.text"}},
                {"name": "sum", "tool": "features__add", "input": {"a": 2, "b": 3}},
                {"name": "both", "tool": "features__echo", "input": {"text": "{{@say}} = {{@sum.sum}}"}},
                counter("count", depends_on=["both"]),
            ],
        }
    )
    async with harness(tmp_path) as h:
        execution = await h.engine.run_template(t, {"text": "five"})
        assert execution.status == ExecutionStatus.SUCCEEDED, execution.error
        steps = steps_of(h, execution.id)
        assert steps["both"].output == "five = 5.0"
        assert steps["both"].resolved_input == {"text": "five = 5.0"}
        assert steps["both"].input == {"text": "{{@say}} = {{@sum.sum}}"}
        assert execution.output == {"key": "count", "count": 1}  # default output: the last step that finished
        assert h.counts() == {"count": 1}
        assert all(s.status == StepStatus.SUCCEEDED and s.attempt == 1 for s in steps.values())


async def test_a_step_starts_when_its_own_dependencies_finish_not_in_waves(tmp_path: Path) -> None:
    t = template(
        {
            "name": "no-waves",
            "steps": [
                slow("long", 1.0),
                slow("short", 0.05),
                {"name": "after_short", "tool": "features__echo", "input": {"text": "@short"}},
                {"name": "after_both", "tool": "features__echo", "input": {"text": "{{@long}} {{@after_short}}"}},
            ],
        }
    )
    async with harness(tmp_path) as h:
        execution = await h.engine.run_template(t, {})
        assert execution.status == ExecutionStatus.SUCCEEDED
        steps = steps_of(h, execution.id)
        assert steps["after_short"].ended_at < steps["long"].ended_at  # did not wait for the slow sibling
        assert steps["after_both"].started_at >= steps["long"].ended_at


async def test_at_most_max_concurrency_steps_run_at_once(tmp_path: Path) -> None:
    t = template({"name": "wide", "steps": [slow(f"s{i}", 0.2) for i in range(6)]})
    async with harness(tmp_path, max_concurrency=2) as h:
        execution = await h.engine.run_template(t, {})
        assert execution.status == ExecutionStatus.SUCCEEDED
        spans = [(s.started_at, s.ended_at) for s in h.store.get_steps(execution.id)]
        # The row's start is when the step was scheduled; the call itself waits for a slot, so count
        # overlap of the calls: with 2 slots and 0.2 s each, 6 calls need at least 0.6 s.
        assert max(end for _, end in spans) - min(start for start, _ in spans) >= 0.55


async def test_for_each_keeps_item_order_and_its_own_concurrency(tmp_path: Path) -> None:
    t = template(
        {
            "name": "loop",
            "inputs": {"delays": {"type": "array"}},
            "steps": [
                {
                    "name": "each",
                    "for_each": "@input.delays",
                    "concurrency": 3,
                    "tool": "features__slow",
                    "input": {"seconds": "@item"},
                },
                {"name": "count", "for_each": "@each", "tool": "features__counter", "input": {"key": "k{{@index}}"}},
            ],
        }
    )
    async with harness(tmp_path) as h:
        execution = await h.engine.run_template(t, {"delays": [0.3, 0.2, 0.1, 0.0]})
        assert execution.status == ExecutionStatus.SUCCEEDED, execution.error
        steps = steps_of(h, execution.id)
        assert steps["each"].output == ["slept 0.3s", "slept 0.2s", "slept 0.1s", "slept 0.0s"]
        items = [steps[f"each[{i}]"] for i in range(4)]
        assert items[3].started_at >= min(item.ended_at for item in items[:3])  # only 3 in flight
        assert h.counts() == {"k0": 1, "k1": 1, "k2": 1, "k3": 1}
        view = await h.engine.view(execution.id)
        assert [item["name"] for item in view["steps"][0]["items"]] == [f"each[{i}]" for i in range(4)]


CONDITIONS: list[tuple[dict[str, Any], bool]] = [
    ({"eq": 5}, True),
    ({"neq": 5}, False),
    ({"gt": 4}, True),
    ({"gte": 6}, False),
    ({"lt": 6}, True),
    ({"lte": 4}, False),
    ({"in": [1, 5]}, True),
    ({"in": [1, 2]}, False),
    ({"exists": True}, True),
    ({"exists": False}, False),
    ({}, True),
]


async def test_when_operators_decide_whether_a_step_runs(tmp_path: Path) -> None:
    guarded = [counter(f"c{i}", when={"ref": "@sum.sum", **cond}) for i, (cond, _) in enumerate(CONDITIONS)]
    t = template(
        {"name": "cond", "steps": [{"name": "sum", "tool": "features__add", "input": {"a": 2, "b": 3}}, *guarded]}
    )
    async with harness(tmp_path) as h:
        execution = await h.engine.run_template(t, {})
        assert execution.status == ExecutionStatus.SUCCEEDED
        steps = steps_of(h, execution.id)
        for i, (condition, runs) in enumerate(CONDITIONS):
            expected = StepStatus.SUCCEEDED if runs else StepStatus.SKIPPED
            assert steps[f"c{i}"].status == expected, condition
            assert h.counts().get(f"c{i}", 0) == (1 if runs else 0), condition


async def test_a_skipped_step_gives_null_and_its_dependents_still_run(tmp_path: Path) -> None:
    t = template(
        {
            "name": "skip",
            "inputs": {"go": {"type": "boolean"}},
            "steps": [
                counter("maybe", when={"ref": "@input.go"}),
                {"name": "after", "tool": "features__echo", "input": {"text": "was {{@maybe}}"}},
                {"name": "loop", "for_each": "@maybe.items", "tool": "features__counter", "input": {"key": "@item"}},
            ],
        }
    )
    async with harness(tmp_path) as h:
        execution = await h.engine.run_template(t, {"go": "false"})
        assert execution.status == ExecutionStatus.SUCCEEDED
        steps = steps_of(h, execution.id)
        assert steps["maybe"].status == StepStatus.SKIPPED and steps["maybe"].output is None
        assert steps["after"].output == "was null"
        assert steps["loop"].output == []
        assert h.counts() == {}


async def test_return_ends_the_run_and_skips_steps_not_started(tmp_path: Path) -> None:
    t = template(
        {
            "name": "early",
            "steps": [
                {"name": "sum", "tool": "features__add", "input": {"a": 1, "b": -1}},
                {"name": "stop", "when": {"ref": "@sum.sum", "eq": 0}, "return": {"message": "nothing to do"}},
                counter("later", depends_on=["stop"]),
            ],
            "output": {"never": "@later"},
        }
    )
    async with harness(tmp_path) as h:
        execution = await h.engine.run_template(t, {})
        assert execution.status == ExecutionStatus.SUCCEEDED
        assert execution.output == {"message": "nothing to do"}
        assert steps_of(h, execution.id)["later"].status == StepStatus.SKIPPED
        assert h.counts() == {}


async def test_return_cancels_steps_in_flight(tmp_path: Path) -> None:
    t = template(
        {
            "name": "early2",
            "steps": [slow("busy", 30), slow("quick", 0.05), {"name": "done", "depends_on": ["quick"], "return": 1}],
        }
    )
    async with harness(tmp_path) as h:
        with anyio.fail_after(10):
            execution = await h.engine.run_template(t, {})
        assert execution.status == ExecutionStatus.SUCCEEDED and execution.output == 1
        busy = steps_of(h, execution.id)["busy"]
        assert busy.status == StepStatus.CANCELLED and "done returned" in (busy.error or "")
        assert h.cancellations() == ["slow cancelled seconds=30.0"]


async def test_output_is_resolved_from_the_template(tmp_path: Path) -> None:
    t = template(
        {
            "name": "out",
            "steps": [{"name": "sum", "tool": "features__add", "input": {"a": 1, "b": 2}}],
            "output": {"total": "@sum.sum", "text": "sum={{@sum.sum}}"},
        }
    )
    async with harness(tmp_path) as h:
        execution = await h.engine.run_template(t, {})
        assert execution.output == {"total": 3.0, "text": "sum=3.0"}


class Yes:
    def __init__(self, answer: bool | None) -> None:
        self.answer = answer
        self.prompts: list[str] = []

    async def approve(self, prompt: str) -> bool | None:
        self.prompts.append(prompt)
        return self.answer


def approval_template(name: str = "approval") -> dict[str, Any]:
    return {
        "name": name,
        "steps": [
            {"name": "sum", "tool": "features__add", "input": {"a": 1, "b": 2}},
            {"name": "confirm", "approve": "Count {{@sum.sum}}?"},
            counter("after", depends_on=["confirm"]),
        ],
    }


@pytest.mark.parametrize(("answer", "status"), [(True, ExecutionStatus.SUCCEEDED), (False, ExecutionStatus.FAILED)])
async def test_an_approver_answers_approval_steps(tmp_path: Path, answer: bool, status: ExecutionStatus) -> None:
    approver = Yes(answer)
    async with harness(tmp_path, approver=approver) as h:
        execution = await h.engine.run_template(template(approval_template()), {})
        assert execution.status == status
        assert approver.prompts == ["Count 3.0?"]
        assert h.counts() == ({"after": 1} if answer else {})
        if not answer:
            assert "approval refused" in (execution.error or "")


async def test_without_an_approver_the_run_pauses_durably_and_resumes_elsewhere(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        t = saved(h.store, approval_template())
        paused = await h.engine.run_template(t, {})
        assert paused.status == ExecutionStatus.PAUSED and paused.prompt == "Count 3.0?"
        assert paused.claimed_by is None
        assert (await h.engine.view(paused.id))["prompt"] == "Count 3.0?"
    # A new process (engine, upstream connections) picks it up from the store.
    async with harness(tmp_path) as h2:
        done = await h2.engine.resume(paused.id, "yes")
        assert done.status == ExecutionStatus.SUCCEEDED, done.error
        assert h2.counts() == {"after": 1}
        steps = steps_of(h2, paused.id)
        assert steps["confirm"].output == {"approved": True, "response": "yes"}
        assert steps["sum"].attempt == 1  # finished steps never re-run


async def test_several_approvals_pause_together_and_are_answered_in_turn(tmp_path: Path) -> None:
    t = template(
        {
            "name": "two-questions",
            "steps": [
                {"name": "first", "approve": "first?"},
                {"name": "second", "approve": "second?"},
                counter("free"),
                counter("after", depends_on=["first", "second"]),
            ],
        }
    )
    async with harness(tmp_path) as h:
        execution = await h.engine.run_template(t, {})
        assert execution.status == ExecutionStatus.PAUSED and execution.prompt == "first?"
        assert h.counts() == {"free": 1}  # independent work went on while the questions wait
        execution = await h.engine.resume(execution.id, "yes")
        assert execution.status == ExecutionStatus.PAUSED and execution.prompt == "second?"
        execution = await h.engine.resume(execution.id, "no")
        assert execution.status == ExecutionStatus.FAILED
        assert "approval refused: 'second?'" in (execution.error or "")
        assert h.counts() == {"free": 1}


async def test_template_steps_run_child_executions(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        saved(
            h.store,
            {
                "name": "child",
                "inputs": {"k": {"type": "string"}},
                "steps": [counter("count", key="@input.k")],
                "output": "@count.count",
            },
        )
        parent = saved(
            h.store,
            {
                "name": "parent",
                "inputs": {"keys": {"type": "array", "default": ["x", "y"]}},
                "steps": [
                    {"name": "one", "template": "child", "input": {"k": "a"}},
                    {"name": "many", "for_each": "@input.keys", "template": "child", "input": {"k": "@item"}},
                ],
                "output": {"one": "@one", "many": "@many"},
            },
        )
        execution = await h.engine.run_template(parent, {})
        assert execution.status == ExecutionStatus.SUCCEEDED, execution.error
        assert execution.output == {"one": 1, "many": [1, 1]}
        assert h.counts() == {"a": 1, "x": 1, "y": 1}
        child_id = steps_of(h, execution.id)["one"].result["execution_id"]
        child = h.store.get_execution(child_id)
        assert (child.parent_id, child.parent_step, child.depth, child.template) == (execution.id, "one", 1, "child")


async def test_template_cycles_and_depth_are_refused_at_run_time(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        # Saved straight into the store: validation on save is another layer; the run must still refuse.
        h.store.save_template(TemplateDraft("ping", {"name": "ping", "steps": [{"name": "go", "template": "pong"}]}))
        h.store.save_template(TemplateDraft("pong", {"name": "pong", "steps": [{"name": "go", "template": "ping"}]}))
        for level in range(10):
            step = {"name": "go", "template": f"level{level + 1}"} if level < 9 else counter("leaf")
            h.store.save_template(TemplateDraft(f"level{level}", {"name": f"level{level}", "steps": [step]}))
        from toolreel.replayer import load_template

        cycle = await h.engine.run_template(load_template(h.store, "ping"), {})
        assert cycle.status == ExecutionStatus.FAILED
        assert "cycle at run time: ping -> pong -> ping" in (cycle.error or "")
        deep = await h.engine.run_template(load_template(h.store, "level0"), {})
        assert deep.status == ExecutionStatus.FAILED
        assert "the limit is 8" in (deep.error or "")
        assert h.counts() == {}


async def test_progress_is_reported_per_step(tmp_path: Path) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    t = template({"name": "p", "steps": [counter("a"), counter("b", depends_on=["a"])]})
    async with harness(tmp_path) as h:
        await h.engine.run_template(t, {}, progress=progress)
    assert seen == [(1.0, 2.0, "a: succeeded"), (2.0, 2.0, "b: succeeded")]
