"""Tool filters, overrides and confirmation before a call (SPEC §1, §2).

The config keys are parsed by the real `load_config`; the gateway runs in-process (tests/inproc.py)
in both protocol eras, in front of the `features` fixture (and the npm filesystem
server for `confirm: "destructive"`), and what is stored is read back from the real store.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from tests.gw import (
    MODES,
    Connected,
    call,
    fixture_entry,
    npm_available,
    npm_command,
    status,
    text_of,
    wait_until,
)
from tests.inproc import gateway_in_process
from toolreel.core.errors import ConfigError, NotFoundError
from toolreel.core.store import open_store
from toolreel.upstreams.config import parse_config

CONFIRM_META = "toolreel/confirmation"


# --- parsing ----------------------------------------------------------------------------------------------------


def _server(entry: dict[str, Any]) -> Any:
    return parse_config({"mcpServers": {"s": {"command": "x", **entry}}}).servers[0]


def test_globs_choose_tools_allowlist_first_then_denylist() -> None:
    policy = _server({"tools": ["read_*", "list_?ir", "stat"], "excludeTools": ["*_secret"]}).policy
    assert [n for n in ("read_file", "read_secret", "list_dir", "list_dirs", "stat", "write") if policy.shows(n)] == [
        "read_file",
        "list_dir",
        "stat",
    ]
    assert _server({"excludeTools": ["write*"]}).policy.shows("read") is True
    assert _server({}).policy.shows("anything") is True


def test_override_renames_and_redescribes_for_the_agent_only() -> None:
    policy = _server({"toolsOverride": {"echo": {"name": "say", "description": "Says it."}}}).policy
    tool = {"name": "echo", "description": "Returns its text.", "inputSchema": {"type": "object"}}
    assert policy.shown_name("echo") == "say" and policy.shown_name("add") == "add"
    assert policy.present(tool, "s__say") == {**tool, "name": "s__say", "description": "Says it."}
    assert tool["name"] == "echo"  # the upstream's listing is not touched


def test_confirm_takes_globs_or_destructive() -> None:
    destructive = _server({"confirm": "destructive"}).policy
    globs = _server({"confirm": ["delete_*", "destructive"]}).policy
    wipe = {"name": "wipe", "annotations": {"destructiveHint": True}}
    assert destructive.needs_confirmation(wipe) and not destructive.needs_confirmation({"name": "delete_x"})
    assert globs.needs_confirmation({"name": "delete_x"}) and globs.needs_confirmation(wipe)
    assert not globs.needs_confirmation({"name": "read", "annotations": {"destructiveHint": False}})


@pytest.mark.parametrize(
    ("entry", "path", "says"),
    [
        ({"tools": "echo"}, "mcpServers.s.tools", "list of tool names or globs"),
        ({"excludeTools": [3]}, "mcpServers.s.excludeTools", "list of tool names or globs"),
        ({"confirm": 1}, "mcpServers.s.confirm", "list of tool names or globs"),
        ({"toolsOverride": []}, "mcpServers.s.toolsOverride", "upstream tool name"),
        ({"toolsOverride": {"a": {"title": "x"}}}, "mcpServers.s.toolsOverride.a", '"name" and/or "description"'),
        ({"toolsOverride": {"a": {"name": "b c"}}}, "mcpServers.s.toolsOverride.a.name", "[A-Za-z0-9_-]"),
        ({"toolsOverride": {"a": {"name": "x__y"}}}, "mcpServers.s.toolsOverride.a.name", "without '__'"),
        (
            {"toolsOverride": {"a": {"name": "n"}, "b": {"name": "n"}}},
            "mcpServers.s.toolsOverride.b.name",
            "already given to 'a'",
        ),
    ],
)
def test_bad_policy_keys_name_the_json_path(entry: dict[str, Any], path: str, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _server(entry)
    assert f": {path}: " in f": {caught.value}" and says in str(caught.value)


# --- through the gateway ---------------------------------------------------------------------------------------


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
    entry.update(
        {
            "tools": ["e*", "add", "counter", "fail"],
            "excludeTools": ["fai?"],
            "toolsOverride": {"echo": {"name": "say", "description": "Says the text back."}},
            "confirm": ["count*"],
        }
    )
    db_url = f"sqlite:///{tmp_path / 'store.db'}"
    async with gateway_in_process({"feat": entry}, db=db_url, mode=request.param) as connected:
        yield Gw(connected, db_url, counter_file)


async def _stored_steps(db_url: str, execution: str, count: int) -> list[Any]:
    store = open_store(db_url)
    try:

        def steps() -> list[Any]:
            try:
                return store.get_steps(execution)
            except NotFoundError:
                return []

        await wait_until(lambda: len(steps()) >= count, 15, f"{count} stored steps")
        return steps()
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.anyio
async def test_filters_and_overrides_shape_the_listing_and_calls_map_back(gw: Gw) -> None:
    s = gw.connected
    listed = {t.name: t for t in (await s.client.list_tools()).tools}
    assert {n for n in listed if n.startswith("feat__")} == {"feat__say", "feat__add", "feat__counter"}
    assert listed["feat__say"].description == "Says the text back."
    first = await call(s, "feat__say", {"text": "hi"})
    second = await call(s, "feat__say", {"text": "{{@say_1}} again"})
    assert (text_of(first), text_of(second)) == ("hi", "hi again")  # the upstream got `echo`, refs work
    assert (first.meta or {})["toolreel/step"] == "say_1"
    for hidden in ("feat__echo", "feat__fail"):
        refused = await call(s, hidden, {"text": "x"})
        assert refused.is_error and "unknown tool" in text_of(refused)
    report = await status(s)
    assert {"listed": "feat__say", "server": "feat", "name": "echo"} in report["name_mapping"]
    stored = await _stored_steps(gw.db_url, (first.meta or {})["toolreel/execution"], 2)
    assert [(st.name, st.server, st.tool) for st in stored] == [("say_1", "feat", "echo"), ("say_2", "feat", "echo")]
    assert stored[1].resolved_input == {"text": "hi again"}


@pytest.mark.slow
@pytest.mark.anyio
async def test_confirmed_call_is_forwarded_and_the_answer_recorded(gw: Gw) -> None:
    s = gw.connected
    allowed = await call(s, "feat__counter", {"key": "k"})
    assert not allowed.is_error, text_of(allowed)
    assert gw.counts() == {"k": 1}
    asked = s.probe.elicitations[-1]
    assert asked.message.startswith("Allow `feat__counter` with these arguments?") and '"key": "k"' in asked.message
    assert (allowed.meta or {})[CONFIRM_META] == {"asked": True, "action": "accept"}

    async def decline(params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    s.probe.elicit = decline
    refused = await call(s, "feat__counter", {"key": "k"})
    assert refused.is_error and "declined the call to `feat__counter`" in text_of(refused)
    assert "Nothing was sent" in text_of(refused)
    assert gw.counts() == {"k": 1}  # nothing forwarded
    assert len(s.probe.elicitations) == 2
    untouched = await call(s, "feat__add", {"a": 1, "b": 2})  # not in `confirm`: nobody is asked
    assert not untouched.is_error and len(s.probe.elicitations) == 2
    stored = await _stored_steps(gw.db_url, (allowed.meta or {})["toolreel/execution"], 3)
    answers = {st.name: (st.result or {}).get("_meta", {}).get(CONFIRM_META) for st in stored}
    assert answers == {
        "counter_1": {"asked": True, "action": "accept"},
        "counter_2": {"asked": True, "action": "decline"},
        "add_1": None,
    }
    assert [st.is_error for st in stored] == [False, True, False]


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_a_client_without_elicitation_gets_a_tool_error_and_nothing_is_forwarded(
    tmp_path: Path, mode: str
) -> None:
    counter_file = tmp_path / "counts.json"
    entry = {**fixture_entry("features", env={"FIXTURE_COUNTER_FILE": str(counter_file)}), "confirm": ["counter"]}
    db_url = f"sqlite:///{tmp_path / 'store.db'}"
    async with gateway_in_process({"feat": entry}, db=db_url, mode=mode, answers=False) as s:
        refused = await call(s, "feat__counter", {"key": "k"})
        free = await call(s, "feat__echo", {"text": "free"})
    assert refused.is_error and "could not be asked" in text_of(refused) and "elicitation" in text_of(refused)
    assert (refused.meta or {})[CONFIRM_META]["action"] == "unavailable"
    assert not counter_file.exists()
    assert not free.is_error and text_of(free) == "free"


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.skipif(not npm_available(), reason="the npm reference servers are not installed")
async def test_confirm_destructive_asks_only_for_tools_annotated_destructive(tmp_path: Path) -> None:
    root = tmp_path / "files"
    root.mkdir()
    (root / "a.txt").write_text("A", encoding="utf-8")
    command = npm_command("filesystem")
    entry = {"command": command[0], "args": [*command[1:], str(root)], "confirm": "destructive"}
    async with gateway_in_process({"fs": entry}, db=f"sqlite:///{tmp_path / 'store.db'}", mode="legacy") as s:
        read = await call(s, "fs__read_text_file", {"path": str(root / "a.txt")})
        assert not read.is_error and text_of(read) == "A" and not s.probe.elicitations

        async def decline(params: types.ElicitRequestParams) -> types.ElicitResult:
            return types.ElicitResult(action="cancel")

        s.probe.elicit = decline
        write = await call(s, "fs__write_file", {"path": str(root / "b.txt"), "content": "B"})
    assert write.is_error and "dismissed the call to `fs__write_file`" in text_of(write)
    assert s.probe.elicitations and "fs__write_file" in s.probe.elicitations[0].message
    assert not (root / "b.txt").exists()
