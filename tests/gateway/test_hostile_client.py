"""One client cannot stall the others: on an HTTP gateway, a hostile client sends the worst ref filters and
input patterns it can while another makes plain calls. The hostile calls end with named errors within their
budget, and the plain calls go on while a costly filter is being worked out (a gateway that worked it out
on its loop would answer none of them until it was done). The plain client's latency beside the hostile
one is a figure, measured by `bench/hostile.py`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile import BUDGET, run_hostile

# One worker for the tests that load the ref workers: a 2-second filter beside another test's would blur both.
pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("ref_workers")]

CALLS = 200
DURING = 5  # plain calls that must go through while one costly filter runs; a stalled loop lets none through


async def test_a_hostile_client_does_not_stall_another(tmp_path: Path) -> None:
    outcome = await run_hostile(tmp_path, CALLS)

    assert outcome.hostile, "the hostile client made no call"
    assert len(outcome.beside) == CALLS
    for call in outcome.hostile:
        if call.label.startswith("pattern"):
            assert "does not match" in call.text and call.seconds < 1.0, call
        elif "5,000" in call.label:
            assert "past the 2,048 a ref's path may have" in call.text and call.seconds < 1.0, call
        else:
            assert f"took longer than {BUDGET:g} s" in call.text, call
            assert call.seconds < BUDGET + 3.0, call  # the budget, and the trips to and from the worker
    costly = [call for call in outcome.hostile if "took longer" in call.text]
    assert costly, "no costly filter ran beside the plain calls"
    through = max(outcome.plain_calls_during(call) for call in costly)
    assert through >= DURING, f"only {through} plain calls went through while a {BUDGET:g} s filter ran"
