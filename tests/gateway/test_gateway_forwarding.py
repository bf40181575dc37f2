"""What the gateway forwards, with an `mcp` client in both protocol eras, the gateway in-process
(tests/inproc.py: its Front and hook in the test's event loop, the upstreams real fixture servers).

One gateway per era (fixtures `features` and `ids` behind it) and one direct connection to the same
fixture serve the whole module; results through the gateway must equal the direct ones except for
the gateway's `_meta["toolreel/..."]` keys. What only a process shows (stdio framing) is in
test_gateway_stdio.py.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from tests import inproc
from tests.gw import (
    MODES,
    Connected,
    call,
    direct_fixture,
    fixture_entry,
    result_dict,
    status,
    strip_toolreel_meta,
    text_of,
    wait_until,
    without_name,
)
from tests.inproc import gateway_in_process

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.filterwarnings(inproc.SDK_LOG_DEPRECATION),
    pytest.mark.xdist_group("gateway_forwarding"),
]

TIMEOUT = 2  # the `feat` server's per-call timeout (config key `timeout`)


@dataclass
class Env:
    gw: Connected
    direct: Connected
    cancel_log: Path
    mode: str


@pytest.fixture(scope="module", params=MODES)
async def env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    tmp = tmp_path_factory.mktemp(f"stdio-{request.param}")
    cancel_log = tmp / "cancel.log"
    feat_env = {"FIXTURE_CANCEL_LOG": str(cancel_log)}
    servers = {"feat": fixture_entry("features", timeout=TIMEOUT, env=feat_env), "ids": fixture_entry("ids")}
    async with (
        gateway_in_process(servers, db=f"sqlite:///{tmp / 'store.db'}", mode=request.param) as gw,
        direct_fixture("features", mode=request.param) as direct,
    ):
        yield Env(gw, direct, cancel_log, request.param)


async def _same_result(env: Env, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    through = result_dict(await call(env.gw, f"feat__{tool}", arguments))
    direct = result_dict(await call(env.direct, tool, arguments))
    assert strip_toolreel_meta(through) == strip_toolreel_meta(direct)
    return through


# --- the handshake -----------------------------------------------------------------------------------------------


async def test_negotiates_the_clients_era(env: Env) -> None:
    expected = "2026-07-28" if env.mode == "auto" else "2025-11-25"
    assert env.gw.client.protocol_version == expected


async def test_upstreams_that_speak_both_eras_are_spoken_to_in_the_clients_era(env: Env) -> None:
    """The one client of a stdio gateway gets what it would get from the servers directly: no era
    to translate between, and the server does not handle a stateless request per call."""
    expected = "2026-07-28" if env.mode == "auto" else "2025-11-25"
    upstreams = (await status(env.gw))["upstreams"]
    assert {u["name"]: u["protocol"] for u in upstreams} == {"feat": expected, "ids": expected}


async def test_instructions_teach_refs_and_carry_upstream_instructions(env: Env) -> None:
    instructions = env.gw.client.instructions or ""
    assert "<tool>_<n>" in instructions and "{{@" in instructions and "@@" in instructions
    assert "toolreel fixture 'features'" in instructions


# --- tools ---------------------------------------------------------------------------------------------------------


async def test_tools_are_listed_as_server__tool_with_everything_else_unchanged(env: Env) -> None:
    through = {t.name: t for t in (await env.gw.client.list_tools()).tools}
    direct = (await env.direct.client.list_tools()).tools
    for tool in direct:
        assert f"feat__{tool.name}" in through, sorted(through)
        assert without_name(through[f"feat__{tool.name}"]) == without_name(tool)
    assert "ids__create_user" in through
    assert {"toolreel__status", "toolreel__set_step_result"} <= set(through)


async def test_output_schema_with_defs_annotations_and_tool_meta_pass_through(env: Env) -> None:
    tools = {t.name: result_dict(t) for t in (await env.gw.client.list_tools()).tools}
    add = tools["feat__add"]
    assert "$defs" in add["outputSchema"], add["outputSchema"]
    annotated = tools["feat__annotated"]
    assert annotated["annotations"]["readOnlyHint"] is True and annotated["annotations"]["title"] == "Annotated tool"
    assert annotated["_meta"] == {"fixtures/tool": {"kind": "annotated"}}


async def test_text_result_is_forwarded_unchanged(env: Env) -> None:
    through = await _same_result(env, "echo", {"text": "héllo wörld ✓"})
    assert through["content"] == [{"type": "text", "text": "héllo wörld ✓"}]


async def test_structured_content_is_forwarded_unchanged(env: Env) -> None:
    through = await _same_result(env, "add", {"a": 2, "b": 40.5})
    assert through["structuredContent"] == {"sum": 42.5, "operands": {"a": 2.0, "b": 40.5}}


async def test_image_audio_and_embedded_resource_are_forwarded_unchanged(env: Env) -> None:
    through = await _same_result(env, "image", {})
    assert [item["type"] for item in through["content"]] == ["image", "audio", "resource"]


async def test_content_annotations_and_result_meta_are_forwarded_unchanged(env: Env) -> None:
    through = await _same_result(env, "annotated", {})
    assert through["content"][0]["annotations"] == {"audience": ["user", "assistant"], "priority": 0.7}
    assert through["content"][0]["_meta"] == {"fixtures/content": {"index": 0}}
    assert through["_meta"]["fixtures/result"] == {"kind": "annotated"}


async def test_error_result_is_forwarded_unchanged(env: Env) -> None:
    through = await _same_result(env, "fail", {"message": "it broke"})
    assert through["isError"] is True


async def test_result_meta_names_step_and_execution(env: Env) -> None:
    result = await call(env.gw, "feat__echo", {"text": "x"})
    meta = result.meta or {}
    assert str(meta.get("toolreel/step", "")).startswith("echo_")
    assert isinstance(meta.get("toolreel/execution"), str) and meta["toolreel/execution"]


async def test_unknown_tool_error_names_the_servers(env: Env) -> None:
    result = await call(env.gw, "nosuch__tool", {})
    assert result.is_error
    text = text_of(result)
    assert "nosuch__tool" in text and "feat" in text and "ids" in text


# --- notifications -------------------------------------------------------------------------------------------------


async def test_progress_notifications_reach_the_client(env: Env) -> None:
    seen: list[tuple[float, float | None, str | None]] = []
    direct_seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def on_direct(progress: float, total: float | None, message: str | None) -> None:
        direct_seen.append((progress, total, message))

    result = await call(env.gw, "feat__progress", {"steps": 3}, progress_callback=on_progress)
    await call(env.direct, "progress", {"steps": 3}, progress_callback=on_direct)
    assert text_of(result) == "completed 3 steps"
    assert seen == direct_seen == [(1, 3, "step 1 of 3"), (2, 3, "step 2 of 3"), (3, 3, "step 3 of 3")]


async def test_log_messages_reach_the_client(env: Env) -> None:
    before = len(env.gw.probe.logs)
    result = await call(env.gw, "feat__log", {"level": "warning", "message": "disk almost full"})
    assert text_of(result) == "logged warning: disk almost full"
    await env.gw.probe.wait_for(lambda: len(env.gw.probe.logs) > before, what="the log message")
    log = env.gw.probe.logs[-1]
    assert (log.level, log.data, log.logger) == ("warning", "disk almost full", "fixtures.features")


async def test_set_level_is_forwarded_to_upstreams(env: Env) -> None:
    if env.mode == "auto":
        pytest.skip("logging/setLevel does not exist on 2026-07-28 (log level travels in each request's _meta)")
    session = env.gw.client.session
    await session.send_request(
        types.SetLevelRequest(params=types.SetLevelRequestParams(level="error")), types.EmptyResult
    )
    try:
        quiet = await call(env.gw, "feat__log", {"level": "info", "message": "chatter"})
        loud = await call(env.gw, "feat__log", {"level": "error", "message": "alarm"})
    finally:
        await session.send_request(
            types.SetLevelRequest(params=types.SetLevelRequestParams(level="debug")), types.EmptyResult
        )
    assert text_of(quiet) == "log at info not requested"
    assert text_of(loud) == "logged error: alarm"


async def test_tools_list_changed_reaches_the_client_and_the_list_changes(env: Env) -> None:
    async def names() -> set[str]:
        return {t.name for t in (await env.gw.client.list_tools()).tools}

    assert "feat__extra" not in await names()
    if env.mode == "auto":
        async with env.gw.client.listen(tools_list_changed=True) as subscription:
            assert text_of(await call(env.gw, "feat__toggle_tool")) == "extra added"
            with anyio.fail_after(10):
                event = await subscription.__anext__()
            assert type(event).__name__ == "ToolsListChanged"
    else:
        before = len(env.gw.probe.of_type(types.ToolListChangedNotification))
        assert text_of(await call(env.gw, "feat__toggle_tool")) == "extra added"
        await env.gw.probe.wait_for(
            lambda: len(env.gw.probe.of_type(types.ToolListChangedNotification)) > before, what="tools/list_changed"
        )
    try:
        await wait_until(lambda: _has(env, "feat__extra"), 10, "feat__extra to be listed")
        assert text_of(await call(env.gw, "feat__extra")) == "extra tool called"
    finally:
        assert text_of(await call(env.gw, "feat__toggle_tool")) == "extra removed"
    await wait_until(lambda: _has(env, "feat__extra", present=False), 10, "feat__extra to disappear")


async def _has(env: Env, name: str, present: bool = True) -> bool:
    listed = {t.name for t in (await env.gw.client.list_tools()).tools}
    return (name in listed) == present


# --- requests from the server to the client ---------------------------------------------------------------------------


async def test_elicitation_is_answered_by_the_client(env: Env) -> None:
    async def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"answer": f"blue ({params.message})"})

    env.gw.probe.elicit = answer
    result = await call(env.gw, "feat__ask_user", {"question": "Favourite colour?"})
    assert not result.is_error, text_of(result)
    assert text_of(result) == "blue (Favourite colour?)"
    assert env.gw.probe.elicitations[-1].message == "Favourite colour?"


async def test_declined_elicitation_is_reported_by_the_upstream(env: Env) -> None:
    async def decline(params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    env.gw.probe.elicit = decline
    result = await call(env.gw, "feat__ask_user", {"question": "Continue?"})
    assert text_of(result) == "user chose decline"


async def test_sampling_is_answered_by_the_client(env: Env) -> None:
    result = await call(env.gw, "feat__sample", {"prompt": "Say hi", "max_tokens": 7})
    assert not result.is_error, text_of(result)
    assert text_of(result) == "sampled: Say hi"
    assert env.gw.probe.samplings[-1].max_tokens == 7


async def test_roots_are_answered_by_the_client(env: Env) -> None:
    result = await call(env.gw, "feat__roots")
    assert not result.is_error, text_of(result)
    roots = result.structured_content or json.loads(text_of(result))
    assert roots["roots"] == [{"uri": "file:///tmp/probe-root", "name": "probe-root"}]


async def test_a_handshake_client_still_reaches_a_server_of_the_stateless_era_only(tmp_path: Path) -> None:
    """A lone handshake-era client has its servers spoken to in its own era, unless a server
    refuses `initialize`: then the stateless era it does speak."""
    entry = fixture_entry("features")
    entry["args"].append("--stateless-only")
    async with gateway_in_process({"new": entry}, db=f"sqlite:///{tmp_path / 's.db'}", mode="legacy") as gw:
        # The gateway answers once its upstreams are up or after its ready budget (5 s), whichever comes
        # first; this server takes two starts (refused, then stateless), which a busy machine can spend
        # past the budget: wait for it to leave `starting`, then see how it got there.
        upstream: dict[str, Any] = {}

        async def settled() -> bool:
            upstream.update((await status(gw))["upstreams"][0])
            return bool(upstream["state"] != "starting")

        await wait_until(settled, 120, "the stateless-era server to be ready or failed")
        result = await call(gw, "new__add", {"a": 2, "b": 3})
    reached = (upstream["state"], upstream["protocol"], upstream["restarts"])
    assert reached == ("ready", "2026-07-28", 0), json.dumps(upstream)  # reconnected at once, not failed
    assert result.structured_content == {"sum": 5.0, "operands": {"a": 2.0, "b": 3.0}}


@pytest.mark.parametrize("mode", MODES)
async def test_a_handshake_only_upstream_reports_to_the_request_waiting_now(tmp_path: Path, mode: str) -> None:
    """In front of a server that knows only the handshake era, a stateless-era client gets the
    server's question as an input-required result and retries: what the server sends after the
    answer (progress, a log) belongs to the retry, the request still waiting."""
    entry = fixture_entry("features")
    entry["args"].append("--handshake-only")
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"answer": "teal"})

    async with gateway_in_process({"old": entry}, db=f"sqlite:///{tmp_path / 's.db'}", mode=mode) as gw:
        upstream = (await status(gw))["upstreams"][0]
        assert upstream["protocol"] == "2025-11-25", upstream
        gw.probe.elicit = answer
        arguments = {"question": "Colour?", "report": True}
        result = await call(gw, "old__ask_user", arguments, progress_callback=on_progress)
        await gw.probe.wait_for(lambda: bool(gw.probe.logs), what="the log sent after the answer")
    assert text_of(result) == "teal"
    assert seen == [(1, "asking"), (2, "answered")]
    assert gw.probe.logs[-1].data == "answered: Colour?"


# --- resources, prompts, completions --------------------------------------------------------------------------------


async def test_resources_and_templates_are_listed_unchanged(env: Env) -> None:
    through = [result_dict(r) for r in (await env.gw.client.list_resources()).resources]
    direct = [result_dict(r) for r in (await env.direct.client.list_resources()).resources]
    assert through[:2] == direct[:2]
    assert {r["uri"] for r in through} >= {"test://static", "test://counter"}
    templates = (await env.gw.client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["test://item/{id}"]


async def test_resources_are_read_by_uri_and_template(env: Env) -> None:
    static = await env.gw.client.read_resource("test://static")
    direct = await env.direct.client.read_resource("test://static")
    assert strip_toolreel_meta(result_dict(static)) == strip_toolreel_meta(result_dict(direct))
    item = await env.gw.client.read_resource("test://item/42")
    assert json.loads(item.contents[0].text) == {"id": "42", "name": "item 42"}  # type: ignore[union-attr]


async def test_reading_an_unknown_resource_is_a_jsonrpc_error(env: Env) -> None:
    from mcp.shared.exceptions import MCPError

    with pytest.raises(MCPError) as caught:
        await env.gw.client.read_resource("test://nothing-here")
    assert "test://nothing-here" in caught.value.error.message


async def test_resource_subscription_delivers_updates(env: Env) -> None:
    if env.mode == "auto":
        async with env.gw.client.listen(resource_subscriptions=["test://counter"]) as subscription:
            await call(env.gw, "feat__bump")
            with anyio.fail_after(10):
                event = await subscription.__anext__()
            assert getattr(event, "uri", None) == "test://counter"
        return
    session = env.gw.client.session
    await session.send_request(
        types.SubscribeRequest(params=types.SubscribeRequestParams(uri="test://counter")), types.EmptyResult
    )
    try:
        await call(env.gw, "feat__bump")
        await env.gw.probe.wait_for(
            lambda: any(
                n.params.uri == "test://counter" for n in env.gw.probe.of_type(types.ResourceUpdatedNotification)
            ),
            what="notifications/resources/updated",
        )
    finally:
        await session.send_request(
            types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri="test://counter")), types.EmptyResult
        )


async def test_resources_list_changed_reaches_the_client(env: Env) -> None:
    name = f"res-{env.mode}"
    if env.mode == "auto":
        async with env.gw.client.listen(resources_list_changed=True) as subscription:
            await call(env.gw, "feat__add_resource", {"name": name})
            with anyio.fail_after(10):
                event = await subscription.__anext__()
            assert type(event).__name__ == "ResourcesListChanged"
    else:
        before = len(env.gw.probe.of_type(types.ResourceListChangedNotification))
        await call(env.gw, "feat__add_resource", {"name": name})
        await env.gw.probe.wait_for(
            lambda: len(env.gw.probe.of_type(types.ResourceListChangedNotification)) > before,
            what="resources/list_changed",
        )

    async def listed() -> bool:
        uris = {r.uri for r in (await env.gw.client.list_resources()).resources}
        return f"test://dynamic/{name}" in uris

    await wait_until(listed, 10, "the new resource to be listed")
    contents = (await env.gw.client.read_resource(f"test://dynamic/{name}")).contents
    assert contents[0].text == f"dynamic resource {name}"  # type: ignore[union-attr]


async def test_prompts_are_listed_prefixed_and_get_is_routed(env: Env) -> None:
    prompts = {p.name: p for p in (await env.gw.client.list_prompts()).prompts}
    direct = (await env.direct.client.list_prompts()).prompts[0]
    assert without_name(prompts["feat__greet"]) == without_name(direct)
    through = await env.gw.client.get_prompt("feat__greet", {"name": "alice", "style": "formal"})
    straight = await env.direct.client.get_prompt("greet", {"name": "alice", "style": "formal"})
    assert strip_toolreel_meta(result_dict(through)) == strip_toolreel_meta(result_dict(straight))
    assert through.messages[0].content.text == "Good day, alice!"  # type: ignore[union-attr]


async def test_prompt_and_resource_template_completions_are_routed(env: Env) -> None:
    prompt = await env.gw.client.complete(
        types.PromptReference(type="ref/prompt", name="feat__greet"), {"name": "name", "value": "al"}
    )
    assert prompt.completion.values == ["alice", "albert"]
    template = await env.gw.client.complete(
        types.ResourceTemplateReference(type="ref/resource", uri="test://item/{id}"), {"name": "id", "value": "4"}
    )
    assert template.completion.values == ["42"]


# --- cancellation and timeouts ---------------------------------------------------------------------------------------


async def test_client_cancellation_reaches_the_upstream(env: Env) -> None:
    async def running() -> bool:
        steps = (await status(env.gw))["steps"]
        return any(s["tool"] == "feat__hang" and s["status"] == "running" for s in steps)

    before = _cancel_lines(env)
    async with anyio.create_task_group() as tg:
        tg.start_soon(call, env.gw, "feat__hang", {})
        await wait_until(running, 10, "the hang call to be in flight")
        tg.cancel_scope.cancel()
    await wait_until(lambda: len(_cancel_lines(env)) > len(before), 10, "the upstream to log the cancellation")
    assert _cancel_lines(env)[-1].startswith("hang cancelled")

    async def settled() -> bool:
        steps = [s for s in (await status(env.gw))["steps"] if s["tool"] == "feat__hang"]
        return steps[-1]["status"] in ("failed", "cancelled")

    await wait_until(settled, 10, "the cancelled step to be recorded as failed or cancelled")
    # the session is still usable after a cancellation
    assert text_of(await call(env.gw, "feat__echo", {"text": "after"})) == "after"


async def test_per_call_timeout_is_a_tool_error_naming_server_tool_and_seconds(env: Env) -> None:
    before = _cancel_lines(env)
    with anyio.fail_after(TIMEOUT + 10):
        result = await call(env.gw, "feat__slow", {"seconds": 30})
    assert result.is_error
    text = text_of(result)
    assert "'feat'" in text and "'slow'" in text and f"{TIMEOUT} s" in text, text
    await wait_until(lambda: len(_cancel_lines(env)) > len(before), 10, "the timed-out call to be cancelled upstream")
    assert _cancel_lines(env)[-1].startswith("slow cancelled")
    step = [s for s in (await status(env.gw))["steps"] if s["tool"] == "feat__slow"][-1]
    assert step["status"] == "failed" and step["name"] == (result.meta or {}).get("toolreel/step")


async def test_hanging_tool_times_out(env: Env) -> None:
    with anyio.fail_after(TIMEOUT + 10):
        result = await call(env.gw, "feat__hang", {})
    assert result.is_error and "'hang'" in text_of(result)


def _cancel_lines(env: Env) -> list[str]:
    return env.cancel_log.read_text().splitlines() if env.cancel_log.exists() else []
