"""Code Mode end to end: `toolreel serve` over stdio in front of the published filesystem and memory
servers and the `features` fixture (whose `counter` counts side effects in a file). A script lists,
loops and writes; a write that needs the user's yes is asked once per call inside the loop and refused;
a gateway killed mid-script is resumed by the next one without repeating a finished call.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from fixtures._zygote import launch_command
from tests.gw import (
    REPO,
    TOOLREEL,
    call,
    fixture_entry,
    gateway_env,
    npm_available,
    npm_command,
    status,
    stdio_gateway,
    text_of,
    wait_until,
    write_config,
)
from toolreel.core.errors import NotFoundError
from toolreel.core.model import SCRIPT_TEMPLATE, ExecutionQuery, ExecutionStatus
from toolreel.core.store import open_store

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.skipif(not npm_available(), reason="the npm reference servers are not installed"),
]

RUN = "toolreel__run_script"


def _servers(tmp_path: Path, *, feat_timeout: float | None = None, confirm: list[str] | None = None) -> dict[str, Any]:
    files = tmp_path / "files"
    files.mkdir(exist_ok=True)
    fs, memory = npm_command("filesystem"), npm_command("memory")
    feat = fixture_entry("features", timeout=feat_timeout, env={"FIXTURE_COUNTER_FILE": str(tmp_path / "counts.json")})
    servers: dict[str, dict[str, Any]] = {
        "fs": {"command": fs[0], "args": [*fs[1:], str(files)]},
        "memory": {"command": memory[0], "args": memory[1:], "env": {"MEMORY_FILE_PATH": str(tmp_path / "mem.jsonl")}},
        "feat": feat,
    }
    if confirm:
        servers["fs"]["confirm"] = confirm
    return servers


def _serve(tmp_path: Path, name: str, servers: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    config = write_config(tmp_path / name, servers)
    return ["--config", str(config)], gateway_env(f"sqlite:///{tmp_path / 'store.db'}")


LIST_LOOP_WRITE = """
const listing = await tools.fs.list_directory({path: input.dir});  // structured: {content}
const names = listing.content.split("\\n").filter((l) => l.startsWith("[FILE]")).map((l) => l.slice(7)).sort();
const written = [];
for (const name of names) {
  const {content: text} = await tools.fs.read_text_file({path: input.dir + "/" + name});
  try {
    await tools.fs.write_file({path: input.dir + "/upper-" + name, content: text.toUpperCase()});
    written.push(name);
  } catch (e) {
    console.log("refused", name, e.message.slice(0, 40));
  }
}
await tools.memory.create_entities({entities: names.map((n) => ({name: n, entityType: "file", observations: []}))});
return {names, written};
"""


async def test_a_script_lists_loops_and_writes_through_published_servers(tmp_path: Path) -> None:
    args, env = _serve(tmp_path, "gw.json", _servers(tmp_path))
    files = tmp_path / "files"
    for name, text in (("a.txt", "alpha"), ("b.txt", "beta"), ("c.txt", "gamma")):
        (files / name).write_text(text, encoding="utf-8")
    async with stdio_gateway(args, env) as s:
        result = await call(s, RUN, {"code": LIST_LOOP_WRITE, "input": {"dir": str(files)}})
        assert not result.is_error, text_of(result)
        graph = await call(s, "memory__read_graph", {})
        steps = [step["name"] for step in (await status(s))["steps"]]
    answer = result.structured_content
    assert answer["result"] == {"names": ["a.txt", "b.txt", "c.txt"], "written": ["a.txt", "b.txt", "c.txt"]}
    assert (files / "upper-b.txt").read_text(encoding="utf-8") == "BETA"
    assert sorted(e["name"] for e in json.loads(text_of(graph))["entities"]) == ["a.txt", "b.txt", "c.txt"]
    inner = ["list_directory_1", *[f"{t}_{i}" for i in (1, 2, 3) for t in ("read_text_file", "write_file")]]
    assert answer["calls"] == [*inner, "create_entities_1"]
    assert steps == ["run_script_1", *inner, "create_entities_1", "read_graph_1"]


async def test_a_write_inside_a_loop_is_asked_for_each_call_and_refused(tmp_path: Path) -> None:
    args, env = _serve(tmp_path, "gw.json", _servers(tmp_path, confirm=["write_file"]))
    files = tmp_path / "files"
    for name in ("a.txt", "b.txt"):
        (files / name).write_text(name, encoding="utf-8")

    async def decline(params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async with stdio_gateway(args, env) as s:
        s.probe.elicit = decline
        result = await call(s, RUN, {"code": LIST_LOOP_WRITE, "input": {"dir": str(files)}})
    assert not result.is_error, text_of(result)
    answer = result.structured_content
    assert answer["result"]["written"] == []
    assert [line.split()[:2] for line in answer["logs"]] == [["refused", "a.txt"], ["refused", "b.txt"]]
    assert [e.message.startswith("Allow `fs__write_file`") for e in s.probe.elicitations] == [True, True]
    assert sorted(p.name for p in files.iterdir()) == ["a.txt", "b.txt"]  # nothing written


# Counts a side effect per key, holds on a slow call after the third, then goes on: killed while holding,
# the next gateway runs it again with the finished calls answered from the run's journal.
RESUMED = """
const counts = [];
for (const key of input.keys) {
  const {count} = await tools.feat.counter({key});
  await tools.memory.create_entities({entities: [{name: key + "-" + count, entityType: "k", observations: []}]});
  counts.push(count);
  if (counts.length === 3) {
    try { await tools.feat.slow({seconds: 120}); } catch (e) { counts.push("cut"); }
  }
}
return counts;
"""


async def test_a_gateway_killed_mid_script_resumes_it_without_repeating_a_finished_call(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'store.db'}"
    args, env = _serve(tmp_path, "first.json", _servers(tmp_path))
    keys = ["a", "b", "c", "d", "e"]
    async with stdio_gateway(args, env) as s, anyio.create_task_group() as tg:

        async def run_until_killed() -> None:
            with contextlib.suppress(Exception):  # the gateway dies under the call: its answer never comes
                await call(s, RUN, {"code": RESUMED, "input": {"keys": keys}})

        tg.start_soon(run_until_killed)
        script_run = await _script_run(db_url)
        await wait_until(lambda: _journaled(db_url, script_run) >= 6, 60, "six finished calls journaled")
        assert s.gateway is not None
        os.kill(s.gateway.pid, signal.SIGKILL)
        assert await s.gateway.wait_exit(10) == -signal.SIGKILL
    counts_file = tmp_path / "counts.json"
    assert json.loads(counts_file.read_text()) == {"a": 1, "b": 1, "c": 1}

    # the next gateway: its `slow` calls time out (so the resumed script goes on past the held call)
    args, env = _serve(tmp_path, "second.json", _servers(tmp_path, feat_timeout=1))
    async with stdio_gateway(args, env) as s:
        await wait_until(lambda: _status(db_url, script_run).finished, 90, "the resumed script run to finish")
        graph = await call(s, "memory__read_graph", {})
    store = open_store(db_url)
    try:
        run = store.get_execution(script_run)
        journal = store.get_steps(script_run)
    finally:
        store.close()
    assert run.status is ExecutionStatus.SUCCEEDED, run.error
    assert run.output == [1, 1, 1, "cut", 1, 1]
    assert json.loads(counts_file.read_text()) == dict.fromkeys(keys, 1)  # no finished call ran twice
    entities = sorted(e["name"] for e in json.loads(text_of(graph))["entities"])
    assert entities == [f"{k}-1" for k in keys]
    counters = [step.name for step in journal if step.tool == "counter"]
    assert counters == [f"counter_{i}" for i in range(1, 6)]


async def _script_run(db_url: str) -> str:
    found: list[str] = []

    def look() -> bool:
        store = open_store(db_url)
        try:
            page, _ = store.list_executions(ExecutionQuery(template=SCRIPT_TEMPLATE))
        finally:
            store.close()
        found.extend(e.id for e in page)
        return bool(found)

    await wait_until(look, 60, "the script run in the store")
    return found[0]


def _journaled(db_url: str, execution_id: str) -> int:
    store = open_store(db_url)
    try:
        return len(store.get_steps(execution_id))
    except NotFoundError:
        return 0
    finally:
        store.close()


def _status(db_url: str, execution_id: str) -> ExecutionStatus:
    store = open_store(db_url)
    try:
        return store.get_execution(execution_id).status
    finally:
        store.close()


async def test_a_saved_script_runs_again_from_toolreel_run_on_a_folder_of_another_size(tmp_path: Path) -> None:
    args, env = _serve(tmp_path, "gw.json", _servers(tmp_path))
    files = tmp_path / "files"
    first, second = files / "first", files / "second"
    first.mkdir()
    second.mkdir()
    for i in range(2):
        (first / f"{i}.txt").write_text(f"first {i}", encoding="utf-8")
    for i in range(4):
        (second / f"{i}.txt").write_text(f"second {i}", encoding="utf-8")
    async with stdio_gateway(args, env) as s:
        ran = await call(s, RUN, {"code": LIST_LOOP_WRITE, "input": {"dir": str(first)}})
        assert not ran.is_error, text_of(ran)
        saved = await call(s, "toolreel__save_template", {"name": "upper-files"})
        assert not saved.is_error, text_of(saved)
    assert saved.structured_content["verified"] is True
    assert set(saved.structured_content["template"]["servers"]) == {"fs", "memory"}
    done = await anyio.run_process(
        launch_command([str(TOOLREEL), "run", "upper-files", "-i", f"dir={second}", "--json"]),
        env=env,
        cwd=str(REPO),
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    execution = json.loads(done.stdout)
    assert execution["status"] == "succeeded"
    assert execution["output"]["written"] == [f"{i}.txt" for i in range(4)]
    assert (second / "upper-3.txt").read_text(encoding="utf-8") == "SECOND 3"
