"""`serve --config` watches its file in a thread that cannot be abandoned: a stop waits for that thread to come
back. watchfiles' default kept it away up to 5 s, so every `serve --config` took that long to end on SIGTERM."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from tests.gw import wait_until
from toolreel.upstreams.config import parse_config
from toolreel.upstreams.hub import Hub
from toolreel.upstreams.watch import WAKE_MS, watch_config

pytestmark = pytest.mark.anyio

# Stopping may take a wake of the watching thread and a loaded machine's scheduling, far below the 5 s it took.
STOP_BUDGET = 1.0


async def test_a_watch_ends_within_a_wake_of_its_thread_when_the_gateway_stops(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text('{"mcpServers": {}}', encoding="utf-8")
    hub = Hub(parse_config({"mcpServers": {}}, source=str(config)))
    async with anyio.create_task_group() as tg:
        await tg.start(watch_config, hub, config)
        broken = tmp_path / "mcp.json.tmp"
        broken.write_text("{ not json", encoding="utf-8")
        os.replace(broken, config)  # saved as editors do: the watch reads it, refuses it and waits again
        await wait_until(lambda: hub.config_error is not None, 30, "the watch to read the saved file")
        await anyio.wait_all_tasks_blocked()  # back in its thread, waiting for the next change
        tg.cancel_scope.cancel()
        stopping = anyio.current_time()
    took = anyio.current_time() - stopping
    assert took < STOP_BUDGET, f"the watch took {took:.2f} s to end (it wakes every {WAKE_MS} ms)"
