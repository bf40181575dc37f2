"""No single message ends the gateway: the corpus of lines that once did, replayed over stdio, and an
upstream whose answers hold lone surrogates (what node servers send when they cut a string mid-emoji).

Every case gets a JSON-RPC error (or is dropped, for a notification) and the gateway keeps serving: after
each case the same process still answers a `ping` and a forwarded `tools/call`.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

import anyio
import httpx2
import pytest

from fixtures._zygote import launch_command
from fixtures.surrogate import CUT_SUFFIX
from tests.gw import (
    TOOLREEL,
    fixture_entry,
    gateway_env,
    http_gateway,
    running_gateway,
    spawn_gateway,
    wait_until,
    write_config,
)
from tests.wire import INIT, NO_ID, RawStdio, handshake, raw_post

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CORPUS: Final = Path(__file__).parents[1] / "corpus" / "hostile_lines.json"


def corpus() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(CORPUS.read_text(encoding="utf-8"))["cases"]
    return cases


def case_bytes(case: dict[str, Any]) -> bytes:
    if case.get("line") is None:
        return bytes.fromhex(case["bytes_hex"])
    return str(case["line"]).encode()


def _config(tmp_path: Path) -> Path:
    servers = {"feat": fixture_entry("features"), "cut": fixture_entry("surrogate")}
    return write_config(tmp_path / "client.json", servers)


async def _still_serving(raw: RawStdio, tag: str) -> None:
    await raw.send_json({"jsonrpc": "2.0", "id": f"ping-{tag}", "method": "ping"})
    assert (await raw.reply(f"ping-{tag}"))["result"] == {}
    answer = await raw.call(f"echo-{tag}", "feat__echo", {"text": tag})
    assert answer["result"]["content"] == [{"type": "text", "text": tag}], answer


async def _replay(raw: RawStdio, case: dict[str, Any], tag: str) -> None:
    await raw.send(case_bytes(case))
    if case["expect"] == "error":
        answer = await raw.reply(case.get("reply_id", NO_ID))
        assert "error" in answer and isinstance(answer["error"]["code"], int), (case["name"], answer)
        assert answer["error"]["code"] in (-32700, -32600, -32602), (case["name"], answer)
    await _still_serving(raw, tag)
    if case["expect"] == "none":
        assert not raw.lines, (case["name"], raw.lines)
    raw.lines.clear()  # "any": whatever it answered, serving went on


@pytest.mark.parametrize("when", ["before initialize", "after initialize"])
async def test_every_corpus_line_is_answered_or_dropped_and_serving_goes_on(tmp_path: Path, when: str) -> None:
    env = gateway_env(f"sqlite:///{tmp_path / 's.db'}")
    async with running_gateway(["--config", str(_config(tmp_path))], env) as gateway:
        raw = RawStdio(gateway)
        if when == "before initialize":
            for case in corpus():
                if case["expect"] == "error":
                    await raw.send(case_bytes(case))
                    answer = await raw.reply(case.get("reply_id", NO_ID))
                    assert "error" in answer, (case["name"], answer)
                    assert gateway.process.returncode is None, case["name"]
        await handshake(raw)
        for index, case in enumerate(corpus()):
            await _replay(raw, case, f"c{index}")
        assert gateway.process.returncode is None


async def test_a_cancel_naming_a_list_id_while_a_call_runs_is_dropped(tmp_path: Path) -> None:
    env = gateway_env(f"sqlite:///{tmp_path / 's.db'}")
    async with running_gateway(["--config", str(_config(tmp_path))], env) as gateway:
        raw = RawStdio(gateway)
        await handshake(raw)
        await raw.send_json(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "feat__slow", "arguments": {}}}
        )
        await raw.send(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[1]}}')
        answer = await raw.reply(1)
        assert "result" in answer, answer
        await _still_serving(raw, "after-cancel")


@pytest.mark.parametrize("record", ["--record", "--no-record"])
async def test_an_upstream_answer_with_a_lone_surrogate_reaches_the_client_unchanged(
    tmp_path: Path, record: str
) -> None:
    env = gateway_env(f"sqlite:///{tmp_path / 's.db'}")
    async with running_gateway(["--config", str(_config(tmp_path)), record], env) as gateway:
        raw = RawStdio(gateway)
        await handshake(raw)
        for attempt in range(3):
            answer = await raw.call(f"cut-{attempt}", "cut__cut", {"text": f"smile {attempt} "})
            assert answer["result"]["content"][0]["text"] == f"smile {attempt} {CUT_SUFFIX}", answer
        await _still_serving(raw, "after-surrogate")


async def test_stdout_on_dev_null_with_stdin_a_pipe_serves_and_ends_cleanly(tmp_path: Path) -> None:
    env = gateway_env(f"sqlite:///{tmp_path / 's.db'}")
    gateway = await spawn_gateway(["--config", str(_config(tmp_path))], env, stdout=subprocess.DEVNULL)
    try:
        assert gateway.process.stdin is not None
        with anyio.fail_after(15):
            await gateway.process.stdin.send(json.dumps(INIT).encode() + b"\n")
            await gateway.process.stdin.aclose()
            code = await gateway.process.wait()
        assert code == 0, gateway.stderr()[-2000:]
        assert "Traceback" not in gateway.stderr(), gateway.stderr()[-2000:]
    finally:
        with anyio.CancelScope(shield=True):
            await gateway.stop()


# --- the same over streamable HTTP -----------------------------------------------------------------------------


async def _http_session(client: httpx2.AsyncClient, url: str) -> dict[str, str]:
    response = await raw_post(client, url, json.dumps(INIT).encode())
    assert response.status_code == 200, response.text
    headers = {"mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    initialized = await raw_post(client, url, b'{"jsonrpc":"2.0","method":"notifications/initialized"}', headers)
    assert initialized.status_code == 202, initialized.text
    return headers


def _answer_of(response: httpx2.Response) -> Any:
    """The JSON-RPC message in a POST's answer (plain JSON or one SSE `data:` event); None for none."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return json.loads(data[-1]) if data and data[-1] else None
    return json.loads(response.content) if response.content else None


