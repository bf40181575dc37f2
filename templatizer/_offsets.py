"""Times a clock leads to: a silence until two hours from now, a downtime of four hours, the errors of the last hour.

`get_current_time` gives `2026-12-08T22:40:12+01:00`; the agent books a downtime ending `2026-12-09T02:40:12+01:00`.
That is the clock's reading moved by a whole number of quarter hours (of hours, where the reading is on a whole
minute), its seconds kept: no other reading of the recording gives it, and left literal it ends a downtime in the
past on the next run. `propose_offsets` writes it as a `code` step adding the hours to the clock's reading on each
run, in the clock's own zone (or in the zone the argument was written in, `Z`, where that is the clock's). Ahead of
the clock by hours, not whole days, the hours are how long the user chose (`for 4 hours`): a likely input, ticked;
a look back (`the last hour`) and whole days (`a week`) are the task's own window and stay in the code. Kept only
when the script gives the recorded value in every recording.

A date ahead of the clock's by a round number of days (`2027-02-25T00:00:00Z`, midnight, 90 days after the clock's
2026-11-27; or a plain `2026-12-04`, a week on) is that many days from the run's day: an expiry, a due date. Any
date is some number of days away, so only a round one (a week, a month, a quarter, a year) says so; the days are
how long the user chose, a likely input, ticked.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Final, Protocol

from toolreel.core.model import JSON, StepRecord
from toolreel.core.refs import is_ref, refs_in
from toolreel.core.template import InputSpec, StepSpec, Template
from toolreel.templatizer._codesteps import CodeRead, with_code_steps
from toolreel.templatizer._index import clock_key
from toolreel.templatizer._result import Inference, LikelyInput
from toolreel.templatizer._runs import Run, reproduced, script_on
from toolreel.templatizer._values import Keys, free_name, get_at, json_path, same, walk

__all__ = [
    "Clocks",
    "Moved",
    "Offset",
    "Timing",
    "clocks_before",
    "moved_ref",
    "offset_inputs",
    "propose_offsets",
    "with_moved",
]

_STAMP_RE: Final = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})?")
_QUARTER: Final = 15 * 60
_HOUR: Final = 60 * 60
_YEAR: Final = timedelta(days=366)
_DAY_HOURS: Final = 24
_UTC: Final = frozenset({"Z", "+00:00"})
_DAY_RE: Final = re.compile(r"(\d{4})-(\d{2})-(\d{2})(T00:00:00(?:\.0+)?(?:Z|[+-]\d{2}:\d{2})?)?")
_ROUND_DAYS: Final = frozenset({1, 2, 3, 7, 14, 21, 28, 30, 31, 45, 60, 90, 120, 180, 365, 366})
_DAYS_CODE: Final = """export default function(input) {
  const m = String(input.text).match(/(\\d{4})-(\\d{2})-(\\d{2})/);
  if (m === null) throw new Error("no date in the clock's reading");
  const at = new Date(Date.UTC(+m[1], +m[2] - 1, +m[3]) + Number(input.days) * 86400000);
  const pad = (n) => String(n).padStart(2, "0");
  return at.getUTCFullYear() + "-" + pad(at.getUTCMonth() + 1) + "-" + pad(at.getUTCDate()) + input.rest;
}
"""
_CODE: Final = """export default function(input) {
  const m = String(input.text).match(new RegExp(%s));
  if (m === null) throw new Error("no date-time in the clock's reading");
  const at = new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]) + Number(input.hours) * 3600000);
  const pad = (n) => String(n).padStart(2, "0");
  const day = at.getUTCFullYear() + "-" + pad(at.getUTCMonth() + 1) + "-" + pad(at.getUTCDate());
  return day + "T" + pad(at.getUTCHours()) + ":" + pad(at.getUTCMinutes()) + ":" + pad(at.getUTCSeconds()) + %s;
}
"""


class Moved(Protocol):
    """A time the clock's reading leads to (an `Offset`, an `_epochs.Epoch`): what its likely input is made of."""

    @property
    def step(self) -> str: ...
    @property
    def keys(self) -> Keys: ...
    @property
    def source(self) -> str: ...
    @property
    def chosen(self) -> bool: ...
    @property
    def unit(self) -> str: ...
    @property
    def by(self) -> JSON: ...
    @property
    def given(self) -> dict[str, JSON]: ...
    def number(self) -> int | float: ...
    def code(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Offset:
    """An argument that is a clock's reading moved by `hours` (see the module)."""

    step: str  # the recorded call
    keys: Keys
    recorded: str
    source: str  # the clock's reading, e.g. `@get_current_time_1.datetime`
    hours: float
    zone: str | None  # written after the seconds: the argument's own (`Z`, `.000Z`); None: the clock's zone
    at: str = ""  # the template's step, where it is not the call's own: the loop over the calls
    by: JSON = None  # what the code step is given as the hours (days): the recorded number, or the input that gave it
    rest: str | None = None  # a date moved by whole days: what follows the date (`T00:00:00Z`, or nothing)

    @property
    def chosen(self) -> bool:
        """Ahead by hours, not whole days, or by a round number of days to a date: how long the user chose."""
        return self.hours > 0 and (self.hours % _DAY_HOURS != 0 or self.rest is not None)

    def code(self) -> str:
        if self.rest is not None:
            return _DAYS_CODE
        zone = json.dumps(self.zone) if self.zone is not None else '(m[8] === undefined ? "" : m[8])'
        return _CODE % (json.dumps(_STAMP_RE.pattern), zone)

    @property
    def given(self) -> dict[str, JSON]:
        """The code step's input."""
        if self.rest is not None:
            return {"text": self.source, "days": self.by, "rest": self.rest}
        return {"text": self.source, "hours": self.by}

    @property
    def unit(self) -> str:
        return "days" if self.rest is not None else "hours"

    def number(self) -> int | float:
        if self.rest is not None:
            return int(self.hours // _DAY_HOURS)
        return int(self.hours) if float(self.hours).is_integer() else self.hours


Clocks = Mapping[str, tuple[str, str]]  # each kept step's latest clock reading before it: (source, text)


def clocks_before(
    template: Template, kept: Sequence[StepRecord], outputs: Mapping[str, JSON]
) -> dict[str, tuple[str, str]]:
    """For each kept step after a clock was read, the latest reading before it (read once per save: every output
    walked for a clock's key costs as much as the rest of a long session's work here)."""
    names = {step.name for step in template.steps}
    clock: tuple[str, str] | None = None
    out: dict[str, tuple[str, str]] = {}
    for record in kept:
        if clock is not None:
            out[record.name] = clock
        if record.name in outputs and record.name in names:
            clock = _reading(record.name, outputs[record.name]) or clock
    return out


@dataclass(frozen=True, slots=True)
class Timing:
    """What finding the times a clock leads to reads (`propose_offsets`, `_epochs.propose_epochs`): the kept calls,
    the recordings, `clocks_before`, the inputs' values (one may give how far a time moves), how to declare such an
    input (no argument holds it whole), and the loop step of each call a loop stands for (the same time in every
    call: read once, before it)."""

    kept: Sequence[StepRecord]
    runs: Sequence[Run]
    clocks: Clocks
    named: Mapping[str, JSON]
    input_specs: Mapping[str, InputSpec]
    loops: Mapping[str, str]

    def calls(self, template: Template) -> Iterator[tuple[StepRecord, StepSpec, tuple[str, str]]]:
        """Each kept call after a clock was read, with the template's step for it and the latest reading."""
        specs = {step.name: step for step in template.steps}
        for record in self.kept:
            spec = specs.get(record.name) or specs.get(self.loops.get(record.name, ""))
            clock = self.clocks.get(record.name)
            if spec is not None and spec.tool is not None and clock is not None:
                yield record, spec, clock

    def reproduced(self, item: Moved) -> bool:
        """Whether the item's code step gives exactly what every recording sent."""
        return reproduced(item.step, item.keys, self.runs, script_on(item.code(), item.given), _equal)


def propose_offsets(template: Template, timing: Timing) -> tuple[Template, tuple[Inference, ...], tuple[Offset, ...]]:
    """The template with each date-time a clock's reading leads to computed from it (see the module)."""
    found: list[Offset] = []
    for record, spec, clock in timing.calls(template):
        for keys, leaf in walk(spec.input):
            if not isinstance(leaf, str) or is_ref(leaf) or refs_in(leaf):
                continue
            if any(f.at == spec.name and f.keys == keys for f in found):
                continue  # a loop's later call: its first one put the time in the loop step
            item = _offset(record, keys, *clock) or _days_on(record, keys, *clock)
            if item is not None:
                item = dataclasses.replace(item, at=spec.name, by=moved_ref(item, timing.named))
                if timing.reproduced(item):
                    found.append(item)
    rewritten, inferences = with_moved(template, found, timing.input_specs, list(map(_read, found)))
    return rewritten, inferences, tuple(found)


def with_moved(
    template: Template, found: Sequence[Moved], input_specs: Mapping[str, InputSpec], reads: list[CodeRead]
) -> tuple[Template, tuple[Inference, ...]]:
    """The template with a code step for each moved time, and the inputs that give their amounts declared."""
    if not found:
        return template, ()
    given = sorted({by.removeprefix("@input.") for item in found if isinstance(by := item.by, str)})
    declared = {**template.inputs, **{name: input_specs[name] for name in given if name in input_specs}}
    return with_code_steps(dataclasses.replace(template, inputs=declared), reads)


def offset_inputs(found: Sequence[Moved], likely: Sequence[LikelyInput], taken: set[str]) -> list[LikelyInput]:
    """The likely inputs with the hours each offset ahead of the clock moved it by, ticked: how long the user chose."""
    out = list(likely)
    for item in found:
        if not item.chosen or any(same(existing.value, item.number()) for existing in out):
            continue
        name = free_name(item.unit, taken)
        taken.add(name)
        why = f"the clock's reading {item.source} moved ahead by it: how long the user chose"
        out.append(LikelyInput(name, item.number(), "number", ((item.step, json_path(item.keys)),), why))
    return out


def _reading(step: str, output: JSON) -> tuple[str, str] | None:
    for keys, node in walk(output):
        if (
            keys
            and isinstance(keys[-1], str)
            and clock_key(keys[-1])
            and isinstance(node, str)
            and _STAMP_RE.fullmatch(node)
        ):
            return f"@{step}{json_path(keys)[1:]}", node
    return None


def _offset(record: StepRecord, keys: Keys, source: str, reading: str) -> Offset | None:
    ok, recorded = get_at(record.resolved_input if record.resolved_input is not None else {}, keys)
    match = _STAMP_RE.fullmatch(recorded) if ok and isinstance(recorded, str) else None
    clock = _STAMP_RE.fullmatch(reading)
    if match is None or clock is None or match.group(6) != clock.group(6):
        return None  # (a time the clock leads to keeps its seconds; one the user typed does not)
    zone, clock_zone = (match.group(7) or "") + (match.group(8) or ""), clock.group(8)
    if match.group(8) is not None and match.group(8) != clock_zone and not {match.group(8), clock_zone} <= _UTC:
        return None  # written in another zone: no wall-clock arithmetic here
    delta = _wall(match) - _wall(clock)
    seconds = int(delta.total_seconds())
    # a reading on a whole minute (`17:20:00`) shares its seconds with any time a person types: whole hours only
    unit = _QUARTER if clock.group(6) != "00" else _HOUR
    if seconds == 0 or seconds % unit or abs(delta) > _YEAR:
        return None
    own = None if match.group(7) is None and match.group(8) == clock_zone else zone
    return Offset(record.name, keys, recorded, source, seconds / 3600, own)


def _days_on(record: StepRecord, keys: Keys, source: str, reading: str) -> Offset | None:
    """A date (or a midnight) a round number of days after the clock's date (see the module)."""
    ok, recorded = get_at(record.resolved_input if record.resolved_input is not None else {}, keys)
    match = _DAY_RE.fullmatch(recorded) if ok and isinstance(recorded, str) else None
    clock = _STAMP_RE.fullmatch(reading)
    if match is None or clock is None:
        return None
    try:
        days = (date(*map(int, match.groups()[:3])) - _wall(clock).date()).days
    except ValueError:
        return None
    if days not in _ROUND_DAYS:
        return None
    return Offset(record.name, keys, recorded, source, days * _DAY_HOURS, None, rest=match.group(4) or "")


def _wall(match: re.Match[str]) -> datetime:
    """The wall-clock time written (its zone aside: both sides are in one zone)."""
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    return datetime(year, month, day, hour, minute, second)


def moved_ref(item: Moved, named: Mapping[str, JSON]) -> JSON:
    """The input that gave how far a time was moved, where one did (its value on each run); else the recorded
    number."""
    if item.chosen:
        for name, value in named.items():
            if same(value, item.number()):
                return f"@input.{name}"
    return item.number()


def _equal(got: JSON, sent: JSON, _: Run) -> bool:
    """`reproduced`'s check for a moved time: the script gives exactly what was sent."""
    return bool(got == sent)


def _read(item: Offset) -> CodeRead:
    def why(name: str) -> str:
        return (
            f"{item.recorded!r} is the clock's reading {item.source} moved by {item.number()} {item.unit}; "
            f"the code step {name} reproduces it from the recording"
        )

    return CodeRead(item.at or item.step, item.keys, item.recorded, item.code(), item.given, "offset_time", why)
