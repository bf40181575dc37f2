"""Dates and times an agent read from a clock or a record and wrote in another format.

`get_current_time` gives `2026-11-26T11:02:13+01:00`; the agent books `26/11/2026`, or "November 26" in a
message, or `11:02`. Such a value is no earlier value and not a part of one, so neither a ref nor an
extraction carries it; left literal it is yesterday's date on the next run. `propose_dates` renders every
ISO date-time of the earlier outputs in a closed set of formats (`FORMATS`, the text of the date-time
reassembled: no time zone arithmetic), and when exactly one rendering of one output equals an argument,
inserts a `code` step that reformats it. Kept only when the script gives the recorded value in every
recording.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

from toolreel.core.model import JSON, StepRecord
from toolreel.core.refs import is_ref, refs_in
from toolreel.core.template import StepSpec, Template
from toolreel.templatizer._codesteps import CodeRead, with_code_steps
from toolreel.templatizer._index import clock_key
from toolreel.templatizer._result import Inference
from toolreel.templatizer._runs import Run, reproduced, script_on
from toolreel.templatizer._values import Keys, get_at, json_path, walk

__all__ = ["FORMATS", "propose_dates", "render"]

# Formats a person writes a date or a time in; the ISO forms themselves are extractions (`_capture`).
FORMATS: Final = (
    *("%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y", "%Y/%m/%d", "%Y%m%d", "%d-%m-%Y"),
    *("%Y-%m-%d %H:%M", "%d/%m/%Y %H:%M", "%H:%M", "%H:%M:%S", "%H%M"),
    *("%B %e, %Y", "%B %e", "%e %B %Y", "%e %B", "%b %e, %Y", "%b %e", "%e %b %Y", "%e %b", "%A", "%A %e %B"),
    # the start and the end of the clock's day, in its zone (a calendar's `min_time`/`max_time`: "rest of today")
    *("%Y-%m-%dT00:00:00%z", "%Y-%m-%dT23:59:59%z", "%Y-%m-%dT23:59:59.999%z"),
    "%Y-%m-%dT%H:%M:%SZ",  # a UTC clock's time written with `Z` (`_UTC_FORMAT`: only when its zone is +00:00)
)
# The month and the ISO week a clock's date is in (a report or a page named for it: `November 2026`, `2026-W48`):
# only from a clock's own date-time, never from a record's dates (a session's creation time is no choice of week)
_PERIODS: Final = ("%B %Y", "%b %Y", "%G-W%V")
# Days a clock's date leads to (`since` the Monday of this week, the first of the month, yesterday), written as a day or
# as that day's start: only from a clock's own date-time (`datetime`, `now`), never from a record's dates.
SHIFTS: Final = ("monday", "first", "yesterday", "tomorrow", "week_ago")
_MOVES: Final = {
    "monday": "the Monday of its week",
    "first": "the first of its month",
    "yesterday": "the day before",
    "tomorrow": "the day after",
    "week_ago": "a week before",
}
_SHIFTED: Final = ("%Y-%m-%d", "%Y-%m-%dT00:00:00Z", "%Y-%m-%dT00:00:00%z")
_SHIFT_RE: Final = re.compile(r"^<(\w+)>")
_ISO_RE: Final = r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?"
_ISO: Final = re.compile(_ISO_RE)
_MONTHS: Final = (
    *("January", "February", "March", "April", "May", "June", "July"),
    *("August", "September", "October", "November", "December"),
)
_DAYS: Final = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_DIRECTIVE_RE: Final = re.compile(r"%([YmdHMSBbeAzGV])")


_UTC: Final = frozenset({"Z", "+00:00", "+0000"})
_UTC_FORMAT: Final = "%Y-%m-%dT%H:%M:%SZ"


def render(match: re.Match[str], fmt: str) -> str | None:
    """`fmt` filled from an ISO date(-time) match, as the code step does; None when it needs a missing time. A
    `<shift>` before the format (`<monday>%Y-%m-%d`) moves the date first (the time of day stays)."""
    from datetime import date, timedelta

    year, month, day, hour, minute, second, zone = match.groups()
    try:
        moved = date(int(year), int(month), int(day))
    except ValueError:
        return None
    if (shift := _SHIFT_RE.match(fmt)) is not None:
        fmt = fmt[shift.end() :]
        days = {"monday": -moved.weekday(), "first": 1 - moved.day, "yesterday": -1, "tomorrow": 1, "week_ago": -7}
        moved += timedelta(days=days[shift.group(1)])
        year, month, day = f"{moved.year:04d}", f"{moved.month:02d}", f"{moved.day:02d}"
    weekday = _DAYS[moved.weekday()]
    name = _MONTHS[int(month) - 1]
    parts = {"Y": year, "m": month, "d": day, "H": hour, "M": minute, "S": second, "z": zone}
    iso_year, week, _ = moved.isocalendar()
    parts |= {"B": name, "b": name[:3], "e": str(int(day)), "A": weekday, "G": str(iso_year), "V": f"{week:02d}"}
    if any(parts[key] is None for key in _DIRECTIVE_RE.findall(fmt)) or (fmt == _UTC_FORMAT and zone not in _UTC):
        return None
    return _DIRECTIVE_RE.sub(lambda m: str(parts[m.group(1)]), fmt)


def _code(fmt: str) -> str:
    shift = _SHIFT_RE.match(fmt)
    moved = ""
    if shift is not None:
        fmt = fmt[shift.end() :]
        moved = (
            "  const at = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));\n"
            f"  const shift = {json.dumps(shift.group(1))};\n"
            "  const by = {monday: -((at.getUTCDay() + 6) % 7), first: 1 - at.getUTCDate(), yesterday: -1,"
            " tomorrow: 1, week_ago: -7}[shift];\n"
            "  at.setUTCDate(at.getUTCDate() + by);\n"
            '  m[1] = String(at.getUTCFullYear()).padStart(4, "0");\n'
            '  m[2] = String(at.getUTCMonth() + 1).padStart(2, "0");\n'
            '  m[3] = String(at.getUTCDate()).padStart(2, "0");\n'
        )
    return (
        "export default function(input) {\n"
        f"  const m = String(input.text).match(new RegExp({json.dumps(_ISO_RE)}));\n"
        '  if (m === null) throw new Error("no ISO date in the text");\n'
        + moved
        + f"  const months = {json.dumps(_MONTHS)};\n"
        f"  const days = {json.dumps(_DAYS)};\n"
        "  const weekday = (new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))).getUTCDay() + 6) % 7;\n"
        "  const name = months[Number(m[2]) - 1];\n"
        "  const thursday = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]) + 3 - weekday));\n"
        "  const isoYear = thursday.getUTCFullYear();\n"
        "  const week = 1 + Math.floor((thursday - Date.UTC(isoYear, 0, 1)) / 604800000);\n"
        "  const parts = {Y: m[1], m: m[2], d: m[3], H: m[4], M: m[5], S: m[6], z: m[7],\n"
        "    B: name, b: name.slice(0, 3), e: String(Number(m[3])), A: days[weekday],\n"
        '    G: String(isoYear), V: String(week).padStart(2, "0")};\n'
        f"  return {json.dumps(fmt)}.replace(/%([YmdHMSBbeAzGV])/g, (_, k) => parts[k]);\n"
        "}\n"
    )


@dataclass(frozen=True, slots=True)
class _Found:
    step: str
    keys: Keys
    recorded: str
    source: str
    fmt: str
    piece: bool = False  # a time or a date inside a sentence (`London 08:15, ...`): interpolated there

    @property
    def code(self) -> str:
        return _code(self.fmt)


class _Renderings:
    """Every rendering of every ISO date-time the outputs so far hold: text -> (source ref, format)."""

    def __init__(self) -> None:
        self.by_text: dict[str, list[tuple[str, str]]] = {}
        self.by_piece: dict[str, list[tuple[str, str]]] = {}  # also the parts written as in the output

    def add(self, step: str, output: JSON) -> None:
        if not _ISO.search(json.dumps(output)):
            return  # most outputs hold no date: one pass in C instead of a walk
        for keys, node in walk(output):
            if not isinstance(node, str) or not 10 <= len(node) <= 64 or "-" not in node:
                continue
            match = _ISO.search(node)
            if match is None:
                continue
            source = f"@{step}{json_path(keys)[1:]}"
            clock = bool(keys) and isinstance(keys[-1], str) and clock_key(keys[-1])
            shifted = [f"<{shift}>{fmt}" for shift in SHIFTS for fmt in _SHIFTED] if clock else []
            shifted += list(_PERIODS) if clock else []
            for fmt in (*FORMATS, *shifted):
                text = render(match, fmt)
                if text is not None and text not in node:  # a part of it as written: an extraction's job
                    self.by_text.setdefault(text, []).append((source, fmt))
                if text is not None and _PIECE_RE.fullmatch(text):
                    self.by_piece.setdefault(text, []).append((source, fmt))


# Times and numeric dates inside a sentence: `08:15`, `26/11/2026` (the words around them are the agent's).
_PIECE_RE: Final = re.compile(
    r"\d{1,2}:\d{2}(?::\d{2})?|\d{1,2}[/.]\d{1,2}[/.]\d{4}|\d{4}/\d{2}/\d{2}|\d{4}-W\d{2}"  # (an ISO week)
    rf"|(?:{'|'.join(_DAYS)})"  # a weekday: only beside a number the same clock renders
)
_IN_TEXT_RE: Final = re.compile(rf"(?<![\w:/.])(?:{_PIECE_RE.pattern})(?![\w:/]|\.\d)")


def _pieces(
    record: StepRecord, keys: Keys, value: str, renderings: _Renderings, earlier: Sequence[StepRecord]
) -> Iterator[_Found]:
    """Each time or date inside a sentence that exactly one earlier date-time renders; a piece that several
    render (`Friday` of both clocks of a conversion) is read from the one that renders another piece of the same
    sentence (`23:30` of the target's clock): the parts of one sentence come from one record."""
    if " " not in value.strip():
        return
    pieces = [match.group(0) for match in _IN_TEXT_RE.finditer(value)]
    pieces = [piece for piece in pieces if not _sent(piece, earlier)]
    options = {piece: {source: fmt for source, fmt in renderings.by_piece.get(piece, [])} for piece in pieces}
    sure = {next(iter(found)) for piece, found in options.items() if len(found) == 1 and piece[0].isdigit()}
    for piece in pieces:
        found = options[piece]
        beside = [source for source in found if source in sure]
        if (len(found) == 1 and piece[0].isdigit()) or len(beside) == 1:
            source = next(iter(found)) if len(found) == 1 else beside[0]
            yield _Found(record.name, keys, piece, source, found[source], piece=True)


def _literals(spec: StepSpec, record: StepRecord) -> Iterator[tuple[Keys, str]]:
    recorded_input = record.resolved_input if record.resolved_input is not None else {}
    for keys, leaf in walk(spec.input):
        if not keys or not isinstance(leaf, str) or is_ref(leaf) or refs_in(leaf):
            continue
        found, recorded = get_at(recorded_input, keys)
        if found and isinstance(recorded, str) and (sum(c.isdigit() for c in recorded) >= 3 or _named(recorded)):
            yield keys, recorded


def _named(value: JSON) -> bool:
    return isinstance(value, str) and any(name in value for name in (*_MONTHS, *_DAYS))


def _sent(value: str, earlier: Sequence[StepRecord]) -> bool:
    """The agent sent this value itself before (a date the user gave): looked up only for a match."""
    return any(node == value for record in earlier for _, node in walk(record.resolved_input))


def _reproduces(found: _Found, runs: Sequence[Run]) -> bool:
    def holds(got: JSON, sent: JSON, _: Run) -> bool:
        if found.piece:  # this recording's sentence holds what the script gives, where the first one held its own
            return isinstance(sent, str) and isinstance(got, str) and got in sent
        return bool(got == sent)

    return reproduced(found.step, found.keys, runs, script_on(found.code, {"text": found.source}), holds)


def propose_dates(
    template: Template, kept: Sequence[StepRecord], runs: Sequence[Run]
) -> tuple[Template, tuple[Inference, ...]]:
    """The template with a reformatting `code` step before each literal an earlier date-time explains."""
    specs = {step.name: step for step in template.steps}
    renderings = _Renderings()
    found: list[_Found] = []
    for order, record in enumerate(kept):
        spec = specs.get(record.name)
        if spec is not None and spec.tool is not None and renderings.by_text:
            for keys, value in _literals(spec, record):
                pieces = _pieces(record, keys, value, renderings, kept[:order])
                found += [item for item in pieces if _reproduces(item, runs)]
                sources = {source for source, _ in renderings.by_text.get(value, [])}
                if len(sources) != 1 or _sent(value, kept[:order]):
                    continue  # two date-times give it, or the agent's own value: no single explanation
                source, fmt = renderings.by_text[value][-1]
                item = _Found(record.name, keys, value, source, fmt)
                if _reproduces(item, runs):
                    found.append(item)
        if record.name in runs[0].outputs and record.name in specs:  # a call folded into a loop is no step
            renderings.add(record.name, runs[0].outputs[record.name])
    return _rewritten(template, found) if found else (template, ())


def _placed(text: str, piece: str, step: str) -> str | None:
    """`text` with the first occurrence of `piece` outside any `{{...}}` as `{{@step}}`."""
    parts = re.split(r"(\{\{[^}]*\}\})", text)
    for i in range(0, len(parts), 2):
        match = re.search(rf"(?<![\w:/.]){re.escape(piece)}(?![\w:/])", parts[i])
        if match is not None:
            parts[i] = parts[i][: match.start()] + "{{@" + step + "}}" + parts[i][match.end() :]
            return "".join(parts)
    return None


def _rewritten(template: Template, found: Sequence[_Found]) -> tuple[Template, tuple[Inference, ...]]:
    return with_code_steps(template, [_read(item) for item in found], _placed)


def _read(item: _Found) -> CodeRead:
    shift = _SHIFT_RE.match(item.fmt)
    moved = f" after moving it to {_MOVES[shift.group(1)]}" if shift is not None else ""
    fmt = item.fmt[shift.end() :] if shift is not None else item.fmt

    def why(name: str) -> str:
        return (
            f"{item.recorded!r} is the date-time {item.source} written as {fmt!r}{moved}; "
            f"the code step {name} reproduces it from the recording"
        )

    return CodeRead(
        item.step, item.keys, item.recorded, item.code, {"text": item.source}, "format_date", why, item.piece
    )
