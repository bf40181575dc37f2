"""The templatizer's inputs: named, redacted, likely; several recordings confirming or refuting a mapping; enums,
descriptions, and values equal across a type coercion."""

from __future__ import annotations

import json

import pytest

from tests.recorded import Session, applied, inputs_of, reproduces
from toolreel.core.errors import ExecutionError
from toolreel.core.model import JSON, StepRecord
from toolreel.core.secrets import REDACTED
from toolreel.core.template_io import tool_input_schema
from toolreel.replayer import bind_inputs
from toolreel.templatizer import templatize, verify

# --------------------------------------------------------------------------- inputs


def test_named_inputs_replace_typed_values_and_substrings() -> None:
    s = Session()
    s.call("mkdir", {"path": "/data/proj", "limit": 25}, {"ok": True})
    s.call("write", {"path": "/data/proj/a.txt", "to": "bo@x.test", "n": "25"}, {"ok": True})
    result = templatize([s.steps], name="t", inputs={"root": "/data/proj", "email": "bo@x.test", "limit": 25})
    assert inputs_of(result) == {
        "mkdir_1": {"path": "@input.root", "limit": "@input.limit"},
        "write_1": {"path": "{{@input.root}}/a.txt", "to": "@input.email", "n": "25"},
    }
    assert {name: spec.type for name, spec in result.template.inputs.items()} == {
        "root": "string",
        "email": "string",
        "limit": "integer",
    }
    assert all(spec.required for spec in result.template.inputs.values())
    reproduces(result, s.steps)


def test_redacted_values_always_become_secret_inputs() -> None:
    s = Session()
    s.call("login", {"user": "ann", "api_key": REDACTED}, {"session": "ses_0a1b2c3d4e"}, redacted=("$.api_key",))
    s.call("call", {"header": f"Bearer {REDACTED}", "session": "ses_0a1b2c3d4e"}, {}, redacted=("$.header",))
    result = templatize([s.steps], name="t")
    steps = inputs_of(result)
    assert steps["login_1"] == {"user": "ann", "api_key": "@input.api_key"}
    assert steps["call_1"] == {"header": "Bearer {{@input.header_secret}}", "session": "@login_1.session"}
    assert {n for n, spec in result.template.inputs.items() if spec.secret} == {"api_key", "header_secret"}
    assert REDACTED not in json.dumps(result.to_json()["template"])
    reproduces(result, s.steps)


def test_unexplained_user_values_are_reported_as_likely_inputs_not_applied() -> None:
    s = Session()
    s.call("mkdir", {"path": "/home/ann/work/site", "mode": "private"}, {"ok": True})
    s.call("write", {"path": "/home/ann/work/site/index.html", "title": "Ann's page", "format": "html"}, {"ok": True})
    result = templatize([s.steps], name="t")
    assert result.template.inputs == {}
    found = {likely.name: likely.value for likely in result.likely_inputs}
    # The folder the session makes is part of the workflow; the user's place is where it is made.
    assert found == {"root_dir": "/home/ann/work", "title": "Ann's page"}


# --------------------------------------------------------------------------- several recordings


def _pair(first: dict[str, JSON], second: dict[str, JSON], out1: JSON, out2: JSON) -> list[list[StepRecord]]:
    runs: list[list[StepRecord]] = []
    for args, out in ((first, out1), (second, out2)):
        s = Session(execution=f"e{len(runs)}")
        s.call("produce", {"kind": "report"}, out)
        s.call("consume", args, {"done": True})
        runs.append(s.steps)
    return runs


def test_a_mapping_that_holds_in_every_run_with_different_values_is_confirmed() -> None:
    runs = _pair({"count": 3}, {"count": 5}, {"n": 3}, {"n": 5})  # small numbers: only confirmation can link them
    assert templatize(runs[:1], name="t").applied == ()
    result = templatize(runs, name="t")
    assert inputs_of(result)["consume_1"] == {"count": "@produce_1.n"}
    assert result.applied[0].kind == "confirmed"


def test_a_value_that_varies_unexplained_becomes_an_input_and_a_constant_stays() -> None:
    runs = _pair({"who": "Carol", "mode": "fast"}, {"who": "Dan", "mode": "fast"}, {"n": 1}, {"n": 2})
    result = templatize(runs, name="t")
    assert inputs_of(result)["consume_1"] == {"who": "@input.who", "mode": "fast"}
    assert inputs_of(result)["produce_1"] == {"kind": "report"}
    assert result.input_values == {"who": "Carol"}
    assert result.template.inputs["who"].type == "string"


