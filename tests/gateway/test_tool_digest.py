"""Tool definitions pinned (SPEC §7): a saved template's tool steps keep the digest of their tool's definition
(`tool_digest`), and a replay whose tool now has another definition stops before calling it with the error
`tool_changed`, naming what differs and showing it as it is now. Real fixture servers, a real store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from fixtures._zygote import launch_command
from fixtures.shifty import AFTER
from tests.callers import fixture_env, template
from tests.gw import VENV_BIN, call, fixture_entry, text_of
from tests.inproc import gateway_in_process
from toolreel.core.model import ExecutionStatus, TemplateDraft
from toolreel.core.store import open_store
from toolreel.core.tool_digest import PARTS, changed_parts, check_definition, tool_digest
from toolreel.replayer import Engine
from toolreel.upstreams.config import parse_config
from toolreel.upstreams.hub import open_upstreams

pytestmark = pytest.mark.anyio

TOOLREEL = VENV_BIN / "toolreel"

TOOL: dict[str, Any] = {
    "name": "add",
    "description": "Adds two numbers.",
    "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
    "annotations": {"readOnlyHint": True},
}


def test_a_digest_names_each_part_that_changed() -> None:
    digest = tool_digest(TOOL)
    assert digest.startswith("tool-v1:") and changed_parts(digest, dict(TOOL)) == []
    # key order and other keys (title, _meta, outputSchema) do not count
    same = {"annotations": {"readOnlyHint": True}, **{k: v for k, v in TOOL.items() if k != "annotations"}}
    assert changed_parts(digest, {**same, "title": "Add", "_meta": {"x": 1}}) == []
    schema = {**TOOL["inputSchema"], "required": ["a", "b"]}
    assert changed_parts(digest, {**TOOL, "inputSchema": schema}) == ["inputSchema"]
    assert changed_parts(digest, {**TOOL, "description": "Adds.", "annotations": None}) == [
        "description",
        "annotations",
    ]
    assert changed_parts("sha256:unknown-form", TOOL) == list(PARTS)


def test_the_error_shows_what_the_tool_is_now() -> None:
    class Caller:
        def tool_definition(self, name: str) -> dict[str, Any] | None:
            return {**TOOL, "description": "Adds two numbers, then deletes your files."} if name == "m__add" else None

    old = tool_digest(TOOL)
    message = check_definition(Caller(), "add_1", "m__add", old)
    assert message is not None and message.startswith("tool_changed: step 'add_1' calls 'm__add'")
    assert "(description differ" in message and "deletes your files" in message and "nothing was sent" in message
    assert check_definition(Caller(), "add_1", "m__gone", old) is None  # the call itself reports a missing tool
    assert check_definition(Caller(), "add_1", "m__add", None) is None  # no digest kept: nothing to check
    assert check_definition(object(), "add_1", "m__add", old) is None  # a caller that cannot tell


@pytest.mark.slow
async def test_a_replay_stops_before_calling_a_tool_whose_definition_changed(tmp_path: Path) -> None:
    env = fixture_env(tmp_path)
    config = parse_config({"mcpServers": {"features": fixture_entry("features", env=env)}})
    counts = tmp_path / "counts.json"
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        async with open_upstreams(config) as hub, Engine(store, hub) as engine:
            await hub.wait_settled(30)
            now = hub.tool_definition("features__counter")
            assert now is not None and now["name"] == "counter"

            def counting(digest: str) -> Any:
                step = {"name": "count", "tool": "features__counter", "input": {"key": "k"}, "tool_digest": digest}
                return template({"name": "counting", "steps": [step]})

            ran = await engine.run_template(counting(tool_digest(now)), {})
            assert ran.status is ExecutionStatus.SUCCEEDED, ran.error
            assert json.loads(counts.read_text()) == {"k": 1}

            older = {**now, "description": "Increments a counter (the old wording)."}
            stopped = await engine.run_template(counting(tool_digest(older)), {})
            assert stopped.status is ExecutionStatus.FAILED
            step = {s.name: s for s in store.get_steps(stopped.id)}["count"]
            assert step.error is not None and step.error.startswith("tool_changed: step 'count'"), step.error
            assert "description differ" in step.error and now["description"] in step.error
            assert json.loads(counts.read_text()) == {"k": 1}  # never called
    finally:
        store.close()


@pytest.mark.slow
async def test_a_saved_template_keeps_its_tools_digests_and_replays(tmp_path: Path) -> None:
    servers = {"features": fixture_entry("features", env=fixture_env(tmp_path))}
    async with gateway_in_process(servers, db=f"sqlite:///{tmp_path / 'store.db'}", answers=False) as gw:
        added = await call(gw, "features__add", {"a": 2, "b": 3})
        assert not added.is_error, text_of(added)
        saved = await call(gw, "toolreel__save_template", {"name": "adding", "inputs": {}})
        assert not saved.is_error, text_of(saved)
        steps = (saved.structured_content or {})["template"]["steps"]
        listed = {t.name: t for t in (await gw.client.list_tools()).tools}
        add = listed["features__add"].model_dump(by_alias=True, mode="json", exclude_none=True)
        assert steps[0]["tool_digest"] == tool_digest({**add, "name": "add"})
        replayed = await call(gw, "reel__adding", {})
        assert not replayed.is_error, text_of(replayed)


@pytest.mark.slow
async def test_templates_check_lists_the_templates_whose_tools_changed(tmp_path: Path) -> None:
    entry = fixture_entry("features", env=fixture_env(tmp_path))
    config = parse_config({"mcpServers": {"features": entry}})
    async with open_upstreams(config) as hub:
        await hub.wait_settled(30)
        now = hub.tool_definition("features__add")
    assert now is not None
    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(db)
    try:
        for name, digest in (("same", tool_digest(now)), ("drifted", tool_digest({**now, "inputSchema": {}}))):
            step = {"name": "add_1", "tool": "features__add", "input": {"a": 1, "b": 2}, "tool_digest": digest}
            definition = {"name": name, "steps": [step], "servers": {"features": entry}}
            store.save_template(TemplateDraft(name, definition))
    finally:
        store.close()
    done = await anyio.run_process(
        launch_command([str(TOOLREEL), "templates", "check", "--db", db, "--json"]), check=False, cwd=tmp_path
    )
    assert done.returncode == 1, done.stderr.decode()
    report = json.loads(done.stdout or b"null") or done.stderr.decode()
    assert isinstance(report, dict), report
    assert report["checked"] == 2
    assert report["templates"] == [
        {
            "name": "drifted",
            "version": 1,
            "changed": [{"step": "add_1", "tool": "features__add", "parts": ["inputSchema"]}],
            "missing": [],
            "not_checked": None,
        }
    ]


@pytest.mark.slow
async def test_a_template_saved_after_a_tool_changed_keeps_the_definition_it_was_recorded_with(
    tmp_path: Path,
) -> None:
    """The recorded step keeps the digest its call was made with: a template saved after the server rewrote the
    tool is pinned to the definition the calls met, so its replay stops on the change."""
    servers = {"bank": fixture_entry("shifty")}
    async with gateway_in_process(servers, db=f"sqlite:///{tmp_path / 'store.db'}", answers=False) as gw:
        before = {t.name: t for t in (await gw.client.list_tools()).tools}["bank__transfer"]
        sent = await call(gw, "bank__transfer", {"amount": 5, "account": "alice"})
        assert not sent.is_error, text_of(sent)
        assert text_of(await call(gw, "bank__shift")) == "shifted"
        await gw.probe.wait_for(
            lambda: any(isinstance(n, types.ToolListChangedNotification) for n in gw.probe.notifications),
            what="tools/list_changed after the rewrite",
        )
        after = {t.name: t for t in (await gw.client.list_tools()).tools}["bank__transfer"]
        assert after.description == AFTER
        saved = await call(gw, "toolreel__save_template", {"name": "paying", "steps": ["transfer_1"], "inputs": {}})
        assert not saved.is_error, text_of(saved)
        [step] = (saved.structured_content or {})["template"]["steps"]
        recorded = before.model_dump(by_alias=True, mode="json", exclude_none=True)
        assert step["tool_digest"] == tool_digest({**recorded, "name": "transfer"})
        assert changed_parts(step["tool_digest"], {**after.model_dump(by_alias=True, mode="json"), "name": "transfer"})
        replayed = await call(gw, "reel__paying", {})
        assert replayed.is_error and "tool_changed" in text_of(replayed), text_of(replayed)
