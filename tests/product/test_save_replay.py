"""Saving closes the loop by itself (SPEC §6): a plain `toolreel__save_template(name)` through `toolreel serve`
gives a template that replays with new inputs, the user may confirm the inputs in one form, a declined form
saves nothing, a template that would not replay its recording is refused, and every template is in a
client's very first `tools/list`. The gateway runs in-process (tests/inproc.py); `toolreel run` and a wrapped
server (`serve -- COMMAND`) are real processes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from fixtures._zygote import launch_command
from tests.gw import (
    PYTHON,
    REPO,
    VENV_BIN,
    Connected,
    call,
    fixture_entry,
    gateway_env,
    stdio_gateway,
    text_of,
    write_config,
)
from tests.inproc import gateway_in_process
from toolreel.core.model import StepRecord, TemplateDraft
from toolreel.core.store import open_store

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


SHOP = {"shop": fixture_entry("ids")}


def _setup(tmp_path: Path) -> tuple[dict[str, Any], str]:
    """The `shop` server and a store file (several gateways of one test share it)."""
    return SHOP, f"sqlite:///{tmp_path / 'store.db'}"


async def _ok(gw: Connected, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await call(gw, tool, arguments)
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def _shopping(gw: Connected) -> None:
    """An agent copying values by hand: the user's id, the order id, and both inside a sentence."""
    user = await _ok(gw, "shop__create_user", {"name": "Ada Lovelace", "email": "ada@example.com"})
    order = await _ok(gw, "shop__create_order", {"user_id": user["id"], "items": [{"sku": "cheese", "qty": 2}]})
    await _ok(gw, "shop__get_order", {"order_id": order["order_id"]})
    await call(gw, "shop__note", {"text": f"Order {order['order_id']} for Ada Lovelace is placed"})


def _steps(db: str, execution_id: str) -> dict[str, StepRecord]:
    store = open_store(db)
    try:
        return {s.name: s for s in store.get_steps(execution_id)}
    finally:
        store.close()


def _replayed_with(db: str, execution_id: str, name: str) -> None:
    """Every dependent step of the replay got the new run's values, none of the recorded ones."""
    steps = _steps(db, execution_id)
    user = steps["create_user_1"]
    assert isinstance(user.output, dict) and user.output["name"] == name
    order = steps["create_order_1"]
    assert isinstance(order.resolved_input, dict) and order.resolved_input["user_id"] == user.output["id"]
    assert isinstance(order.output, dict)
    assert steps["get_order_1"].resolved_input == {"order_id": order.output["order_id"]}
    assert steps["note_1"].resolved_input == {"text": f"Order {order.output['order_id']} for {name} is placed"}


async def test_a_plain_save_applies_the_likely_inputs_and_replays_with_new_ones(tmp_path: Path) -> None:
    servers, db = _setup(tmp_path)
    async with gateway_in_process(servers, db=db, answers=False) as gw:
        await _shopping(gw)
        saved = await call(gw, "toolreel__save_template", {"name": "shop"})
        assert not saved.is_error, text_of(saved)
        answer = saved.structured_content or {}
        first = saved.content[0]
        assert isinstance(first, types.TextContent) and first.text.startswith("Saved template 'shop'")
        assert "Verified" in first.text and "cannot show a confirmation form" in first.text
        assert answer["verified"] is True and answer["saved"] is True
        assert set(answer["template"]["inputs"]) == {"name", "email"}

        tools = {t.name: t for t in (await gw.client.list_tools()).tools}
        assert set(tools["reel__shop"].input_schema["required"]) == {"name", "email"}
        replayed = await call(gw, "reel__shop", {"name": "Grace Hopper", "email": "grace@example.com"})
        assert not replayed.is_error, text_of(replayed)
        execution_id = (replayed.meta or {})["toolreel/execution"]
    _replayed_with(db, execution_id, "Grace Hopper")


async def test_the_form_lets_the_user_untick_and_rename_inputs(tmp_path: Path) -> None:
    servers, db = _setup(tmp_path)
    async with gateway_in_process(servers, db=db) as gw:

        async def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
            assert isinstance(params, types.ElicitRequestFormParams)
            fields = params.requested_schema["properties"]
            assert fields["use_name"]["default"] is True and "'Ada Lovelace'" in fields["use_name"]["description"]
            assert "create_user_1" in fields["use_name"]["description"]
            return types.ElicitResult(action="accept", content={"use_email": False, "name_name": "customer"})

        gw.probe.elicit = answer
        await _shopping(gw)
        saved = await call(gw, "toolreel__save_template", {"name": "shop"})
        assert not saved.is_error, text_of(saved)
        assert len(gw.probe.elicitations) == 1
        template = (saved.structured_content or {})["template"]
        assert set(template["inputs"]) == {"customer"}
        replayed = await call(gw, "reel__shop", {"customer": "Linus Torvalds"})
        assert not replayed.is_error, text_of(replayed)
        execution_id = (replayed.meta or {})["toolreel/execution"]
    _replayed_with(db, execution_id, "Linus Torvalds")
    assert _steps(db, execution_id)["create_user_1"].resolved_input == {
        "name": "Linus Torvalds",
        "email": "ada@example.com",  # unticked: it stayed the recorded value
    }


