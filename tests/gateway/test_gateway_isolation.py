"""Clients of `toolreel serve --http` kept apart (SPEC §3): a stateless (2026-07-28) request cannot join another
client's session by naming its `Mcp-Session-Id`; stateless clients with the same `clientInfo` and no credentials
each get their own recording; the `Host` header is checked as well as `Origin` (DNS rebinding)."""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest

from tests.gw import (
    Connected,
    HttpGateway,
    Probe,
    call,
    client_for,
    fixture_entry,
    free_port,
    gateway_env,
    http_answer,
    http_gateway,
    http_transport,
    status,
    text_of,
    wait_until,
    write_config,
)
from toolreel.core.errors import ConfigError, NotFoundError
from toolreel.core.store import open_store
from toolreel.gateway.serve import parse_http

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("gateway_isolation")]

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}},
}


@pytest.fixture(scope="module")
def db_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('isolation') / 'store.db'}"


@pytest.fixture(scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory, db_url: str) -> AsyncIterator[HttpGateway]:
    config = write_config(tmp_path_factory.mktemp("isolation-config") / "mcp.json", {"feat": fixture_entry("features")})
    async with http_gateway(["--config", str(config)], gateway_env(db_url)) as gw:
        yield gw


async def _legacy_session(http: httpx2.AsyncClient, url: str, text: str) -> tuple[str, str]:
    """A handshake-era session over raw HTTP that calls echo(text); returns (session id, execution id)."""
    opened = await http.post(url, json=INIT, headers=HEADERS)
    session = opened.headers["mcp-session-id"]
    headers = {**HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    body = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "feat__echo", "arguments": {"text": text}},
    }
    called = await http.post(url, json=body, headers=headers)
    assert called.status_code == 200, called.text
    result = http_answer(called)["result"]
    assert result["_meta"]["toolreel/step"] == "echo_1"
    return session, result["_meta"]["toolreel/execution"]


def _steps(db_url: str, execution: str) -> list[str] | None:
    """The stored step names of an execution (None until the recorder has written it)."""
    with open_store(db_url) as store:
        try:
            return [step.name for step in store.get_steps(execution)]
        except NotFoundError:
            return None


async def test_a_stateless_request_cannot_join_another_clients_session(gateway: HttpGateway, db_url: str) -> None:
    async with httpx2.AsyncClient(timeout=30) as http:
        session, execution = await _legacy_session(http, gateway.url, "mine-only")
    transport = http_transport(gateway.url, {"mcp-session-id": session})
    async with client_for(transport, "auto", Probe()) as client:
        intruder = Connected(client, Probe())
        assert intruder.modern
        resolved = await call(intruder, "feat__echo", {"text": "@echo_1"})
        recorded = await call(intruder, "feat__echo", {"text": "intruder"})
        seen = await status(intruder)
    assert resolved.is_error and "mine-only" not in text_of(resolved)  # no ref to the other session's output
    assert (recorded.meta or {})["toolreel/execution"] != execution
    assert execution not in str(seen)  # its status shows none of the other session's recording
    theirs = str((recorded.meta or {})["toolreel/execution"])
    await wait_until(lambda: _steps(db_url, theirs) == ["echo_1"], 30, "the intruder's steps to be stored")
    assert _steps(db_url, execution) == ["echo_1"]  # nothing recorded into the other session's execution


async def test_stateless_clients_with_the_same_client_info_get_their_own_recordings(gateway: HttpGateway) -> None:
    """Same clientInfo, no credentials, calls interleaved: each client's refs resolve to its own steps."""
    seen: dict[int, tuple[str, list[str]]] = {}

    async def client(index: int, turn: list[anyio.Event]) -> None:
        async with gateway.connect(mode="auto") as connected:
            assert connected.modern
            first = await call(connected, "feat__echo", {"text": f"client-{index}"})
            turn[index].set()
            await turn[-1].wait()  # every client made its first call before anyone makes its second
            second = await call(connected, "feat__echo", {"text": "@echo_1"})
            executions = [str((r.meta or {})["toolreel/execution"]) for r in (first, second)]
            seen[index] = (text_of(second), executions)

    count = 5
    turn = [anyio.Event() for _ in range(count + 1)]
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for index in range(count):
                tg.start_soon(client, index, turn)
            for event in turn[:-1]:
                await event.wait()
            turn[-1].set()
    assert {index: text for index, (text, _) in seen.items()} == {i: f"client-{i}" for i in range(count)}
    for _, executions in seen.values():
        assert executions[0] == executions[1]  # one client's calls stay one recording
    assert len({executions[0] for _, executions in seen.values()}) == count


