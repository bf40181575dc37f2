"""Hot reload of `serve --config` (SPEC §2): only what changed is started, stopped or restarted.

A real gateway over stdio, real fixture servers; the file is saved as editors do (a new file renamed
over the old one). Whether a server was restarted is read from its in-memory counter (a new process
counts from 1 again); clients hear `tools/list_changed`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from tests.gw import Connected, call, fixture_entry, gateway_env, status, stdio_gateway, text_of, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _save(path: Path, servers: dict[str, Any] | str) -> None:
    text = servers if isinstance(servers, str) else json.dumps({"mcpServers": servers})
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


async def _count(s: Connected, tool: str) -> int:
    result = await call(s, tool, {"key": "k"})
    assert not result.is_error, text_of(result)
    return int((result.structured_content or {})["count"])


async def _tools(s: Connected) -> set[str]:
    return {t.name for t in (await s.client.list_tools()).tools if not t.name.startswith("toolreel__")}


async def _changes(s: Connected, seen: int) -> None:
    await s.probe.wait_for(
        lambda: len(s.probe.of_type(types.ToolListChangedNotification)) > seen, 30, "tools/list_changed"
    )


async def test_reload_starts_stops_and_restarts_only_what_changed(tmp_path: Path) -> None:
    config = tmp_path / "client.json"
    servers: dict[str, Any] = {"feat": fixture_entry("features"), "ids": fixture_entry("ids")}
    _save(config, servers)
    env = gateway_env(f"sqlite:///{tmp_path / 'store.db'}")
    async with stdio_gateway(["--config", str(config)], env) as s:
        assert {"feat__echo", "ids__create_user"} <= await _tools(s)
        assert await _count(s, "feat__counter") == 1
        seen = len(s.probe.of_type(types.ToolListChangedNotification))
        async with anyio.create_task_group() as tg:
            slow: list[Any] = []

            async def in_flight() -> None:
                slow.append(await call(s, "feat__slow", {"seconds": 1.0}))

            tg.start_soon(in_flight)
            # `ids` removed, `more` added, `feat` untouched, while a call to `feat` is in flight
            _save(config, {"feat": servers["feat"], "more": fixture_entry("features")})
            await _changes(s, seen)
        assert not slow[0].is_error and text_of(slow[0]) == "slept 1.0s"  # undisturbed
        await wait_until(lambda: _has(s, "more__echo"), 30, "the added server's tools")
        tools = await _tools(s)
        assert "ids__create_user" not in tools and "feat__echo" in tools
        assert await _count(s, "feat__counter") == 2  # the same process: not restarted
        assert await _count(s, "more__counter") == 1
        report = await status(s)
        assert report["config"]["reloads"] == 1 and report["config"]["error"] is None
        assert [u["name"] for u in report["upstreams"]] == ["feat", "more"]

        seen = len(s.probe.of_type(types.ToolListChangedNotification))
        changed = {**fixture_entry("features", env={"MARK": "2"}), "excludeTools": ["echo"]}
        _save(config, {"feat": {**servers["feat"], "excludeTools": ["echo"]}, "more": changed})
        await _changes(s, seen)
        await wait_until(lambda: _lacks(s, "feat__echo"), 30, "the new filters")
        await wait_until(lambda: _has(s, "more__counter"), 30, "the restarted server's tools")
        assert await _count(s, "feat__counter") == 3  # a filter change re-reads the tools, no restart
        assert await _count(s, "more__counter") == 1  # its command changed: restarted
        assert not {"feat__echo", "more__echo"} & await _tools(s)


async def test_a_broken_config_keeps_the_running_one_and_says_why(tmp_path: Path) -> None:
    config = tmp_path / "client.json"
    _save(config, {"feat": fixture_entry("features")})
    env = gateway_env(f"sqlite:///{tmp_path / 'store.db'}")
    async with stdio_gateway(["--config", str(config)], env) as s:
        assert await _count(s, "feat__counter") == 1
        _save(config, '{"mcpServers": {"feat": ')
        await wait_until(lambda: _config_error(s), 30, "the refusal in toolreel__status")
        error = (await status(s))["config"]["error"]
        assert "not valid JSON" in error and str(config) in error and "running config is kept" in error
        assert await _count(s, "feat__counter") == 2  # still served, by the same process
        assert "config reload refused" in (s.gateway.stderr() if s.gateway else "")
        _save(config, {"feat": {**fixture_entry("features"), "tools": ["counter"]}})
        await wait_until(lambda: _lacks(s, "feat__echo"), 30, "the fixed config")
        report = await status(s)
        assert report["config"]["error"] is None and report["config"]["reloads"] == 1


async def _has(s: Connected, name: str) -> bool:
    return name in await _tools(s)


async def _lacks(s: Connected, name: str) -> bool:
    return name not in await _tools(s)


async def _config_error(s: Connected) -> bool:
    return (await status(s))["config"]["error"] is not None
