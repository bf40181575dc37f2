"""A process with no client waiting on a first answer (`toolreel run`, a worker) waits for a server that is slow
to start, instead of giving up at the gateway's ready budget and refusing its tools as "not listed"."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.gw import call, fixture_entry, text_of
from tests.inproc import gateway_in_process
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


async def test_a_call_that_comes_while_a_server_is_on_its_first_start_waits_for_it(tmp_path: Path) -> None:
    """Past the ready budget the gateway answers `initialize` with what is up; a call to the server still starting
    waits for it (bounded by the start timeout) instead of coming back as an unknown tool."""
    entry = fixture_entry("features")
    entry["args"] += ["--start-delay", str(READY_BUDGET + 2)]
    with anyio.fail_after(120):
        async with gateway_in_process({"slow": entry}, db=f"sqlite:///{tmp_path / 's.db'}") as gw:
            result = await call(gw, "slow__add", {"a": 2, "b": 3})
            assert not result.is_error, text_of(result)
            assert result.structured_content == {"sum": 5.0, "operands": {"a": 2.0, "b": 3.0}}
            typo = await call(gw, "slow__ad", {"a": 2, "b": 3})  # once it is up, a wrong name is refused at once
            assert typo.is_error and "unknown tool" in text_of(typo)
