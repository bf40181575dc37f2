"""Fuzzing the stdio and HTTP fronts: thousands of generated messages, one gateway each, no crash.

Hypothesis generates JSON-RPC-shaped messages (any JSON type in any field, ids of every kind, lone
surrogates, deep nesting, methods the gateway knows and does not) and raw byte lines. They are sent to a
real `toolreel serve` in order; every answer must be a JSON-RPC message, an HTTP status below 500, and
every FUZZ_CHECK cases the same process must still answer a ping and forward a real call. Generation runs
first (hypothesis drives a collecting function), then the cases are replayed against the one process, so
the run takes seconds rather than one gateway start per case.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final

import anyio
import httpx2
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from tests.gw import fixture_entry, gateway_env, http_gateway, running_gateway, write_config
from tests.wire import INIT, RawStdio, handshake, raw_post

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

FUZZ_CASES: Final = int(os.environ.get("TOOLREEL_FUZZ_CASES", "3000"))
FUZZ_CHECK: Final = 100
METHODS: Final = (
    "initialize", "ping", "tools/list", "tools/call", "resources/list", "resources/read", "resources/subscribe",
    "prompts/list", "prompts/get", "completion/complete", "logging/setLevel", "notifications/initialized",
    "notifications/cancelled", "notifications/progress", "notifications/roots/list_changed", "server/discover",
    "no/such/method",
)  # fmt: skip
TOOLS: Final = (
    "feat__echo",
    "feat__add",
    "feat__fail",
    "cut__cut",
    "toolreel__status",
    "toolreel__get_execution",
    "nope",
)

# Every code point, lone surrogates included (hypothesis leaves category Cs out by default).
_TEXT = st.text(st.characters(exclude_categories=()), max_size=12)
_LEAF = st.none() | st.booleans() | st.integers() | st.floats() | _TEXT
_JSON = st.recursive(
    _LEAF, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4), max_leaves=12
)
_ID = st.integers() | _TEXT | _JSON
_CALL_PARAMS = st.fixed_dictionaries(
    {"name": st.sampled_from(TOOLS) | _JSON},
    optional={"arguments": st.fixed_dictionaries({}, optional={"text": _TEXT | _JSON, "a": _JSON, "b": _JSON}) | _JSON},
)
_CANCEL_PARAMS = st.fixed_dictionaries({"requestId": _ID}, optional={"reason": _JSON})
_MESSAGE = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0") | _LEAF, "method": st.sampled_from(METHODS) | _JSON},
    optional={"id": _ID, "params": _CALL_PARAMS | _CANCEL_PARAMS | _JSON, "result": _JSON, "error": _JSON},
)
_DEEP = st.integers(min_value=100, max_value=3000).map(lambda n: "[" * n + "]" * n)


def _line(message: Any) -> bytes:
    return json.dumps(message).encode()  # NaN, lone surrogates as escapes: what a careless client writes


_LINE = (
    _MESSAGE.map(_line)
    | _DEEP.map(lambda deep: b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":' + deep.encode() + b"}")
    | _MESSAGE.map(_line).flatmap(lambda line: st.integers(1, max(1, len(line) - 1)).map(lambda cut: line[:cut]))
    | st.binary(max_size=64).map(lambda raw: raw.replace(b"\n", b" "))
)


def generated(count: int, seed: int) -> list[bytes]:
    """`count` lines from the strategies above (hypothesis generation only: no shrinking of a replay)."""
    lines: list[bytes] = []

    @settings(
        max_examples=count,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        deadline=None,
    )
    @hypothesis_seed(seed)
    @given(_LINE)
    def collect(line: bytes) -> None:
        lines.append(line)

    collect()
    return lines


def _config(tmp_path: Path) -> Path:
    return write_config(
        tmp_path / "client.json", {"feat": fixture_entry("features"), "cut": fixture_entry("surrogate")}
    )


async def _stdio_alive(raw: RawStdio, tag: str) -> None:
    await raw.send_json({"jsonrpc": "2.0", "id": f"live-{tag}", "method": "ping"})
    assert "result" in await raw.reply(f"live-{tag}", timeout=60), tag
    answer = await raw.call(f"call-{tag}", "feat__echo", {"text": tag})
    assert answer["result"]["content"] == [{"type": "text", "text": tag}], answer


async def test_fuzzed_lines_never_end_the_stdio_gateway(tmp_path: Path) -> None:
    cases = generated(FUZZ_CASES, seed=21)
    env = gateway_env(f"sqlite:///{tmp_path / 's.db'}")
    async with running_gateway(["--config", str(_config(tmp_path))], env) as gateway:
        raw = RawStdio(gateway)
        await handshake(raw)
        for index, line in enumerate(cases, 1):
            await raw.send(line)
            if index % FUZZ_CHECK == 0:
                await _stdio_alive(raw, str(index))
                _check_answers(raw.lines)
                raw.lines.clear()
        await _stdio_alive(raw, "end")
        assert gateway.process.returncode is None
        assert not (found := _tracebacks(gateway.stderr())), "\n\n".join(found)


def _tracebacks(stderr: str) -> list[str]:
    """Each traceback the gateway logged, with the line before it (which names what failed)."""
    lines = stderr.splitlines()
    return ["\n".join(lines[max(0, i - 1) : i + 40]) for i, line in enumerate(lines) if line.startswith("Traceback")]


def _check_answers(lines: list[Any]) -> None:
    """Whatever the gateway wrote is JSON-RPC 2.0 (parsed already: stdout stayed a clean channel)."""
    for message in lines:
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", message
        if "error" in message:
            assert isinstance(message["error"].get("code"), int) and message["error"]["code"] != 0, message


async def test_fuzzed_posts_never_end_the_http_gateway(tmp_path: Path) -> None:
    cases = generated(FUZZ_CASES // 2, seed=2121)
    env = gateway_env(f"sqlite:///{tmp_path / 's.db'}")
    async with http_gateway(["--config", str(_config(tmp_path))], env) as gw, httpx2.AsyncClient() as client:
        first = await raw_post(client, gw.url, json.dumps(INIT).encode())
        headers = {"mcp-session-id": first.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        for index, body in enumerate(cases, 1):
            response = await raw_post(client, gw.url, body, headers)
            assert response.status_code < 500, (body[:300], response.status_code, response.text[:500])
            _check_http_answer(response, body)
            if index % FUZZ_CHECK == 0:
                await _http_alive(client, gw.url, headers, str(index))
        await _http_alive(client, gw.url, headers, "end")
        assert gw.gateway.process.returncode is None
        assert not (found := _tracebacks(gw.gateway.stderr())), "\n\n".join(found)


def _check_http_answer(response: httpx2.Response, body: bytes) -> None:
    """A JSON body or each SSE event is a JSON-RPC message; an error has a real code and no Python internals."""
    kind = response.headers.get("content-type", "")
    if kind.startswith("text/event-stream"):
        texts = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    elif kind.startswith("application/json") and response.content:
        texts = [response.text]
    else:
        return
    for text in filter(None, texts):
        message = json.loads(text)
        context = (body[:300], text[:500])
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", context
        if "error" in message:
            assert isinstance(message["error"].get("code"), int) and message["error"]["code"] != 0, context
            assert "Traceback" not in message["error"].get("message", ""), context


async def _http_alive(client: httpx2.AsyncClient, url: str, headers: dict[str, str], tag: str) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": tag,
        "method": "tools/call",
        "params": {"name": "feat__echo", "arguments": {"text": tag}},
    }
    with anyio.fail_after(60):
        response = await raw_post(client, url, json.dumps(call).encode(), headers)
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    answer = json.loads(data[-1]) if data else response.json()
    assert answer["result"]["content"] == [{"type": "text", "text": tag}], answer
