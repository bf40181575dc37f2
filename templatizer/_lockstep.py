"""Lockstep across recordings: an argument whose value, in every recording, is the value one earlier output
holds at one path, is that output (a ref), not something the user chose (an input).

It is the evidence several recordings add: one recording's equality may be chance, a path that carries the
argument's changing value in each of them is not. It reaches what single-recording scoring leaves out (a
datetime copied from a time tool: volatile keys are never producers there).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from toolreel.core.model import JSON
from toolreel.core.refs import format_ref
from toolreel.templatizer._values import get_at, is_trivial, same, walk

if TYPE_CHECKING:
    from toolreel.templatizer._runs import Run

__all__ = ["lockstep_ref"]


def lockstep_ref(step: str, per_run: Sequence[tuple[bool, JSON]], runs: Sequence[Run]) -> tuple[str, str] | None:
    """(ref, evidence) of the latest earlier output path equal to the argument in every recording it is in."""
    values = [value for found, value in per_run if found]
    if len(values) < 2 or all(is_trivial(v) for v in values) or isinstance(values[0], dict | list):
        return None
    earlier = list(runs[0].steps)
    earlier = earlier[: earlier.index(step)] if step in earlier else []
    for producer in reversed(earlier):
        output = runs[0].outputs.get(producer)
        for keys, node in walk(output):
            if not same(node, values[0]) or not keys:
                continue
            if all(
                _holds(run, producer, keys, value)
                for run, (found, value) in zip(runs[1:], per_run[1:], strict=True)
                if found
            ):
                ref = format_ref(producer, keys)
                shown = ", ".join(repr(v) for v in values)
                return ref, f"changes in lockstep with {ref} across all {len(values)} recordings ({shown})"
    return None


def _holds(run: Run, producer: str, keys: tuple[str | int, ...], value: JSON) -> bool:
    if producer not in run.outputs:
        return False
    found, there = get_at(run.outputs[producer], keys)
    return found and same(there, value)