async def test_a_declined_form_saves_nothing(tmp_path: Path) -> None:
    servers, db = _setup(tmp_path)
    async with gateway_in_process(servers, db=db) as gw:

        async def decline(params: types.ElicitRequestParams) -> types.ElicitResult:
            return types.ElicitResult(action="decline")

        gw.probe.elicit = decline
        await _shopping(gw)
        saved = await call(gw, "toolreel__save_template", {"name": "shop"})
        assert not saved.is_error, text_of(saved)
        assert (saved.structured_content or {})["saved"] is False
        assert "declined" in text_of(saved)
        listed = await _ok(gw, "toolreel__list_templates", {})
        assert listed["templates"] == []
        assert "reel__shop" not in {t.name for t in (await gw.client.list_tools()).tools}


async def test_templates_are_in_the_first_tools_list_with_annotations(tmp_path: Path) -> None:
    servers, db = _setup(tmp_path)
    async with gateway_in_process(servers, db=db, answers=False) as gw:
        await _shopping(gw)
        saved = await call(gw, "toolreel__save_template", {"name": "shop"})
        assert not saved.is_error, text_of(saved)
    async with gateway_in_process(servers, db=db) as fresh:  # a new gateway: its very first listing
        tools = {t.name: t for t in (await fresh.client.list_tools()).tools}
    assert "reel__shop" in tools
    status, delete = tools["toolreel__status"].annotations, tools["toolreel__delete_template"].annotations
    assert status is not None and status.read_only_hint is True
    assert delete is not None and delete.destructive_hint is True and delete.read_only_hint is False
    cancel = tools["toolreel__cancel_execution"].annotations
    assert cancel is not None and cancel.destructive_hint is True


# --- templates remember their servers ------------------------------------------------------------------------


async def _run_fresh(db: str, cwd: Path, *args: str, **env: str) -> tuple[int, dict[str, Any] | None, str]:
    """`toolreel run ...` in a new process, away from the repo, with no config anywhere."""
    command = [str(VENV_BIN / "toolreel"), "run", *args, "--json"]
    environment = {k: v for k, v in gateway_env(db, **env).items() if k != "PYTHONPATH"}
    with anyio.fail_after(120):
        done = await anyio.run_process(command, env=environment, check=False, cwd=cwd)
    report = json.loads(done.stdout) if done.returncode in (0, 1) and done.stdout.strip() else None
    return done.returncode, report, done.stderr.decode()


