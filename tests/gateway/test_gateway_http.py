"""`toolreel serve --http`: streamable HTTP at /mcp, many clients at once, each with its own routing.

One gateway (fixture `features` behind it) serves the module; the token test starts its own.
The guard is checked with raw HTTP requests: a foreign Origin gets 403, a missing token 401.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from fixtures._zygote import launch_command
from tests.gw import (
    MODES,
    TOOLREEL,
    HttpGateway,
    Probe,
    call,
    fixture_entry,
    gateway_env,
    http_gateway,
    status,
    text_of,
    wait_until,
    write_config,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("gateway_http")]

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.fixture(scope="module")
def cancel_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("http-cancel") / "cancel.log"


@pytest.fixture(scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory, cancel_log: Path) -> AsyncIterator[HttpGateway]:
    tmp = tmp_path_factory.mktemp("http")
    feat = fixture_entry("features", env={"FIXTURE_CANCEL_LOG": str(cancel_log)})
    config = write_config(tmp / "client.json", {"feat": feat})
    async with http_gateway(["--config", str(config)], gateway_env(f"sqlite:///{tmp / 'store.db'}")) as gw:
        yield gw


def _listening_addresses(port: int) -> list[str]:
    """Local addresses of sockets listening on `port` (from /proc/net/tcp and tcp6)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, port_hex = fields[1].split(":")
            if fields[3] == "0A" and int(port_hex, 16) == port:
                found.append(address)
    return found


async def test_binds_loopback_only_by_default(gateway: HttpGateway) -> None:
    assert _listening_addresses(gateway.port) == ["0100007F"]  # 127.0.0.1, and nothing on 0.0.0.0 or ::


