"""Outputs kept for refs stay within a memory budget: older ones wait in a spill file and are read
back when a ref asks (ten 10 MB results once held 359 MB of the gateway's memory)."""

from __future__ import annotations

import json

import anyio
import pytest

from tests.gw import fixture_entry, status, text_of
from tests.inproc import gateway_in_process
from toolreel.recorder._outputs import KeptOutputs

MIB = 1024 * 1024


def _packed(n: int, size: int) -> bytes:
    return json.dumps({"n": n, "blob": "x" * size}).encode()


def test_past_the_budget_older_outputs_leave_memory_and_are_read_back() -> None:
    kept = KeptOutputs(lambda data: json.loads(data), budget=3 * MIB)
    for n in range(10):
        kept.add_packed(f"big_{n}", _packed(n, MIB))
    assert kept.in_memory <= 3 * MIB
    assert len(kept) == 10 and "big_0" in kept
    assert kept["big_0"]["n"] == 0  # from the spill file
    assert kept["big_9"]["n"] == 9  # still in memory
    for n in range(10):  # reading every one keeps the parsed cache within the budget too
        assert kept[f"big_{n}"]["n"] == n
    assert kept.in_memory <= 6 * MIB
    kept.put("preset_1", {"given": True})
    assert kept["preset_1"] == {"given": True}
    with pytest.raises(KeyError):
        kept["nothing_1"]
    kept.close()


def test_one_output_larger_than_the_budget_is_kept_and_read_but_never_cached() -> None:
    kept = KeptOutputs(lambda data: json.loads(data), budget=MIB)
    kept.add_packed("huge_1", _packed(1, 2 * MIB))
    assert kept["huge_1"]["n"] == 1
    assert kept.in_memory == len(_packed(1, 2 * MIB))  # the packed bytes only, not a parsed copy beside them
    kept.close()


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_ref_to_an_output_spilled_out_of_memory_still_resolves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLREEL_REF_MEMORY_MB", "1")
    with anyio.fail_after(90):
        async with gateway_in_process({"feat": fixture_entry("features")}) as gw:
            for n in range(4):
                result = await gw.client.call_tool("feat__echo", {"text": f"{n}-" + "y" * 600_000})
                assert not result.is_error
            first = await gw.client.call_tool("feat__echo", {"text": "{{@echo_1}}"})
            last = await gw.client.call_tool("feat__echo", {"text": "{{@echo_4}}"})
            state = await status(gw)
    assert text_of(first) == "0-" + "y" * 600_000
    assert text_of(last) == "3-" + "y" * 600_000
    assert [s["status"] for s in state["steps"]] == ["succeeded"] * 6
