"""Control flow beyond one test per step (SPEC §7): `when` with `all` / `any` / `not`, run on the
`features` fixture server from the example of docs/templates.md, whose `counter` counts the calls
that really ran."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import pytest

from tests.callers import harness, saved
from toolreel.core.errors import TemplateError
from toolreel.core.template_io import load_template_text, parse_template, template_json_schema, template_to_dict

DOC = Path(__file__).resolve().parents[2] / "docs" / "templates.md"


def doc_example(name: str) -> str:
    """The YAML block of docs/templates.md that defines template `name`."""
    for block in re.findall(r"^```yaml\n(.*?)^```", DOC.read_text(encoding="utf-8"), re.S | re.M):
        if re.search(rf"^name: {re.escape(name)}$", block, re.M):
            return str(block)
    raise AssertionError(f"docs/templates.md has no example named {name!r}")


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.parametrize(
    ("inputs", "ran"),
    [
        ({"total": 150, "urgent": True}, {"big_and_urgent", "big_or_urgent"}),
        ({"total": 150}, {"big_or_urgent"}),
        ({"total": 5, "urgent": True}, {"big_or_urgent"}),
        ({"total": 5}, {"small_and_calm"}),
    ],
)
async def test_all_any_and_not_decide_which_steps_run(tmp_path: Path, inputs: dict[str, object], ran: set[str]) -> None:
    template = load_template_text(doc_example("combined-conditions"), source="docs/templates.md")
    async with harness(tmp_path) as h:
        execution = await h.engine.run_template(template, inputs)
        assert execution.status == "succeeded", execution.error
        assert set(h.counts()) == ran
        skipped = {r.name for r in h.store.get_steps(execution.id) if r.status == "skipped"}
        assert skipped == {"big_and_urgent", "big_or_urgent", "small_and_calm"} - ran


def test_combined_conditions_round_trip_and_are_in_the_schema() -> None:
    template = load_template_text(doc_example("combined-conditions"), source="docs/templates.md")
    assert parse_template(template_to_dict(template)) == template
    when = json.dumps(template_json_schema())
    assert all(f'"{key}"' in when for key in ("all", "any", "not"))


@pytest.mark.parametrize(
    ("when", "says"),
    [
        ({"ref": "@a.x", "all": [{"ref": "@a.x"}]}, "tests nothing else"),
        ({"all": [{"ref": "@a.x"}], "not": {"ref": "@a.x"}}, "tests nothing else"),
        ({"all": []}, "at least 1"),
        ({"eq": 1}, "needs a ref"),
        ({"not": {"ref": "a.x"}}, "when.ref must be one ref"),
        ({"any": [{"ref": "@nope.x"}]}, "nope"),
    ],
)
def test_a_bad_combined_condition_is_refused_naming_the_step(when: dict[str, object], says: str) -> None:
    data = {
        "name": "bad",
        "steps": [
            {"name": "a", "tool": "features__echo", "input": {"text": "x"}},
            {"name": "b", "tool": "features__echo", "input": {"text": "y"}, "when": when},
        ],
    }
    with pytest.raises(TemplateError, match=re.escape(says)) as refused:
        parse_template(data)
    assert str(refused.value).startswith("template 'bad', step 'b', field 'when")


@pytest.mark.anyio
@pytest.mark.slow
async def test_on_error_continue_makes_the_error_an_output_later_steps_read(tmp_path: Path) -> None:
    template = load_template_text(doc_example("keep-going"), source="docs/templates.md")
    async with harness(tmp_path) as h:
        execution = await h.engine.run_template(template, {})
        assert execution.status == "succeeded", execution.error
        report, each = execution.output["report"], execution.output["each"]
        assert report == "tool_error: tool features__fail returned an error: the service said no"
        assert each[0] == "alpha" and each[2] == "gamma"
        assert each[1]["error"]["code"] == "tool_error" and "valid string" in each[1]["error"]["message"]
        assert h.counts() == {"risky_failed": 1}
        rows = {r.name: r.status for r in h.store.get_steps(execution.id)}
        assert rows["risky"] == "failed" and rows["each[1]"] == "failed" and rows["each"] == "succeeded"


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_continued_error_is_read_from_the_store_after_a_pause(tmp_path: Path) -> None:
    data = {
        "name": "pause-after-error",
        "steps": [
            {"name": "risky", "tool": "features__fail", "input": {"message": "no"}, "on_error": "continue"},
            {"name": "ask", "approve": "go on?", "depends_on": ["risky"]},
            {"name": "report", "tool": "features__echo", "input": {"text": "@risky.error.code"}, "depends_on": ["ask"]},
        ],
    }
    async with harness(tmp_path) as h:
        paused = await h.engine.run_template(saved(h.store, data), {})
        assert paused.status == "paused"
    # A new engine (another process would do the same) rebuilds the run from its rows.
    async with harness(tmp_path) as h:
        done = await h.engine.resume(paused.id, "yes")
        assert done.status == "succeeded", done.error
        assert done.output == "tool_error"


@pytest.mark.anyio
@pytest.mark.slow
async def test_for_each_fails_fast_by_default(tmp_path: Path) -> None:
    data = {
        "name": "strict",
        "inputs": {"words": {"type": "array"}},
        "steps": [{"name": "each", "for_each": "@input.words", "tool": "features__echo", "input": {"text": "@item"}}],
    }
    async with harness(tmp_path) as h:
        execution = await h.engine.run_template(parse_template(data), {"words": ["a", 5]})
        assert execution.status == "failed" and "item 1 failed" in (execution.error or "")


@pytest.mark.anyio
@pytest.mark.slow
async def test_the_output_is_checked_against_the_output_schema_when_the_run_ends(tmp_path: Path) -> None:
    template = load_template_text(doc_example("checked-output"), source="docs/templates.md")
    async with harness(tmp_path) as h:
        fine = await h.engine.run_template(template, {"total": 5})
        assert fine.status == "succeeded" and fine.output == {"sum": 5.0}
        over = await h.engine.run_template(template, {"total": 500})
        assert over.status == "failed"
        assert over.error == (
            "template 'checked-output', field 'output_schema': the output does not match it "
            "at $.sum: 500.0 is greater than the maximum of 100"
        )


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_resumed_run_checks_its_output_schema_too(tmp_path: Path) -> None:
    data = {
        "name": "checked-after-pause",
        "steps": [
            {"name": "ask", "approve": "go on?"},
            {"name": "say", "tool": "features__echo", "input": {"text": "long text"}, "depends_on": ["ask"]},
        ],
        "output_schema": {"type": "string", "maxLength": 4},
    }
    async with harness(tmp_path) as h:
        paused = await h.engine.run_template(saved(h.store, data), {})
        assert paused.status == "paused"
    async with harness(tmp_path) as h:
        done = await h.engine.resume(paused.id, "yes")
        assert done.status == "failed" and "at $: 'long text' is too long" in (done.error or "")


def test_an_output_schema_that_is_no_json_schema_is_refused() -> None:
    data = {
        "name": "bad-schema",
        "steps": [{"name": "a", "tool": "features__echo", "input": {"text": "x"}}],
        "output_schema": {"type": "strnig"},
    }
    with pytest.raises(TemplateError, match="field 'output_schema': not a usable JSON Schema"):
        parse_template(data)


# ---------------------------------------------------------------------- switch and joins


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.parametrize(
    ("severity", "ran", "case"),
    [
        ("critical", {"page": 1}, "0"),
        ("minor", {"ticket": 1}, "1"),
        ("trivial", {"log": 1}, "default"),
    ],
)
async def test_a_switch_runs_one_branch_and_the_join_goes_on(
    tmp_path: Path, severity: str, ran: dict[str, int], case: str
) -> None:
    template = load_template_text(doc_example("route-by-severity"), source="docs/templates.md")
    async with harness(tmp_path) as h:
        execution = await h.engine.run_template(template, {"severity": severity})
        assert execution.status == "succeeded", execution.error
        assert h.counts() == ran
        assert execution.output == f"case {case}"
        rows = {r.name: r for r in h.store.get_steps(execution.id)}
        branches = {"page": "page", "page_note": "page", "ticket": "ticket", "log_only": "log"}
        for step, key in branches.items():
            assert (rows[step].status == "skipped") == (key not in ran), step


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_join_starts_once_n_of_its_dependencies_succeeded(tmp_path: Path) -> None:
    template = load_template_text(doc_example("first-two"), source="docs/templates.md")
    async with harness(tmp_path) as h:
        with anyio.fail_after(45):  # slow_c would take 60 s: the join did not wait for it
            execution = await h.engine.run_template(template, {})
        assert execution.status == "succeeded", execution.error
        assert execution.output == {"a": 1, "b": 1, "c": None}
        rows = {r.name: r for r in h.store.get_steps(execution.id)}
        assert rows["slow_c"].status == "cancelled"


def test_switches_and_joins_round_trip_and_are_in_the_schema() -> None:
    for name in ("route-by-severity", "first-two"):
        template = load_template_text(doc_example(name), source="docs/templates.md")
        assert parse_template(template_to_dict(template)) == template
    schema = json.dumps(template_json_schema())
    assert all(f'"{key}"' in schema for key in ("switch", "cases", "default", "wait_for", "n_of"))


@pytest.mark.parametrize(
    ("step", "field", "says"),
    [
        ({"switch": {"ref": "@input.x", "cases": []}}, "switch.cases", "at least 1"),
        ({"switch": {"ref": "@input.x", "cases": [{"steps": [{"name": "b", "return": 1}]}]}}, "switch", "found none"),
        (
            {"switch": {"ref": "@input.x", "cases": [{"eq": 1, "gt": 0, "steps": [{"name": "b", "return": 1}]}]}},
            "switch",
            "found eq and gt",
        ),
        (
            {"switch": {"ref": "input.x", "cases": [{"eq": 1, "steps": [{"name": "b", "return": 1}]}]}},
            "switch.ref",
            "one ref",
        ),
        (
            {"switch": {"ref": "@input.x", "cases": [{"eq": 1, "steps": [{"name": "s", "return": 1}]}]}},
            "name",
            "duplicate",
        ),
        ({"return": 1, "wait_for": {"n_of": 2}}, "wait_for", "it has 0"),
        ({"return": 1, "wait_for": {"n_of": 0}}, "wait_for.n_of", "greater than or equal to 1"),
    ],
)
def test_a_bad_switch_or_join_is_refused_naming_step_and_field(step: dict[str, object], field: str, says: str) -> None:
    data = {"name": "bad", "inputs": {"x": {"type": "integer"}}, "steps": [{"name": "s", **step}]}
    with pytest.raises(TemplateError, match=re.escape(says)) as refused:
        parse_template(data)
    assert f"field '{field}" in str(refused.value)