@pytest.mark.parametrize("mode", MODES)
async def test_upstreams_of_both_eras_are_spoken_to_in_the_stateless_one(gateway: HttpGateway, mode: str) -> None:
    """Many clients may call at once over HTTP: only the stateless era links what a server asks
    during a call to that call, so it is chosen whatever era the clients speak."""
    async with gateway.connect(mode=mode) as client:
        upstreams = (await status(client))["upstreams"]
    assert [u["protocol"] for u in upstreams] == ["2026-07-28"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_lists_and_calls_tools(gateway: HttpGateway, mode: str) -> None:
    async with gateway.connect(mode=mode) as client:
        names = {t.name for t in (await client.client.list_tools()).tools}
        result = await call(client, "feat__add", {"a": 1, "b": 2})
    assert "feat__echo" in names and "toolreel__status" in names
    assert result.structured_content == {"sum": 3.0, "operands": {"a": 1.0, "b": 2.0}}
    assert (result.meta or {}).get("toolreel/step") == "add_1"


@pytest.mark.parametrize("mode", MODES)
async def test_elicitation_goes_to_the_client_that_called(gateway: HttpGateway, mode: str) -> None:
    probes = [Probe(f"client{i}") for i in range(6)]
    results: dict[int, str] = {}
    answered = [anyio.Event() for _ in range(6)]

    def answerer(index: int) -> Any:
        async def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
            if index < 5:  # answer in reverse order of the clients, so a mix-up would show
                await answered[index + 1].wait()
            answered[index].set()
            return types.ElicitResult(action="accept", content={"answer": f"from client{index}"})

        return answer

    async def one(index: int) -> None:
        probes[index].elicit = answerer(index)
        async with gateway.connect(mode=mode, probe=probes[index]) as client:
            result = await call(client, "feat__ask_user", {"question": f"who is {index}?"})
            results[index] = text_of(result)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for index in range(6):
                tg.start_soon(one, index)
    assert results == {i: f"from client{i}" for i in range(6)}
    for index, probe in enumerate(probes):
        assert [e.message for e in probe.elicitations] == [f"who is {index}?"]


@pytest.mark.parametrize("mode", MODES)
async def test_sampling_goes_to_the_client_that_called(gateway: HttpGateway, mode: str) -> None:
    texts: dict[int, str] = {}
    asked: dict[int, list[str]] = {}

    async def one(index: int) -> None:
        probe = Probe(f"sampler{index}")
        async with gateway.connect(mode=mode, probe=probe) as client:
            texts[index] = text_of(await call(client, "feat__sample", {"prompt": f"prompt {index}"}))
        asked[index] = [s.messages[0].content.text for s in probe.samplings]  # type: ignore[union-attr]

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for index in range(3):
                tg.start_soon(one, index)
    assert texts == {i: f"sampled: prompt {i}" for i in range(3)}
    assert asked == {i: [f"prompt {i}"] for i in range(3)}


@pytest.mark.parametrize("mode", MODES)
async def test_progress_goes_to_the_client_that_called(gateway: HttpGateway, mode: str) -> None:
    progress: dict[int, list[float]] = {0: [], 1: [], 2: []}

    async def one(index: int) -> None:
        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress[index].append(value)

        async with gateway.connect(mode=mode) as client:
            steps = await call(client, "feat__progress", {"steps": index + 2}, progress_callback=on_progress)
        assert text_of(steps) == f"completed {index + 2} steps"

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for index in range(3):
                tg.start_soon(one, index)
    assert progress == {i: [float(n) for n in range(1, i + 3)] for i in range(3)}


@pytest.mark.parametrize("mode", MODES)
async def test_log_messages_reach_a_single_http_client(gateway: HttpGateway, mode: str) -> None:
    probe = Probe("lonely")
    async with gateway.connect(mode=mode, probe=probe) as client:
        result = await call(client, "feat__log", {"level": "error", "message": "over http"})
        assert text_of(result) == "logged error: over http"
        await probe.wait_for(lambda: bool(probe.logs), what="the log message")
    assert [(log.level, log.data) for log in probe.logs] == [("error", "over http")]


@pytest.mark.parametrize("mode", MODES)
async def test_list_changed_reaches_http_clients(gateway: HttpGateway, mode: str) -> None:
    async with gateway.connect(mode=mode) as client:
        try:
            if client.modern:
                async with client.client.listen(tools_list_changed=True) as subscription:
                    assert text_of(await call(client, "feat__toggle_tool")) == "extra added"
                    with anyio.fail_after(10):
                        event = await subscription.__anext__()
                    assert type(event).__name__ == "ToolsListChanged"
            else:
                await client.client.list_tools()
                assert text_of(await call(client, "feat__toggle_tool")) == "extra added"
                await client.probe.wait_for(
                    lambda: bool(client.probe.of_type(types.ToolListChangedNotification)), what="tools/list_changed"
                )

            async def listed() -> bool:
                return "feat__extra" in {t.name for t in (await client.client.list_tools()).tools}

            await wait_until(listed, 10, "feat__extra to be listed")
        finally:
            assert text_of(await call(client, "feat__toggle_tool")) == "extra removed"


@pytest.mark.parametrize("mode", MODES)
async def test_cancellation_over_http_reaches_the_upstream(gateway: HttpGateway, cancel_log: Path, mode: str) -> None:
    def lines() -> list[str]:
        return cancel_log.read_text().splitlines() if cancel_log.exists() else []

    before = len(lines())
    async with gateway.connect(mode=mode) as client:

        async def running() -> bool:
            steps = (await status(client))["steps"]
            return any(s["tool"] == "feat__hang" and s["status"] == "running" for s in steps)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, client, "feat__hang", {})
            await wait_until(running, 10, "the hang call to be in flight")
            tg.cancel_scope.cancel()
        await wait_until(lambda: len(lines()) > before, 10, "the upstream to log the cancellation")
        assert text_of(await call(client, "feat__echo", {"text": "after"})) == "after"


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_without_elicitation_gets_an_error_not_a_hang(gateway: HttpGateway, mode: str) -> None:
    async with gateway.connect(mode=mode, answers=False) as client:
        with anyio.fail_after(15):
            try:
                result = await call(client, "feat__ask_user", {"question": "anyone?"})
            except MCPError as exc:  # a JSON-RPC error is an acceptable answer too
                assert "elicit" in exc.error.message.lower()
                return
        assert result.is_error, text_of(result)
        assert "elicit" in text_of(result).lower()


