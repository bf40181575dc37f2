"""A fast-lane call (a handshake-era `tools/call` over stdio) that the client cancels: no answer reaches the
client, the upstream is told to cancel its call, and serving goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gw import fixture_entry, gateway_env, running_gateway, wait_until, write_config
from tests.wire import RawStdio, handshake

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_a_cancelled_fast_call_is_not_answered_and_its_upstream_call_is_cancelled(tmp_path: Path) -> None:
    cancel_log = tmp_path / "cancel.log"
    servers = {"feat": fixture_entry("features", env={"FIXTURE_CANCEL_LOG": str(cancel_log)})}
    config = write_config(tmp_path / "client.json", servers)
    env = gateway_env(f"sqlite:///{tmp_path / 's.db'}")
    async with running_gateway(["--config", str(config), "--no-record"], env) as gateway:
        raw = RawStdio(gateway)
        await handshake(raw)
        params = {"name": "feat__slow", "arguments": {"seconds": 600}}
        await raw.send_json({"jsonrpc": "2.0", "id": "long", "method": "tools/call", "params": params})
        await raw.send_json({"jsonrpc": "2.0", "id": "ping-1", "method": "ping"})
        await raw.reply("ping-1")  # the call's task has run by now: a cancel finds it
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "long"}}
        await raw.send_json(cancel)

        def upstream_cancelled() -> bool:
            return cancel_log.exists() and "slow cancelled" in cancel_log.read_text()

        await wait_until(upstream_cancelled, 30, "the upstream's record of the cancelled call")
        answer = await raw.call("after", "feat__echo", {"text": "still here"})
        assert answer["result"]["content"] == [{"type": "text", "text": "still here"}], answer
        assert not [m for m in raw.lines if isinstance(m, dict) and m.get("id") == "long"], raw.lines
