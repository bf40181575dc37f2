"""Bad input to auto mode: refused early, named precisely, never half-run (issue 5, "Bad input")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.callers import harness, saved, template
from toolreel.core.errors import ExecutionError, NotFoundError, TemplateError
from toolreel.core.model import ExecutionStatus, StepStatus
from toolreel.core.secrets import REDACTED
from toolreel.core.template import InputSpec
from toolreel.replayer import bind_inputs, parse_cli_value

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TYPED = {
    "name": "typed",
    "inputs": {
        "n": {"type": "integer"},
        "ratio": {"type": "number", "default": 0.5},
        "flag": {"type": "boolean", "default": False},
        "tags": {"type": "array", "default": []},
    },
    "steps": [{"name": "say", "tool": "features__echo", "input": {"text": "{{@input.n}}"}}],
}


def test_inputs_are_coerced_per_declared_type_and_problems_named() -> None:
    t = template(TYPED)
    assert bind_inputs(t, {"n": "3", "flag": "yes", "tags": "[1, 2]"}) == {
        "n": 3,
        "ratio": 0.5,
        "flag": True,
        "tags": [1, 2],
    }
    with pytest.raises(ExecutionError) as caught:
        bind_inputs(t, {"m": 1, "ratio": "x"})
    message = str(caught.value)
    assert "unknown input(s) m (declared: flag, n, ratio, tags)" in message
    assert "missing required input(s) n" in message
    assert "input 'ratio': expected a number" in message


def test_cli_values_follow_the_declared_type() -> None:
    assert parse_cli_value(InputSpec(type="string"), "42") == "42"
    assert parse_cli_value(InputSpec(type="integer"), "42") == 42
    assert parse_cli_value(InputSpec(type="object"), '{"a": [1]}') == {"a": [1]}
    assert parse_cli_value(None, "[1, 2]") == [1, 2]
    assert parse_cli_value(None, "plain text") == "plain text"
    with pytest.raises(ValueError, match="expected an array as JSON"):
        parse_cli_value(InputSpec(type="array"), "[1,")


def test_an_invalid_template_is_refused_naming_the_step_and_field() -> None:
    with pytest.raises(TemplateError) as caught:
        template({"name": "bad", "steps": [{"name": "x", "tool": "features__echo", "input": {"text": "@nope.a"}}]})
    assert caught.value.step == "x" and caught.value.template == "bad"


async def test_a_template_naming_an_unknown_tool_is_refused_before_anything_runs(tmp_path: Path) -> None:
    t = template({"name": "typo", "steps": [{"name": "x", "tool": "features__ecko", "input": {}}]})
    async with harness(tmp_path) as h:
        with pytest.raises(TemplateError) as caught:
            await h.engine.run_template(t, {})
        assert (caught.value.step, caught.value.field) == ("x", "tool")
        assert "features__ecko" in str(caught.value)
        assert h.store.list_executions()[0] == []


async def test_unknown_and_missing_inputs_are_refused_before_anything_runs(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        with pytest.raises(ExecutionError, match=r"unknown input\(s\) m .*missing required input\(s\) n"):
            await h.engine.run_template(template(TYPED), {"m": 1})
        assert h.store.list_executions()[0] == []


async def test_a_ref_into_a_failed_step_fails_the_dependent_with_that_reason(tmp_path: Path) -> None:
    t = template(
        {
            "name": "refs-failed",
            "steps": [
                {"name": "a", "tool": "features__fail", "input": {"message": "no such user"}, "include_failed": True},
                {"name": "b", "tool": "features__echo", "input": {"text": "@a.name"}},
                {"name": "c", "tool": "features__counter", "input": {}, "depends_on": ["a"]},
            ],
        }
    )
    async with harness(tmp_path) as h:
        execution = await h.engine.run_template(t, {})
        steps = {r.name: r for r in h.store.get_steps(execution.id)}
        assert steps["a"].status == StepStatus.FAILED
        assert steps["b"].status == StepStatus.FAILED
        assert "step a failed (tool features__fail returned an error: no such user)" in (steps["b"].error or "")
        assert execution.status == ExecutionStatus.FAILED and (execution.error or "").startswith("step b failed")


async def test_the_dependents_of_a_failed_step_are_recorded_as_not_run(tmp_path: Path) -> None:
    t = template(
        {
            "name": "fail-fast",
            "steps": [
                {"name": "a", "tool": "features__fail", "input": {"message": "nope"}},
                {"name": "b", "tool": "features__counter", "input": {}, "depends_on": ["a"]},
            ],
        }
    )
    async with harness(tmp_path) as h:
        execution = await h.engine.run_template(t, {})
        assert execution.error == "step a failed: tool features__fail returned an error: nope"
        b = {r.name: r for r in h.store.get_steps(execution.id)}["b"]
        assert b.status == StepStatus.FAILED and b.error is not None and "depends on step a, which failed" in b.error
        assert h.counts() == {}


async def test_resume_and_cancel_say_when_there_is_nothing_to_do(tmp_path: Path) -> None:
    t = template({"name": "quick", "steps": [{"name": "say", "tool": "features__echo", "input": {"text": "hi"}}]})
    async with harness(tmp_path) as h:
        with pytest.raises(NotFoundError, match="no execution 'nope'"):
            await h.engine.resume("nope")
        done = await h.engine.run_template(t, {})
        with pytest.raises(ExecutionError, match=r"already succeeded .*nothing to resume"):
            await h.engine.resume(done.id)
        with pytest.raises(ExecutionError, match="already succeeded: there is nothing to cancel"):
            await h.engine.cancel(done.id)
        paused = await h.engine.run_template(template({"name": "q", "steps": [{"name": "ok", "approve": "ok?"}]}), {})
        with pytest.raises(ExecutionError, match="paused asking 'ok\\?': resume it with a response"):
            await h.engine.resume(paused.id)
        with pytest.raises(ExecutionError, match="neither a yes"):
            await h.engine.resume(paused.id, "perhaps")


async def test_resume_refuses_a_template_that_changed_under_the_execution(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        t = saved(h.store, {"name": "moving", "steps": [{"name": "ok", "approve": "ok?"}]})
        paused = await h.engine.run_template(t, {})
        h.store.delete_template("moving")
        saved(h.store, {"name": "moving", "steps": [{"name": "ok", "approve": "really?"}]})  # version 1 again
        with pytest.raises(ExecutionError, match="deleted and saved again"):
            await h.engine.resume(paused.id, "yes")
        assert h.store.get_execution(paused.id).status == ExecutionStatus.PAUSED


SECRET: dict[str, Any] = {
    "name": "secretive",
    "inputs": {"token": {"type": "string", "secret": True}},
    "steps": [
        {"name": "use", "tool": "features__echo", "input": {"text": "Bearer {{@input.token}}"}},
        {"name": "ok", "approve": "ok?", "depends_on": ["use"]},
        {"name": "again", "tool": "features__echo", "input": {"text": "@use"}, "depends_on": ["ok"]},
    ],
    "output": "@again",
}


async def test_secret_inputs_never_reach_the_store(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        t = saved(h.store, SECRET)
        paused = await h.engine.run_template(t, {"token": "s3cr3t-value"})
        assert paused.inputs == {"token": REDACTED}
        use = {r.name: r for r in h.store.get_steps(paused.id)}["use"]
        assert use.resolved_input == {"text": f"Bearer {REDACTED}"} and use.redacted == ("$.text",)
        assert use.output == f"Bearer {REDACTED}" and "s3cr3t" not in str(use.result)
        done = await h.engine.resume(paused.id, "yes")  # this process still holds the secret
        assert done.status == ExecutionStatus.SUCCEEDED
        assert done.output == "Bearer s3cr3t-value"  # the caller gets it; the store does not
        assert h.store.get_execution(paused.id).output == f"Bearer {REDACTED}"


async def test_a_secret_input_this_process_does_not_hold_stops_the_resume(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        paused = await h.engine.run_template(saved(h.store, SECRET), {"token": "s3cr3t-value"})
    async with harness(tmp_path) as other:
        failed = await other.engine.resume(paused.id, "yes")
        assert failed.status == ExecutionStatus.FAILED
        assert "secret input(s) token are never stored" in (failed.error or "")
