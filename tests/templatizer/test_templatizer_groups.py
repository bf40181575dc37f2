"""Per-item groups: calls that took turns over the same elements (a note, then the resolution, per conversation)
are saved as one script step that makes each element's calls in the recorded order; calls made all of one kind
first stay two loops. The script runs in the verifying dry replay and in a replay on real servers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gw import call, call_ok, fixture_entry, text_of, until_listed
from tests.inproc import gateway_with_clients
from tests.recorded import Session
from toolreel.core.model import JSON, StepRecord
from toolreel.core.store import open_store
from toolreel.replayer import dry_replay
from toolreel.templatizer import templatize, verify

CONVERSATIONS: list[JSON] = [
    {"id": 311, "labels": ["billing"], "contact": "ana@shop.example"},
    {"id": 312, "labels": ["spam"], "contact": "win-prize@lotto.example"},
    {"id": 318, "labels": ["spam", "bot"], "contact": "crypto-x@coins.example"},
]


def _session(*, turns: bool) -> Session:
    s = Session()
    s.call("list_conversations", {"status": "pending"}, {"payload": CONVERSATIONS})
    spam = [c for c in CONVERSATIONS if isinstance(c, dict) and "spam" in c["labels"]]
    note = "Closing: not a customer"
    calls: list[tuple[str, dict[str, JSON]]] = []
    for c in spam:
        assert isinstance(c, dict)
        calls.append(("create_message", {"conversation_id": c["id"], "content": f"{note} ({c['contact']})"}))
        calls.append(("toggle_status", {"conversation_id": c["id"], "status": "resolved"}))
    if not turns:  # every note first, then every resolution
        calls = calls[0::2] + calls[1::2]
    for tool, args in calls:
        s.call(tool, args, {"ok": True})
    return s


def test_calls_that_took_turns_over_the_elements_are_one_script_step_making_them_in_that_order() -> None:
    s = _session(turns=True)
    result = templatize([s.steps], name="t")
    group = result.template.step("create_message_toggle_status_each")
    assert group.kind == "script" and group.for_each is None
    assert group.input == {"items": "@select_payload"}
    assert {step.name for step in result.template.steps} == {
        "list_conversations_1",
        "select_payload",
        "create_message_toggle_status_each",
    }
    loop = next(loop for loop in result.loops if loop.step == group.name)
    assert loop.members == ("create_message_1", "toggle_status_1", "create_message_2", "toggle_status_2")
    assert verify(result, [s.steps]).verified
    # The dry replay runs the script: calls made in another order than recorded are differences.
    swapped = list(loop.members[:2][::-1] + loop.members[2:])
    found = dry_replay(result.template, result.input_values, s.steps, {group.name: swapped})
    assert {(d.step, d.field) for d in found} >= {(f"{group.name}.1", "tool"), (f"{group.name}.2", "tool")}


def test_calls_made_all_of_one_kind_first_stay_two_loops() -> None:
    s = _session(turns=False)
    result = templatize([s.steps], name="t")
    assert [loop.step for loop in result.loops] == ["create_message_each", "toggle_status_each"]
    assert result.template.step("toggle_status_each").depends_on == ("create_message_each",)
    assert verify(result, [s.steps]).verified


def test_an_interpolated_text_mixing_the_element_and_an_input_is_written_by_the_script() -> None:
    s = _session(turns=True)
    result = templatize([s.steps], name="t", inputs={"note": "Closing: not a customer"})
    group = result.template.step("create_message_toggle_status_each")
    assert group.input == {"items": "@select_payload", "value1": "@input.note"}
    assert group.script is not None
    assert 'text(input.value1) + " (" + text(at(item, ["contact"], "@item.contact")) + ")"' in group.script
    assert verify(result, [s.steps]).verified


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_saved_group_replays_each_element_s_calls_in_turn_on_another_number_of_elements(
    tmp_path: Path,
) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    async with gateway_with_clients({"shop": fixture_entry("ids")}, db=db) as gateway:
        async with gateway.connect(answers=False) as seeder:
            await until_listed(seeder, "shop__create_user")
            for name in ("Ann Lee", "Bob Stone"):
                await call_ok(seeder, "shop__create_user", {"name": name, "email": f"{name[:3].lower()}@example.com"})
        async with gateway.connect(answers=False) as agent:
            for user in (await call_ok(agent, "shop__list_users", {"limit": 100}))["users"]:
                await call_ok(agent, "shop__create_order", {"user_id": user["id"], "items": [{"sku": "tea", "qty": 1}]})
                noted = await call(agent, "shop__note", {"text": f"Tea ordered for {user['email']}"})
                assert not noted.is_error, text_of(noted)
            saved = await call(agent, "toolreel__save_template", {"name": "tea", "inputs": {}})
            assert not saved.is_error, text_of(saved)
            assert (saved.structured_content or {})["verified"] is True
            await call_ok(agent, "shop__create_user", {"name": "Cyd Marsh", "email": "cyd@example.com"})
            users = (await call_ok(agent, "shop__list_users", {"limit": 100}))["users"]
            replayed = await call(agent, "reel__tea", {})
            assert not replayed.is_error, text_of(replayed)
            execution_id = (replayed.meta or {})["toolreel/execution"]
    store = open_store(db)
    try:
        rows: list[StepRecord] = [r for r in store.get_steps(execution_id) if "." in r.name]
    finally:
        store.close()
    made = [(r.tool, r.resolved_input) for r in sorted(rows, key=lambda r: int(r.name.rsplit(".", 1)[1]))]
    expected: list[tuple[str | None, JSON]] = []
    for user in users:
        expected.append(("create_order", {"user_id": user["id"], "items": [{"sku": "tea", "qty": 1}]}))
        expected.append(("note", {"text": f"Tea ordered for {user['email']}"}))
    assert made == expected
