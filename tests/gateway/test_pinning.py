"""Rug-pull protection (`"pin": true`, SPEC §2): a live call to a tool whose definition changed since it was
first seen is refused until approved, and `toolreel__status` lists it. The gateway runs in-process in front
of a real server that rewrites a tool mid-session (fixtures/shifty.py)."""

from __future__ import annotations

from pathlib import Path

import mcp_types as types
import pytest

from fixtures.shifty import AFTER
from tests.gw import call, fixture_entry, status, text_of
from tests.inproc import gateway_in_process

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _bank(pin: bool) -> dict[str, object]:
    return {"bank": {**fixture_entry("shifty"), "pin": pin}}


async def test_a_pinned_tool_that_changed_is_refused_until_approved(tmp_path: Path) -> None:
    async with gateway_in_process(_bank(True), db=f"sqlite:///{tmp_path / 's.db'}") as gw:
        answers: list[str] = ["decline", "accept"]

        async def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
            return types.ElicitResult(action=answers.pop(0))  # type: ignore[arg-type]

        gw.probe.elicit = answer
        first = await call(gw, "bank__transfer", {"amount": 5, "account": "alice"})
        assert not first.is_error and text_of(first) == "sent 5 to alice"
        assert (await status(gw))["pinned_changed"] == []

        assert text_of(await call(gw, "bank__shift")) == "shifted"
        await gw.probe.wait_for(
            lambda: any(isinstance(n, types.ToolListChangedNotification) for n in gw.probe.notifications),
            what="tools/list_changed after the rewrite",
        )
        held = (await status(gw))["pinned_changed"]
        assert held == [{"server": "bank", "tool": "transfer", "changed": ["description", "inputSchema"]}]

        refused = await call(gw, "bank__transfer", {"amount": 5, "account": "alice"})
        assert refused.is_error and "refused" in text_of(refused) and "nothing was sent" in text_of(refused)
        assert AFTER in text_of(refused)
        asked = gw.probe.elicitations[-1]
        assert "changed its definition since it was first seen" in asked.message

        approved = await call(gw, "bank__transfer", {"amount": 7, "account": "bob"})
        assert not approved.is_error and text_of(approved) == "sent 7 to bob"
        assert (await status(gw))["pinned_changed"] == []
        again = await call(gw, "bank__transfer", {"amount": 8, "account": "bob"})
        assert not again.is_error and len(gw.probe.elicitations) == 2  # approved once, not asked again


async def test_an_unpinned_server_is_not_held(tmp_path: Path) -> None:
    async with gateway_in_process(_bank(False), db=f"sqlite:///{tmp_path / 's.db'}") as gw:
        await call(gw, "bank__transfer", {"amount": 1, "account": "a"})
        await call(gw, "bank__shift")
        await gw.probe.wait_for(
            lambda: any(isinstance(n, types.ToolListChangedNotification) for n in gw.probe.notifications),
            what="tools/list_changed after the rewrite",
        )
        after = await call(gw, "bank__transfer", {"amount": 2, "account": "b"})
        assert not after.is_error and gw.probe.elicitations == []
        assert (await status(gw))["pinned_changed"] == []


async def test_a_tool_that_changed_while_the_gateway_was_down_is_held_after_a_restart(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 's.db'}"
    async with gateway_in_process(_bank(True), db=db, answers=False) as gw:
        first = await call(gw, "bank__transfer", {"amount": 5, "account": "alice"})
        assert not first.is_error and text_of(first) == "sent 5 to alice"
    # The server was updated while the gateway was down: the new gateway first sees the new definition.
    updated = {"bank": {**fixture_entry("shifty", env={"FIXTURE_SHIFTED": "1"}), "pin": True}}
    async with gateway_in_process(updated, db=db, answers=False) as gw:
        refused = await call(gw, "bank__transfer", {"amount": 5, "account": "alice"})
        assert refused.is_error and "nothing was sent" in text_of(refused), text_of(refused)
        assert AFTER in text_of(refused)
        held = (await status(gw))["pinned_changed"]
        assert held == [{"server": "bank", "tool": "transfer", "changed": ["description", "inputSchema"]}]
    # Approved by a client that can be asked: the new definition is the one kept from then on.
    async with gateway_in_process(updated, db=db) as gw:
        approved = await call(gw, "bank__transfer", {"amount": 7, "account": "bob"})
        assert not approved.is_error and text_of(approved) == "sent 7 to bob"
        assert len(gw.probe.elicitations) == 1
    async with gateway_in_process(updated, db=db, answers=False) as gw:
        again = await call(gw, "bank__transfer", {"amount": 8, "account": "bob"})
        assert not again.is_error and (await status(gw))["pinned_changed"] == []
