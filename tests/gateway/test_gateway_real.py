"""Through `toolreel serve` to published servers: server-everything, -filesystem, -memory (npm, 2025-11-25
only) and mcp-server-time, mcp-server-git (PyPI, both eras).

One gateway with all five serves the module; results are compared with a direct connection to
server-everything, and recorded sessions with @refs are checked in the store.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.client.stdio import StdioServerParameters

from tests.gw import (
    Connected,
    Probe,
    call,
    client_for,
    gateway_env,
    npm_available,
    npm_command,
    pypi_command,
    result_dict,
    status,
    stdio_gateway,
    strip_toolreel_meta,
    text_of,
    wait_until,
    write_config,
)
from toolreel.core.errors import NotFoundError
from toolreel.core.model import StepRecord
from toolreel.core.store import Store, open_store

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("gateway_real")]

NPM_AVAILABLE = npm_available()
needs_npm = pytest.mark.skipif(not NPM_AVAILABLE, reason="npm reference servers not installed (.ci/run does it)")
npm = [pytest.mark.npm, needs_npm]


@dataclass
class Real:
    gw: Connected
    direct: Connected | None
    store: Store
    files: Path
    repo: Path


def _entry(command: list[str], *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": command[0], "args": [*command[1:], *args]}
    if env:
        entry["env"] = env
    return entry


def _git_repo(path: Path) -> Path:
    path.mkdir()
    run = {"cwd": path, "check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q", "-b", "main"], **run)  # type: ignore[call-overload]
    (path / "README.md").write_text("hello\n")
    subprocess.run(["git", "add", "README.md"], **run)  # type: ignore[call-overload]
    subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first commit"], **run
    )  # type: ignore[call-overload]
    (path / "README.md").write_text("hello again\n")
    return path


@pytest.fixture(scope="module")
async def real(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Real]:
    tmp = tmp_path_factory.mktemp("real")
    files = tmp / "files"
    files.mkdir()
    (files / "notes.txt").write_text("first line\nsecond line\n")
    repo = _git_repo(tmp / "repo")
    db_url = f"sqlite:///{tmp / 'store.db'}"
    servers = {
        "time": _entry(pypi_command("time")),
        "git": _entry(pypi_command("git"), "--repository", str(repo)),
    }
    if NPM_AVAILABLE:
        servers |= {
            "everything": _entry(npm_command("everything")),
            "fs": _entry(npm_command("filesystem"), str(files)),
            "memory": _entry(npm_command("memory"), env={"MEMORY_FILE_PATH": str(tmp / "memory.jsonl")}),
        }
    config = write_config(tmp / "client.json", servers)
    store = open_store(db_url)
    try:
        async with stdio_gateway(["--config", str(config)], gateway_env(db_url)) as gw:
            if not NPM_AVAILABLE:
                yield Real(gw, None, store, files, repo)
                return
            command = npm_command("everything")
            params = StdioServerParameters(command=command[0], args=command[1:])
            async with client_for(params, "legacy", Probe("direct")) as direct_client:
                yield Real(gw, Connected(direct_client, Probe("direct")), store, files, repo)
    finally:
        store.close()


async def _stored(real: Real, results: list[Any]) -> dict[str, StepRecord]:
    """The stored steps of these results (named by their `_meta`), once all are written."""
    execution = (results[0].meta or {})["toolreel/execution"]
    names = {(r.meta or {})["toolreel/step"] for r in results}

    def ready() -> bool:
        try:
            return names <= {st.name for st in real.store.get_steps(execution)}
        except NotFoundError:
            return False

    await wait_until(ready, 15, f"steps {sorted(names)} to be stored")
    return {st.name: st for st in real.store.get_steps(execution)}


# --- server-everything: faithful forwarding ------------------------------------------------------------------------


@pytest.mark.npm
@needs_npm
async def test_everything_tools_listed_as_direct_including_capability_gated_ones(real: Real) -> None:
    assert real.direct is not None
    through = {t.name: result_dict(t) for t in (await real.gw.client.list_tools()).tools}
    direct = [result_dict(t) for t in (await real.direct.client.list_tools()).tools]
    for tool in direct:
        name = f"everything__{tool['name']}"
        assert name in through, sorted(through)
        assert {**through[name], "name": tool["name"]} == tool
    # registered only because the gateway advertised upstream what its client offers
    for gated in ("trigger-elicitation-request", "trigger-sampling-request", "get-roots-list"):
        assert f"everything__{gated}" in through


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        pytest.param("echo", {"message": "héllo"}, marks=npm),
        pytest.param("get-sum", {"a": 2, "b": 40}, marks=npm),
        pytest.param("get-tiny-image", {}, marks=npm),
        pytest.param("get-structured-content", {"location": "Chicago"}, marks=npm),
        pytest.param("get-annotated-message", {"messageType": "error", "includeImage": True}, marks=npm),
        pytest.param("get-resource-reference", {"resourceType": "Text", "resourceId": 2}, marks=npm),
        pytest.param("get-resource-links", {"count": 2}, marks=npm),
    ],
)
async def test_everything_results_equal_the_direct_ones(real: Real, tool: str, arguments: dict[str, Any]) -> None:
    assert real.direct is not None
    through = result_dict(await call(real.gw, f"everything__{tool}", arguments))
    direct = result_dict(await call(real.direct, tool, arguments))
    if tool == "get-structured-content":  # random weather: compare the shape, and text against structure
        assert set(through["structuredContent"]) == set(direct["structuredContent"])
        assert json.loads(through["content"][0]["text"]) == through["structuredContent"]
        return
    if tool == "get-resource-reference":  # the dynamic resource's text carries the time of day to the second
        through, direct = _without_clock(through), _without_clock(direct)
    assert strip_toolreel_meta(through) == direct


def _without_clock(result: dict[str, Any]) -> dict[str, Any]:
    text = re.sub(r"\b\d{1,2}:\d{2}:\d{2}(\s?[AP]M\b)?", "<time>", json.dumps(result, ensure_ascii=False))
    cleaned: dict[str, Any] = json.loads(text)
    return cleaned


@pytest.mark.npm
@needs_npm
async def test_everything_long_running_operation_reports_progress(real: Real) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    result = await call(
        real.gw,
        "everything__trigger-long-running-operation",
        {"duration": 0.3, "steps": 3},
        progress_callback=on_progress,
    )
    assert not result.is_error, text_of(result)
    assert len(seen) == 3 and seen == sorted(seen)


@pytest.mark.npm
@needs_npm
async def test_everything_elicitation_sampling_and_roots_reach_the_client(real: Real) -> None:
    async def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": "Ann Example"})

    real.gw.probe.elicit = answer
    elicited = await call(real.gw, "everything__trigger-elicitation-request", {})
    sampled = await call(real.gw, "everything__trigger-sampling-request", {"prompt": "ping", "maxTokens": 5})
    roots = await call(real.gw, "everything__get-roots-list", {})
    assert "Ann Example" in text_of(elicited), text_of(elicited)
    assert "sampled: " in text_of(sampled), text_of(sampled)
    assert "file:///tmp/probe-root" in text_of(roots), text_of(roots)


@pytest.mark.npm
@needs_npm
async def test_everything_prompts_and_resources(real: Real) -> None:
    assert real.direct is not None
    prompts = {p.name for p in (await real.gw.client.list_prompts()).prompts}
    assert {"everything__simple-prompt", "everything__args-prompt"} <= prompts
    through = await real.gw.client.get_prompt("everything__simple-prompt")
    direct = await real.direct.client.get_prompt("simple-prompt")
    assert result_dict(through) == result_dict(direct)
    uri = "demo://resource/static/document/architecture.md"
    assert uri in {r.uri for r in (await real.gw.client.list_resources()).resources}
    assert result_dict(await real.gw.client.read_resource(uri)) == result_dict(
        await real.direct.client.read_resource(uri)
    )


# --- PyPI servers ----------------------------------------------------------------------------------------------------


async def test_time_server_structured_output_and_a_typed_ref(real: Real) -> None:
    now = await call(real.gw, "time__get_current_time", {"timezone": "UTC"})
    assert not now.is_error, text_of(now)
    assert (now.structured_content or {}).get("timezone") == "UTC"
    converted = await call(
        real.gw,
        "time__convert_time",
        {"source_timezone": "@get_current_time_1.timezone", "time": "12:00", "target_timezone": "Asia/Tokyo"},
    )
    assert not converted.is_error, text_of(converted)
    assert (converted.structured_content or {})["source"]["timezone"] == "UTC"
    assert (converted.structured_content or {})["target"]["datetime"].endswith("21:00:00+09:00")


async def test_git_server_reads_the_repository(real: Real) -> None:
    changed = await call(real.gw, "git__git_status", {"repo_path": str(real.repo)})
    log = await call(real.gw, "git__git_log", {"repo_path": str(real.repo)})
    assert "README.md" in text_of(changed), text_of(changed)
    assert "first commit" in text_of(log), text_of(log)


async def test_status_lists_every_upstream_ready(real: Real) -> None:
    report = await status(real.gw)
    states = {u["name"]: u["state"] for u in report["upstreams"]}
    expected = {"time", "git"} | ({"everything", "fs", "memory"} if NPM_AVAILABLE else set())
    assert states == {name: "ready" for name in expected}
    assert all(u["tools"] > 0 for u in report["upstreams"])


# --- recorded sessions on real servers ------------------------------------------------------------------------------


@pytest.mark.npm
@needs_npm
async def test_memory_session_passes_created_names_on_with_refs(real: Real) -> None:
    created = await call(
        real.gw,
        "memory__create_entities",
        {
            "entities": [
                {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]},
                {"name": "Analytical Engine", "entityType": "machine", "observations": ["never built"]},
            ]
        },
    )
    assert not created.is_error, text_of(created)
    related = await call(
        real.gw,
        "memory__create_relations",
        {
            "relations": [
                {
                    "from": "@create_entities_1.entities[0].name",
                    "to": "@create_entities_1.entities[1].name",
                    "relationType": "programmed",
                }
            ]
        },
    )
    opened = await call(
        real.gw,
        "memory__open_nodes",
        {"names": ["@create_entities_1.entities[0].name", "{{@create_entities_1.entities[1].name}}"]},
    )
    assert not related.is_error and not opened.is_error, text_of(opened)
    graph = opened.structured_content or json.loads(text_of(opened))
    assert sorted(e["name"] for e in graph["entities"]) == ["Ada", "Analytical Engine"]
    assert graph["relations"] == [{"from": "Ada", "to": "Analytical Engine", "relationType": "programmed"}]
    steps = await _stored(real, [created, related, opened])
    step = steps[(opened.meta or {})["toolreel/step"]]
    assert step.input == {"names": ["@create_entities_1.entities[0].name", "{{@create_entities_1.entities[1].name}}"]}
    assert step.resolved_input == {"names": ["Ada", "Analytical Engine"]}
    assert steps[(related.meta or {})["toolreel/step"]].resolved_input["relations"][0]["from"] == "Ada"


@pytest.mark.npm
@needs_npm
async def test_filesystem_session_reads_a_file_chosen_from_an_earlier_step(real: Real) -> None:
    root = str(real.files)
    listed = await call(real.gw, "fs__list_directory", {"path": root})
    found = await call(real.gw, "fs__search_files", {"path": root, "pattern": "notes*"})
    read = await call(real.gw, "fs__read_text_file", {"path": "@search_files_1.content"})
    written = await call(
        real.gw, "fs__write_file", {"path": f"{root}/listing.txt", "content": "{{@list_directory_1.content}}"}
    )
    reread = await call(real.gw, "fs__read_text_file", {"path": f"{root}/listing.txt"})
    for result in (listed, found, read, written, reread):
        assert not result.is_error, text_of(result)
    assert "[FILE] notes.txt" in text_of(listed)
    assert text_of(read) == "first line\nsecond line\n"
    assert text_of(reread) == text_of(listed)
    names = [(r.meta or {})["toolreel/step"] for r in (listed, found, read, written, reread)]
    assert names[0].startswith("list_directory_") and names[2].startswith("read_text_file_")
    steps = await _stored(real, [listed, found, read, written, reread])
    read_step = steps[names[2]]
    assert read_step.input == {"path": "@search_files_1.content"}
    assert read_step.resolved_input == {"path": f"{root}/notes.txt"}
    assert read_step.output == {"content": "first line\nsecond line\n"}
    assert steps[names[0]].output == {"content": text_of(listed)}


@pytest.mark.npm
@needs_npm
async def test_modern_client_in_front_of_a_handshake_only_server(tmp_path: Path) -> None:
    """server-everything speaks 2025-11-25 only; a 2026-07-28 client cannot receive pushed requests, so the
    gateway must translate its elicitation/sampling/roots into input-required results (the client retries)."""
    config = write_config(tmp_path / "client.json", {"everything": _entry(npm_command("everything"))})
    probe = Probe("modern")

    async def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": "Modern Mo"})

    probe.elicit = answer
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with stdio_gateway(
        ["--config", str(config)], gateway_env(f"sqlite:///{tmp_path / 's.db'}"), mode="auto", probe=probe
    ) as gw:
        assert gw.client.protocol_version == "2026-07-28"
        names = {t.name for t in (await gw.client.list_tools()).tools}
        echoed = await call(gw, "everything__echo", {"message": "hi"})
        progressed = await call(
            gw,
            "everything__trigger-long-running-operation",
            {"duration": 0.3, "steps": 3},
            progress_callback=on_progress,
        )
        elicited = await call(gw, "everything__trigger-elicitation-request", {})
        sampled = await call(gw, "everything__trigger-sampling-request", {"prompt": "ping", "maxTokens": 5})
    assert "everything__trigger-elicitation-request" in names
    assert "hi" in text_of(echoed)
    assert not progressed.is_error and len(seen) == 3
    assert "Modern Mo" in text_of(elicited), text_of(elicited)
    assert "sampled: " in text_of(sampled), text_of(sampled)
