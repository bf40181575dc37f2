"""Template files: validation errors that name template/step/field, YAML positions, the canonical
round trip, the JSON Schema, the graph helpers, and the `toolreel templates ...` commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import typer
import yaml
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from toolreel.core.errors import TemplateError
from toolreel.core.model import TemplateDraft
from toolreel.core.store import open_store
from toolreel.core.template_io import (
    check_template_cycles,
    dependencies,
    dump_template_yaml,
    load_template_file,
    load_template_text,
    parse_template,
    template_hash,
    template_json_schema,
    template_to_dict,
    to_mermaid,
    tool_input_schema,
    topo_order,
)
from toolreel.core.template_schema import format_duration, parse_duration
from toolreel.templatizer.cli import register

SPEC_EXAMPLE = """\
name: triage-issues
description: Label every open issue of a repo and report.
inputs:
  repo: {type: string, description: owner/name}
  limit: {type: integer, default: 10}
steps:
  - name: list_issues
    tool: github__list_issues
    input: {repo: "@input.repo", per_page: "@input.limit"}
  - name: label_each
    for_each: "@list_issues.items"
    concurrency: 4
    tool: github__add_label
    input: {number: "@item.number", label: triage}
  - name: stop_if_empty
    when: {ref: "@list_issues.total", eq: 0}
    return: {message: nothing to do}
  - name: confirm
    approve: "Post a summary of {{@list_issues.total}} issues?"
  - name: notify
    tool: slack__post
    input: {text: "Triaged {{@list_issues.total}} issues in {{@input.repo}}"}
    depends_on: [confirm, label_each]
    timeout: 30s
    retry: {max_attempts: 3, backoff: exponential, initial_delay: 500ms, max_delay: 10s, jitter: 0.2,
            retry_on: [timeout, transient]}
    idempotency_key: "notify-{{@input.repo}}"
  - name: nested
    template: other-template
    input: {repo: "@input.repo"}
