"""A hostile client beside a plain one on one HTTP gateway: the scenario shared by the behaviour test
(`tests/gateway/test_hostile_client.py`) and its figures (`bench/hostile.py`).

One client makes a 100,000-item step, then loops the worst ref filters and input pattern it can (a 10- and
a 50-clause filter that run into the 2 s budget, a 5,000-clause one past the path limit, a backtracking
pattern); the other makes plain `echo` calls, first alone and then beside it. Every call's start and end are
kept, so a reader can tell whether the plain calls went on while a costly filter was being worked out.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import anyio

from tests.gw import Connected, fixture_entry, gateway_env, http_gateway, text_of, write_config
from toolreel.core.model import TemplateDraft
from toolreel.core.store import open_store

__all__ = ["BUDGET", "Call", "Outcome", "percentiles", "run_hostile"]

BUDGET = 2.0  # seconds a costly ref may take here (TOOLREEL_REF_TIME_LIMIT)
ITEMS = 100_000
BACKTRACKING = {
    "name": "hostile",
    "inputs": {"word": {"type": "string", "pattern": "^(a+)+$"}},
    "steps": [{"name": "say", "tool": "feat__echo", "input": {"text": "@input.word"}}],
}


@dataclass(frozen=True, slots=True)
class Call:
    """One call: what it was, when it started and ended (perf_counter seconds), and the text it got."""

    label: str
    started: float
    ended: float
    text: str

    @property
    def seconds(self) -> float:
        return self.ended - self.started


@dataclass(frozen=True, slots=True)
class Outcome:
    alone: list[Call]  # the plain calls with no attack
    beside: list[Call]  # the same calls while the hostile client attacks
    hostile: list[Call]

    def plain_calls_during(self, call: Call) -> int:
        """How many plain calls both started and ended while `call` was in flight."""
        return sum(1 for plain in self.beside if call.started < plain.started and plain.ended < call.ended)


def _filter(clauses: int) -> str:
    return "@echo_1[?(" + " && ".join(f"@.v != {i}" for i in range(1, clauses + 1)) + ")].name"


async def run_hostile(tmp_path: Path, calls: int) -> Outcome:
    """Start `toolreel serve --http` on the features fixture and play the scenario with `calls` plain calls."""
    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(db)
    store.save_template(TemplateDraft("hostile", BACKTRACKING))
    store.close()
    config = write_config(tmp_path / "mcp.json", {"feat": fixture_entry("features")})
    env = gateway_env(db, TOOLREEL_REF_TIME_LIMIT=str(BUDGET))
    alone: list[Call] = []
    beside: list[Call] = []
    hostile: list[Call] = []
    async with (
        http_gateway(["--config", str(config)], env) as gateway,
        gateway.connect(max_event=64 * 1024 * 1024) as bad,
        gateway.connect() as calm,
    ):
        big = json.dumps([{"v": -1, "name": f"n{i}"} for i in range(ITEMS)])
        first = await bad.client.call_tool("feat__echo", {"text": big})
        assert not first.is_error and (first.meta or {})["toolreel/step"] == "echo_1"
        assert text_of(await calm.client.call_tool("feat__echo", {"text": "warm"})) == "warm"

        async def timed(who: Connected, label: str, tool: str, arguments: dict[str, str], into: list[Call]) -> None:
            started = time.perf_counter()
            result = await who.client.call_tool(tool, arguments)
            into.append(Call(label, started, time.perf_counter(), text_of(result)))

        async def plain_calls(into: list[Call], done: anyio.Event) -> None:
            for index in range(calls):
                await timed(calm, f"call {index}", "feat__echo", {"text": f"call {index}"}, into)
                assert into[-1].text == f"call {index}"
            done.set()

        async def attack(done: anyio.Event) -> None:
            attacks = [
                ("filter of 10 clauses", "feat__echo", {"text": _filter(10)}),
                ("filter of 50 clauses", "feat__echo", {"text": _filter(50)}),
                ("filter of 5,000 clauses", "feat__echo", {"text": _filter(5000)}),
                ("pattern ^(a+)+$", "reel__hostile", {"word": "a" * 40 + "b"}),
            ]
            while not done.is_set():
                for label, tool, arguments in attacks:
                    await timed(bad, label, tool, arguments, hostile)

        await plain_calls(alone, anyio.Event())
        with anyio.fail_after(300):
            done = anyio.Event()
            async with anyio.create_task_group() as tg:
                tg.start_soon(attack, done)
                tg.start_soon(plain_calls, beside, done)
    return Outcome(alone, beside, hostile)


def percentiles(calls: list[Call]) -> tuple[float, float, float]:
    """p50, p99 and max of the calls' durations, in seconds."""
    ordered = sorted(call.seconds for call in calls)
    return ordered[len(ordered) // 2], ordered[max(int(len(ordered) * 0.99) - 1, 0)], ordered[-1]
