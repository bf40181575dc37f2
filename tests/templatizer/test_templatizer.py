"""The templatizer end to end: verification, subsets and order, the result's shape, the corpus of real recorded
sessions (round trip and expected refs), a live session, and the CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from fixtures.recordings import CorpusEntry, load_corpus, record
from tests.recorded import Session, inputs_of, reproduces
from toolreel.core.errors import TemplateError
from toolreel.core.model import JSON, Execution, ExecutionMode, ExecutionStatus, StepKind, StepStatus
from toolreel.core.refs import refs_in
from toolreel.core.store import open_store
from toolreel.templatizer import TemplatizeResult, templatize, verify
from toolreel.templatizer.cli import register

CORPUS = load_corpus()


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