async def _http_still_serving(client: httpx2.AsyncClient, url: str, headers: dict[str, str], tag: str) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": tag,
        "method": "tools/call",
        "params": {"name": "feat__echo", "arguments": {"text": tag}},
    }
    answer = _answer_of(await raw_post(client, url, json.dumps(body).encode(), headers))
    assert answer["result"]["content"] == [{"type": "text", "text": tag}], answer


async def test_every_corpus_line_posted_over_http_is_answered_and_serving_goes_on(tmp_path: Path) -> None:
    env = gateway_env(f"sqlite:///{tmp_path / 's.db'}")
    async with http_gateway(["--config", str(_config(tmp_path))], env) as gw, httpx2.AsyncClient() as client:
        headers = await _http_session(client, gw.url)
        for index, case in enumerate(corpus()):
            response = await raw_post(client, gw.url, case_bytes(case), headers)
            assert response.status_code < 500, (case["name"], response.status_code, response.text)
            if case["expect"] == "error":
                assert response.status_code in (200, 400), (case["name"], response.status_code, response.text)
                answer = _answer_of(response)
                assert isinstance(answer, dict) and "error" in answer, (case["name"], response.text)
            await _http_still_serving(client, gw.url, headers, f"c{index}")
        assert gw.gateway.process.returncode is None


async def test_an_upstream_answer_with_a_lone_surrogate_reaches_an_http_client_unchanged(tmp_path: Path) -> None:
    env = gateway_env(f"sqlite:///{tmp_path / 's.db'}")
    async with http_gateway(["--config", str(_config(tmp_path))], env) as gw, httpx2.AsyncClient() as client:
        headers = await _http_session(client, gw.url)
        body = {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "cut__cut", "arguments": {"text": "hi "}},
        }
        response = await raw_post(client, gw.url, json.dumps(body).encode(), headers)
        assert response.status_code == 200, response.text
        answer = _answer_of(response)
        assert answer is not None, "an empty answer"
        assert answer["result"]["content"][0]["text"] == "hi " + CUT_SUFFIX, answer
        await _http_still_serving(client, gw.url, headers, "after")