output: {count: "@list_issues.total"}
"""


def spec_dict() -> dict[str, Any]:
    data = yaml.safe_load(SPEC_EXAMPLE)
    assert isinstance(data, dict)
    return data


def tpl(*steps: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"name": "t", "steps": list(steps), **top}


# --------------------------------------------------------------------------- the SPEC example


def test_spec_example_parses_into_the_frozen_shape() -> None:
    t = load_template_text(SPEC_EXAMPLE)
    assert [s.name for s in t.steps] == ["list_issues", "label_each", "stop_if_empty", "confirm", "notify", "nested"]
    assert [s.kind for s in t.steps] == ["tool", "tool", "return", "approve", "tool", "template"]
    notify = t.step("notify")
    assert notify.timeout == 30.0
    assert notify.retry is not None
    assert (notify.retry.initial_delay, notify.retry.max_delay, notify.retry.jitter) == (0.5, 10.0, 0.2)
    when = t.step("stop_if_empty").when
    assert when is not None and (when.ref, when.op, when.value) == ("@list_issues.total", "eq", 0)
    assert t.inputs["limit"].has_default and t.inputs["limit"].default == 10
    assert t.inputs["repo"].required
    assert t.has_output and t.output == {"count": "@list_issues.total"}


def test_dict_round_trip_is_exact_and_canonical() -> None:
    t = load_template_text(SPEC_EXAMPLE)
    data = template_to_dict(t)
    assert parse_template(data) == t
    assert template_to_dict(parse_template(data)) == data
    assert data["steps"][4]["timeout"] == "30s"
    assert data["steps"][4]["retry"]["initial_delay"] == "500ms"


def test_yaml_and_json_dumps_load_back_equal(tmp_path: Path) -> None:
    t = load_template_text(SPEC_EXAMPLE)
    assert load_template_text(dump_template_yaml(t)) == t
    path = tmp_path / "t.json"
    path.write_text(json.dumps(template_to_dict(t)), encoding="utf-8")
    assert load_template_file(path) == t


def test_literal_strings_that_look_special_survive_yaml() -> None:
    t = parse_template(
        tpl({"name": "a", "tool": "s__x", "input": {"a": "@@channel", "b": "yes", "c": "10s", "d": "{{@@x}}"}})
    )
    assert load_template_text(dump_template_yaml(t)) == t


@given(st.floats(min_value=0, max_value=1e7, allow_nan=False, allow_infinity=False))
def test_durations_format_and_parse_back_exactly(seconds: float) -> None:
    assert parse_duration(format_duration(seconds)) == seconds


@pytest.mark.parametrize(
    ("written", "seconds"), [("30s", 30.0), ("500ms", 0.5), ("2m", 120.0), ("1h", 3600.0), (3, 3.0), ("1.5s", 1.5)]
)
def test_durations_are_read_in_every_spelling(written: str | int, seconds: float) -> None:
    assert parse_duration(written) == seconds


def test_template_hash_is_the_stores_hash(tmp_path: Path) -> None:
    definition = template_to_dict(load_template_text(SPEC_EXAMPLE))
    store = open_store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    try:
        record = store.save_template(TemplateDraft("triage-issues", definition))
    finally:
        store.close()
    assert record.hash == template_hash(definition)
    assert template_hash(dict(reversed(list(definition.items())))) == record.hash  # key order does not matter


# --------------------------------------------------------------------------- validation errors

INVALID: list[tuple[str, dict[str, Any], str | None, str | None, str]] = [
    ("unknown field", tpl({"name": "a", "tool": "s__x", "inputt": {}}), "a", "inputt", "unknown field 'inputt'"),
    ("unknown top field", tpl({"name": "a", "tool": "s__x"}, extra=1), None, "extra", "unknown field 'extra'"),
    ("duplicate step", tpl({"name": "a", "tool": "s__x"}, {"name": "a", "tool": "s__y"}), "a", "name", "duplicate"),
    ("bad step name", tpl({"name": "1a", "tool": "s__x"}), "1a", "name", "must match"),
    ("reserved step name", tpl({"name": "item", "tool": "s__x"}), "item", "name", "reserved"),
    ("no kind", tpl({"name": "a", "input": {}}), "a", "tool", "exactly one kind"),
    ("two kinds", tpl({"name": "a", "tool": "s__x", "approve": "ok?"}), "a", "approve", "found tool and approve"),
    ("unknown step ref", tpl({"name": "a", "tool": "s__x", "input": {"x": "@b.id"}}), "a", "input.x", "step 'b'"),
    (
        "unknown input",
        tpl({"name": "a", "tool": "s__x", "input": {"x": ["@input.who"]}}),
        "a",
        "input.x[0]",
        "input 'who'",
    ),
    ("item outside loop", tpl({"name": "a", "tool": "s__x", "input": {"x": "@item.id"}}), "a", "input.x", "@item"),
    ("self ref", tpl({"name": "a", "tool": "s__x", "input": {"x": "{{@a.id}}"}}), "a", "input.x", "its own output"),
    (
        "cycle",
        tpl({"name": "a", "tool": "s__x", "input": {"x": "@b.id"}}, {"name": "b", "tool": "s__x", "depends_on": ["a"]}),
        "a",
        "input.x",
        "a -> b -> a",
    ),
    (
        "two when ops",
        tpl({"name": "a", "tool": "s__x", "when": {"ref": "@input.n", "eq": 1, "gt": 2}}, inputs={"n": {}}),
        "a",
        "when",
        "eq and gt",
    ),
    (
        "bad when op",
        tpl({"name": "a", "tool": "s__x", "when": {"ref": "@input.n", "like": 1}}, inputs={"n": {}}),
        "a",
        "when.like",
        "unknown operator",
    ),
    (
        "when not a ref",
        tpl({"name": "a", "tool": "s__x", "when": {"ref": "total", "eq": 1}}),
        "a",
        "when.ref",
        "one ref",
    ),
    ("bad duration", tpl({"name": "a", "tool": "s__x", "timeout": "soon"}), "a", "timeout", "duration"),
    (
        "bad retry",
        tpl({"name": "a", "tool": "s__x", "retry": {"max_attempts": 0}}),
        "a",
        "retry.max_attempts",
        "greater than or equal to 1",
    ),
    (
        "bad retry_on",
        tpl({"name": "a", "tool": "s__x", "retry": {"retry_on": ["always"]}}),
        "a",
        "retry.retry_on.0",
        "timeout",
    ),
    ("concurrency alone", tpl({"name": "a", "tool": "s__x", "concurrency": 2}), "a", "concurrency", "needs for_each"),
    (
        "for_each on approve",
        tpl({"name": "a", "approve": "ok?", "for_each": "@input.l"}, inputs={"l": {}}),
        "a",
        "for_each",
        "tool or template",
    ),
    ("input on return", tpl({"name": "a", "return": 1, "input": {"x": 1}}), "a", "input", "takes no input"),
    ("self template", tpl({"name": "a", "template": "t"}), "a", "template", "itself"),
    ("unknown depends_on", tpl({"name": "a", "tool": "s__x", "depends_on": ["zz"]}), "a", "depends_on", "'zz'"),
    ("bad input name", tpl({"name": "a", "tool": "s__x"}, inputs={"a-b": {}}), None, "inputs.a-b", "input name"),
    (
        "bad input type",
        tpl({"name": "a", "tool": "s__x"}, inputs={"x": {"type": "str"}}),
        None,
        "inputs.x.type",
        "'string'",
    ),
    ("input not an object", tpl({"name": "a", "tool": "s__x", "input": "text"}), "a", "input", "object of arguments"),
    ("unknown output ref", tpl({"name": "a", "tool": "s__x"}, output={"x": "@nope"}), None, "output.x", "step 'nope'"),
]


@pytest.mark.parametrize(("case", "data", "step", "field", "says"), INVALID, ids=[c[0] for c in INVALID])
def test_every_validation_error_names_template_step_and_field(
    case: str, data: dict[str, Any], step: str | None, field: str | None, says: str
) -> None:
    with pytest.raises(TemplateError) as caught:
        parse_template(data, source="t.yaml")
    error = caught.value
    assert (error.template, error.step, error.field) == ("t", step, field)
    assert says in str(error)
    assert "t.yaml" in str(error)


def test_a_template_without_a_name_says_so() -> None:
    with pytest.raises(TemplateError, match="required field 'name' is missing"):
        parse_template({"steps": [{"name": "a", "tool": "s__x"}]})


@pytest.mark.parametrize(
    ("text", "position", "says"),
    [
        ("name: t\nsteps:\n  - name: a\n    tool: [x\n", ":5:1", "expected ','"),
        ("name: t\nsteps: []\nname: u\n", ":3:1", "duplicate key 'name'"),
        ("name: t\n  steps: x: y\n", ":2:8", "mapping values are not allowed"),
    ],
)
def test_yaml_errors_give_line_and_column(text: str, position: str, says: str) -> None:
    with pytest.raises(TemplateError) as caught:
        load_template_text(text, source="bad.yaml")
    assert f"bad.yaml{position}: YAML error" in str(caught.value)
    assert says in str(caught.value)


def test_dates_in_yaml_stay_strings() -> None:
    t = load_template_text("name: t\nsteps:\n  - name: a\n    tool: s__x\n    input: {since: 2024-01-31}\n")
    assert t.steps[0].input == {"since": "2024-01-31"}


# --------------------------------------------------------------------------- the JSON Schema


def test_json_schema_is_valid_2020_12_and_accepts_the_spec_example() -> None:
    schema = template_json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(spec_dict(), schema, cls=jsonschema.Draft202012Validator)


def test_json_schema_describes_every_field_for_editors() -> None:
    schema = template_json_schema()
    step = schema["$defs"]["StepModel"]["properties"]
    assert {"tool", "return", "approve", "template", "for_each", "when", "retry", "timeout"} <= set(step)
    assert all(prop.get("description") for prop in step.values())
    assert all(prop.get("description") for prop in schema["properties"].values())


@pytest.mark.parametrize(
    "step",
    [
        {"name": "a", "tool": "s__x", "inputt": {}},
        {"name": "a", "tool": "s__x", "approve": "both kinds"},
        {"name": "a"},
        {"name": "a", "tool": "s__x", "timeout": "soon"},
        {"name": "a", "tool": "s__x", "when": {"ref": "@x", "eq": 1, "gt": 2}},
        {"name": "1a", "tool": "s__x"},
        {"name": "a", "tool": "s__x", "retry": {"backoff": "random"}},
    ],
)
def test_json_schema_rejects_what_validation_rejects(step: dict[str, Any]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(tpl(step), template_json_schema(), cls=jsonschema.Draft202012Validator)
    with pytest.raises(TemplateError):
        parse_template(tpl(step))


# --------------------------------------------------------------------------- graph helpers


def test_dependencies_cover_every_field_that_can_hold_refs() -> None:
    t = load_template_text(SPEC_EXAMPLE)
    assert dependencies(t.step("notify")) == {"list_issues", "confirm", "label_each"}
    assert dependencies(t.step("label_each")) == {"list_issues"}
    assert dependencies(t.step("nested")) == set()
    assert dependencies(t.step("confirm")) == {"list_issues"}


def test_topo_order_puts_dependencies_first_and_keeps_declaration_order_otherwise() -> None:
    t = parse_template(
        tpl(
            {"name": "c", "tool": "s__x", "input": {"v": "@b.v"}},
            {"name": "a", "tool": "s__x"},
            {"name": "b", "tool": "s__x", "input": {"v": "{{@a.v}}"}},
            {"name": "d", "tool": "s__x"},
        )
    )
    assert topo_order(t) == ["a", "b", "c", "d"]


def test_cross_template_cycles_are_found_through_the_lookup() -> None:
    outer = parse_template({"name": "outer", "steps": [{"name": "run", "template": "middle"}]})
    middle = parse_template({"name": "middle", "steps": [{"name": "run", "template": "outer"}]})
    saved = {"middle": middle}
    with pytest.raises(TemplateError, match="outer -> middle -> outer"):
        check_template_cycles(outer, lambda name: saved.get(name))
    check_template_cycles(outer, lambda name: None)  # a missing child is not a cycle


def test_mermaid_draws_one_node_per_step_and_one_edge_per_dependency() -> None:
    drawing = to_mermaid(load_template_text(SPEC_EXAMPLE))
    lines = drawing.splitlines()
    assert lines[0] == "flowchart TD"
    assert '    list_issues["list_issues<br/>github__list_issues"]' in lines
    assert any(line.startswith("    confirm{{") for line in lines)  # approve: a hexagon
    assert any(line.startswith("    stop_if_empty([") and "eq 0" in line for line in lines)
    assert any(line.startswith("    nested[[") for line in lines)
    assert "    list_issues --> label_each" in lines
    assert "    confirm -.-> notify" in lines  # depends_on only: dotted
    assert sum("-->" in line or "-.->" in line for line in lines) == 6


def test_tool_input_schema_comes_from_the_inputs() -> None:
    schema = tool_input_schema(load_template_text(SPEC_EXAMPLE))
    assert schema == {
        "type": "object",
        "properties": {
            "repo": {"type": "string", "description": "owner/name"},
            "limit": {"type": "integer", "default": 10},
        },
        "additionalProperties": False,
        "required": ["repo"],
    }
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate({"repo": "a/b"}, schema)


# --------------------------------------------------------------------------- toolreel templates ...


@pytest.fixture
def cli(tmp_path: Path) -> tuple[typer.Typer, list[str]]:
    app = typer.Typer()
    register(app)
    return app, ["--db", f"sqlite:///{tmp_path / 'cli.db'}"]


def test_templates_commands_import_list_show_export_delete(cli: tuple[typer.Typer, list[str]], tmp_path: Path) -> None:
    app, db = cli
    runner = CliRunner()
    source = tmp_path / "triage.yaml"
    source.write_text(SPEC_EXAMPLE, encoding="utf-8")
    assert runner.invoke(app, ["templates", "import", str(source), *db]).stdout.startswith("saved triage-issues v1")
    again = runner.invoke(app, ["templates", "import", str(source), *db, "--json"])
    assert json.loads(again.stdout)["version"] == 2
    listing = json.loads(runner.invoke(app, ["templates", "list", *db, "--json"]).stdout)
    assert [(t["name"], t["version"]) for t in listing] == [("triage-issues", 2)]
    shown = json.loads(
        runner.invoke(app, ["templates", "show", "triage-issues", "--version", "1", *db, "--json"]).stdout
    )
    assert shown["definition"] == template_to_dict(load_template_text(SPEC_EXAMPLE))
    drawing = runner.invoke(app, ["templates", "show", "triage-issues", "--mermaid", *db]).stdout
    assert drawing.startswith("flowchart TD")
    exported = tmp_path / "out.json"
    assert runner.invoke(app, ["templates", "export", "triage-issues", "-o", str(exported), *db]).exit_code == 0
    assert load_template_file(exported) == load_template_text(SPEC_EXAMPLE)
    deleted = runner.invoke(app, ["templates", "delete", "triage-issues", *db])
    assert deleted.stdout.strip() == "deleted triage-issues (2 versions)"
    missing = runner.invoke(app, ["templates", "show", "triage-issues", *db])
    assert missing.exit_code == 1
    assert "no template named 'triage-issues'" in missing.stderr


def test_templates_validate_exits_2_with_one_line_naming_the_problem(
    cli: tuple[typer.Typer, list[str]], tmp_path: Path
) -> None:
    app, _ = cli
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nsteps:\n  - {name: a, tool: s__t, input: {u: '@b.c'}}\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["templates", "validate", str(bad)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert "step 'a', field 'input.u'" in result.stderr and str(bad) in result.stderr
    good = tmp_path / "good.yaml"
    good.write_text(SPEC_EXAMPLE, encoding="utf-8")
    ok = CliRunner().invoke(app, ["templates", "validate", str(good), "--json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["valid"] is True


def test_import_refuses_a_cycle_through_saved_templates(cli: tuple[typer.Typer, list[str]], tmp_path: Path) -> None:
    app, db = cli
    runner = CliRunner()
    for name, child in (("outer", "middle"), ("middle", "outer")):
        path = tmp_path / f"{name}.yaml"
        path.write_text(f"name: {name}\nsteps:\n  - {{name: run, template: {child}}}\n", encoding="utf-8")
        result = runner.invoke(app, ["templates", "import", str(path), *db])
    assert result.exit_code == 2
    assert "middle -> outer -> middle" in result.stderr
    checked = runner.invoke(app, ["templates", "validate", str(tmp_path / "middle.yaml"), *db])
    assert checked.exit_code == 2 and "middle -> outer -> middle" in checked.stderr
    assert runner.invoke(app, ["templates", "validate", str(tmp_path / "middle.yaml")]).exit_code == 0


def test_schema_command_prints_the_json_schema(cli: tuple[typer.Typer, list[str]]) -> None:
    app, _ = cli
    result = CliRunner().invoke(app, ["schema"])
    assert result.exit_code == 0
    assert json.loads(result.stdout) == template_json_schema()