@pytest.mark.parametrize("host", ["evil.example", "127.0.0.1.evil.example", "attacker.test:80"])
async def test_a_foreign_host_header_is_refused(gateway: HttpGateway, host: str) -> None:
    """DNS rebinding: a page whose name now points at 127.0.0.1 sends its own name as Host (and, on a
    simple request, no Origin)."""
    async with httpx2.AsyncClient(timeout=10) as http:
        refused = await http.post(gateway.url, json=INIT, headers={**HEADERS, "host": host})
    assert refused.status_code == 403
    assert "Host" in refused.text


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]"])
async def test_local_host_headers_are_served(gateway: HttpGateway, host: str) -> None:
    async with httpx2.AsyncClient(timeout=10) as http:
        served = await http.post(gateway.url, json=INIT, headers={**HEADERS, "host": f"{host}:{gateway.port}"})
    assert served.status_code == 200, served.text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_recordings_belong_to_the_credentials_that_made_them(gateway: HttpGateway, mode: str) -> None:
    alice, bob = {"authorization": f"Bearer alice-{mode}"}, {"authorization": f"Bearer bob-{mode}"}
    async with gateway.connect(mode=mode, headers=alice) as first:
        made = await call(first, "feat__echo", {"text": "alice's"})
        execution = str((made.meta or {})["toolreel/execution"])
        own = await call(first, "toolreel__get_execution", {"id": execution})
    assert not own.is_error, text_of(own)
    async with gateway.connect(mode=mode, headers=bob) as second:
        await call(second, "feat__echo", {"text": "bob's"})
        read = await call(second, "toolreel__get_execution", {"id": execution})
        listed = await call(second, "toolreel__list_executions", {"limit": 200})
        saved = await call(second, "toolreel__save_template", {"name": f"stolen_{mode}", "execution_ids": [execution]})
    assert read.is_error and "alice's" not in text_of(read)
    assert execution not in text_of(listed)
    assert saved.is_error and "alice's" not in text_of(saved)


async def test_a_push_only_servers_questions_reach_the_handshake_client_that_caused_them(tmp_path: Path) -> None:
    """Six handshake-era clients call a server that can only push its questions, all at once; each
    answers after the next one did, so a question delivered to the wrong client would show."""
    config = write_config(tmp_path / "mcp.json", {"push": fixture_entry("push_only")})
    count = 6
    answered = [anyio.Event() for _ in range(count)]
    results: dict[int, str] = {}
    asked: dict[int, list[str]] = {}

    def answerer(index: int) -> Any:
        async def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
            if index < count - 1:
                await answered[index + 1].wait()
            answered[index].set()
            return types.ElicitResult(action="accept", content={"username": f"user{index}", "email": "e@x.test"})

        return answer

    async def one(gw: HttpGateway, index: int) -> None:
        probe = Probe(f"client{index}")
        probe.elicit = answerer(index)
        async with gw.connect(mode="legacy", probe=probe) as client:
            result = await call(client, "push__test_elicitation", {"message": f"who is {index}?"})
            results[index] = text_of(result)
        asked[index] = [e.message for e in probe.elicitations]

    async with http_gateway(["--config", str(config)], gateway_env(f"sqlite:///{tmp_path / 'store.db'}")) as gw:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for index in range(count):
                    tg.start_soon(one, gw, index)
    assert asked == {i: [f"who is {i}?"] for i in range(count)}
    for index, text in results.items():
        assert f"user{index}" in text, (index, text)