async def test_a_body_over_the_limit_is_refused_with_413_before_it_is_read(tmp_path: Path) -> None:
    env = gateway_env(f"sqlite:///{tmp_path / 's.db'}")
    args = ["--config", str(_config(tmp_path)), "--max-body-mb", "1"]
    async with http_gateway(args, env) as gw, httpx2.AsyncClient() as client:
        headers = await _http_session(client, gw.url)
        text = "x" * (2 * 1024 * 1024)
        body = {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": "feat__echo", "arguments": {"text": text}},
        }
        response = await raw_post(client, gw.url, json.dumps(body).encode(), headers)
        assert response.status_code == 413, response.text
        assert "--max-body-mb" in response.json()["error"]["message"]

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: the limit holds while streaming
            payload = json.dumps(body).encode()
            for start in range(0, len(payload), 65536):
                yield payload[start : start + 65536]

        streamed = await raw_post(client, gw.url, chunks(), headers)
        assert streamed.status_code == 413, streamed.text
        small = "y" * (512 * 1024)
        answer = _answer_of(
            await raw_post(
                client,
                gw.url,
                json.dumps({**body, "params": {"name": "feat__echo", "arguments": {"text": small}}}).encode(),
                headers,
            )
        )
        assert answer["result"]["content"][0]["text"] == small


async def test_max_body_mb_must_be_a_positive_size(tmp_path: Path) -> None:
    env = gateway_env(f"sqlite:///{tmp_path / 's.db'}")
    gateway = await spawn_gateway(["--http", "0", "--max-body-mb", "0", "--config", str(_config(tmp_path))], env)
    try:
        with anyio.fail_after(15):
            code = await gateway.process.wait()
        assert code == 2 and "--max-body-mb" in gateway.stderr(), gateway.stderr()
    finally:
        with anyio.CancelScope(shield=True):
            await gateway.stop()


async def test_the_http_announcement_comes_once_the_socket_accepts(tmp_path: Path) -> None:
    """Connections made the moment "serving streamable HTTP at" is printed are accepted, none refused."""
    env = gateway_env(f"sqlite:///{tmp_path / 's.db'}")
    gateway = await spawn_gateway(["--http", "0", "--config", str(_config(tmp_path))], env, stdin=subprocess.DEVNULL)
    try:
        announced: list[str] = []

        def url() -> bool:
            found = [line for line in gateway.stderr().splitlines() if "serving streamable HTTP at" in line]
            announced.extend(found[:1])
            return bool(found) or gateway.process.returncode is not None

        await wait_until(url, 30, "the HTTP announcement")
        assert announced, gateway.stderr()
        host, port = announced[0].rsplit("http://", 1)[1].removesuffix("/mcp").rsplit(":", 1)
        for _ in range(10):
            stream = await anyio.connect_tcp(host, int(port))
            await stream.aclose()
    finally:
        with anyio.CancelScope(shield=True):
            if gateway.process.returncode is None:
                gateway.process.send_signal(signal.SIGTERM)
            await gateway.wait_exit(10)
            gateway.reap_leftovers()


def test_a_replay_whose_tool_answers_a_lone_surrogate_succeeds_and_stores_it(tmp_path: Path) -> None:
    """`toolreel run` once exited 1 on such an answer and left the execution `running`, crashing again
    at every resume: the answer is now stored escaped and read back as the same text."""
    db = f"sqlite:///{tmp_path / 'store.db'}"
    env = gateway_env(db)
    config = _config(tmp_path)
    template = tmp_path / "cut.yaml"
    template.write_text(
        "name: cut\nsteps:\n  - name: cut_1\n    tool: cut__cut\n    input: {text: half}\n"
        "  - name: again\n    tool: cut__cut\n    input: {text: '{{@cut_1}}'}\n",
        encoding="utf-8",
    )

    def toolreel(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            launch_command([str(TOOLREEL), *args]), env=env, capture_output=True, text=True, timeout=120, check=False
        )

    assert toolreel("templates", "import", str(template)).returncode == 0
    done = toolreel("run", "cut", "--config", str(config), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    view = json.loads(done.stdout)
    assert view["status"] == "succeeded"
    assert view["output"] == "half" + CUT_SUFFIX + CUT_SUFFIX  # the first answer was passed on by ref, intact
    shown = json.loads(toolreel("executions", "show", view["execution_id"], "--json").stdout)
    assert [s["status"] for s in shown["steps"]] == ["succeeded", "succeeded"]