def test_a_mapping_contradicted_by_another_run_is_not_applied() -> None:
    runs = _pair({"code": "XK-99871-Z"}, {"code": "XK-99871-Z"}, {"code": "XK-99871-Z"}, {"code": "QQ-11111-A"})
    assert applied(templatize(runs[:1], name="t")) == {("consume_1", "$.code"): "@produce_1.code"}
    result = templatize(runs, name="t")
    assert inputs_of(result)["consume_1"] == {"code": "XK-99871-Z"}


# --------------------------------------------------------------------------- enum and descriptions


def _runs(*args: dict[str, JSON]) -> list[list[StepRecord]]:
    runs: list[list[StepRecord]] = []
    for number, arguments in enumerate(args):
        s = Session(execution=f"e{number}")
        s.call("search", arguments, {"hits": number})
        runs.append(s.steps)
    return runs


def test_recordings_choosing_among_a_few_settings_give_an_enum_and_free_text_does_not() -> None:
    runs = _runs(
        {"order": "asc", "query": "red shoes"},
        {"order": "desc", "query": "blue hats"},
        {"order": "asc", "query": "green socks"},
    )
    result = templatize(runs, name="t")
    assert result.template.inputs["order"].enum == ("asc", "desc")
    assert result.template.inputs["query"].enum is None
    assert verify(result, runs).verified
    assert tool_input_schema(result.template)["properties"]["order"]["enum"] == ["asc", "desc"]
    with pytest.raises(ExecutionError, match=r"'sideways' is not one of \['asc', 'desc'\]"):
        bind_inputs(result.template, {"order": "sideways", "query": "x"})
    assert bind_inputs(result.template, {"order": "desc", "query": "x"})["order"] == "desc"


def test_two_recordings_are_too_few_to_close_a_set() -> None:
    result = templatize(_runs({"order": "asc"}, {"order": "desc"}), name="t")
    assert result.template.inputs["order"].enum is None


def test_an_input_description_says_what_it_is_an_example_and_where_it_is_used() -> None:
    s = Session()
    s.call("create_user", {"name": "Ada Lovelace"}, {"id": "usr_0a1b2c3d4e5f"})
    result = templatize([s.steps], name="t", inputs={"full_name": "Ada Lovelace"})
    description = result.template.inputs["full_name"].description
    assert description == 'Full name (recorded: "Ada Lovelace"); used by create_user_1'


def test_a_number_glued_to_its_unit_is_found_but_an_id_inside_a_word_is_not() -> None:
    s = Session()
    s.call("estimate", {"ticket": "t-1"}, {"hours": 3.25, "id": "job_4f3e2d1c"})
    s.call("notify", {"text": "needs 3.25h of work", "ref": "job_4f3e2d1cx"}, {"ok": True})
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["notify_1"] == {"text": "needs {{@estimate_1.hours}}h of work", "ref": "job_4f3e2d1cx"}
    reproduces(result, s.steps)


# --------------------------------------------------------------------------- values equal across a type coercion


def test_a_number_input_passed_elsewhere_as_its_text_is_one_input() -> None:
    s = Session()
    s.call("lookup", {"ticket": 4521903}, {"ok": True})
    s.call("comment", {"ticket": "4521903", "page": "25"}, {"ok": True})
    result = templatize([s.steps], name="t", inputs={"ticket": 4521903, "limit": 25})
    assert inputs_of(result)["lookup_1"] == {"ticket": "@input.ticket"}
    # two digits as text are no evidence: "25" stays a literal
    assert inputs_of(result)["comment_1"] == {"ticket": "{{@input.ticket}}", "page": "25"}
    reproduces(result, s.steps)


def test_recordings_varying_a_number_and_its_text_together_give_one_input() -> None:
    runs: list[list[StepRecord]] = []
    for number, (count, flag) in enumerate(((1234, True), (5678, False))):
        s = Session(execution=f"e{number}")
        s.call("reserve", {"seats": count, "notify": flag}, {"ok": True})
        s.call("confirm", {"seats": str(count), "notify": "true" if flag else "false"}, {"ok": True})
        runs.append(s.steps)
    result = templatize(runs, name="t")
    assert set(result.template.inputs) == {"seats", "notify"}
    assert inputs_of(result)["confirm_1"] == {"seats": "{{@input.seats}}", "notify": "{{@input.notify}}"}
    assert verify(result, runs).verified
