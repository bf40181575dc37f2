"""Loops and order in saved templates: repeated calls that walk a list become one `for_each` step (over a
filter when only some elements were handled, over one list input for one input per call, over lists zipped
for a group of calls per element); a template recorded on 3 elements replays right on 1 and on 5 with the
real replayer; steps depend where data flows and where order matters, and read-only calls replay in parallel;
an agent-written ref under a secret-looking key stays a ref; a redacted literal never verifies."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from tests.gw import Connected, call, call_ok, fixture_entry, text_of, until_listed
from tests.inproc import InProcessGateway, gateway_with_clients
from tests.recorded import Session
from toolreel.core.model import Execution, ExecutionMode, ExecutionStatus, StepRecord, StepStatus
from toolreel.core.secrets import REDACTED, Redactor
from toolreel.core.store import open_store
from toolreel.core.template import StepSpec, Template
from toolreel.replayer import dry_replay
from toolreel.templatizer import summary, templatize, verify
from toolreel.templatizer.cli import register

# --------------------------------------------------------------------------- folding (no process)


def _users(n: int, closed: tuple[int, ...] = ()) -> list[dict[str, Any]]:
    names = ["Ann Lee", "Bob Stone", "Cyd Marsh", "Dee Ford", "Eve Kahn"]
    return [
        {"id": f"usr_{i}f3a9c2e7b1d", "name": names[i], "state": "closed" if i in closed else "open"} for i in range(n)
    ]


def test_one_call_per_element_becomes_one_for_each_step() -> None:
    s = Session()
    users = _users(3)
    s.call("list_users", {"limit": 100}, {"users": users})
    for user in users:
        s.call("get_user", {"id": user["id"]}, {"id": user["id"], "email": f"{user['id']}@example.com"})
    s.call("notify", {"ids": [u["id"] for u in users]}, "ok")
    result = templatize([s.steps], name="t")
    assert [step.name for step in result.template.steps] == ["list_users_1", "get_user_each", "notify_1"]
    loop = result.template.step("get_user_each")
    assert (loop.for_each, loop.input) == ("@list_users_1.users", {"id": "@item.id"})
    assert result.template.step("notify_1").input == {"ids": "@list_users_1.users[*].id"}
    (folded,) = result.loops
    assert folded.members == ("get_user_1", "get_user_2", "get_user_3")
    verification = verify(result, [s.steps])
    assert verification.verified, verification.to_json()
    text = summary(result, verification, saved=None, note=None)
    assert "Loop: get_user_each calls svc__get_user for each element of @list_users_1.users" in text


def test_only_the_elements_a_field_tells_apart_become_a_filtered_loop() -> None:
    s = Session()
    users = _users(4, closed=(1,))
    s.call("list_users", {}, {"users": users})
    for user in users:
        if user["state"] == "open":
            s.call("close", {"id": user["id"]}, {"id": user["id"], "ok": True})
    result = templatize([s.steps], name="t")
    loop = result.template.step("close_each")
    assert loop.for_each == '@list_users_1.users[?(@.state == "open")]'
    assert loop.concurrency == 1  # a write: one at a time, in the recorded order
    assert verify(result, [s.steps]).verified


def test_elements_no_field_tells_apart_stay_unrolled_and_the_summary_says_why() -> None:
    s = Session()
    users = _users(4)
    s.call("list_users", {}, {"users": users})
    for i in (0, 2):
        s.call("close", {"id": users[i]["id"]}, {"ok": True})
    result = templatize([s.steps], name="t")
    assert {"close_1", "close_2"} <= {step.name for step in result.template.steps}
    assert not result.loops
    (kept,) = result.unrolled
    assert kept.steps == ("close_1", "close_2") and "no field tells the handled ones apart" in kept.why
    text = summary(result, verify(result, [s.steps]), saved=None, note=None)
    assert "Kept unrolled: close_1, close_2: they handle elements [0, 2]" in text


def test_one_input_per_call_becomes_one_list_input() -> None:
    s = Session()
    titles = ["Fix the printer", "Order toner", "Call the landlord"]
    for i, title in enumerate(titles):
        s.call("create_issue", {"title": title, "team": "ops"}, {"id": f"ISS-99{i}"})
    named = {"title": titles[0], "title_2": titles[1], "title_3": titles[2]}
    result = templatize([s.steps], name="t", inputs=named)
    assert set(result.template.inputs) == {"titles"}
    assert result.template.inputs["titles"].type == "array"
    assert result.input_values == {"titles": titles}
    loop = result.template.step("create_issue_each")
    assert (loop.for_each, loop.input) == ("@input.titles", {"title": "@item", "team": "ops"})
    assert result.loops[0].folded_inputs == ("title", "title_2", "title_3")
    assert verify(result, [s.steps]).verified


def test_a_group_of_calls_per_element_walks_the_lists_together() -> None:
    s = Session()
    users = _users(3)
    s.call("list_users", {}, {"users": users})
    for i, user in enumerate(users):
        s.call("create_order", {"user_id": user["id"]}, {"order_id": f"ord_{i}9e8d7c6b5a4"})
        s.call("note", {"text": f"Order ord_{i}9e8d7c6b5a4 placed for {user['name']}"}, "ok")
    result = templatize([s.steps], name="t")
    assert result.template.step("create_order_each").for_each == "@list_users_1.users"
    zipped = result.template.step("note_each_items")
    assert zipped.kind == "code" and zipped.input == {
        "list_users_1_users": "@list_users_1.users",
        "create_order_each": "@create_order_each",
    }
    note = result.template.step("note_each")
    assert note.for_each == "@note_each_items"
    assert note.input == {
        "text": "Order {{@item.create_order_each.order_id}} placed for {{@item.list_users_1_users.name}}"
    }
    verification = verify(result, [s.steps])  # the zip runs in its sandbox
    assert verification.verified, verification.to_json()


def test_a_positional_ref_left_into_a_loop_is_named_in_the_summary() -> None:
    s = Session()
    for i, title in enumerate(["Fix the printer", "Order toner"]):
        s.call("create_issue", {"title": title}, {"id": f"ISS-7731{i}"})
    s.call("post", {"text": "Created ISS-77310 and ISS-77311"}, "ok")
    result = templatize([s.steps], name="t", inputs={"title": "Fix the printer", "title_2": "Order toner"})
    assert result.template.step("post_1").input == {
        "text": "Created {{@create_issue_each[0].id}} and {{@create_issue_each[1].id}}"
    }
    (note,) = result.unrolled
    assert note.steps == ("post_1",) and "by position" in note.why


def test_the_same_call_repeated_is_no_loop() -> None:
    s = Session()
    s.call("status", {"service": "api"}, {"state": "starting"})
    s.call("status", {"service": "api"}, {"state": "up"})
    result = templatize([s.steps], name="t")
    assert [step.name for step in result.template.steps] == ["status_1", "status_2"]
    assert "the same call repeated" in result.unrolled[0].why


def test_order_is_kept_across_servers_and_reads_wait_only_for_writes() -> None:
    """Servers share state a template cannot see (the file one writes, another commits): writes keep their
    order across servers; reads with no data between them run in parallel."""
    s = Session()
    s.call("write_file", {"path": "/a.txt", "text": "hello"}, "ok", server="fs")
    s.call("git_add", {"files": ["/a.txt"]}, "ok", server="git")
    s.call("read_file", {"path": "/a.txt"}, "hello", server="fs")
    s.call("git_status", {}, "clean", server="git")
    s.call("send", {"text": "done"}, "ok", server="chat")
    result = templatize([s.steps], name="t", read_only={"fs__read_file", "git__git_status"})
    depends = {step.name: step.depends_on for step in result.template.steps}
    assert depends == {
        "write_file_1": (),
        "git_add_1": ("write_file_1",),  # another server, the same files
        "read_file_1": ("git_add_1",),
        "git_status_1": ("git_add_1",),  # two reads: in parallel
        "send_1": ("git_add_1", "read_file_1", "git_status_1"),
    }


# --------------------------------------------------------------------------- secrets


def test_an_agent_written_ref_under_a_secret_key_is_stored_and_stays_a_ref() -> None:
    """The store keeps the ref the agent wrote (a ref is no secret) and redacts the value it resolved to."""
    s = Session()
    s.call("create_upload_session", {"name": "report.pdf"}, {"id": "ups_7Hq2Lw9xRt4Z"})
    s.call("upload", {"session_id": "ups_7Hq2Lw9xRt4Z", "data": "abc"}, {"ok": True})
    raw = s.steps[1].replace(input={"session_id": "@create_upload_session_1.id", "data": "abc"})
    stored = Redactor().step(raw)
    assert stored.resolved_input == {"session_id": REDACTED, "data": "abc"}
    assert stored.input == {"session_id": "@create_upload_session_1.id", "data": "abc"}
    recording = [s.steps[0], stored]
    result = templatize([recording], name="t")
    assert result.template.step("upload_1").input == {"session_id": "@create_upload_session_1.id", "data": "abc"}
    assert verify(result, [recording]).verified


def test_a_template_holding_a_redacted_literal_never_verifies() -> None:
    s = Session()
    s.call("upload", {"session_id": REDACTED, "data": "abc"}, {"ok": True}, redacted=("$.session_id",))
    result = templatize([s.steps], name="t")
    assert result.template.step("upload_1").input == {"session_id": "@input.session_id", "data": "abc"}
    kept_literal = StepSpec(name="upload_1", tool="svc__upload", input={"session_id": REDACTED, "data": "abc"})
    template = Template(name="t", steps=(kept_literal,))
    broken = dataclasses.replace(result, template=template, input_values={}, run_inputs=())
    verification = verify(broken, [s.steps])  # the recording holds the same placeholder: only this check sees it
    assert not verification.verified
    (mismatch,) = verification.mismatches
    assert (mismatch.step, mismatch.field) == ("upload_1", "$.session_id") and "redacted" in mismatch.got


# --------------------------------------------------------------------------- replays on real servers

SHOP = {"shop": fixture_entry("ids")}


async def _seed(gateway: InProcessGateway, names: list[str]) -> None:
    """Users created by a client of their own: the world the workflow finds, not part of its recording."""
    async with gateway.connect(answers=False) as seeder:
        await until_listed(seeder, "shop__create_user")
        for name in names:
            await call_ok(
                seeder, "shop__create_user", {"name": name, "email": f"{name.split()[0].lower()}@example.com"}
            )


async def _orders_for_everyone(gw: Connected) -> None:
    """The agent's task: an order for every user, and a note naming the order and the user."""
    page = await call_ok(gw, "shop__list_users", {"limit": 100})
    for user in page["users"]:
        order = await call_ok(gw, "shop__create_order", {"user_id": user["id"], "items": [{"sku": "cheese", "qty": 1}]})
        result = await call(gw, "shop__note", {"text": f"Order {order['order_id']} placed for {user['name']}"})
        assert not result.is_error, text_of(result)


