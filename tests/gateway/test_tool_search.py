"""Tool search (`--tools search|auto`, SPEC §14): the listing, the ranking, and calls through
`toolreel__call_tool`, which are recorded and templatized exactly as the same calls made directly.
The gateway runs in-process (tests/inproc.py) over real fixture servers; `--tools` on the command line
is checked on a real `toolreel serve`."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures._zygote import launch_command
from tests.gw import (
    MODES,
    TOOLREEL,
    Connected,
    call,
    fixture_entry,
    gateway_env,
    status,
    stdio_gateway,
    text_of,
    wait_until,
    write_config,
)
from tests.inproc import gateway_in_process
from toolreel.core.errors import ConfigError
from toolreel.gateway.search import CALL_TOOL, SEARCH_TOOL, ToolIndex, count_tokens, unwrap
from toolreel.gateway.tools_search import CORE_TOOLS
from toolreel.upstreams.config import GatewayConfig, parse_config

pytestmark = pytest.mark.anyio

SERVERS = {"shop": fixture_entry("ids"), "feat": fixture_entry("features")}


def _config(tools: str, **settings: Any) -> GatewayConfig:
    return parse_config({"mcpServers": SERVERS, "toolreel": {"tools": tools, **settings}})


async def _ready(gw: Connected) -> None:
    """Every upstream started: on a loaded machine a first listing may come before a slow one is up."""

    async def all_ready() -> bool:
        return all(u["state"] == "ready" for u in (await status(gw))["upstreams"])

    await wait_until(all_ready, 60, "every upstream ready")


async def _names(gw: Connected) -> set[str]:
    return {tool.name for tool in (await gw.client.list_tools()).tools}


async def _search(gw: Connected, query: str, limit: int | None = None) -> list[dict[str, Any]]:
    arguments: dict[str, Any] = {"query": query} | ({"limit": limit} if limit is not None else {})
    result = await call(gw, SEARCH_TOOL, arguments)
    assert not result.is_error, text_of(result)
    tools: list[dict[str, Any]] = (result.structured_content or {})["tools"]
    return tools


# --- ranking and unwrapping, no server ------------------------------------------------------------------------


def _tool(name: str, description: str, *params: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": {p: {"type": "string"} for p in params}},
    }


CATALOG = [
    _tool("fs__read_text_file", "Read the complete contents of a file as text.", "path"),
    _tool("fs__list_directory", "Get a listing of all files and directories in a path.", "path"),
    _tool("git__git_log", "Shows the commit logs", "repo_path", "max_count"),
    _tool("time__convert_time", "Convert time between timezones", "source_timezone", "target_timezone"),
]


def test_search_ranks_by_name_description_and_parameter_names() -> None:
    index = ToolIndex(CATALOG)
    assert index.search("read a file")[0].tool["name"] == "fs__read_text_file"
    assert index.search("commit history")[0].tool["name"] == "git__git_log"  # "history" widens to "log"
    assert index.search("target timezone")[0].tool["name"] == "time__convert_time"  # a parameter name
    assert index.search("what is in this folder")[0].tool["name"] == "fs__list_directory"  # folder ~ directory


def test_parameter_descriptions_and_values_find_a_tool_without_drowning_names() -> None:
    order = {
        "name": "ids__get_order",
        "description": "Returns one order by id.",
        "inputSchema": {
            "type": "object",
            "properties": {"order_id": {"type": "string", "description": "The id chosen when it was placed"}},
        },
    }
    listing = {
        "name": "fs__list_directory_with_sizes",
        "description": "Get a listing of files and directories, including sizes.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "sortBy": {
                    "type": "string",
                    "enum": ["ascending", "descending"],
                    # a long parameter text saying "file" many times must not outrank the file reader
                    "description": "Sort the file entries, file by file, for files and more files: a file order",
                },
            },
        },
    }
    index = ToolIndex([*CATALOG, order, listing])
    assert index.search("the one I placed")[0].tool["name"] == "ids__get_order"  # said only by a parameter
    assert index.search("descending")[0].tool["name"] == "fs__list_directory_with_sizes"  # an allowed value
    assert index.search("read a file")[0].tool["name"] == "fs__read_text_file"


def test_search_answers_nothing_for_words_no_tool_has() -> None:
    assert ToolIndex(CATALOG).search("quantum teleportation") == []
    assert ToolIndex([]).search("read") == []


def test_call_tool_is_unwrapped_to_the_direct_call_and_a_malformed_one_is_left_alone() -> None:
    wrapped = {"name": CALL_TOOL, "arguments": {"name": "fs__read", "arguments": {"path": "/a"}}, "_meta": {"k": 1}}
    assert unwrap(wrapped) == {"name": "fs__read", "arguments": {"path": "/a"}, "_meta": {"k": 1}}
    assert unwrap({"name": CALL_TOOL, "arguments": {"name": "fs__read"}})["arguments"] == {}
    malformed: dict[str, Any]
    for malformed in ({"arguments": {}}, {"name": 3}, {"name": CALL_TOOL}, {"name": "x", "arguments": []}):
        params: dict[str, Any] = {"name": CALL_TOOL, "arguments": malformed}
        assert unwrap(params) is params
    direct = {"name": "fs__read", "arguments": {}}
    assert unwrap(direct) is direct


def test_tokens_are_counted_with_a_tokenizer_shipped_in_a_package() -> None:
    assert count_tokens("hello world") == 2  # cl100k
    assert count_tokens([{"name": "a"}]) == count_tokens('[{"name":"a"}]')


def test_the_config_key_is_validated_with_its_path() -> None:
    assert _config("search").tools == "search"
    assert _config("auto", searchThreshold=5).search_threshold == 5
    assert parse_config({"mcpServers": {}}).tools == "all"
    bad: list[tuple[Any, str]] = [
        ({"tools": "some"}, "toolreel.tools"),
        ({"tools": "auto", "searchThreshold": -1}, "toolreel.searchThreshold"),
        ({"tool": "search"}, "toolreel.tool"),
        ("search", "toolreel"),
    ]
    for value, path in bad:
        with pytest.raises(ConfigError) as caught:
            parse_config({"mcpServers": {}, "toolreel": value})
        assert caught.value.path == path, caught.value


# --- through the gateway ----------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
async def test_search_mode_lists_the_search_tools_instead_of_the_upstream_tools(mode: str) -> None:
    with anyio.fail_after(60):
        async with gateway_in_process(_config("search"), mode=mode) as gw:
            await _ready(gw)
            listed = {tool.name: tool for tool in (await gw.client.list_tools()).tools}
            hits = await _search(gw, "create an order for a user")
    assert not any(name.startswith(("shop__", "feat__")) for name in listed)
    assert {SEARCH_TOOL, CALL_TOOL, "toolreel__status", "toolreel__save_template"} <= set(listed)
    description = listed[SEARCH_TOOL].description or ""
    assert "shop (7)" in description and "feat (" in description  # what the catalog holds
    assert hits[0]["name"] == "shop__create_order"
    assert hits[0]["inputSchema"]["properties"].keys() >= {"user_id", "items"}  # the full schema


@pytest.mark.slow
async def test_search_limit_is_honoured_and_a_bad_one_is_refused() -> None:
    with anyio.fail_after(60):
        async with gateway_in_process(_config("search")) as gw:
            await _ready(gw)
            assert len(await _search(gw, "user order", limit=2)) == 2
            refused = await call(gw, SEARCH_TOOL, {"query": "user", "limit": 0})
            empty = await call(gw, SEARCH_TOOL, {"query": " "})
    assert refused.is_error and "limit is a whole number from 1 to 50" in text_of(refused)
    assert empty.is_error and "needs 'query'" in text_of(empty)


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
async def test_a_call_through_call_tool_is_recorded_as_the_direct_call(mode: str) -> None:
    with anyio.fail_after(60):
        async with gateway_in_process(_config("search"), mode=mode) as gw:
            await _ready(gw)
            through = await call(gw, CALL_TOOL, {"name": "feat__add", "arguments": {"a": 2, "b": 3}})
            direct = await call(gw, "feat__add", {"a": "@add_1.sum", "b": 1})  # still callable directly
            state = await status(gw)
    assert through.structured_content == {"sum": 5.0, "operands": {"a": 2.0, "b": 3.0}}
    assert (through.meta or {})["toolreel/step"] == "add_1"
    assert (direct.structured_content or {})["sum"] == 6
    assert [(s["name"], s["tool"]) for s in state["steps"]] == [("add_1", "feat__add"), ("add_2", "feat__add")]


@pytest.mark.slow
async def test_a_malformed_call_tool_says_what_it_takes_and_calls_nothing() -> None:
    with anyio.fail_after(60):
        async with gateway_in_process(_config("search")) as gw:
            await _ready(gw)
            missing = await call(gw, CALL_TOOL, {"arguments": {"a": 1}})
            itself = await call(gw, CALL_TOOL, {"name": CALL_TOOL, "arguments": {}})
            unknown = await call(gw, CALL_TOOL, {"name": "feat__nope", "arguments": {}})
            state = await status(gw)
    assert missing.is_error and "takes {'name'" in text_of(missing)
    assert itself.is_error and "cannot call itself" in text_of(itself)
    assert unknown.is_error and "feat__nope" in text_of(unknown)
    assert state["steps"] == []


async def _shopping(invoke: Callable[[str, dict[str, Any]], Awaitable[Any]]) -> None:
    """An agent copying values by hand between calls (the templatizer turns them into refs)."""

    async def ok(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await invoke(tool, arguments)
        assert not result.is_error, text_of(result)
        assert isinstance(result.structured_content, dict)
        return result.structured_content

    user = await ok("shop__create_user", {"name": "Ada Lovelace", "email": "ada@example.com"})
    order = await ok("shop__create_order", {"user_id": user["id"], "items": [{"sku": "cheese", "qty": 2}]})
    await ok("shop__get_order", {"order_id": order["order_id"]})


async def _saved_template(config: GatewayConfig, through_search: bool) -> dict[str, Any]:
    async with gateway_in_process(config, answers=False) as gw:
        await _ready(gw)

        async def invoke(tool: str, arguments: dict[str, Any]) -> Any:
            if through_search:
                return await call(gw, CALL_TOOL, {"name": tool, "arguments": arguments})
            return await call(gw, tool, arguments)

        await _shopping(invoke)
        saved = await call(gw, "toolreel__save_template", {"name": "shop", "description": "A purchase."})
    assert not saved.is_error, text_of(saved)
    answer = saved.structured_content or {}
    assert answer["verified"] is True and answer["saved"] is True
    template: dict[str, Any] = answer["template"]
    return template


@pytest.mark.slow
async def test_a_session_through_call_tool_saves_the_same_template_as_the_direct_session() -> None:
    with anyio.fail_after(120):
        direct = await _saved_template(_config("all"), through_search=False)
        searched = await _saved_template(_config("search"), through_search=True)
    assert [s["name"] for s in direct["steps"]] == ["create_user_1", "create_order_1", "get_order_1"]
    assert "@create_user_1.id" in json.dumps(direct["steps"])  # refs were inferred: the comparison means something
    assert searched == direct


@pytest.mark.slow
async def test_auto_searches_only_past_the_threshold() -> None:
    with anyio.fail_after(60):
        async with gateway_in_process(_config("auto", searchThreshold=100_000)) as gw:
            await _ready(gw)
            small = await _names(gw)
        async with gateway_in_process(_config("auto", searchThreshold=100)) as gw:
            await _ready(gw)
            large = await _names(gw)
    assert {"shop__create_user", "toolreel__list_templates"} <= small and SEARCH_TOOL not in small
    assert not {"shop__create_user", "toolreel__list_templates"} & large and SEARCH_TOOL in large


@pytest.mark.slow
async def test_serve_takes_tools_on_the_command_line_over_the_config(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": SERVERS, "toolreel": {"tools": "all"}}))
    env = gateway_env(f"sqlite:///{tmp_path / 'store.db'}")
    with anyio.fail_after(60):
        async with stdio_gateway(["--config", str(config), "--tools", "search"], env) as gw:
            await _ready(gw)
            names = await _names(gw)
            through = await call(gw, CALL_TOOL, {"name": "shop__note", "arguments": {"text": "hi"}})
    assert SEARCH_TOOL in names and "shop__note" not in names
    assert text_of(through) == "Noted: hi" and (through.meta or {})["toolreel/step"] == "note_1"


@pytest.mark.slow
async def test_serve_refuses_an_unknown_tools_mode(tmp_path: Path) -> None:
    config = write_config(tmp_path / "servers.json", SERVERS)
    process = await anyio.run_process(
        launch_command([str(TOOLREEL), "serve", "--config", str(config), "--tools", "x"]),
        check=False,
        env=gateway_env(f"sqlite:///{tmp_path / 'store.db'}"),
    )
    assert process.returncode == 2
    assert "--tools" in process.stderr.decode() and "'all', 'search' or 'auto'" in process.stderr.decode()


@pytest.mark.slow
async def test_search_mode_lists_a_core_of_own_tools_and_finds_the_others() -> None:
    """The listing stays small however many management tools and templates there are; an unlisted one is
    found by search and works through call_tool and by name."""
    with anyio.fail_after(90):
        async with gateway_in_process(_config("search"), answers=False) as gw:
            await _ready(gw)
            first = await _names(gw)
            assert not (await call(gw, "feat__add", {"a": 1, "b": 2})).is_error
            for name in ("alpha", "bravo", "charlie", "delta"):
                saved = await call(gw, "toolreel__save_template", {"name": name, "description": f"Add {name}."})
                assert not saved.is_error, text_of(saved)
            listed = await _names(gw)
            hits = [hit["name"] for hit in await _search(gw, "list the saved templates")]
            through = await call(gw, CALL_TOOL, {"name": "toolreel__list_templates", "arguments": {}})
            direct = await call(gw, "toolreel__list_templates", {})
            found = [hit["name"] for hit in await _search(gw, "add delta", limit=10)]
            replay = await call(gw, CALL_TOOL, {"name": "reel__delta", "arguments": {}})
    assert first == CORE_TOOLS  # no template yet, no upstream tool: the core alone
    assert listed == CORE_TOOLS | {"reel__alpha", "reel__bravo", "reel__charlie"}  # templates past three searched
    assert "toolreel__list_templates" in hits[:5]
    for answer in (through, direct):
        assert not answer.is_error, text_of(answer)
        names = {t["name"] for t in (answer.structured_content or {})["templates"]}
        assert names == {"alpha", "bravo", "charlie", "delta"}
    assert "reel__delta" in found
    assert not replay.is_error, text_of(replay)
