"""One client cannot stall the others: on an HTTP gateway, a hostile client sends the worst ref filters and
input patterns it can while another makes 200 plain calls. The hostile calls end with named errors within
their budget; the other client's p99 stays under 100 ms (a behaviour bound, generous for a busy machine:
the figures themselves are in docs/decisions/trust.md)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import pytest

from tests.gw import fixture_entry, gateway_env, http_gateway, text_of, write_config
from toolreel.core.model import TemplateDraft
from toolreel.core.store import open_store

# One worker for the tests that load the ref workers: a 2-second filter beside the other's p99 bound would spoil it.
pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("ref_workers")]

BUDGET = 2.0  # seconds a costly ref may take here (TOOLREEL_REF_TIME_LIMIT)
ITEMS = 100_000
CALLS = 200
BACKTRACKING = {
    "name": "hostile",
    "inputs": {"word": {"type": "string", "pattern": "^(a+)+$"}},
    "steps": [{"name": "say", "tool": "feat__echo", "input": {"text": "@input.word"}}],
}


def _filter(clauses: int) -> str:
    return "@echo_1[?(" + " && ".join(f"@.v != {i}" for i in range(1, clauses + 1)) + ")].name"


async def test_a_hostile_client_does_not_stall_another(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(db)
    store.save_template(TemplateDraft("hostile", BACKTRACKING))
    store.close()
    config = write_config(tmp_path / "mcp.json", {"feat": fixture_entry("features")})
    env = gateway_env(db, TOOLREEL_REF_TIME_LIMIT=str(BUDGET))
    calm_times: list[float] = []
    hostile: list[tuple[str, float, str]] = []
    done = anyio.Event()
    async with (
        http_gateway(["--config", str(config)], env) as gateway,
        gateway.connect(max_event=64 * 1024 * 1024) as bad,
        gateway.connect() as calm,
    ):
        big = json.dumps([{"v": -1, "name": f"n{i}"} for i in range(ITEMS)])
        first = await bad.client.call_tool("feat__echo", {"text": big})
        assert not first.is_error and (first.meta or {})["toolreel/step"] == "echo_1"
        assert text_of(await calm.client.call_tool("feat__echo", {"text": "warm"})) == "warm"

        async def attack() -> None:
            attacks = [
                ("filter of 10 clauses", {"text": _filter(10)}),
                ("filter of 50 clauses", {"text": _filter(50)}),
                ("filter of 5,000 clauses", {"text": _filter(5000)}),
            ]
            while not done.is_set():
                for label, arguments in attacks:
                    started = time.perf_counter()
                    result = await bad.client.call_tool("feat__echo", arguments)
                    hostile.append((label, time.perf_counter() - started, text_of(result)))
                started = time.perf_counter()
                result = await bad.client.call_tool("reel__hostile", {"word": "a" * 40 + "b"})
                hostile.append(("pattern ^(a+)+$", time.perf_counter() - started, text_of(result)))

        async def plain_calls(times: list[float]) -> None:
            for index in range(CALLS):
                started = time.perf_counter()
                result = await calm.client.call_tool("feat__echo", {"text": f"call {index}"})
                times.append(time.perf_counter() - started)
                assert text_of(result) == f"call {index}"
            done.set()

        alone: list[float] = []
        await plain_calls(alone)  # the same calls with no attack, for the figures
        done = anyio.Event()

        with anyio.fail_after(300):
            async with anyio.create_task_group() as tg:
                tg.start_soon(attack)
                tg.start_soon(plain_calls, calm_times)

    assert hostile, "the hostile client made no call"
    for label, seconds, text in hostile:
        if label.startswith("pattern"):
            assert "does not match" in text and seconds < 1.0, (label, seconds, text)
        elif "5,000" in label:
            assert "past the 2,048 a ref's path may have" in text and seconds < 1.0, (label, seconds, text)
        else:
            assert f"took longer than {BUDGET:g} s" in text, (label, text)
            assert seconds < BUDGET + 3.0, (label, seconds)  # the budget, and the trips to and from the worker
    print(f"\nalone: {_figures(alone)}; beside the hostile client: {_figures(calm_times)}")
    p99 = sorted(calm_times)[int(len(calm_times) * 0.99) - 1]
    print("hostile:", [(label, round(seconds, 2)) for label, seconds, _ in hostile])
    assert p99 < 0.1, f"p99 {p99 * 1000:.1f} ms"


def _figures(times: list[float]) -> str:
    ordered = sorted(times)
    p50, p99 = ordered[len(ordered) // 2], ordered[int(len(ordered) * 0.99) - 1]
    return f"p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, max {ordered[-1] * 1000:.1f} ms"
