"""The whole loop through `toolreel serve` on a real published server (server-memory): an agent
session is recorded, saved as a template over MCP, and replayed with new inputs three ways (the
`reel__<name>` tool, `toolreel__run_template`, `toolreel run`); the server's state proves what ran."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from fixtures._zygote import launch_command
from tests.gw import (
    REPO,
    VENV_BIN,
    Connected,
    call,
    fixture_entry,
    gateway_env,
    npm_available,
    npm_command,
    stdio_gateway,
    text_of,
    write_config,
)
from toolreel.core.refs import MappingScope, resolve
from toolreel.core.store import open_store
from toolreel.core.template_io import parse_template

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _needs_npm() -> None:
    if not npm_available():
        reason = "the npm reference servers are not installed (scripts/setup installs them)"
        if os.environ.get("TOOLREEL_REQUIRE_NPM") == "1":
            pytest.fail(f"TOOLREEL_REQUIRE_NPM=1 but {reason}")
        pytest.skip(reason)


def _config(tmp_path: Path) -> Path:
    _needs_npm()
    command = npm_command("memory")
    entry = {"command": command[0], "args": command[1:], "env": {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}}
    return write_config(tmp_path / "mcp.json", {"memory": entry})


async def _graph(gw: Connected) -> dict[str, Any]:
    result = await call(gw, "memory__read_graph", {})
    assert not result.is_error, text_of(result)
    graph = result.structured_content or json.loads(text_of(result))
    assert isinstance(graph, dict)
    return graph


async def _agent_session(gw: Connected) -> str:
    """Like an LLM: the second call copies a name by hand, the third passes it on as a ref."""
    created = await call(
        gw,
        "memory__create_entities",
        {"entities": [{"name": "Ada", "entityType": "person", "observations": ["writes programs"]}]},
    )
    assert not created.is_error, text_of(created)
    added = await call(
        gw, "memory__add_observations", {"observations": [{"entityName": "Ada", "contents": ["likes engines"]}]}
    )
    assert not added.is_error, text_of(added)
    opened = await call(gw, "memory__open_nodes", {"names": ["@create_entities_1.entities[0].name"]})
    assert not opened.is_error, text_of(opened)
    execution = (opened.meta or {})["toolreel/execution"]
    assert (opened.meta or {})["toolreel/step"] == "open_nodes_1"
    return str(execution)


async def test_a_recorded_session_saves_as_a_template_and_replays_with_new_inputs(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    config = _config(tmp_path)
    async with stdio_gateway(["--config", str(config)], gateway_env(db)) as gw:
        execution = await _agent_session(gw)
        saved = await call(gw, "toolreel__save_template", {"name": "remember", "inputs": {"who": "Ada"}})
        assert not saved.is_error, text_of(saved)
        answer = saved.structured_content or {}
        template = parse_template(answer["template"])
        assert answer["saved"] is True and answer["version"] == 1
        assert template.inputs["who"].type == "string"
        # the name the agent copied by hand became a ref; the one it passed as a ref stayed one
        assert template.step("add_observations_1").input["observations"][0]["entityName"] in (
            "@input.who",
            "@create_entities_1.entities[0].name",
        )
        assert template.step("open_nodes_1").input == {"names": ["@create_entities_1.entities[0].name"]}

        # the template is a tool now, and the client heard of it
        await gw.probe.wait_for(
            lambda: bool(gw.probe.of_type(types.ToolListChangedNotification)), what="tools/list_changed"
        )
        tools = {t.name: t for t in (await gw.client.list_tools()).tools}
        assert tools["reel__remember"].input_schema["required"] == ["who"]

        replayed = await call(gw, "reel__remember", {"who": "Grace"})
        assert not replayed.is_error, text_of(replayed)
        run = await call(gw, "toolreel__run_template", {"name": "remember", "inputs": {"who": "Linus"}})
        summary = run.structured_content or {}
        assert summary["status"] == "succeeded", summary
        view = await call(gw, "toolreel__get_execution", {"id": summary["execution_id"]})
        assert [s["status"] for s in (view.structured_content or {})["steps"]] == ["succeeded"] * 3

        graph = await _graph(gw)
    people = {e["name"]: e["observations"] for e in graph["entities"]}
    assert people["Grace"] == ["writes programs", "likes engines"]
    assert people["Linus"] == ["writes programs", "likes engines"]

    # resolving the template with the recorded inputs reproduces every recorded argument
    store = open_store(db)
    try:
        recorded = {s.name: s for s in store.get_steps(execution)}
    finally:
        store.close()
    outputs = {name: step.output for name, step in recorded.items()}
    for spec in template.steps:
        scope = MappingScope(steps=outputs, inputs={"who": "Ada"})
        assert resolve(spec.input, scope) == recorded[spec.name].resolved_input


async def test_toolreel_run_replays_a_saved_template_from_the_command_line(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    config = _config(tmp_path)
    async with stdio_gateway(["--config", str(config)], gateway_env(db)) as gw:
        await _agent_session(gw)
        saved = await call(gw, "toolreel__save_template", {"name": "remember", "inputs": {"who": "Ada"}})
        assert not saved.is_error, text_of(saved)
    command = [str(VENV_BIN / "toolreel"), "run", "remember", "-i", "who=Barbara", "--config", str(config), "--json"]
    with anyio.fail_after(120):
        done = await anyio.run_process(command, env=gateway_env(db), check=False, cwd=REPO)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    report = json.loads(done.stdout)
    assert report["status"] == "succeeded"
    memory = (tmp_path / "memory.jsonl").read_text(encoding="utf-8")
    assert '"Barbara"' in memory and "likes engines" in memory
    with anyio.fail_after(60):
        listing = await anyio.run_process(
            launch_command(
                [sys.executable, "-m", "toolreel", "executions", "list", "--json", "--template", "remember"]
            ),
            env=gateway_env(db),
            cwd=REPO,
        )
    assert [e["status"] for e in json.loads(listing.stdout)["executions"]] == ["succeeded"]


async def test_run_template_over_mcp_honours_a_deadline(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    config = write_config(tmp_path / "mcp.json", {"feat": fixture_entry("features")})
    async with stdio_gateway(["--config", str(config)], gateway_env(db)) as gw:
        slept = await call(gw, "feat__slow", {"seconds": 0.2})
        assert not slept.is_error, text_of(slept)
        saved = await call(gw, "toolreel__save_template", {"name": "nap", "inputs": {"seconds": 0.2}})
        assert not saved.is_error, text_of(saved)
        late = await call(gw, "toolreel__run_template", {"name": "nap", "inputs": {"seconds": 30}, "deadline": 0.5})
        in_time = await call(gw, "toolreel__run_template", {"name": "nap", "inputs": {"seconds": 0.1}, "deadline": 10})
        refused = await call(gw, "toolreel__run_template", {"name": "nap", "inputs": {"seconds": 0.1}, "deadline": -1})
    assert (late.structured_content or {})["status"] == "failed"
    assert "deadline_exceeded" in (late.structured_content or {})["error"]
    assert (in_time.structured_content or {})["status"] == "succeeded"
    assert refused.is_error and "deadline" in text_of(refused)
