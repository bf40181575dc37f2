"""Templates the templatizer made from real sessions, replayed with new inputs on the real servers
(server-memory, server-filesystem): the upstream state must be what the session would have made."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp.client.stdio import StdioServerParameters

from fixtures.recordings import CORPUS_DIR, load_entry
from fixtures.servers import ServerNotInstalled, npm_server_command
from tests.callers import open_caller
from toolreel.core.caller import ToolCall
from toolreel.core.model import ExecutionStatus, TemplateDraft
from toolreel.core.store import open_store
from toolreel.core.template_io import template_to_dict
from toolreel.replayer import Engine, load_template
from toolreel.templatizer import templatize

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.npm]


def npm(name: str, *args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    try:
        command = npm_server_command(name)
    except ServerNotInstalled as exc:
        pytest.skip(str(exc))
    return StdioServerParameters(command=command[0], args=[*command[1:], *args], env=env or {})


def saved_from_corpus(store: Any, name: str) -> Any:
    entry = load_entry(CORPUS_DIR / f"{name}.json")
    result = templatize(entry.recordings, name=name, inputs=entry.inputs)
    store.save_template(TemplateDraft(name, template_to_dict(result.template)))
    return load_template(store, name)


async def test_memory_copy_replays_on_other_entities(tmp_path: Path) -> None:
    memory = tmp_path / "memory.jsonl"
    seed = [
        {"type": "entity", "name": "Ada Lovelace", "entityType": "person", "observations": ["wrote the first program"]},
        {"type": "entity", "name": "Alan Turing", "entityType": "person", "observations": ["proposed the Turing test"]},
    ]
    memory.write_text("".join(json.dumps(line) + "\n" for line in seed))
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    template = saved_from_corpus(store, "memory-copy")
    async with (
        open_caller({"memory": npm("memory", env={"MEMORY_FILE_PATH": str(memory)})}) as caller,
        Engine(store, caller) as engine,
    ):
        execution = await engine.run_template(template, {"query": "program"})
        assert execution.status == ExecutionStatus.SUCCEEDED, execution.error
        graph = (await caller.call_tool(ToolCall("memory__read_graph", {})))["structuredContent"]
    entities = {e["name"]: e for e in graph["entities"]}
    assert entities["Ada Lovelace (copy)"]["observations"] == ["wrote the first program"]
    assert "Alan Turing (copy)" not in entities
    assert {"from": "Ada Lovelace (copy)", "to": "Ada Lovelace", "relationType": "copy_of"} in graph["relations"]
    store.close()


async def test_fs_notes_replays_in_another_directory(tmp_path: Path) -> None:
    root = tmp_path / "work"
    (root / "archive" / "2024").mkdir(parents=True)
    (root / "archive" / "2024" / "report-q1.txt").write_text("Q1: revenue flat\n")
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    template = saved_from_corpus(store, "fs-notes")
    async with (
        open_caller({"filesystem": npm("filesystem", str(tmp_path))}) as caller,
        Engine(store, caller) as engine,
    ):
        execution = await engine.run_template(template, {"root_dir": str(root), "content": "# Todo\n- write tests\n"})
        assert execution.status == ExecutionStatus.SUCCEEDED, execution.error
    assert (root / "notes" / "todo.md").read_text() == "# Todo\n- write tests\n"
    # The found report moved under the name the search found in this world: the recording's name (report-q3)
    # was read out of the search's output, and a replay reads it afresh rather than keep it stale.
    assert (root / "notes" / "report-q1.txt").read_text() == "Q1: revenue flat\n"
    assert not (root / "notes" / "report-q3.txt").exists()
    assert not (root / "archive" / "2024" / "report-q1.txt").exists()
    store.close()