async def test_each_http_session_is_its_own_execution(gateway: HttpGateway) -> None:
    async with gateway.connect() as first, gateway.connect() as second:
        a1 = await call(first, "feat__echo", {"text": "a"})
        b1 = await call(second, "feat__echo", {"text": "b"})
        a2 = await call(first, "feat__echo", {"text": "@echo_1"})
    meta_a1, meta_b1, meta_a2 = (r.meta or {} for r in (a1, b1, a2))
    assert meta_a1["toolreel/execution"] == meta_a2["toolreel/execution"] != meta_b1["toolreel/execution"]
    assert (meta_a1["toolreel/step"], meta_b1["toolreel/step"], meta_a2["toolreel/step"]) == (
        "echo_1",
        "echo_1",
        "echo_2",
    )
    assert text_of(a2) == "a"  # @echo_1 of this session, not the other one's


async def test_foreign_origin_is_refused(gateway: HttpGateway) -> None:
    async with httpx2.AsyncClient(timeout=10) as http:
        refused = await http.post(gateway.url, json=INIT, headers={**HEADERS, "origin": "http://evil.example"})
        local = await http.post(
            gateway.url, json=INIT, headers={**HEADERS, "origin": f"http://127.0.0.1:{gateway.port}"}
        )
        rebinding = await http.post(
            gateway.url, json=INIT, headers={**HEADERS, "origin": "http://127.0.0.1.evil.example"}
        )
    assert refused.status_code == 403
    assert rebinding.status_code == 403
    assert local.status_code == 200, local.text


async def test_opaque_null_origin_is_refused(gateway: HttpGateway) -> None:
    """`Origin: null` comes from sandboxed iframes and file:// pages: any web page can produce it."""
    async with httpx2.AsyncClient(timeout=10) as http:
        response = await http.post(gateway.url, json=INIT, headers={**HEADERS, "origin": "null"})
    assert response.status_code == 403


async def test_non_mcp_paths_are_not_served(gateway: HttpGateway) -> None:
    async with httpx2.AsyncClient(timeout=10) as http:
        response = await http.post(f"http://127.0.0.1:{gateway.port}/other", json=INIT, headers=HEADERS)
    assert response.status_code == 404


async def test_token_env_requires_the_bearer_token(tmp_path: Path) -> None:
    config = write_config(tmp_path / "client.json", {"feat": fixture_entry("features")})
    env = gateway_env(f"sqlite:///{tmp_path / 'store.db'}", GW_TOKEN="s3cret-t0ken")
    async with http_gateway(["--config", str(config), "--token-env", "GW_TOKEN"], env) as gateway:
        async with httpx2.AsyncClient(timeout=10) as http:
            missing = await http.post(gateway.url, json=INIT, headers=HEADERS)
            wrong = await http.post(gateway.url, json=INIT, headers={**HEADERS, "authorization": "Bearer nope"})
        assert missing.status_code == 401 and wrong.status_code == 401
        async with gateway.connect(headers={"authorization": "Bearer s3cret-t0ken"}) as client:
            result = await call(client, "feat__echo", {"text": "authorised"})
        assert text_of(result) == "authorised"
        async with httpx2.AsyncClient(timeout=10) as http:  # the auth scheme is case-insensitive (RFC 9110)
            lower = await http.post(gateway.url, json=INIT, headers={**HEADERS, "authorization": "bearer s3cret-t0ken"})
        assert lower.status_code == 200


async def test_token_env_naming_an_unset_variable_is_a_usage_error(tmp_path: Path) -> None:
    config = write_config(tmp_path / "client.json", {"feat": fixture_entry("features")})
    with anyio.fail_after(60):
        done = await anyio.run_process(
            launch_command(
                [str(TOOLREEL), "serve", "--config", str(config), "--http", "0", "--token-env", "NOT_SET_ANYWHERE"]
            ),
            env=gateway_env(f"sqlite:///{tmp_path / 's.db'}"),
            stdin=subprocess.DEVNULL,
            check=False,
        )
    assert done.returncode == 2
    assert "NOT_SET_ANYWHERE" in done.stderr.decode()


async def test_raw_json_response_carries_the_session_header(gateway: HttpGateway) -> None:
    async with httpx2.AsyncClient(timeout=10) as http:
        response = await http.post(gateway.url, json=INIT, headers=HEADERS)
    assert response.status_code == 200
    assert response.headers.get("mcp-session-id")
    body = response.text
    payload = json.loads(body.split("data:", 1)[1].strip().splitlines()[0]) if "data:" in body else json.loads(body)
    assert payload["result"]["serverInfo"]["name"] == "toolreel"
