"""Named inputs across several recordings: each recording verifies with its own values.

The user names an input by its value in the first recording (`inputs={"who": "Ada Lovelace"}`). In each
other recording the same input has another value, read where the first recording used it: the same step
and argument (the whole value), or the part of the same string between the same text ("Welcome Ada
Lovelace!" then "Welcome Grace Hopper!").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from toolreel.core.errors import CodeError, RefError
from toolreel.core.model import JSON, StepRecord
from toolreel.core.refs import MappingScope, resolve
from toolreel.core.sandbox import CodeLimits, run_code
from toolreel.templatizer._values import Keys, get_at, number_text, same, walk

__all__ = ["Run", "named_in_runs", "reproduced", "script_on"]


@dataclass
class Run:
    """One recording: its kept steps by name, their outputs, and the template inputs' values in it."""

    steps: dict[str, StepRecord]
    outputs: dict[str, JSON]
    inputs: dict[str, JSON] = field(default_factory=dict)
    views: dict[str, list[str]] = field(default_factory=dict)  # step -> the rows read out of its text output

    def scope(self) -> MappingScope:
        return MappingScope(steps=self.outputs, inputs=self.inputs)

    def sent(self, step: str, keys: Keys) -> tuple[bool, JSON] | None:
        """What this recording's `step` sent at `keys` (found, value); None where it has no such step: the one
        question every check of a computed argument asks of each recording."""
        record = self.steps.get(step)
        if record is None:
            return None
        return get_at(record.resolved_input if record.resolved_input is not None else {}, keys)


def reproduced(
    step: str, keys: Keys, runs: Sequence[Run], compute: Callable[[Run], JSON], holds: Callable[[JSON, JSON, Run], bool]
) -> bool:
    """A computed argument's check: in every recording that has `step`, it sent something at `keys`, `compute` (a
    script run on that recording's outputs) gives a value without failing, and `holds(got, sent, run)`; in one at
    least. Extractions, dates, transforms and tallies each say only what they compute and what must hold."""
    checked = 0
    for run in runs:
        if (sent := run.sent(step, keys)) is None:
            continue
        ok, recorded = sent
        if not ok:
            return False
        try:
            got = compute(run)
        except (RefError, CodeError):
            return False
        if not holds(got, recorded, run):
            return False
        checked += 1
    return checked > 0


def script_on(code: str, given: Mapping[str, JSON]) -> Callable[[Run], JSON]:
    """`compute` for `reproduced`: the code step's script, its input (`{"text": "@clock_1.datetime"}`) resolved
    against a recording."""
    return lambda run: run_code(code, resolve(dict(given), run.scope()), _LIMITS)


_LIMITS: Final = CodeLimits(timeout=1.0, memory_mb=32)

_Place = tuple[str, Keys, tuple[str, str] | None]  # step, argument path, (text before, text after) in a string


def named_in_runs(
    named: Mapping[str, JSON], primary: Sequence[StepRecord], runs: Sequence[Run]
) -> list[dict[str, JSON]]:
    """For each recording after the first, the named inputs' values found in it (an input not found is absent)."""
    places = {name: _place(value, primary) for name, value in named.items()}
    out: list[dict[str, JSON]] = []
    for run in runs[1:]:
        found: dict[str, JSON] = {}
        for name, place in places.items():
            if place is not None and (value := _read(place, run, named[name])) is not None:
                found[name] = value
        out.append(found)
    return out


def _place(value: JSON, primary: Sequence[StepRecord]) -> _Place | None:
    """Where the first recording first passes `value`: as a whole argument, else inside a string argument."""
    text = value if isinstance(value, str) else number_text(value)
    inside: _Place | None = None
    for record in primary:
        for keys, node in walk(record.resolved_input):
            if same(node, value):
                return record.name, keys, None
            if inside is None and text and isinstance(node, str) and text in node:
                at = node.index(text)
                inside = (record.name, keys, (node[:at], node[at + len(text) :]))
    return inside


def _read(place: _Place, run: Run, example: JSON) -> JSON:
    step, keys, around = place
    record = run.steps.get(step)
    if record is None:
        return None
    found, node = get_at(record.resolved_input, keys)
    if not found:
        return None
    if around is None:
        return node
    before, after = around
    if not isinstance(node, str) or len(node) < len(before) + len(after):
        return None
    if not node.startswith(before) or not node.endswith(after):
        return None
    middle = node[len(before) : len(node) - len(after)]
    if isinstance(example, str):
        return middle
    try:  # a number the first recording interpolated: the same type in this one
        return type(example)(middle) if isinstance(example, int | float) and not isinstance(example, bool) else None
    except ValueError:
        return None
