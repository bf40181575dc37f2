"""No single message ends the gateway: the corpus of lines that once did, replayed over stdio, and an
upstream whose answers hold lone surrogates (what node servers send when they cut a string mid-emoji).

Every case gets a JSON-RPC error (or is dropped, for a notification) and the gateway keeps serving: after
each case the same process still answers a `ping` and a forwarded `tools/call`.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Final

import anyio
import pytest

from fixtures.surrogate import CUT_SUFFIX
from tests.gw import fixture_entry, gateway_env, running_gateway, spawn_gateway, write_config
from tests.wire import INIT, NO_ID, RawStdio, handshake

pytestmark = pytest.mark.anyio

CORPUS: Final = Path(__file__).parent / "corpus" / "hostile_lines.json"


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
