"""Code Mode (SPEC §13): `toolreel__run_script` through an in-process gateway in front of the real
`features` fixture server (a stdio process), with a real SQLite store; hostile scripts end with named
errors while the gateway goes on serving; `toolreel__describe_tools` declares tools in TypeScript.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types as types
import pytest

from tests.gw import MODES, Connected, Probe, call, fixture_entry, status, text_of, wait_until
from tests.inproc import gateway_in_process
from toolreel.core.errors import NotFoundError
from toolreel.core.model import (
    SCRIPT_TEMPLATE,
    Execution,
    ExecutionMode,
    ExecutionStatus,
    StepKind,
    StepRecord,
    StepStatus,
    new_id,
)
from toolreel.core.store import open_store

RUN = "toolreel__run_script"


@dataclass
class Gw:
    connected: Connected
    db_url: str
    counter_file: Path

    def counts(self) -> dict[str, int]:
        return json.loads(self.counter_file.read_text()) if self.counter_file.exists() else {}


@pytest.fixture(params=MODES)
async def gw(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Gw]:
    counter_file = tmp_path / "counts.json"
    entry = fixture_entry("features", env={"FIXTURE_COUNTER_FILE": str(counter_file)})
    entry["excludeTools"] = ["crash"]
    db_url = f"sqlite:///{tmp_path / 'store.db'}"
    async with gateway_in_process({"feat": entry}, db=db_url, mode=request.param) as connected:

        async def ready() -> bool:  # a busy machine can take longer than the start-up budget
            return "feat__echo" in {t.name for t in (await connected.client.list_tools()).tools}

        await wait_until(ready, 60, "the features server's tools")
        yield Gw(connected, db_url, counter_file)


async def _run(gw: Gw, code: str, **arguments: Any) -> Any:
    return await call(gw.connected, RUN, {"code": code, **arguments})


async def _stored(db_url: str, execution: str, count: int) -> list[StepRecord]:
    store = open_store(db_url)
    try:

        def steps() -> list[StepRecord]:
            try:
                return store.get_steps(execution)
            except NotFoundError:
                return []

        await wait_until(lambda: len(steps()) >= count, 15, f"{count} stored steps of {execution}")
        return steps()
    finally:
        store.close()


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_script_loops_over_calls_and_only_its_result_comes_back(gw: Gw) -> None:
    code = """
    const counts = [];
    for (const key of input.keys) {
      const {count} = await tools.feat.counter({key});
      counts.push(count);
    }
    const sum = await callTool("feat__add", {a: counts[0], b: counts.length});
    console.log("counted", counts.length, {last: counts.at(-1)});
    return {counts, sum};
    """
    result = await _run(gw, code, input={"keys": ["a", "b", "a"]})
    assert not result.is_error, text_of(result)
    answer = result.structured_content
    assert answer["result"]["counts"] == [1, 1, 2]
    assert answer["result"]["sum"]["sum"] == 4
    assert answer["logs"] == ['counted 3 {"last":2}']
    assert answer["calls"] == ["counter_1", "counter_2", "counter_3", "add_1"]
    assert gw.counts() == {"a": 2, "b": 1}
    # the inner calls are steps of the caller's recording, after the script's own step
    steps = (await status(gw.connected))["steps"]
    assert [s["name"] for s in steps] == ["run_script_1", "counter_1", "counter_2", "counter_3", "add_1"]


@pytest.mark.anyio
@pytest.mark.slow
async def test_the_recording_keeps_the_script_its_input_and_its_inner_calls(gw: Gw) -> None:
    result = await _run(gw, "return (await tools.feat.echo({text: input.word})).toUpperCase()", input={"word": "hi"})
    assert result.structured_content["result"] == "HI", text_of(result)
    recording = (await status(gw.connected))["execution_id"]
    script_run = result.structured_content["execution_id"]
    steps = {s.name: s for s in await _stored(gw.db_url, recording, 2)}
    script_step = steps["run_script_1"].output
    assert script_step["code"].startswith("return (await tools.feat.echo")
    assert script_step["input"] == {"word": "hi"} and script_step["calls"] == ["echo_1"]
    assert steps["echo_1"].output == "hi"
    journal = await _stored(gw.db_url, script_run, 1)
    assert [(s.name, s.tool, s.input, s.output) for s in journal] == [("echo_1", "echo", {"text": "hi"}, "hi")]
    store = open_store(gw.db_url)
    try:
        run = store.get_execution(script_run)
    finally:
        store.close()
    assert run.status is ExecutionStatus.SUCCEEDED and run.parent_id == recording and run.parent_step == "run_script_1"
    assert run.inputs["code"] == script_step["code"] and run.output == "HI"


@pytest.mark.anyio
@pytest.mark.slow
async def test_refs_resolve_inside_script_calls(gw: Gw) -> None:
    first = await call(gw.connected, "feat__echo", {"text": "from before"})
    assert not first.is_error
    result = await _run(gw, 'return await tools.feat.echo({text: "@echo_1"})')
    assert result.structured_content["result"] == "from before", text_of(result)


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_tool_error_throws_inside_and_can_be_caught(gw: Gw) -> None:
    catching = 'try { await tools.feat.fail({message: "nope"}) } catch (e) { return e.name + ": " + e.message }'
    caught = await _run(gw, catching)
    assert caught.structured_content["result"] == "ToolError: nope", text_of(caught)
    uncaught = await _run(gw, 'await tools.feat.fail({message: "nope"}); return "unreached"')
    assert uncaught.is_error and "script_error" in text_of(uncaught) and "nope" in text_of(uncaught)


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.parametrize(
    ("code", "arguments", "named"),
    [
        ("while (true) {}", {"timeout": 1}, "script_timeout"),
        ("await tools.feat.echo({text: 'x'}); for (;;) {}", {"timeout": 1}, "script_timeout"),
        ("const a = []; for (;;) a.push('x'.repeat(4096));", {"memory_mb": 16}, "script_memory_limit"),
        ("for (let i = 0; i < 5; i++) await tools.feat.echo({text: 'x'});", {"max_calls": 3}, "script_max_calls"),
        ("await tools.feat.crash({})", {}, "script_unknown_tool"),
        ("await tools.nowhere.echo({})", {}, "script_unknown_tool"),
        ("await callTool('toolreel__status', {})", {}, "script_tool_refused"),
        ("throw new Error('on purpose')", {}, "script_error"),
        ("return Math.random()", {}, "script_error"),
        ("return new Promise(() => {})", {}, "script_stalled"),
        ("retrun 1", {}, "script_error"),
        ("import fs from 'fs'", {}, "script_invalid"),
    ],
)
async def test_hostile_scripts_end_with_named_errors_and_the_gateway_serves_on(
    gw: Gw, code: str, arguments: dict[str, Any], named: str
) -> None:
    warm = await call(gw.connected, "feat__echo", {"text": "ready"})
    assert not warm.is_error, text_of(warm)
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            answers: list[Any] = []

            async def other_client_call() -> None:
                answers.append(await call(gw.connected, "feat__echo", {"text": "still here"}))

            tg.start_soon(other_client_call)
            result = await _run(gw, code, **arguments)
    assert result.is_error and named in text_of(result), text_of(result)
    assert result.structured_content["error"]["code"] == named
    assert answers and not answers[0].is_error


@pytest.mark.anyio
@pytest.mark.slow
async def test_bad_arguments_are_refused_before_anything_runs(gw: Gw) -> None:
    for arguments in ({}, {"code": 3}, {"code": "return 1", "input": [1]}, {"code": "return 1", "timeout": -1}):
        result = await call(gw.connected, RUN, arguments)
        assert result.is_error and RUN in text_of(result), text_of(result)
    assert gw.counts() == {}


@pytest.mark.anyio
@pytest.mark.slow
async def test_describe_tools_gives_typescript_declarations(gw: Gw) -> None:
    result = await call(gw.connected, "toolreel__describe_tools", {"names": ["feat__add", "feat__echo"]})
    assert not result.is_error, text_of(result)
    text = result.structured_content["declarations"]
    assert text.startswith("declare const tools: {\n  feat: {")
    assert "add(args: {" in text and "a: number;" in text and "Promise<{" in text
    assert "echo(args: {" in text and "text" in text
    listed = {t.name: t for t in (await gw.connected.client.list_tools()).tools}
    assert "feat" in (listed[RUN].description or "")
    unknown = await call(gw.connected, "toolreel__describe_tools", {"names": ["feat__nothing"]})
    assert unknown.is_error and "feat__nothing" in text_of(unknown)


RESUMABLE = """
const first = await tools.feat.counter({key: input.first});
const second = await tools.feat.counter({key: "live"});
return [first.count, second.count];
"""


def _left_by_a_dead_gateway(db_url: str, journal_key: str) -> str:
    """A script run cut off after its first call (as a killed gateway leaves it): `recording`, unclaimed."""
    store = open_store(db_url)
    try:
        run = Execution(
            id=new_id(), mode=ExecutionMode.RECORD, status=ExecutionStatus.RECORDING, created_at=time.time(),
            updated_at=time.time(), template=SCRIPT_TEMPLATE,
            inputs={"code": RESUMABLE, "input": {"first": "journaled"}, "limits": {"timeout": 30}},
        )  # fmt: skip
        store.create_execution(run)
        result = {"content": [{"type": "text", "text": '{"count": 41}'}], "structuredContent": {"count": 41}}
        step = StepRecord(
            run.id, "counter_1", 1, StepKind.TOOL, StepStatus.SUCCEEDED, server="feat", tool="counter",
            input={"key": journal_key}, result=result, output={"count": 41},
        )  # fmt: skip
        store.put_step(step)
        return run.id
    finally:
        store.close()


async def _finished(db_url: str, execution_id: str) -> Execution:
    def status() -> ExecutionStatus:
        store = open_store(db_url)
        try:
            return store.get_execution(execution_id).status
        finally:
            store.close()

    await wait_until(lambda: status().finished, 60, f"script run {execution_id} to finish")
    store = open_store(db_url)
    try:
        return store.get_execution(execution_id)
    finally:
        store.close()


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_gateway_resumes_a_cut_off_run_answering_finished_calls_from_its_journal(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'store.db'}"
    counter_file = tmp_path / "counts.json"
    run_id = _left_by_a_dead_gateway(db_url, "journaled")
    entry = fixture_entry("features", env={"FIXTURE_COUNTER_FILE": str(counter_file)})
    async with gateway_in_process({"feat": entry}, db=db_url):
        run = await _finished(db_url, run_id)
    assert run.status is ExecutionStatus.SUCCEEDED, run.error
    assert run.output == [41, 1]  # the first count is the journal's: that call was not made again
    assert json.loads(counter_file.read_text()) == {"live": 1}


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_script_that_calls_otherwise_on_resume_fails_as_diverged(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'store.db'}"
    counter_file = tmp_path / "counts.json"
    run_id = _left_by_a_dead_gateway(db_url, "something else")
    entry = fixture_entry("features", env={"FIXTURE_COUNTER_FILE": str(counter_file)})
    async with gateway_in_process({"feat": entry}, db=db_url):
        run = await _finished(db_url, run_id)
    assert run.status is ExecutionStatus.FAILED
    assert run.error is not None and run.error.startswith("script_diverged: on resuming, call 1")
    assert '"something else"' in run.error and '"journaled"' in run.error
    assert not counter_file.exists()  # nothing was called


COUNT_KEYS = """
const counts = [];
for (const key of input.keys) counts.push((await tools.feat.counter({key})).count);
return {counts, label: input.label};
"""


@pytest.mark.anyio
@pytest.mark.slow
async def test_saving_a_script_session_gives_a_script_template_that_replays_with_new_input(gw: Gw) -> None:
    s = gw.connected
    ran = await _run(gw, COUNT_KEYS, input={"keys": ["a", "b"], "label": "first"})
    assert not ran.is_error, text_of(ran)
    saved = await call(s, "toolreel__save_template", {"name": "count-keys"})
    assert not saved.is_error, text_of(saved)
    detail = saved.structured_content
    assert detail["verified"] is True and detail["saved"] is True
    template = detail["template"]
    assert [step["name"] for step in template["steps"]] == ["script"]
    assert template["steps"][0]["script"]["code"] == COUNT_KEYS
    assert template["steps"][0]["input"] == {"keys": "@input.keys", "label": "@input.label"}
    assert template["inputs"]["keys"]["type"] == "array" and template["inputs"]["label"]["type"] == "string"
    assert set(template["servers"]) == {"feat"}
    # a list of another length, through reel__<name>
    replayed = await call(s, "reel__count-keys", {"keys": ["a", "c", "d"], "label": "again"})
    assert not replayed.is_error, text_of(replayed)
    assert json.loads(text_of(replayed)) == {"counts": [2, 1, 1], "label": "again"}
    assert gw.counts() == {"a": 2, "b": 1, "c": 1, "d": 1}
    execution = (replayed.meta or {})["toolreel/execution"]
    rows = await _stored(gw.db_url, execution, 4)
    assert sorted(r.name for r in rows) == ["script", "script.1", "script.2", "script.3"]
    assert [r.input for r in sorted(rows, key=lambda r: r.name)[1:]] == [{"key": k} for k in ("a", "c", "d")]


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_session_whose_script_failed_is_templatized_from_its_calls(gw: Gw) -> None:
    failed = await _run(gw, "await tools.feat.echo({text: 'x'}); throw new Error('no')")
    assert failed.is_error
    saved = await call(gw.connected, "toolreel__save_template", {"name": "never", "dry_run": True})
    # the work of this session was no successful script: the templatizer saves its tool calls as usual
    assert "script" not in json.dumps(saved.structured_content.get("template", {}).get("steps", []))


HANGS = """
await tools.feat.echo({text: "before"});
if (input.hang) await tools.feat.hang({});
return "done";
"""


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_script_template_run_is_cancelled_with_its_call_in_flight(tmp_path: Path) -> None:
    cancel_log = tmp_path / "cancelled.log"
    entry = fixture_entry("features", env={"FIXTURE_CANCEL_LOG": str(cancel_log)})
    async with gateway_in_process({"feat": entry}, db=f"sqlite:///{tmp_path / 'store.db'}") as s:
        ran = await call(s, RUN, {"code": HANGS, "input": {"hang": False}})
        assert not ran.is_error, text_of(ran)
        saved = await call(s, "toolreel__save_template", {"name": "hangs"})
        assert saved.structured_content["saved"] is True, text_of(saved)
        started = await call(s, "toolreel__run_template", {"name": "hangs", "inputs": {"hang": True}, "wait": False})
        execution = started.structured_content["execution_id"]

        async def hanging() -> bool:
            view = (await call(s, "toolreel__get_execution", {"id": execution})).structured_content
            return any(step["name"] == "script.2" for step in view["steps"])

        await wait_until(hanging, 30, "the script's hanging call")
        with anyio.fail_after(10):
            await call(s, "toolreel__cancel_execution", {"id": execution})
            await wait_until(cancel_log.exists, 5, "the upstream call cancelled")
        view = (await call(s, "toolreel__get_execution", {"id": execution})).structured_content
    assert view["status"] == "cancelled"
    assert "hang cancelled" in cancel_log.read_text()


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
async def test_a_confirmed_tool_inside_a_loop_asks_for_each_call_in_both_eras(tmp_path: Path, mode: str) -> None:
    counter_file = tmp_path / "counts.json"
    entry = {**fixture_entry("features", env={"FIXTURE_COUNTER_FILE": str(counter_file)}), "confirm": ["counter"]}
    answers: Iterator[Literal["accept", "decline", "cancel"]] = iter(["accept", "decline", "accept"])

    async def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action=next(answers))

    probe = Probe()
    probe.elicit = answer
    code = """
    const outcomes = [];
    for (const key of input.keys) {
      try { outcomes.push((await tools.feat.counter({key})).count); } catch (e) { outcomes.push("refused"); }
    }
    return outcomes;
    """
    db = f"sqlite:///{tmp_path / 'store.db'}"
    async with gateway_in_process({"feat": entry}, db=db, mode=mode, probe=probe) as s:
        result = await call(s, RUN, {"code": code, "input": {"keys": ["a", "b", "c"]}})
    assert not result.is_error, text_of(result)
    assert result.structured_content["result"] == [1, "refused", 1]
    assert len(probe.elicitations) == 3
    assert all("feat__counter" in e.message for e in probe.elicitations)
    assert json.loads(counter_file.read_text()) == {"a": 1, "c": 1}


@pytest.mark.anyio
@pytest.mark.slow
async def test_with_recording_off_a_script_runs_and_nothing_is_stored(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'store.db'}"
    async with gateway_in_process({"feat": fixture_entry("features")}, db=db_url, record=False) as s:
        result = await call(s, RUN, {"code": "return (await tools.feat.add({a: 2, b: 3})).sum"})
    assert not result.is_error, text_of(result)
    assert result.structured_content["result"] == 5 and result.structured_content["calls"] == ["call_1"]
    if (tmp_path / "store.db").exists():
        store = open_store(db_url)
        try:
            assert store.list_executions()[0] == []
        finally:
            store.close()
