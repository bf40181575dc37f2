"""What only a `toolreel serve` process over stdio shows: its line framing (malformed JSON, unknown
methods) and its fast lane for a client that calls a tool straight after initialize. The rest of what
the gateway forwards is tested in-process (test_gateway_forwarding.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from tests.gw import call, fixture_entry, gateway_env, running_gateway, stdio_gateway, text_of, write_config

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


# --- bad input on the wire --------------------------------------------------------------------------------


async def test_malformed_json_and_unknown_methods_get_jsonrpc_errors_and_serving_goes_on(tmp_path: Path) -> None:
    config = write_config(tmp_path / "client.json", {"feat": fixture_entry("features")})
    async with running_gateway(["--config", str(config)], gateway_env(f"sqlite:///{tmp_path / 's.db'}")) as gateway:
        process = gateway.process
        assert process.stdin is not None and process.stdout is not None
        replies: dict[Any, dict[str, Any]] = {}
        buffer = bytearray()

        async def send(raw: bytes) -> None:
            assert process.stdin is not None
            await process.stdin.send(raw)

        async def reply(request_id: Any) -> dict[str, Any]:
            assert process.stdout is not None
            with anyio.fail_after(10):
                while request_id not in replies:
                    buffer.extend(await process.stdout.receive())
                    while b"\n" in buffer:
                        line, _, rest = bytes(buffer).partition(b"\n")
                        buffer[:] = rest
                        message = json.loads(line)
                        replies[message.get("id")] = message
            return replies.pop(request_id)

        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        }
        await send(json.dumps(init).encode() + b"\n")
        assert (await reply(1))["result"]["serverInfo"]["name"] == "toolreel"
        await send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

        await send(b'{"jsonrpc": "2.0", "id": 2, "method": "tools/list", oops\n')
        parse_error = await reply(None)
        assert parse_error["error"]["code"] == -32700

        await send(b'{"jsonrpc":"2.0","id":3,"method":"no/such/method","params":{}}\n')
        assert (await reply(3))["error"]["code"] == -32601

        await send(b"[1, 2, 3]\n")
        invalid = await reply(None)
        assert invalid["error"]["code"] in (-32700, -32600)

        await send(
            b'{"jsonrpc":"2.0","id":4,"method":"tools/call",'
            b'"params":{"name":"feat__echo","arguments":{"text":"still here"}}}\n'
        )
        answer = await reply(4)
        assert answer["result"]["content"] == [{"type": "text", "text": "still here"}]


async def test_list_changed_reaches_a_client_that_only_called_tools(tmp_path: Path) -> None:
    """A client that calls a tool straight after initialize (its tool list cached from an earlier
    session) must still hear about list changes."""
    config = write_config(tmp_path / "client.json", {"feat": fixture_entry("features")})
    async with stdio_gateway(["--config", str(config)], gateway_env(f"sqlite:///{tmp_path / 's.db'}")) as gw:
        assert text_of(await call(gw, "feat__toggle_tool")) == "extra added"
        await gw.probe.wait_for(
            lambda: bool(gw.probe.of_type(types.ToolListChangedNotification)), what="tools/list_changed"
        )
