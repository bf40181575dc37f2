"""Times a clock leads to, sent as Unix numbers: the window of the last 3 hours in milliseconds, the same half hour a
day earlier in microseconds.

`get_current_time` gives `2026-11-28T09:00:00+00:00`; the agent lists the services between `"1795845600000"` and
`"1795856400000"`. Those are the clock's instant in milliseconds, three hours back and now: left literal, the next
run looks at a window long past. A number of 10, 13, 16 or 19 digits (seconds, milliseconds, microseconds,
nanoseconds; as a number or as digits in a string) a whole number of minutes from the clock's instant, within a year,
is that instant moved (no other reading of the recording gives it: it is checked to be reproduced). In one call the
latest such time is the window's end (now, or a day before) and an earlier one its start: the window, how far back
the user looked (`the last 3 hours`, `the last 30 minutes`), is a likely input, ticked (in hours where it is whole
hours); the end's distance from the clock stays in the code (the task's own: "the same window yesterday"). A time
alone (`since` an hour ago) is moved in the code, as `_offsets` moves a look back: nothing shows it was chosen.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from toolreel.core.model import JSON, StepRecord
from toolreel.core.refs import is_ref, refs_in
from toolreel.core.template import Template
from toolreel.templatizer._codesteps import CodeRead
from toolreel.templatizer._offsets import Timing, moved_ref, with_moved
from toolreel.templatizer._result import Inference
from toolreel.templatizer._values import Keys, get_at, walk

__all__ = ["EPOCH_CODE", "Epoch", "propose_epochs"]

EPOCH_CODE: Final = """export default function(input) {
  const at = Date.parse(String(input.text));
  if (Number.isNaN(at)) throw new Error("no date-time in the clock's reading");
  const ms = at + (input.shift - Number(input.back) * input.unit) * 1000;
  if (input.scale > 1000000) {
    // (nanoseconds pass 2^53: counted exactly as a big integer, written as digits)
    const ns = BigInt(Math.floor(ms)) * BigInt(input.scale / 1000);
    return input.as_text ? ns.toString() : Number(ns);
  }
  const value = Math.floor((ms * input.scale) / 1000);
  return input.as_text ? String(value) : value;
}
"""
_SCALES: Final = {10: 1, 13: 1000, 16: 10**6, 19: 10**9}  # digits of a time near now -> units per second
_MINUTE: Final = 60
_HOUR: Final = 3600
_YEAR: Final = 366 * 86400


@dataclass(frozen=True, slots=True)
class Epoch:
    """An argument that is the clock's instant moved, as a Unix number (see the module)."""

    step: str
    keys: Keys
    recorded: JSON
    source: str  # the clock's reading, e.g. `@get_current_time_1.datetime`
    shift: int  # seconds from the clock to the window's end
    window: int  # seconds back from that end (0: the end itself)
    scale: int  # units per second
    as_text: bool
    at: str = ""
    by: JSON = None  # the window in `unit`s: the recorded number, or the input that gives it

    @property
    def chosen(self) -> bool:
        return self.window > 0

    @property
    def unit(self) -> str:
        return "hours" if self._seconds == _HOUR else "minutes"

    @property
    def _seconds(self) -> int:
        """The window's unit in seconds: hours where it is whole hours."""
        return _HOUR if self.window % _HOUR == 0 else _MINUTE

    def number(self) -> int:
        return self.window // self._seconds

    def code(self) -> str:
        return EPOCH_CODE

    @property
    def given(self) -> dict[str, JSON]:
        return {
            "text": self.source,
            "shift": self.shift,
            "back": self.by if self.by is not None else self.number(),
            "unit": self._seconds,
            "scale": self.scale,
            "as_text": self.as_text,
        }


def propose_epochs(template: Template, timing: Timing) -> tuple[Template, tuple[Inference, ...], tuple[Epoch, ...]]:
    """The template with each Unix time a clock's reading leads to computed from it (see the module)."""
    found: list[Epoch] = []
    for record, spec, clock in timing.calls(template):
        if spec.name in {f.at for f in found}:
            continue  # a loop's later call: its first one put the times in the loop step
        for item in _in_call(record, spec.input, *clock):
            item = dataclasses.replace(item, at=spec.name, by=moved_ref(item, timing.named))
            if timing.reproduced(item):
                found.append(item)
    rewritten, inferences = with_moved(template, found, timing.input_specs, list(map(_read, found)))
    return rewritten, inferences, tuple(found)


def _in_call(record: StepRecord, literal: JSON, source: str, reading: str) -> list[Epoch]:
    """The call's Unix times near the clock's instant, each placed in the window the latest of them ends."""
    try:
        now = datetime.fromisoformat(reading.replace("Z", "+00:00"))
    except ValueError:
        return []
    if now.tzinfo is None:
        return []  # (a wall-clock reading without its zone is no instant)
    sent = record.resolved_input if record.resolved_input is not None else {}
    near: list[tuple[Keys, JSON, int, int]] = []  # keys, value, seconds from now, scale
    for keys, leaf in walk(literal):
        if isinstance(leaf, str) and (is_ref(leaf) or refs_in(leaf)):
            continue
        ok, value = get_at(sent, keys)
        digits = str(value) if ok and not isinstance(value, bool) and isinstance(value, int | str) else ""
        scale = _SCALES.get(len(digits)) if digits.isdigit() else None
        if scale is None:
            continue
        delta = int(digits) / scale - now.timestamp()
        if abs(delta) <= _YEAR and float(delta).is_integer() and int(delta) % _MINUTE == 0:
            near.append((keys, value, int(delta), scale))
    if not near:
        return []
    end = max(delta for _, _, delta, _ in near)  # (one time alone is moved in the code, as a look back is)
    return [
        Epoch(record.name, keys, value, source, end, end - delta, scale, isinstance(value, str))
        for keys, value, delta, scale in near
    ]


def _read(item: Epoch) -> CodeRead:
    def why(name: str) -> str:
        back = f", {item.number()} {item.unit} back" if item.chosen else ""
        return (
            f"{item.recorded!r} is the clock's reading {item.source} as a Unix time, moved {item.shift} s{back}; "
            f"the code step {name} reproduces it from the recording"
        )

    return CodeRead(item.at or item.step, item.keys, item.recorded, item.code(), item.given, "unix_time", why)
