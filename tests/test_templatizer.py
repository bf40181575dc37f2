"""The templatizer: each kind of candidate, each filter, inputs, several recordings, verification, subsets,
the corpus of real recorded sessions (round trip and expected refs), a live session, and the CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from fixtures.recordings import CorpusEntry, load_corpus, record
from toolreel.core.errors import ExecutionError, TemplateError
from toolreel.core.model import JSON, Execution, ExecutionMode, ExecutionStatus, StepKind, StepRecord, StepStatus
from toolreel.core.refs import refs_in
from toolreel.core.secrets import REDACTED
from toolreel.core.store import open_store
from toolreel.core.template_io import tool_input_schema
from toolreel.replayer import bind_inputs, dry_replay
from toolreel.templatizer import TemplatizeResult, templatize, verify
from toolreel.templatizer.cli import register

CORPUS = load_corpus()


@dataclass
class Session:
    """Builds StepRecords the way the recorder names them: `<tool>_<n>`, seq from 1."""

    execution: str = "e1"
    steps: list[StepRecord] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def call(
        self,
        tool: str,
        args: dict[str, JSON],
        output: JSON,
        *,
        written: dict[str, JSON] | None = None,
        server: str = "svc",
        failed: bool = False,
        redacted: tuple[str, ...] = (),
        kind: StepKind = StepKind.TOOL,
    ) -> str:
        self.counts[tool] = self.counts.get(tool, 0) + 1
        name = f"{tool}_{self.counts[tool]}"
        self.steps.append(
            StepRecord(
                execution_id=self.execution,
                name=name,
                seq=len(self.steps) + 1,
                kind=kind,
                status=StepStatus.FAILED if failed else StepStatus.SUCCEEDED,
                server=server,
                tool=tool,
                input=written if written is not None else args,
                resolved_input=args,
                output=None if failed else output,
                is_error=failed,
                redacted=redacted,
            )
        )
        return name


def inputs_of(result: TemplatizeResult) -> dict[str, JSON]:
    return {step.name: step.input for step in result.template.steps}


def applied(result: TemplatizeResult) -> dict[tuple[str, str], str]:
    return {(i.step, i.input_path): i.ref for i in result.applied}


def candidates(result: TemplatizeResult) -> dict[tuple[str, str], str]:
    return {(i.step, i.input_path): i.ref for i in result.candidates}


def reproduces(result: TemplatizeResult, steps: Sequence[StepRecord]) -> None:
    """Resolving the template's step inputs against the recording gives back every recorded argument, typed
    (the replayer's dry replay: the code steps the templatizer adds run in their sandbox, loops per element)."""
    differences = dry_replay(result.template, result.input_values, steps, result.loop_items)
    assert differences == [], [d.to_json() for d in differences]


# --------------------------------------------------------------------------- candidates


def test_a_typed_exact_id_becomes_a_ref_with_evidence() -> None:
    s = Session()
    s.call("create_user", {"name": "Ann"}, {"id": "usr_9f8e7d6c5b4a", "name": "Ann"})
    s.call("get_user", {"user_id": "usr_9f8e7d6c5b4a"}, {"id": "usr_9f8e7d6c5b4a"})
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["get_user_1"] == {"user_id": "@create_user_1.id"}
    (inference,) = result.applied
    assert (inference.kind, inference.confidence) == ("exact", "high")
    assert "output $.id of step create_user_1 -> input $.user_id" in inference.evidence
    reproduces(result, s.steps)


def test_a_long_number_passed_on_as_text_becomes_an_interpolated_ref() -> None:
    s = Session()
    s.call("create_ticket", {"title": "Printer jam"}, {"number": 4815162342})
    s.call("comment", {"ticket": "4815162342", "body": "on it"}, {"ok": True})
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["comment_1"] == {"ticket": "{{@create_ticket_1.number}}", "body": "on it"}
    (inference,) = [i for i in result.applied if (i.step, i.input_path) == ("comment_1", "$.ticket")]
    assert (inference.kind, inference.confidence) == ("coerced", "high")
    reproduces(result, s.steps)


def test_text_passed_on_as_a_number_is_cast_by_a_code_step() -> None:
    """A ref keeps the string type: "4815162342" becomes the number through a `code` step that casts it."""
    s = Session()
    s.call("create_ticket", {"title": "Printer jam"}, {"number": "4815162342"})
    s.call("comment", {"ticket": 4815162342, "body": "on it"}, {"ok": True})
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["comment_1"] == {"ticket": "@calc_number_1", "body": "on it"}
    assert inputs_of(result)["calc_number_1"] == {"text": "@create_ticket_1.number"}
    (transform,) = [i for i in result.applied if i.kind == "transform"]
    assert transform.confidence == "high" and "the number written in" in transform.evidence
    (candidate,) = result.candidates
    assert (candidate.ref, candidate.kind, candidate.confidence) == ("@create_ticket_1.number", "coerced", "medium")


def test_a_decimal_amount_copied_into_a_sentence_becomes_a_ref_but_not_inside_a_version() -> None:
    s = Session()
    s.call("create_order", {"sku": "cheese"}, {"order_id": "ord_5d4c3b2a", "total": 5.7})
    s.call("notify", {"text": "Your order totals 5.7 EUR"}, {"ok": True})
    s.call("notify", {"text": "Running release 5.7.1"}, {"ok": True})
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["notify_1"] == {"text": "Your order totals {{@create_order_1.total}} EUR"}
    assert inputs_of(result)["notify_2"] == {"text": "Running release 5.7.1"}
    reproduces(result, s.steps)


def test_a_whole_object_equal_to_an_output_subtree_becomes_one_ref() -> None:
    address = {"street": "12 Long Road", "city": "Springfield", "zip": "90210"}
    s = Session()
    s.call("get_customer", {"id": "cus_1a2b3c4d"}, {"id": "cus_1a2b3c4d", "address": address})
    s.call("create_shipment", {"ship_to": dict(address), "weight": 12}, {"shipment": "shp_77aa88bb"})
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["create_shipment_1"] == {"ship_to": "@get_customer_1.address", "weight": 12}
    assert applied(result)[("create_shipment_1", "$.ship_to")] == "@get_customer_1.address"
    assert result.applied[0].kind == "subtree"


def test_a_bounded_substring_becomes_an_interpolation() -> None:
    s = Session()
    s.call("make_dir", {"name": "run"}, {"dir": "/srv/data/run-2024-abc"})
    s.call("write", {"path": "/srv/data/run-2024-abc/out.txt", "text": "x"}, {"ok": True})
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["write_1"] == {"path": "{{@make_dir_1.dir}}/out.txt", "text": "x"}
    assert result.applied[0].kind == "substring"
    reproduces(result, s.steps)


def test_a_substring_never_cuts_a_word() -> None:
    s = Session()
    s.call("mint", {}, {"code": "abcd1234"})
    s.call("say", {"text": "xabcd1234y and abcd12345"}, {"ok": True})
    assert templatize([s.steps], name="t").applied == ()


# --------------------------------------------------------------------------- filters


@pytest.mark.parametrize(
    ("output", "args"),
    [
        ({"ok": True, "none": None, "empty": ""}, {"ok": True, "none": None, "empty": ""}),
        ({"count": 7}, {"count": 7}),
        ({"created_at": "2024-05-01T10:00:00Z"}, {"since": "2024-05-01T10:00:00Z"}),
        ({"_meta": {"trace": "abcdef123456"}}, {"trace": "abcdef123456"}),
        ({"request_id": "req-8f7e6d5c4b"}, {"request_id": "req-8f7e6d5c4b"}),
        ({"next_cursor": "c-xyz-123456789"}, {"note": "c-xyz-123456789"}),
    ],
    ids=["bool-null-empty", "small-int", "timestamp", "_meta", "request-id", "cursor-to-non-cursor"],
)
def test_coincidences_never_become_refs(output: JSON, args: dict[str, JSON]) -> None:
    s = Session()
    s.call("produce", {}, output)
    s.call("consume", args, {"done": True})
    result = templatize([s.steps], name="t")
    assert result.applied == () and result.candidates == ()
    assert inputs_of(result)["consume_1"] == args


def test_a_cursor_links_to_a_cursor() -> None:
    s = Session()
    s.call("list", {"limit": 2}, {"items": [1, 2], "next_cursor": "c-xyz-123456789"})
    s.call("list", {"limit": 2, "cursor": "c-xyz-123456789"}, {"items": [3]})
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["list_2"] == {"limit": 2, "cursor": "@list_1.next_cursor"}


def test_a_value_produced_in_many_places_is_weaker_evidence() -> None:
    orders = [{"id": f"ord_{i:08d}", "status": "shipped"} for i in range(12)]
    once = Session()
    once.call("get_order", {"id": "ord_00000001"}, {"id": "ord_00000001", "status": "shipped"})
    once.call("notify", {"status": "shipped"}, {"ok": True})
    assert candidates(templatize([once.steps], name="t")) == {("notify_1", "$.status"): "@get_order_1.status"}
    many = Session()
    many.call("list_orders", {}, {"orders": orders})
    many.call("notify", {"status": "shipped"}, {"ok": True})
    result = templatize([many.steps], name="t")
    assert result.applied == () and result.candidates == ()


def test_a_value_the_server_only_echoed_is_not_a_ref() -> None:
    s = Session()
    s.call("create_user", {"email": "alice@x.test"}, {"id": "usr_5a5a5a5a5a", "email": "alice@x.test"})
    s.call("invite", {"email": "alice@x.test", "user": "usr_5a5a5a5a5a"}, {"ok": True})
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["invite_1"] == {"email": "alice@x.test", "user": "@create_user_1.id"}
    (likely,) = result.likely_inputs
    assert (likely.name, likely.value, likely.type) == ("email", "alice@x.test", "string")
    assert set(likely.used_at) == {("create_user_1", "$.email"), ("invite_1", "$.email")}


def test_key_names_pick_the_path_and_recency_the_producer() -> None:
    s = Session()
    s.call("a", {}, {"parent_id": "grp_123456789", "user_id": "usr_123456789"})
    s.call("b", {}, {"owner": "usr_123456789"})
    s.call("c", {"user_id": "usr_123456789", "member": "usr_123456789"}, {})
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["c_1"] == {"user_id": "@a_1.user_id", "member": "@b_1.owner"}


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


# --------------------------------------------------------------------------- verification, selection


def test_a_ref_that_does_not_reproduce_the_argument_is_dropped_to_a_literal() -> None:
    s = Session()
    s.call("mock", {}, {"token": "tok_1234567890"}, kind=StepKind.PRESET)
    s.call("use", {"t": "tok_1234567890"}, {"ok": True}, written={"t": "@mock_1.token"})
    result = templatize([s.steps], name="t")
    assert inputs_of(result) == {"use_1": {"t": "tok_1234567890"}}
    (dropped,) = result.dropped
    assert (dropped.step, dropped.input_path, dropped.ref, dropped.kind) == (
        "use_1",
        "$.t",
        "@mock_1.token",
        "explicit",
    )
    assert "does not resolve" in dropped.evidence
    assert ("mock_1", "a preset step: only tool calls are templatized") in result.left_out


def test_refs_the_agent_wrote_are_kept_and_literals_are_escaped() -> None:
    s = Session()
    s.call("make", {}, {"id": "obj_0011223344"})
    s.call("use", {"id": "obj_0011223344", "tag": "@here", "raw": "{{@x}}"}, {}, written={"id": "@make_1.id"})
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["use_1"] == {"id": "@make_1.id", "tag": "@@here", "raw": "{{@@x}}"}
    assert result.applied[0].kind == "explicit"
    reproduces(result, s.steps)


def _order_session() -> Session:
    s = Session()
    s.call("create_user", {"name": "Ann Lee"}, {"id": "usr_aaaabbbbcccc"})
    s.call("create_order", {"user_id": "usr_aaaabbbbcccc"}, {"order_id": "ord_111122223333"})
    s.call("get_order", {"order_id": "ord_111122223333"}, {"order_id": "ord_111122223333", "total": 12.5})
    s.call("lookup", {"q": "weather"}, {"sunny": True}, failed=True)
    s.call("status", {}, {"upstreams": []}, server="toolreel")
    s.call("note", {"text": "done"}, "Noted: done")
    return s


def test_a_subset_keeps_the_steps_it_depends_on() -> None:
    result = templatize([_order_session().steps], name="t", steps=["get_order_1"])
    assert [step.name for step in result.template.steps] == ["create_user_1", "create_order_1", "get_order_1"]
    assert ("note_1", "not among the steps asked for, nor needed by them") in result.left_out
    with pytest.raises(TemplateError, match="'nope' are not templatizable steps"):
        templatize([_order_session().steps], name="t", steps=["nope"])


def test_failed_steps_and_management_calls_are_left_out_unless_asked() -> None:
    result = templatize([_order_session().steps], name="t")
    names = [step.name for step in result.template.steps]
    assert "lookup_1" not in names and "status_1" not in names
    reasons = dict(result.left_out)
    assert reasons["status_1"] == "a toolreel management call"
    assert reasons["lookup_1"].startswith("failed")
    kept = templatize([_order_session().steps], name="t", include_failed=True)
    assert kept.template.step("lookup_1").include_failed


def test_steps_keep_the_recorded_order_for_side_effects() -> None:
    result = templatize([_order_session().steps], name="t")
    assert result.template.step("note_1").depends_on == ("get_order_1",)
    assert result.template.step("create_order_1").depends_on == ()  # its ref already orders it
    unordered = templatize([_order_session().steps], name="t", keep_order=False)
    assert unordered.template.step("note_1").depends_on == ()


def test_reads_between_two_writes_replay_in_parallel() -> None:
    session = Session()
    session.call("write_file", {"path": "/a.txt", "text": "hello"}, "ok")
    session.call("read_file", {"path": "/a.txt"}, "hello")
    session.call("stat", {"path": "/a.txt"}, {"size": 5})
    session.call("write_file", {"path": "/b.txt", "text": "bye"}, "ok")
    session.call("read_file", {"path": "/b.txt"}, "bye")
    result = templatize([session.steps], name="t", read_only={"svc__read_file", "svc__stat"})
    depends = {step.name: step.depends_on for step in result.template.steps}
    assert depends == {
        "write_file_1": (),
        "read_file_1": ("write_file_1",),
        "stat_1": ("write_file_1",),  # not after read_file_1: both only read
        "write_file_2": ("write_file_1", "read_file_1", "stat_1"),  # the reads saw the state before it
        "read_file_2": ("write_file_2",),
    }
    everything_writes = templatize([session.steps], name="t")
    assert everything_writes.template.step("stat_1").depends_on == ("read_file_1",)


def test_the_result_has_the_save_template_shape() -> None:
    report = templatize([_order_session().steps], name="orders").to_json()
    assert set(report) == {
        *("template", "inferred", "candidates", "likely_inputs", "dropped", "left_out", "stayed_literal"),
        *("loops", "unrolled", "conditions"),
    }
    assert report["template"]["name"] == "orders"
    assert {"step", "input_path", "ref", "kind", "confidence", "score", "evidence"} <= set(report["inferred"][0])
    json.dumps(report)


# --------------------------------------------------------------------------- the corpus


def _corpus_result(entry: CorpusEntry) -> TemplatizeResult:
    named = None if len(entry.recordings) > 1 else dict(entry.inputs)
    return templatize(entry.recordings, name=entry.name, inputs=named, schemas=entry.tools)


def _template_refs(result: TemplatizeResult) -> dict[tuple[str, str], str]:
    def walk(value: JSON, path: str) -> Iterator[tuple[str, str]]:
        if isinstance(value, str) and refs_in(value):
            yield path, value
        elif isinstance(value, dict):
            for key, item in value.items():
                yield from walk(item, f"{path}.{key}" if key.isidentifier() else f"{path}[{json.dumps(key)}]")
        elif isinstance(value, list):
            for index, item in enumerate(value):
                yield from walk(item, f"{path}[{index}]")

    return {(step.name, path): value for step in result.template.steps for path, value in walk(step.input, "$")}


@pytest.mark.parametrize("entry", CORPUS, ids=[entry.name for entry in CORPUS])
def test_corpus_template_reproduces_every_recorded_argument(entry: CorpusEntry) -> None:
    result = _corpus_result(entry)
    if any(step.kind == "code" for step in result.template.steps):  # computed values: the dry replay runs them
        assert verify(result, list(entry.recordings)).mismatches == ()
    else:
        reproduces(result, entry.steps)
    assert result.dropped == ()


@pytest.mark.parametrize("entry", CORPUS, ids=[entry.name for entry in CORPUS])
def test_corpus_refs_are_the_ones_a_careful_person_writes(entry: CorpusEntry) -> None:
    found = _template_refs(_corpus_result(entry))
    expected = {(r.step, r.input_path): r.refs for r in entry.refs}
    assert set(found) == set(expected)
    for where, value in found.items():
        assert value in expected[where], where


def test_corpus_has_diverse_real_sessions() -> None:
    assert len(CORPUS) >= 8
    servers = {step.server for entry in CORPUS for step in entry.steps}
    assert {"ids", "memory", "filesystem", "git", "time"} <= servers
    assert any(len(entry.recordings) > 1 for entry in CORPUS)
    assert any(step.redacted for entry in CORPUS for step in entry.steps)
    assert any(step.status == StepStatus.FAILED for entry in CORPUS for step in entry.steps)


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_live_session_on_the_ids_server_templatizes_to_the_expected_refs() -> None:
    scenario = await record.ids_order_flow()
    result = templatize([scenario.steps], name="live", inputs=scenario.inputs)
    found = _template_refs(result)
    assert found == {(r["step"], r["input_path"]): r["ref"] for r in scenario.refs}
    reproduces(result, scenario.steps)


# --------------------------------------------------------------------------- toolreel templatize


def test_templatize_command_reads_a_stored_recording_and_saves(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    entry = next(e for e in CORPUS if e.name == "ids-order-flow")
    store = open_store(url)
    try:
        execution_id = entry.steps[0].execution_id
        store.create_execution(
            Execution(execution_id, ExecutionMode.RECORD, ExecutionStatus.RECORDING, created_at=1.0, updated_at=1.0)
        )
        store.put_steps(list(entry.steps))
    finally:
        store.close()
    app = typer.Typer()
    register(app)
    runner = CliRunner()
    args: list[str] = ["templatize", execution_id, "--db", url, "--save", "orders", "--json"]
    args += ["-i", "email=alice@example.test", "-i", "name=Alice Smith"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    assert report["saved"]["version"] == 1
    assert report["template"]["steps"][1]["input"]["user_id"] == "@create_user_1.id"
    shown = json.loads(runner.invoke(app, ["templates", "show", "orders", "--db", url, "--json"]).stdout)
    assert shown["definition"] == report["template"]
    assert shown["source_executions"] == [execution_id]
    missing = runner.invoke(app, ["templatize", "nope", "--db", url])
    assert missing.exit_code == 1 and "nope" in missing.stderr


# --------------------------------------------------------------------------- secrets produced by a step


def test_a_token_produced_by_an_earlier_step_becomes_a_ref_not_an_input() -> None:
    s = Session()
    s.call("login", {"user": "ann", "password": REDACTED}, {"session_token": REDACTED}, redacted=("$.password",))
    s.call(
        "list_files", {"session_token": REDACTED, "dir": "/srv/reports"}, {"files": []}, redacted=("$.session_token",)
    )
    s.call("whoami", {"auth_token": REDACTED}, {"user": "ann"}, redacted=("$.auth_token",))
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["list_files_1"] == {"session_token": "@login_1.session_token", "dir": "/srv/reports"}
    assert inputs_of(result)["whoami_1"] == {"auth_token": "@login_1.session_token"}
    assert set(result.template.inputs) == {"password"}  # the user's own secret stays an input
    assert result.template.inputs["password"].secret
    reproduces(result, s.steps)


def test_a_redacted_value_under_an_unrelated_key_stays_a_secret_input() -> None:
    s = Session()
    s.call("login", {"user": "ann"}, {"session_token": REDACTED})
    s.call("charge", {"card_number": "4111", "api_key": REDACTED}, {"ok": True}, redacted=("$.api_key",))
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["charge_1"] == {"card_number": "4111", "api_key": "@input.api_key"}


def test_a_ref_the_agent_wrote_under_a_secret_key_stays_a_ref() -> None:
    s = Session()
    s.call("login", {"user": "ann"}, {"session_token": REDACTED})
    s.call(
        "list_files",
        {"session_token": REDACTED},
        {"files": []},
        written={"session_token": "@login_1.session_token"},
        redacted=("$.session_token",),
    )
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["list_files_1"] == {"session_token": "@login_1.session_token"}
    assert result.template.inputs == {}
    reproduces(result, s.steps)


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


def test_templatize_save_with_no_inputs_applies_the_likely_ones_and_verifies(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    entry = next(e for e in CORPUS if e.name == "ids-order-flow")
    store = open_store(url)
    try:
        execution_id = entry.steps[0].execution_id
        store.create_execution(
            Execution(execution_id, ExecutionMode.RECORD, ExecutionStatus.RECORDING, created_at=1.0, updated_at=1.0)
        )
        store.put_steps(list(entry.steps))
    finally:
        store.close()
    app = typer.Typer()
    register(app)
    result = CliRunner().invoke(app, ["templatize", execution_id, "--db", url, "--save", "orders", "--json"])
    assert result.exit_code == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    assert report["verified"] is True and report["saved"]["version"] == 1
    assert set(report["template"]["inputs"]) == {"name", "email"}
    assert "applied the likely inputs" in result.stderr


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