def _stateless_call(text: str, request_id: int) -> bytes:
    """A whole HTTP request: one stateless-era tools/call, presenting no cookie, client info or credentials."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": "feat__echo", "arguments": {"text": text}, "_meta": meta},
        }
    ).encode()
    head = (
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: application/json, text/event-stream\r\n"
        "content-type: application/json\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\n"
        f"mcp-name: feat__echo\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


def _from_port(port: int, local_port: int, request: bytes) -> dict[str, Any]:
    """Send `request` from 127.0.0.1:`local_port` and read the answer; the socket is reset on close, so the
    port is free again at once (no TIME_WAIT) for the next client."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.settimeout(30)
        sock.bind(("127.0.0.1", local_port))
        sock.connect(("127.0.0.1", port))
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b" 200 " in head.split(b"\r\n")[0], answer[:500]
    text = body.decode()
    if b"text/event-stream" in head:
        text = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")][-1]
    elif b"transfer-encoding: chunked" in head.lower():
        text = text.split("\r\n", 1)[1].rsplit("\r\n0\r\n", 1)[0]
    return dict(json.loads(text)["result"])


async def test_a_stateless_client_on_a_reused_source_port_gets_its_own_recording(gateway: HttpGateway) -> None:
    """Two stateless clients that present nothing, one after the other from the same address and port: the
    second neither joins the first's recording nor resolves refs into it."""
    local_port = free_port()
    first = await anyio.to_thread.run_sync(_from_port, gateway.port, local_port, _stateless_call("first's secret", 1))
    assert first["_meta"]["toolreel/step"] == "echo_1"
    second = await anyio.to_thread.run_sync(_from_port, gateway.port, local_port, _stateless_call("@echo_1", 2))
    texts = " ".join(str(item.get("text")) for item in second["content"])
    assert "first's secret" not in texts and second.get("isError"), second
    third = await anyio.to_thread.run_sync(_from_port, gateway.port, local_port, _stateless_call("third", 3))
    executions = {first["_meta"]["toolreel/execution"], third["_meta"]["toolreel/execution"]}
    assert len(executions) == 2 and third["_meta"]["toolreel/step"] == "echo_1"


async def test_each_named_token_is_a_client_of_its_own(tmp_path: Path) -> None:
    """`--token-env` given twice: either token is let in, nothing else is, and each sees only its recordings."""
    config = write_config(tmp_path / "mcp.json", {"feat": fixture_entry("features")})
    env = gateway_env(f"sqlite:///{tmp_path / 'store.db'}", ALICE_TOKEN="alice-token-1", BOB_TOKEN="bob-token-2")
    args = ["--config", str(config), "--token-env", "ALICE_TOKEN", "--token-env", "BOB_TOKEN"]
    async with http_gateway(args, env) as gw:
        async with httpx2.AsyncClient(timeout=30) as http:
            for given in ({}, {"authorization": "Bearer carol-token"}, {"authorization": "Bearer alice-token-"}):
                refused = await http.post(gw.url, json=INIT, headers={**HEADERS, **given})
                assert refused.status_code == 401, (given, refused.text)
        async with gw.connect(headers={"authorization": "Bearer alice-token-1"}) as alice:
            made = await call(alice, "feat__echo", {"text": "alice's"})
            execution = str((made.meta or {})["toolreel/execution"])
        async with gw.connect(headers={"authorization": "Bearer bob-token-2"}) as bob:
            assert text_of(await call(bob, "feat__echo", {"text": "bob's"})) == "bob's"
            read = await call(bob, "toolreel__get_execution", {"id": execution})
    assert read.is_error and "alice's" not in text_of(read)


def test_two_token_variables_holding_one_token_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONE_TOKEN", "same")
    monkeypatch.setenv("TWO_TOKEN", "same")
    with pytest.raises(ConfigError, match="TWO_TOKEN and ONE_TOKEN hold the same token"):
        parse_http("8080", ["ONE_TOKEN,TWO_TOKEN"])
    monkeypatch.setenv("TWO_TOKEN", "other")
    assert parse_http("8080", ["ONE_TOKEN", "TWO_TOKEN"]).tokens == ("same", "other")
