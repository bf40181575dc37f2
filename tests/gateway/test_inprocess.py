"""Gateway behaviour tested in-process (tests/inproc.py): forwarding, recording, refs and the
management tools, in both protocol eras, with the gateway in the test's own event loop."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from fixtures._zygote import launch_command
from tests.gw import MODES, TOOLREEL, fixture_entry, status, text_of, unsaved, wait_until
from tests.inproc import gateway_in_process

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SERVERS = {"feat": fixture_entry("features")}


@pytest.mark.parametrize("mode", MODES)
async def test_tools_are_listed_with_their_server_prefix_beside_the_management_tools(mode: str) -> None:
    with anyio.fail_after(60):
        async with gateway_in_process(SERVERS, mode=mode) as gw:
            names = {tool.name for tool in (await gw.client.list_tools()).tools}
    assert {"feat__echo", "feat__add", "toolreel__status", "toolreel__save_template"} <= names
    assert "echo" not in names


@pytest.mark.parametrize("mode", MODES)
async def test_a_call_is_forwarded_and_recorded_as_a_named_step(mode: str) -> None:
    with anyio.fail_after(60):
        async with gateway_in_process(SERVERS, mode=mode) as gw:
            first = await gw.client.call_tool("feat__add", {"a": 2, "b": 3})
            second = await gw.client.call_tool("feat__add", {"a": 10, "b": 1})
            state = await status(gw)
    assert first.structured_content == {"sum": 5.0, "operands": {"a": 2.0, "b": 3.0}}
    assert (first.meta or {})["toolreel/step"] == "add_1"
    assert (second.meta or {})["toolreel/step"] == "add_2"
    steps = state["steps"]
    assert [(s["name"], s["tool"], s["status"]) for s in steps] == [
        ("add_1", "feat__add", "succeeded"),
        ("add_2", "feat__add", "succeeded"),
    ]


async def test_a_ref_is_resolved_before_the_call_is_forwarded() -> None:
    with anyio.fail_after(60):
        async with gateway_in_process(SERVERS) as gw:
            await gw.client.call_tool("feat__add", {"a": 20, "b": 22})
            echoed = await gw.client.call_tool("feat__echo", {"text": "sum is {{@add_1.sum}}"})
            whole = await gw.client.call_tool("feat__add", {"a": "@add_1.sum", "b": 1})
    assert text_of(echoed) == "sum is 42.0"
    assert (whole.structured_content or {})["sum"] == 43


async def test_a_ref_that_does_not_resolve_is_not_forwarded_and_names_what_exists() -> None:
    with anyio.fail_after(60):
        async with gateway_in_process(SERVERS) as gw:
            await gw.client.call_tool("feat__add", {"a": 1, "b": 1})
            wrong_step = await gw.client.call_tool("feat__echo", {"text": "@ad_1.sum"})
            wrong_field = await gw.client.call_tool("feat__echo", {"text": "@add_1.total"})
            state = await status(gw)
    assert wrong_step.is_error and "add_1" in text_of(wrong_step)
    assert wrong_field.is_error and "sum" in text_of(wrong_field)
    # nothing was forwarded: only the one real call is a step
    assert [s["name"] for s in state["steps"] if s["status"] == "succeeded"] == ["add_1"]


async def test_executions_show_json_is_the_same_view_as_get_execution(tmp_path: Path) -> None:
    """One execution view: the CLI's --json and the management tool return the same JSON."""
    db = f"sqlite:///{tmp_path / 'store.db'}"
    with anyio.fail_after(90):
        async with gateway_in_process(SERVERS, db=db) as gw:
            await gw.client.call_tool("feat__add", {"a": 1, "b": 2})
            await gw.client.call_tool("feat__echo", {"text": "{{@add_1.sum}}"})
            execution = (await status(gw))["execution_id"]

            async def saved() -> bool:
                return await unsaved(gw) == 0

            await wait_until(saved, 60, "the recording to be saved")
            tool = await gw.client.call_tool("toolreel__get_execution", {"id": execution})
        done = await anyio.run_process(
            launch_command([str(TOOLREEL), "executions", "show", execution, "--json", "--db", db]), check=False
        )
    assert done.returncode == 0, done.stderr.decode()
    shown = json.loads(done.stdout)
    assert shown == tool.structured_content
    assert [(s["name"], s["input"]) for s in shown["steps"]] == [
        ("add_1", {"a": 1, "b": 2}),
        ("echo_1", {"text": "{{@add_1.sum}}"}),
    ]
    assert shown["steps"][1]["resolved_input"] == {"text": "3.0"}
    assert shown["mode"] == "record"
