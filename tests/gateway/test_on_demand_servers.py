"""Templates run wherever they are listed (SPEC §2): a gateway whose config lacks a template's servers starts
the servers the template remembers for a `reel__*` call or `toolreel__run_template`, as `toolreel run` does,
and a server that cannot start is named with the template. Gateways are real processes on one store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fixtures._zygote import launch_command
from tests.gw import PYTHON, call, gateway_env, stdio_gateway, text_of
from toolreel.core.model import StepRecord, TemplateDraft
from toolreel.core.store import open_store

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SHOP = ["--name", "shop", "--", *launch_command([PYTHON, "-m", "fixtures.ids"])]
FEATURES = ["--name", "feat", "--", *launch_command([PYTHON, "-m", "fixtures.features"])]


def _steps(db: str, execution_id: str) -> dict[str, StepRecord]:
    store = open_store(db)
    try:
        return {s.name: s for s in store.get_steps(execution_id)}
    finally:
        store.close()


async def _ok(gw: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await call(gw, tool, arguments)
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def test_a_wrapped_gateway_runs_a_template_recorded_on_another_server(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    async with stdio_gateway(SHOP, gateway_env(db), answers=False) as gw:
        user = await _ok(gw, "create_user", {"name": "Ada Lovelace", "email": "ada@example.com"})
        await _ok(gw, "get_user", {"id": user["id"]})
        saved = await call(gw, "toolreel__save_template", {"name": "users"})
        assert not saved.is_error, text_of(saved)

    async with stdio_gateway(FEATURES, gateway_env(db), answers=False) as gw:
        listed = {tool.name for tool in (await gw.client.list_tools()).tools}
        assert "reel__users" in listed and "create_user" not in listed  # the shop's tools are not this gateway's
        replayed = await call(gw, "reel__users", {"name": "Grace Hopper", "email": "grace@example.com"})
        assert not replayed.is_error, text_of(replayed)
        execution_id = (replayed.meta or {})["toolreel/execution"]
        again = await call(gw, "toolreel__run_template", {"name": "users", "inputs": {"name": "Linus", "email": "l@x"}})
        assert (again.structured_content or {}).get("status") == "succeeded", text_of(again)
        listed_after = {tool.name for tool in (await gw.client.list_tools()).tools}
        assert listed_after == listed  # the server started for the runs is not listed to clients
    got = _steps(db, execution_id)["get_user_1"].output
    assert isinstance(got, dict) and got["name"] == "Grace Hopper" and got["email"] == "grace@example.com"


async def test_a_remembered_server_that_cannot_start_is_named_with_the_template(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(db)
    try:
        definition = {
            "name": "gone",
            "steps": [{"name": "ping_1", "tool": "vanished__ping", "input": {}}],
            "servers": {"vanished": {"command": str(tmp_path / "no-such-server")}},
        }
        store.save_template(TemplateDraft("gone", definition))
        needs_env = {
            "name": "keyed",
            "steps": [{"name": "ping_1", "tool": "keyed__ping", "input": {}}],
            "servers": {"keyed": {"command": PYTHON, "env": {"API_KEY": "${env:TOOLREEL_TEST_UNSET_KEY}"}}},
        }
        store.save_template(TemplateDraft("keyed", needs_env))
    finally:
        store.close()
    async with stdio_gateway(FEATURES, gateway_env(db), answers=False) as gw:
        failed = await call(gw, "reel__gone", {})
        assert failed.is_error
        text = text_of(failed)
        assert "template 'gone'" in text and "server 'vanished'" in text and "no-such-server" in text, text
        unset = await call(gw, "toolreel__run_template", {"name": "keyed"})
        assert unset.is_error and "template 'keyed'" in text_of(unset), text_of(unset)
        assert "TOOLREEL_TEST_UNSET_KEY" in text_of(unset)
        fine = await call(gw, "echo", {"text": "still here"})
        assert not fine.is_error, text_of(fine)
