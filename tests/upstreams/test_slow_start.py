"""A process with no client waiting on a first answer (`toolreel run`, a worker) waits for a server that is slow
to start, instead of giving up at the gateway's ready budget and refusing its tools as "not listed"."""

from __future__ import annotations

import anyio
import pytest

from tests.gw import fixture_entry
from toolreel.upstreams.config import parse_config
from toolreel.upstreams.hub import READY_BUDGET, open_upstreams

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_a_run_waits_for_a_server_slower_than_the_ready_budget() -> None:
    entry = fixture_entry("features")
    entry["args"] += ["--start-delay", str(READY_BUDGET + 2)]
    config = parse_config({"mcpServers": {"features": entry}})
    with anyio.fail_after(120):
        async with open_upstreams(config) as hub:
            assert hub.tool_definition("features__add") is not None
