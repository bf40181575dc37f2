"""Edges of the gateway's own tools and errors: preset step names that cannot take a real call's name,
internal failures answered as JSON-RPC errors without Python's text, `_meta` that is not an object."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.gw import call, fixture_entry, gateway_env, http_answer, http_gateway, text_of, write_config
from tests.inproc import gateway_in_process
from tests.wire import INIT, raw_post

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


FEAT = {"feat": fixture_entry("features")}


def _config(tmp_path: Path) -> Path:
    return write_config(tmp_path / "client.json", FEAT)


def _step_of(result: Any) -> str:
    meta = result.meta or {}
    return str(meta["toolreel/step"])


async def test_a_preset_name_is_never_given_to_a_later_real_call(tmp_path: Path) -> None:
    async with gateway_in_process(FEAT, db=f"sqlite:///{tmp_path / 's.db'}") as gw:
        assert _step_of(await call(gw, "feat__echo", {"text": "one"})) == "echo_1"
        preset = await call(gw, "toolreel__set_step_result", {"step": "echo_2", "output": {"id": "preset"}})
        assert not preset.is_error, text_of(preset)
        real = await call(gw, "feat__echo", {"text": "three"})
        assert _step_of(real) == "echo_3"
        assert text_of(await call(gw, "feat__echo", {"text": "@echo_2.id"})) == "preset"
        assert text_of(await call(gw, "feat__echo", {"text": "@echo_3"})) == "three"


async def test_a_preset_name_has_a_length_bound(tmp_path: Path) -> None:
    async with gateway_in_process(FEAT, db=f"sqlite:///{tmp_path / 's.db'}") as gw:
        refused = await call(gw, "toolreel__set_step_result", {"step": "s" * 65, "output": 1})
        assert refused.is_error and "at most 64 characters" in text_of(refused)
        accepted = await call(gw, "toolreel__set_step_result", {"step": "s" * 64, "output": 1})
        assert not accepted.is_error, text_of(accepted)


async def test_http_internal_errors_are_jsonrpc_errors_without_python_text(tmp_path: Path) -> None:
    env = gateway_env(f"sqlite:///{tmp_path / 's.db'}")
    async with http_gateway(["--config", str(_config(tmp_path))], env) as gw, httpx2.AsyncClient() as client:
        first = await raw_post(client, gw.url, json.dumps(INIT).encode())
        headers = {"mcp-session-id": first.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}

        async def post(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
            body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            return http_answer(await raw_post(client, gw.url, json.dumps(body).encode(), headers))

        # a cursor toolreel never gave: the store cannot decode it (a failure inside the gateway)
        broken = await post(1, "tools/call", {"name": "toolreel__list_executions", "arguments": {"cursor": "zz"}})
        assert broken["error"]["code"] == -32603, broken
        assert "toolreel could not handle tools/call" in broken["error"]["message"]
        assert "Error" not in broken["error"]["message"] and "zz" not in broken["error"]["message"], broken

        meta = await post(2, "tools/call", {"name": "feat__echo", "arguments": {"text": "x"}, "_meta": 5})
        assert meta["error"]["code"] == -32602 and "'_meta' must be an object" in meta["error"]["message"], meta

        for request_id, arguments, problem in [
            (3, {"limit": -1}, "limit is a whole number from 1 to 500, not -1"),
            (4, {"limit": "x"}, "limit is a whole number from 1 to 500, not 'x'"),
            (5, {"limit": 10**30}, "limit is a whole number from 1 to 500"),
            (6, {"status": "bogus"}, "status is one of"),
        ]:
            answer = await post(request_id, "tools/call", {"name": "toolreel__list_executions", "arguments": arguments})
            assert answer["result"]["isError"] and problem in answer["result"]["content"][0]["text"], answer
        assert "toolreel.front: tools/call failed inside toolreel" in gw.gateway.stderr()
