"""An upstream on the older SSE transport (`"type": "sse"`): a GET event stream for the server's
messages and POSTs for the client's. The `features` fixture serves it (`--sse 0`); the gateway in
front of it is used over stdio by a client of each era, and must forward what it forwards for a
stdio or streamable-HTTP upstream, both ways.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import mcp_types as types
import pytest

from fixtures.servers import http_fixture
from tests.gw import (
    MODES,
    Connected,
    call,
    direct_fixture,
    gateway_env,
    result_dict,
    status,
    stdio_gateway,
    strip_toolreel_meta,
    text_of,
    wait_until,
    without_name,
    write_config,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("gateway_sse")]


@dataclass
class Env:
    gw: Connected
    direct: Connected
    cancel_log: Path
    start_log: Path
    mode: str


@pytest.fixture(scope="module", params=MODES)
async def env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    tmp = tmp_path_factory.mktemp(f"sse-{request.param}")
    cancel_log, start_log = tmp / "cancel.log", tmp / "start.log"
    logs = {"FIXTURE_CANCEL_LOG": str(cancel_log), "FIXTURE_START_LOG": str(start_log)}
    async with http_fixture("features", env=logs, sse=True) as url:
        assert url.endswith("/sse"), url
        config = write_config(tmp / "client.json", {"web": {"type": "sse", "url": url}})
        async with (
            stdio_gateway(
                ["--config", str(config)], gateway_env(f"sqlite:///{tmp / 'store.db'}"), mode=request.param
            ) as gw,
            direct_fixture("features", mode=request.param) as direct,
        ):
            yield Env(gw, direct, cancel_log, start_log, request.param)


async def test_the_upstream_is_ready_on_sse(env: Env) -> None:
    upstreams = {u["name"]: u for u in (await status(env.gw))["upstreams"]}
    assert upstreams["web"]["state"] == "ready", upstreams["web"]
    assert upstreams["web"]["transport"] == "sse"


async def test_tools_are_listed_as_they_are_directly(env: Env) -> None:
    through = {t.name: t for t in (await env.gw.client.list_tools()).tools}
    for tool in (await env.direct.client.list_tools()).tools:
        assert without_name(through[f"web__{tool.name}"]) == without_name(tool)


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [("echo", {"text": "über SSE ✓"}), ("add", {"a": 2, "b": 40.5}), ("image", {}), ("fail", {"message": "no"})],
)
async def test_results_are_forwarded_unchanged(env: Env, tool: str, arguments: dict[str, object]) -> None:
    through = result_dict(await call(env.gw, f"web__{tool}", arguments))
    direct = result_dict(await call(env.direct, tool, arguments))
    assert strip_toolreel_meta(through) == strip_toolreel_meta(direct)


async def test_progress_and_logs_come_back_over_the_event_stream(env: Env) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    result = await call(env.gw, "web__progress", {"steps": 3}, progress_callback=on_progress)
    assert text_of(result) == "completed 3 steps"
    assert seen == [(1, 3, "step 1 of 3"), (2, 3, "step 2 of 3"), (3, 3, "step 3 of 3")]

    before = len(env.gw.probe.logs)
    await call(env.gw, "web__log", {"level": "warning", "message": "over sse"})
    await env.gw.probe.wait_for(lambda: len(env.gw.probe.logs) > before, what="the log message")
    assert (env.gw.probe.logs[-1].level, env.gw.probe.logs[-1].data) == ("warning", "over sse")


async def test_elicitation_from_the_sse_upstream_is_answered_by_the_client(env: Env) -> None:
    async def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"answer": f"green ({params.message})"})

    env.gw.probe.elicit = answer
    result = await call(env.gw, "web__ask_user", {"question": "Colour?"})
    assert text_of(result) == "green (Colour?)"


async def test_tool_list_changes_of_the_sse_upstream_reach_the_list(env: Env) -> None:
    async def listed(name: str) -> bool:
        return name in {t.name for t in (await env.gw.client.list_tools()).tools}

    assert text_of(await call(env.gw, "web__toggle_tool")) == "extra added"
    try:
        await wait_until(lambda: listed("web__extra"), 10, "web__extra to be listed")
        assert text_of(await call(env.gw, "web__extra")) == "extra tool called"
    finally:
        assert text_of(await call(env.gw, "web__toggle_tool")) == "extra removed"
    await wait_until(lambda: _absent(env, "web__extra"), 10, "web__extra to disappear")


async def _absent(env: Env, name: str) -> bool:
    return name not in {t.name for t in (await env.gw.client.list_tools()).tools}


async def test_resources_are_read_through_the_sse_upstream(env: Env) -> None:
    through = await env.gw.client.read_resource("test://static")
    direct = await env.direct.client.read_resource("test://static")
    assert strip_toolreel_meta(result_dict(through)) == strip_toolreel_meta(result_dict(direct))


async def test_cancellation_reaches_the_sse_upstream(env: Env) -> None:
    def lines(path: Path) -> list[str]:
        return path.read_text().splitlines() if path.exists() else []

    # Each client message is its own POST here: a cancellation can reach the server before the
    # handler of the call it cancels has started, and then nothing runs to log it. Cancel once it runs.
    before, started = len(lines(env.cancel_log)), len(lines(env.start_log))
    async with anyio.create_task_group() as tg:
        tg.start_soon(call, env.gw, "web__hang", {})
        await wait_until(lambda: len(lines(env.start_log)) > started, 10, "the upstream to run the hang call")
        tg.cancel_scope.cancel()
    await wait_until(lambda: len(lines(env.cancel_log)) > before, 10, "the upstream to log the cancellation")
    assert lines(env.cancel_log)[-1].startswith("hang cancelled")
    assert text_of(await call(env.gw, "web__echo", {"text": "after"})) == "after"
