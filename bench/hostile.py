"""What a hostile client costs another: `.venv/bin/python bench/hostile.py [--calls N] [--rounds R]`.

`toolreel serve --http` on the features fixture, budget 2 s per ref (the scenario of `tests/hostile.py`): one
client makes a 100,000-item step and loops the worst ref filters and input pattern it can, another makes N
plain `echo` calls, first alone and then beside it. Prints, per round, the plain client's p50/p99/max alone
and beside the hostile one, how many plain calls went through during one costly filter, and how long each
kind of hostile call took. The bar: p99 beside the hostile client under 100 ms.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.hostile import Outcome, percentiles, run_hostile

BAR = 0.100


def report(round_: int, outcome: Outcome) -> float:
    alone, beside = percentiles(outcome.alone), percentiles(outcome.beside)
    costly = [call for call in outcome.hostile if "took longer" in call.text]
    through = max((outcome.plain_calls_during(call) for call in costly), default=0)
    kinds: dict[str, list[float]] = defaultdict(list)
    for call in outcome.hostile:
        kinds[call.label].append(call.seconds)
    print(f"round {round_}: alone {_ms(alone)}; beside {_ms(beside)}; {through} plain calls during one costly filter")
    for label, seconds in kinds.items():
        print(f"  {label}: {len(seconds)} calls, {min(seconds):.2f}-{max(seconds):.2f} s")
    return beside[1]


def _ms(figures: tuple[float, float, float]) -> str:
    p50, p99, most = (seconds * 1000 for seconds in figures)
    return f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {most:.1f} ms"


async def main(calls: int, rounds: int) -> int:
    worst = 0.0
    for round_ in range(1, rounds + 1):
        with tempfile.TemporaryDirectory(prefix="toolreel-hostile-") as tmp:
            worst = max(worst, report(round_, await run_hostile(Path(tmp), calls)))
    verdict = "meets" if worst < BAR else "misses"
    print(f"worst p99 beside the hostile client {worst * 1000:.1f} ms: {verdict} the bar of {BAR * 1000:.0f} ms")
    return 0 if worst < BAR else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    sys.exit(anyio.run(main, options.calls, options.rounds))
