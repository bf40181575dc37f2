"""`llm` steps (SPEC §7): asked of an OpenAI-compatible endpoint (the fixture in fixtures/llm_endpoint.py,
listening on 127.0.0.1, started here), of the model of the client that started the run through MCP sampling
(both eras), pinned to recorded answers, or paused when no model is there. The example is docs/templates.md's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp import types

from fixtures.llm_endpoint import MODEL, serving
from tests.callers import fixture_env, harness, saved
from tests.gw import call, fixture_entry
from tests.inproc import gateway_in_process
from tests.replayer.test_control_flow import doc_example
from toolreel.core.errors import TemplateError
from toolreel.core.model import ExecutionStatus
from toolreel.core.store import open_store
from toolreel.core.template_io import load_template_text, parse_template, template_json_schema, template_to_dict
from toolreel.replayer._llm import LLMSettings

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("llm")]

KEY = "sk-fixture-4f1d2c"  # a key the store, the rows and the output must never hold


def _doc() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(doc_example("classify-issue"))
    return data


def _store_files(tmp: Path) -> list[Path]:
    """The SQLite database and its write-ahead log."""
    return list(tmp.glob("toolreel.db*"))


def _rows(store: Any, execution_id: str) -> dict[str, Any]:
    return {r.name: r for r in store.get_steps(execution_id)}


def test_the_llm_form_round_trips_and_is_in_the_schema() -> None:
    template = load_template_text(doc_example("classify-issue"), source="docs/templates.md")
    assert parse_template(template_to_dict(template)) == template
    schema = json.dumps(template_json_schema())
    assert all(f'"{key}"' in schema for key in ("llm", "prompt", "recorded", "max_tokens"))
    with pytest.raises(TemplateError, match=r"step 'x', field 'llm.prompt'.*nope"):
        parse_template({"name": "bad", "steps": [{"name": "x", "llm": {"prompt": "{{@nope.text}}"}}]})


@pytest.mark.slow
async def test_an_endpoint_answers_checked_recorded_and_its_key_never_stored(tmp_path: Path) -> None:
    async with (
        serving(['{"label": "bug", "urgent": true}']) as endpoint,
        harness(tmp_path, llm=LLMSettings(url=endpoint.url, key=KEY, model="small")) as h,
    ):
        template = saved(h.store, _doc())
        execution = await h.engine.run_template(template, {"title": "App crashes on save"})
        assert execution.status == ExecutionStatus.SUCCEEDED, execution.error
        assert execution.output == "bug/true"
        row = _rows(h.store, execution.id)["classify"]
        assert row.output == {"label": "bug", "urgent": True}
        assert row.result["model"] == MODEL and row.result["via"] == "endpoint"
        assert row.result["prompt"] == "Classify this issue: App crashes on save"
        assert row.result["answer"] == '{"label": "bug", "urgent": true}'
    (asked,) = endpoint.requests
    assert asked["model"] == "small"
    assert asked["messages"][0]["content"].startswith("Classify this issue: App crashes on save")
    assert asked["response_format"]["json_schema"]["schema"] == _doc()["steps"][1]["llm"]["schema"]
    assert endpoint.keys == [f"Bearer {KEY}"]
    assert all(KEY.encode() not in path.read_bytes() for path in _store_files(tmp_path))


@pytest.mark.slow
async def test_an_answer_that_misses_the_schema_fails_the_step_by_name(tmp_path: Path) -> None:
    async with (
        serving(['{"label": "maybe"}', "not json at all"]) as endpoint,
        harness(tmp_path, llm=LLMSettings(url=endpoint.url)) as h,
    ):
        template = saved(h.store, _doc())
        first = await h.engine.run_template(template, {"title": "x"})
        assert first.status == ExecutionStatus.FAILED
        error = _rows(h.store, first.id)["classify"].error or ""
        assert error.startswith("llm_answer_invalid: the answer does not match the step's schema")
        second = await h.engine.run_template(template, {"title": "y"})
        assert (_rows(h.store, second.id)["classify"].error or "").startswith(
            "llm_answer_invalid: the answer is not JSON"
        )
        assert h.counts() == {}  # the steps after it never ran


@pytest.mark.slow
async def test_no_model_pauses_with_its_reason_and_recorded_answers_are_pinned(tmp_path: Path) -> None:
    async with harness(tmp_path, llm=LLMSettings()) as h:
        template = saved(h.store, _doc())
        paused = await h.engine.run_template(template, {"title": "x"})
        assert paused.status == ExecutionStatus.PAUSED
        assert paused.prompt["llm"] == "no model available"
        assert h.counts() == {}
    async with harness(tmp_path, llm=LLMSettings(mode="recorded")) as h:
        template = saved(h.store, _doc())
        pinned = await h.engine.run_template(template, {"title": "anything"})
        assert pinned.status == ExecutionStatus.SUCCEEDED, pinned.error
        assert pinned.output == "question/false"
        assert _rows(h.store, pinned.id)["classify"].result["via"] == "recorded"
    async with (
        serving(['{"label": "feature", "urgent": false}']) as endpoint,
        harness(tmp_path, llm=LLMSettings(url=endpoint.url)) as h,
    ):
        done = await h.engine.resume(paused.id)  # a model is there now: the paused step asks it
        assert done.status == ExecutionStatus.SUCCEEDED, done.error
        assert done.output == "feature/false"


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_run_started_by_a_sampling_client_asks_its_model(tmp_path: Path, mode: str) -> None:
    """Handshake era (`sampling/createMessage` pushed mid-call) and 2026-07-28 (an input-required result
    the client's retry answers): the gateway asks the model of the client that started the run."""
    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(db)
    saved(store, _doc())
    store.close()
    servers = {"features": fixture_entry("features", env=fixture_env(tmp_path))}
    async with gateway_in_process(servers, db=db, mode=mode) as gw:
        asked: list[str] = []

        async def model(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
            first = params.messages[0].content
            asked.append(first.text if isinstance(first, types.TextContent) else "?")
            answer = types.TextContent(text='```json\n{"label": "question", "urgent": false}\n```')
            return types.CreateMessageResult(role="assistant", content=answer, model="client-model")

        gw.probe.sample = model
        run = await call(gw, "toolreel__run_template", {"name": "classify-issue", "inputs": {"title": "How?"}})
        summary = run.structured_content or {}
        assert summary.get("status") == "succeeded", summary
        assert summary["output"] == "question/false"
        assert len(asked) == 1 and asked[0].startswith("Classify this issue: How?")
        shown = (await call(gw, "toolreel__get_execution", {"id": summary["execution_id"]})).structured_content
        step = next(s for s in (shown or {})["steps"] if s["name"] == "classify")
        assert step["output"] == {"label": "question", "urgent": False}
