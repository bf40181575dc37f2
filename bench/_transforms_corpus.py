"""The transforms corpus scored: how many expected transforms are found, how many proposed are wrong.

A proposed transform is right when its step, input path and function are the expected ones; anything
else proposed is wrong (a decoy's literal, another function). Bars: no wrong transform, >= 80% found.
"""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.recordings import load_entry
from fixtures.recordings.transforms.record import DIR
from toolreel.templatizer import templatize

__all__ = ["FOUND_BAR", "transform_bars"]

FOUND_BAR = 0.8


def _score(path: Path) -> tuple[set[tuple[str, str, str]], set[tuple[str, str, str]]]:
    entry = load_entry(path)
    expected = {
        (t["step"], t["input_path"], t["function"]) for t in json.loads(path.read_text())["expected"]["transforms"]
    }
    result = templatize(list(entry.recordings), name=entry.name)
    proposed = set()
    for inference in result.applied:
        if inference.kind == "transform":
            code_step = inference.ref.removeprefix("@")  # calc_<function>_<n>
            proposed.add((inference.step, inference.input_path, code_step.removeprefix("calc_").rsplit("_", 1)[0]))
    return expected, proposed


def transform_bars(verbose: bool) -> list[tuple[str, bool]]:
    expected_total = found = wrong = 0
    for path in sorted(DIR.glob("*.json")):
        expected, proposed = _score(path)
        expected_total += len(expected)
        found += len(expected & proposed)
        wrong += len(proposed - expected)
        if verbose:
            for miss in sorted(expected - proposed):
                print(f"  {path.stem}: missed {miss}")
            for bad in sorted(proposed - expected):
                print(f"  {path.stem}: WRONG {bad}")
    share = found / expected_total if expected_total else 1.0
    print(f"transforms found {found}/{expected_total} ({share:.0%})   wrong {wrong}")
    return [
        (f"transforms wrong {wrong} == 0", wrong == 0),
        (f"transforms found {share:.3f} >= {FOUND_BAR}", share >= FOUND_BAR),
    ]