async def test_a_wrapped_server_session_replays_from_the_command_line_with_no_config(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    server = launch_command([PYTHON, "-m", "fixtures.ids"])
    wrap = ["--name", "shop", "--", *server]
    async with stdio_gateway(wrap, gateway_env(db), answers=False) as gw:
        user = await _ok(gw, "create_user", {"name": "Ada Lovelace", "email": "ada@example.com"})
        await _ok(gw, "get_user", {"id": user["id"]})
        saved = await call(gw, "toolreel__save_template", {"name": "wrapped"})
        assert not saved.is_error, text_of(saved)
        servers = (saved.structured_content or {})["template"]["servers"]
    assert servers == {"shop": {"command": server[0], "args": server[1:], "cwd": str(REPO)}}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, report, err = await _run_fresh(db, elsewhere, "wrapped", "-i", "name=Grace Hopper", "-i", "email=g@h.example")
    assert code == 0, err[-2000:]
    assert report is not None and report["status"] == "succeeded"
    got = _steps(db, report["execution_id"])["get_user_1"].output
    assert isinstance(got, dict) and got["name"] == "Grace Hopper" and got["email"] == "g@h.example"


async def test_an_aggregated_session_replays_with_no_config_and_its_secret_stays_a_reference(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    secret = "s3cr3t-value-abcdef123456"
    entry = fixture_entry("ids", env={"SHOP_API_TOKEN": secret, "PYTHONPATH": str(REPO)})
    config = write_config(tmp_path / "mcp.json", {"shop": entry})
    async with stdio_gateway(["--config", str(config)], gateway_env(db), answers=False) as gw:
        await _shopping(gw)
        saved = await call(gw, "toolreel__save_template", {"name": "shop"})
        assert not saved.is_error, text_of(saved)
        assert "SHOP_API_TOKEN" in text_of(saved)
    config.unlink()  # no config file anywhere
    store = open_store(db)
    try:
        definition = store.get_template("shop").definition
    finally:
        store.close()
    assert definition["servers"]["shop"]["env"]["SHOP_API_TOKEN"] == "${env:SHOP_API_TOKEN}"
    assert secret not in json.dumps(definition)

    code, _, err = await _run_fresh(db, tmp_path, "shop", "-i", "name=Grace Hopper", "-i", "email=g@h.example")
    assert code == 2 and "template 'shop'" in err and "SHOP_API_TOKEN" in err, err

    code, report, err = await _run_fresh(
        db, tmp_path, "shop", "-i", "name=Grace Hopper", "-i", "email=g@h.example", SHOP_API_TOKEN=secret
    )
    assert code == 0, err[-2000:]
    assert report is not None
    _replayed_with(db, report["execution_id"], "Grace Hopper")


async def test_a_remembered_server_that_no_longer_starts_is_named_with_the_template(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(db)
    try:
        definition = {
            "name": "gone",
            "steps": [{"name": "ping_1", "tool": "vanished__ping", "input": {}}],
            "servers": {"vanished": {"command": str(tmp_path / "no-such-server")}},
        }
        store.save_template(TemplateDraft("gone", definition))
    finally:
        store.close()
    code, _, err = await _run_fresh(db, tmp_path, "gone")
    assert code == 2, err
    assert "template 'gone'" in err and "server 'vanished'" in err and "no-such-server" in err


async def test_a_template_that_does_not_replay_a_recording_is_refused_unless_forced(tmp_path: Path) -> None:
    """Two recordings of 'one task' where the second never read the user back: the dry replay of the second
    cannot give `get_user_1` its input, so nothing is saved until force."""
    servers, db = _setup(tmp_path)
    ids: list[str] = []
    for name, read_back in (("Ada Lovelace", True), ("Grace Hopper", False)):
        async with gateway_in_process(servers, db=db, answers=False) as gw:
            created = await call(gw, "shop__create_user", {"name": name, "email": "x@example.com"})
            ids.append((created.meta or {})["toolreel/execution"])
            if read_back:
                user = created.structured_content or {}
                await _ok(gw, "shop__get_user", {"id": user["id"]})
    async with gateway_in_process(servers, db=db, answers=False) as gw:
        refused = await call(gw, "toolreel__save_template", {"name": "both", "execution_ids": ids})
        assert refused.is_error
        answer = refused.structured_content or {}
        assert answer["saved"] is False and answer["verified"] is False
        assert {(d["execution_id"], d["step"]) for d in answer["verification"]["differences"]} == {
            (ids[1], "get_user_1")
        }
        assert "NOT verified" in text_of(refused) and "force" in text_of(refused)
        assert (await _ok(gw, "toolreel__list_templates", {}))["templates"] == []
        forced = await call(gw, "toolreel__save_template", {"name": "both", "execution_ids": ids, "force": True})
        assert not forced.is_error, text_of(forced)
        assert (forced.structured_content or {})["saved"] is True


async def test_a_stateless_era_client_answers_the_form_through_input_required_results(tmp_path: Path) -> None:
    """A 2026-07-28 client (the SDK's default `Client`) cannot be pushed a request mid-call: the form comes
    back as an `InputRequiredResult`, the client's retry carries the answer, and the save goes on with it."""
    servers, db = _setup(tmp_path)
    async with gateway_in_process(servers, db=db, mode="auto") as gw:
        assert gw.modern

        async def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
            return types.ElicitResult(action="accept", content={"use_email": False, "name_name": "customer"})

        gw.probe.elicit = answer
        await _shopping(gw)
        saved = await call(gw, "toolreel__save_template", {"name": "shop"})
        assert not saved.is_error, text_of(saved)
        assert len(gw.probe.elicitations) == 1
        asked = gw.probe.elicitations[0]
        assert isinstance(asked, types.ElicitRequestFormParams) and "Save template 'shop'" in asked.message
        assert "cannot show a confirmation form" not in text_of(saved)
        assert set((saved.structured_content or {})["template"]["inputs"]) == {"customer"}
        replayed = await call(gw, "reel__shop", {"customer": "Grace Hopper"})
        assert not replayed.is_error, text_of(replayed)
        execution_id = (replayed.meta or {})["toolreel/execution"]
    assert _steps(db, execution_id)["create_user_1"].resolved_input == {
        "name": "Grace Hopper",
        "email": "ada@example.com",  # unticked in the form: it stayed the recorded value
    }


async def test_a_stateless_era_client_without_elicitation_is_told_the_inputs_were_applied(tmp_path: Path) -> None:
    servers, db = _setup(tmp_path)
    async with gateway_in_process(servers, db=db, mode="auto", answers=False) as gw:
        assert gw.modern
        await _shopping(gw)
        saved = await call(gw, "toolreel__save_template", {"name": "shop"})
        assert not saved.is_error, text_of(saved)
        assert gw.probe.elicitations == []
        assert "cannot show a confirmation form" in text_of(saved)
        assert set((saved.structured_content or {})["template"]["inputs"]) == {"name", "email"}


def test_a_worker_with_no_config_starts_every_server_the_saved_templates_remember(tmp_path: Path) -> None:
    from toolreel.replayer.cli import _upstreams_config

    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        for name, server in (("one", "alpha"), ("two", "beta"), ("three", "alpha"), ("four", "gamma")):
            step = {"name": "ping_1", "tool": f"{server}__ping", "input": {}}
            entry: dict[str, Any] = {"command": "echo", "args": [name]}
            if server == "gamma":  # needs a variable this process lacks: skipped, the others still start
                entry["env"] = {"TOKEN": "${env:TOOLREEL_TEST_UNSET_VARIABLE}"}
            store.save_template(TemplateDraft(name, {"name": name, "steps": [step], "servers": {server: entry}}))
        config = _upstreams_config(store, None, None)
    finally:
        store.close()
    assert sorted(s.name for s in config.servers) == ["alpha", "beta"]
    assert all(s.command == "echo" for s in config.servers)


async def test_a_dry_run_asks_nothing_saves_nothing_and_still_verifies(tmp_path: Path) -> None:
    servers, db = _setup(tmp_path)
    async with gateway_in_process(servers, db=db) as gw:
        await _shopping(gw)
        dry = await call(gw, "toolreel__save_template", {"name": "shop", "dry_run": True})
        assert not dry.is_error, text_of(dry)
        answer = dry.structured_content or {}
        assert answer["saved"] is False and answer["verified"] is True
        assert set(answer["template"]["inputs"]) == {"name", "email"}
        assert gw.probe.elicitations == [] and "this is a dry run" in text_of(dry)
        assert (await _ok(gw, "toolreel__list_templates", {}))["templates"] == []


async def test_a_login_token_is_passed_on_by_ref_at_replay_and_never_becomes_an_input(tmp_path: Path) -> None:
    """The token is redacted in the store, so only a ref to the step that produced it can replay the session."""
    db = f"sqlite:///{tmp_path / 'store.db'}"
    async with gateway_in_process({"desk": fixture_entry("desk")}, db=db, answers=False) as gw:
        session = await _ok(gw, "desk__login", {"user": "ann.lee", "password": "hunter2-hunter2"})
        written = {"session_token": "@login_1.session_token", "subject": "Printer on floor 3 is jammed"}
        ticket = await _ok(gw, "desk__open_ticket", written)
        by_hand = {"session_token": session["session_token"], "ticket": str(ticket["ticket"])}
        await _ok(gw, "desk__get_ticket", by_hand)
        saved = await call(gw, "toolreel__save_template", {"name": "desk"})
        assert not saved.is_error, text_of(saved)
        template = (saved.structured_content or {})["template"]
        steps = {step["name"]: step["input"] for step in template["steps"]}
        assert steps["open_ticket_1"]["session_token"] == "@login_1.session_token"
        assert steps["get_ticket_1"] == {
            "session_token": "@login_1.session_token",
            "ticket": "{{@open_ticket_1.ticket}}",
        }
        assert set(template["inputs"]) == {"user", "password", "subject"}
        assert template["inputs"]["password"]["secret"] is True
        # a secret input is never passed through a tool call: reel__desk does not even list it
        listed = {tool.name: tool for tool in (await gw.client.list_tools()).tools}
        assert "password" not in listed["reel__desk"].input_schema["properties"]
    code, report, err = await _run_fresh(
        db,
        tmp_path,
        "desk",
        "-i",
        "user=bo",
        "-i",
        "subject=Projector has no signal",
        "--secret",
        "password=env:DESK_PASSWORD",
        DESK_PASSWORD="another-secret",
    )
    assert code == 0, err[-2000:]
    assert report is not None and report["output"]["subject"] == "Projector has no signal"
