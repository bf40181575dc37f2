"""Approvals that ask for data (SPEC §7): `approve: {message, schema}` answered through MCP elicitation,
`toolreel executions resume ID --response JSON` or `toolreel__resume_execution`; the answer is the step's
output; a bad answer is refused with the field named and the execution stays paused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from fixtures._zygote import launch_command
from fixtures.servers import REPO_ROOT, fixture_command
from tests.callers import fixture_env, harness, saved, template
from tests.gw import call, fixture_entry, gateway_env, stdio_gateway, write_config
from tests.inproc import gateway_in_process
from toolreel.core.errors import ExecutionError, TemplateError
from toolreel.core.form import check_answer
from toolreel.core.model import ExecutionStatus, TemplateDraft
from toolreel.core.store import open_store

pytestmark = pytest.mark.anyio

FORM = {
    "type": "object",
    "properties": {
        "label": {"type": "string", "enum": ["bug", "feature"]},
        "ticket": {"type": "string", "pattern": "^[A-Z]+-[0-9]+$"},
        "points": {"type": "number", "minimum": 1, "maximum": 13},
        "urgent": {"type": "boolean"},
    },
    "required": ["label", "points"],
}

TRIAGE: dict[str, Any] = {
    "name": "triage",
    "steps": [
        {"name": "sum", "tool": "features__add", "input": {"a": 1, "b": 2}},
        {"name": "choose", "approve": {"message": "Label for {{@sum.sum}}?", "schema": FORM}},
        {"name": "say", "tool": "features__echo", "input": {"text": "{{@choose.label}}/{{@choose.points}}"}},
    ],
    "output": {"said": "@say", "answer": "@choose"},
}


PICKY: dict[str, Any] = {
    "name": "picky",
    "inputs": {"size": {"type": "string", "enum": ["S", "M", "L"]}},
    "steps": [{"name": "say", "tool": "features__echo", "input": {"text": "@input.size"}}],
}


@pytest.mark.parametrize(
    ("answer", "field"),
    [
        ({"label": "chore", "points": 3}, "label"),
        ({"label": "bug", "points": 30}, "points"),
        ({"label": "bug", "points": "3"}, "points"),
        ({"label": "bug", "points": 3, "ticket": "abc"}, "ticket"),
        ({"label": "bug", "points": 3, "urgent": "yes"}, "urgent"),
        ({"label": "bug"}, "points"),
        ({"label": "bug", "points": 3, "colour": "red"}, "colour"),
    ],
)
def test_a_bad_answer_is_refused_with_the_field_named(answer: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=f"'{field}'"):
        check_answer(FORM, answer)


def test_a_form_is_flat_and_checked_when_saved() -> None:
    nested = {"type": "object", "properties": {"who": {"type": "object"}}}
    with pytest.raises(TemplateError, match="'string', 'number', 'integer' or 'boolean'") as caught:
        template({"name": "bad", "steps": [{"name": "ask", "approve": {"message": "?", "schema": nested}}]})
    assert caught.value.step == "ask" and caught.value.field == "approve.schema.properties.who.type"
    wrong = {"type": "object", "properties": {"n": {"type": "number", "pattern": "x"}}}
    with pytest.raises(TemplateError, match="`enum` and `pattern` are for string fields"):
        template({"name": "bad", "steps": [{"name": "ask", "approve": {"message": "?", "schema": wrong}}]})
    t = template(TRIAGE)
    assert t.step("choose").approve == "Label for {{@sum.sum}}?" and t.step("choose").approve_schema == FORM


@pytest.mark.slow
async def test_resume_with_a_json_response_gives_the_steps_output(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        t = saved(h.store, TRIAGE)
        paused = await h.engine.run_template(t, {})
        assert paused.status == ExecutionStatus.PAUSED
        assert paused.prompt == {"message": "Label for 3.0?", "schema": FORM}
        bad_answers = (
            ('{"label": "chore", "points": 2}', "label"),
            ("not json", "JSON object"),
            ("yes", "JSON object"),
        )
        for bad, field in bad_answers:
            with pytest.raises(ExecutionError, match=field) as caught:
                await h.engine.resume(paused.id, bad)
            assert "stays paused" in str(caught.value)
            assert h.store.get_execution(paused.id).status == ExecutionStatus.PAUSED
        done = await h.engine.resume(paused.id, '{"label": "bug", "points": 5, "urgent": true}')
        assert done.status == ExecutionStatus.SUCCEEDED, done.error
        assert done.output == {"said": "bug/5", "answer": {"label": "bug", "points": 5, "urgent": True}}


class FormFiller:
    def __init__(self, *answers: dict[str, Any] | bool | None) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[str, Any]] = []

    async def approve(self, prompt: str, form: Any = None) -> dict[str, Any] | bool | None:
        self.asked.append((prompt, form))
        return self.answers.pop(0)


@pytest.mark.slow
async def test_an_approver_fills_the_form_and_a_bad_fill_pauses(tmp_path: Path) -> None:
    filler = FormFiller({"label": "feature", "points": 8}, {"label": "feature", "points": 99}, False)
    async with harness(tmp_path, approver=filler) as h:
        done = await h.engine.run_template(template(TRIAGE), {})
        assert done.status == ExecutionStatus.SUCCEEDED, done.error
        assert done.output["said"] == "feature/8"
        assert filler.asked == [("Label for 3.0?", FORM)]
        paused = await h.engine.run_template(template(TRIAGE), {})
        assert paused.status == ExecutionStatus.PAUSED  # 99 points is out of range: nobody answered yet
        refused = await h.engine.run_template(template(TRIAGE), {})
        assert refused.status == ExecutionStatus.FAILED and "approval refused" in (refused.error or "")


@pytest.mark.slow
async def test_over_mcp_elicitation_and_resume_execution(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(db)
    store.save_template(TemplateDraft("triage", TRIAGE))
    store.save_template(TemplateDraft("picky", PICKY))
    store.close()
    config = write_config(tmp_path / "mcp.json", {"features": fixture_entry("features", env=fixture_env(tmp_path))})
    async with stdio_gateway(["--config", str(config)], gateway_env(db)) as gw:

        async def fill(params: types.ElicitRequestParams) -> types.ElicitResult:
            return types.ElicitResult(action="accept", content={"label": "bug", "points": 2, "ticket": "OPS-7"})

        gw.probe.elicit = fill
        run = await call(gw, "toolreel__run_template", {"name": "triage"})
        summary = run.structured_content or {}
        assert summary["status"] == "succeeded", summary
        assert summary["output"]["answer"] == {"label": "bug", "points": 2, "ticket": "OPS-7"}
        asked = gw.probe.elicitations[-1]
        assert isinstance(asked, types.ElicitRequestFormParams) and asked.message == "Label for 3.0?"
        assert asked.requested_schema["properties"]["label"]["enum"] == ["bug", "feature"]

        async def later(params: types.ElicitRequestParams) -> types.ElicitResult:
            return types.ElicitResult(action="cancel")

        gw.probe.elicit = later
        paused = (await call(gw, "toolreel__run_template", {"name": "triage"})).structured_content or {}
        assert paused["status"] == "paused" and paused["prompt"]["schema"] == FORM
        ident = paused["execution_id"]
        bad = await call(gw, "toolreel__resume_execution", {"id": ident, "response": {"label": "bug", "points": 0}})
        assert bad.is_error and "'points'" in bad.content[0].text
        good = await call(
            gw, "toolreel__resume_execution", {"id": ident, "response": {"label": "feature", "points": 1}}
        )
        assert (good.structured_content or {})["output"]["said"] == "feature/1"

        # input constraints are published in the tool's schema and checked before anything runs
        tools = {t.name: t for t in (await gw.client.list_tools()).tools}
        assert tools["reel__picky"].input_schema["properties"]["size"]["enum"] == ["S", "M", "L"]
        refused = await call(gw, "reel__picky", {"size": "XL"})
        assert refused.is_error and "input 'size': 'XL' is not one of" in refused.content[0].text
        over = await call(gw, "toolreel__run_template", {"name": "picky", "inputs": {"size": "XXL"}})
        assert over.is_error and "input 'size'" in over.content[0].text
        fine = await call(gw, "reel__picky", {"size": "M"})
        assert not fine.is_error and json.loads(fine.content[0].text) == "M"


@pytest.mark.slow
def test_executions_resume_takes_a_json_response(tmp_path: Path) -> None:
    command, *args = fixture_command("features")
    server = {"command": command, "args": args, "cwd": str(REPO_ROOT), "env": fixture_env(tmp_path)}
    (tmp_path / "config.json").write_text(json.dumps({"mcpServers": {"features": server}}))
    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(db)
    store.save_template(TemplateDraft("triage", TRIAGE))
    store.close()
    env = {
        **os.environ,
        "TOOLREEL_DB": db,
        "TOOLREEL_CONFIG": str(tmp_path / "config.json"),
        "PYTHONPATH": str(REPO_ROOT),
    }

    def replayer(*argv: str) -> subprocess.CompletedProcess[str]:
        command = launch_command([sys.executable, "-m", "toolreel.replayer", *argv])
        return subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)

    first = replayer("run", "triage", "--json")
    assert first.returncode == 3, first.stderr
    ident = json.loads(first.stdout)["execution_id"]
    bad = replayer("executions", "resume", ident, "--response", '{"label": "bug"}')
    assert bad.returncode != 0 and "field 'points' is required" in bad.stderr
    done = replayer("executions", "resume", ident, "--response", '{"label": "bug", "points": 3}', "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"]["said"] == "bug/3"


@pytest.mark.slow
async def test_a_stateless_era_client_fills_the_approval_form_through_input_required_results(tmp_path: Path) -> None:
    """The SDK's default `Client` speaks 2026-07-28, where nothing is pushed mid-call: the approval's form comes
    back as an `InputRequiredResult`, the client's retry carries the answer, and the run goes on with it."""
    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(db)
    store.save_template(TemplateDraft("triage", TRIAGE))
    store.close()
    servers = {"features": fixture_entry("features", env=fixture_env(tmp_path))}
    async with gateway_in_process(servers, db=db, mode="auto") as gw:
        assert gw.modern

        async def fill(params: types.ElicitRequestParams) -> types.ElicitResult:
            return types.ElicitResult(action="accept", content={"label": "feature", "points": 5})

        gw.probe.elicit = fill
        run = await call(gw, "toolreel__run_template", {"name": "triage"})
        summary = run.structured_content or {}
        assert summary["status"] == "succeeded", summary
        assert summary["output"] == {"said": "feature/5", "answer": {"label": "feature", "points": 5}}
        asked = gw.probe.elicitations[-1]
        assert isinstance(asked, types.ElicitRequestFormParams) and asked.message == "Label for 3.0?"
        assert asked.requested_schema == FORM

        reel = await call(gw, "reel__triage", {})
        assert not reel.is_error and json.loads(reel.content[0].text)["said"] == "feature/5"
        assert len(gw.probe.elicitations) == 2


@pytest.mark.slow
async def test_a_client_that_cannot_be_asked_gets_a_paused_run(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(db)
    store.save_template(TemplateDraft("triage", TRIAGE))
    store.close()
    servers = {"features": fixture_entry("features", env=fixture_env(tmp_path))}
    async with gateway_in_process(servers, db=db, mode="auto", answers=False) as gw:
        paused = (await call(gw, "toolreel__run_template", {"name": "triage"})).structured_content or {}
        assert paused["status"] == "paused" and paused["prompt"]["schema"] == FORM
        assert gw.probe.elicitations == []