@asynccontextmanager
async def _world(db: str, names: list[str]) -> AsyncIterator[InProcessGateway]:
    """A gateway with a fresh `shop` server holding exactly these users."""
    async with gateway_with_clients(SHOP, db=db) as gateway:
        await _seed(gateway, names)
        yield gateway


def _rows(db: str, execution_id: str) -> dict[str, StepRecord]:
    store = open_store(db)
    try:
        return {row.name: row for row in store.get_steps(execution_id)}
    finally:
        store.close()


async def _replay(gateway: InProcessGateway, db: str) -> tuple[list[dict[str, Any]], dict[str, StepRecord]]:
    async with gateway.connect(answers=False) as client:
        users = (await call_ok(client, "shop__list_users", {"limit": 100}))["users"]
        replayed = await call(client, "reel__orders", {})
        assert not replayed.is_error, text_of(replayed)
        execution_id = (replayed.meta or {})["toolreel/execution"]
    return users, _rows(db, execution_id)


def _made_the_right_calls(users: list[dict[str, Any]], rows: dict[str, StepRecord]) -> None:
    """Exactly one order and one note per user of this world, each note naming its own order and user."""
    orders = sorted((n for n in rows if n.startswith("create_order_each[")), key=lambda n: int(n[18:-1]))
    notes = sorted((n for n in rows if n.startswith("note_each[")), key=lambda n: int(n[10:-1]))
    assert len(orders) == len(notes) == len(users)
    for user, order_row, note_row in zip(users, orders, notes, strict=True):
        order = rows[order_row]
        assert order.status == StepStatus.SUCCEEDED
        assert order.resolved_input == {"user_id": user["id"], "items": [{"sku": "cheese", "qty": 1}]}
        assert isinstance(order.output, dict)
        assert rows[note_row].resolved_input == {"text": f"Order {order.output['order_id']} placed for {user['name']}"}


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_loop_recorded_on_three_users_replays_on_one_and_on_five(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    async with _world(db, ["Ann Lee", "Bob Stone", "Cyd Marsh"]) as gateway:
        async with gateway.connect(answers=False) as agent:
            await _orders_for_everyone(agent)
            saved = await call(agent, "toolreel__save_template", {"name": "orders", "inputs": {}})
        assert not saved.is_error, text_of(saved)
        answer = saved.structured_content or {}
        assert answer["verified"] is True and answer["saved"] is True
        assert [loop["step"] for loop in answer["loops"]] == ["create_order_each", "note_each"]
        assert "Loop: create_order_each" in text_of(saved)
        await _seed(gateway, ["Dee Ford", "Eve Kahn"])
        users, rows = await _replay(gateway, db)
        assert len(users) == 5
        _made_the_right_calls(users, rows)
    async with _world(db, ["Fay Moss"]) as gateway:
        users, rows = await _replay(gateway, db)
        assert len(users) == 1
        _made_the_right_calls(users, rows)


@pytest.mark.anyio
@pytest.mark.slow
async def test_independent_read_only_steps_replay_at_once_and_a_write_waits_for_them(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    async with (
        gateway_with_clients({"rv": fixture_entry("rendezvous")}, db=db) as gateway,
        gateway.connect(answers=False) as agent,
    ):
        await until_listed(agent, "rv__look")
        for name in ("alpha", "beta"):
            await call_ok(agent, "rv__look", {"name": name})
        await call_ok(agent, "rv__log", {"text": "seen both"})
        saved = await call(agent, "toolreel__save_template", {"name": "looks", "inputs": {}})
        assert not saved.is_error, text_of(saved)
        steps = {s["name"]: s for s in (saved.structured_content or {})["template"]["steps"]}
        assert "depends_on" not in steps["look_2"]  # both only read, no data between them
        assert steps["log_1"]["depends_on"] == ["look_1", "look_2"]  # a write after the reads it follows
        await call_ok(agent, "rv__expect", {"n": 2})  # from now on each look waits to meet the other
        replayed = await call(agent, "reel__looks", {})
        assert not replayed.is_error, text_of(replayed)
        execution_id = (replayed.meta or {})["toolreel/execution"]
    rows = _rows(db, execution_id)
    assert rows["look_1"].output == {"name": "alpha", "seen": ["beta"]}
    assert rows["look_2"].output == {"name": "beta", "seen": ["alpha"]}
    log = rows["log_1"].output
    assert (isinstance(log, dict) and log["calls"][-3:] == ["look alpha", "look beta", "log seen both"]) or (
        isinstance(log, dict) and log["calls"][-3:] == ["look beta", "look alpha", "log seen both"]
    )


# --------------------------------------------------------------------------- several recordings


def _welcome(execution: str, name: str, email: str, user_id: str) -> list[StepRecord]:
    s = Session(execution=execution)
    s.call("create_user", {"name": name, "email": email}, {"id": user_id})
    s.call("note", {"text": f"Welcome {name}!", "to": email}, "ok")
    return s.steps


def test_named_inputs_with_several_recordings_verify_each_with_its_own_values() -> None:
    recordings = [
        _welcome("e1", "Ada Lovelace", "ada@example.com", "usr_19f8e7d6c5b4"),
        _welcome("e2", "Grace Hopper", "grace@example.com", "usr_29f8e7d6c5b4"),
    ]
    result = templatize(recordings, name="t", inputs={"who": "Ada Lovelace", "email": "ada@example.com"})
    assert set(result.template.inputs) == {"who", "email"}
    assert result.template.step("note_1").input == {"text": "Welcome {{@input.who}}!", "to": "@input.email"}
    assert result.run_inputs[1] == {"who": "Grace Hopper", "email": "grace@example.com"}
    verification = verify(result, recordings)
    assert verification.verified, verification.to_json()


def test_a_value_in_lockstep_with_an_earlier_output_in_every_recording_is_a_ref() -> None:
    recordings = []
    # a record's own timestamp is never a producer in one recording (it would match by chance); lockstep
    # across recordings is the evidence that the next call copied it
    for execution, when in (("e1", "2026-11-22T08:05:41+01:00"), ("e2", "2026-11-23T09:15:00+01:00")):
        s = Session(execution=execution)
        s.call("get_document", {"id": "doc_1"}, {"id": "doc_1", "title": "Plan", "updated_at": when})
        s.call("list_changes", {"since": when, "kind": "edit"}, "ok")
        recordings.append(s.steps)
    result = templatize(recordings, name="t")
    assert result.template.step("list_changes_1").input == {"since": "@get_document_1.updated_at", "kind": "edit"}
    assert not result.template.inputs
    (inference,) = [i for i in result.applied if i.step == "list_changes_1"]
    assert "lockstep" in inference.evidence
    assert verify(result, recordings).verified


# --------------------------------------------------------------------------- picks by identity


def _channels(names: list[str]) -> list[dict[str, Any]]:
    return [{"id": f"C0{i}X9Y8Z7W6", "name": name} for i, name in enumerate(names)]


def _post_to_triage(names: list[str]) -> list[StepRecord]:
    s = Session()
    channels = _channels(names)
    s.call("list_channels", {}, {"channels": channels})
    target = next(c for c in channels if c["name"] == "triage")
    s.call("post", {"channel": target["id"], "text": "New incident"}, {"ts": "1700000000.000100"})
    return s.steps


def test_an_element_taken_by_position_is_picked_by_its_name() -> None:
    steps = _post_to_triage(["general", "random", "ops", "alerts", "triage"])
    result = templatize([steps], name="t")
    assert result.template.step("post_1").input == {"channel": "@pick_triage.id", "text": "New incident"}
    pick = result.template.step("pick_triage")
    assert pick.kind == "code"
    assert pick.input == {"items": "@list_channels_1.channels", "key": "name", "value": "triage"}
    assert verify(result, [steps]).verified
    text = summary(result, verify(result, [steps]), saved=None, note=None)
    assert "Picked by name, not position: @list_channels_1.channels[4] is now the element whose name is triage" in text
    # In a world where a channel was added before it, the dry replay of the same template still posts to triage.
    shifted = _post_to_triage(["general", "random", "new-one", "ops", "alerts", "triage"])
    assert dry_replay(result.template, {}, shifted) == []


def test_the_pick_takes_the_input_that_named_the_element() -> None:
    steps = _post_to_triage(["general", "triage", "ops"])
    result = templatize([steps], name="t", inputs={"channel_name": "triage"})
    pick = result.template.step("pick_triage")
    assert pick.input == {"items": "@list_channels_1.channels", "key": "name", "value": "@input.channel_name"}
    assert set(result.template.inputs) == {"channel_name"}
    assert verify(result, [steps]).verified


def test_the_first_element_and_elements_without_a_unique_name_stay_positional() -> None:
    first = templatize([_post_to_triage(["triage", "general"])], name="t")
    assert first.template.step("post_1").input["channel"] == "@list_channels_1.channels[0].id"
    s = Session()
    channels = [{"id": "C0AX9Y8Z7W6", "name": "ops"}, {"id": "C0BX9Y8Z7W6", "name": "ops"}]
    s.call("list_channels", {}, {"channels": channels})
    s.call("post", {"channel": "C0BX9Y8Z7W6", "text": "hi"}, "ok")
    twins = templatize([s.steps], name="t")
    assert twins.template.step("post_1").input["channel"] == "@list_channels_1.channels[1].id"
    assert not twins.picks


def test_one_call_per_element_of_a_list_the_user_gave_walks_that_list() -> None:
    s = Session()
    emails = ["ann@example.com", "bob@example.com", "cyd@example.com"]
    for email in emails:
        s.call("invite", {"email": email, "role": "viewer"}, {"invited": email})
    result = templatize([s.steps], name="t", inputs={"emails": emails})
    loop = result.template.step("invite_each")
    assert (loop.for_each, loop.input) == ("@input.emails", {"email": "@item", "role": "viewer"})
    assert set(result.template.inputs) == {"emails"}
    assert verify(result, [s.steps]).verified


def test_the_templatize_command_says_what_became_a_loop(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    s = Session(execution="exec-loop")
    users = _users(3)
    s.call("list_users", {}, {"users": users})
    for user in users:
        s.call("get_user", {"id": user["id"]}, {"id": user["id"]})
    store = open_store(url)
    try:
        store.create_execution(
            Execution("exec-loop", ExecutionMode.RECORD, ExecutionStatus.RECORDING, created_at=1.0, updated_at=1.0)
        )
        store.put_steps(s.steps)
    finally:
        store.close()
    app = typer.Typer()
    register(app)
    result = CliRunner().invoke(app, ["templatize", "exec-loop", "--db", url])
    assert result.exit_code == 0, result.stderr
    assert "for_each: '@list_users_1.users'" in result.stdout
    assert "# loop: get_user_each over @list_users_1.users (3 calls when recorded, one per element)" in result.stderr
    assert "# verified: true" in result.stderr


def test_recordings_with_other_numbers_of_elements_confirm_one_loop() -> None:
    recordings = []
    for execution, count in (("e1", 3), ("e2", 2), ("e3", 0)):
        s = Session(execution=execution)
        users = [{"id": f"usr_{execution}{i}a1b2c3d4e5", "name": f"Name {execution}{i}"} for i in range(count)]
        s.call("list_users", {"limit": 100}, {"users": users})
        for i, user in enumerate(users):
            s.call("create_order", {"user_id": user["id"]}, {"order_id": f"ord_{execution}{i}9e8d7c6b5a4"})
        recordings.append(s.steps)
    result = templatize(recordings, name="t")
    assert result.template.step("create_order_each").for_each == "@list_users_1.users"
    assert result.loops[0].run_members == (
        ("create_order_1", "create_order_2", "create_order_3"),
        ("create_order_1", "create_order_2"),
        (),  # an empty list: no call, as the loop makes none
    )
    verification = verify(result, recordings)
    assert verification.verified and verification.recordings == 3, verification.to_json()


def test_a_pick_by_a_name_written_with_accents_gets_a_legal_step_name() -> None:
    s = Session()
    projects = [{"id": 9100 + i, "name": name} for i, name in enumerate(["Atlas", "Birch", "Café Nord", "Dune"])]
    s.call("list_projects", {}, {"projects": projects})
    s.call("create_invoice", {"project_id": 9102}, {"id": "inv_1"})
    result = templatize([s.steps], name="t")
    assert "pick_cafe_nord" in {step.name for step in result.template.steps}
    assert verify(result, [s.steps]).verified


def test_a_pick_takes_the_display_name_a_person_says_before_the_slug() -> None:
    s = Session()
    collections = [
        {"id": f"6511b2c3d4e5f6a7b8c9d0{i}1", "displayName": name, "slug": name.lower().replace(" ", "-")}
        for i, name in enumerate(["Authors", "Blog Posts", "Case Studies"])
    ]
    s.call("collections_list", {"site_id": "6500a1b2c3d4e5f6"}, {"collections": collections})
    s.call("list_items", {"collection_id": "6511b2c3d4e5f6a7b8c9d011"}, {"items": []})
    result = templatize([s.steps], name="t")
    assert result.template.step("pick_blog_posts").input == {
        "items": "@collections_list_1.collections",
        "key": "displayName",
        "value": "Blog Posts",
    }
