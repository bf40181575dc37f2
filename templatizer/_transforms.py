"""Transforms inferred from a recording: a literal that no earlier value is, but a simple function of one.

An agent reshapes values in its head between two calls (sums a list, counts it, lower-cases an email,
picks the item with the newest date or the largest amount, joins names into a line). Such a value,
left literal, is wrong on the next run. `propose_transforms` looks for it among a closed set of
functions over earlier outputs (`FUNCTIONS`; never arbitrary synthesis) and, when exactly one
explains the recorded value, inserts a `code` step computing it from refs and points the argument at it.
The script is run on the recording before it is kept: it must give exactly the recorded value in every
recording given. A positional ref (`@list.items[2].name`) is replaced only by a pick (newest, largest),
and a `{{@ref}}` string only by a join over a whole list: those explain the value without its position.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final, TypeGuard, cast

from toolreel.core.model import JSON, StepRecord
from toolreel.core.refs import is_ref, refs_in
from toolreel.core.template import StepSpec, Template
from toolreel.templatizer._codesteps import CodeRead, with_code_steps
from toolreel.templatizer._result import Inference, LikelyInput
from toolreel.templatizer._runs import Run, reproduced, script_on
from toolreel.templatizer._subsets import elements_of_one_list
from toolreel.templatizer._values import SMALL_INT, Keys, get_at, json_path, key_tokens, snake, strength, walk

__all__ = ["FUNCTIONS", "Candidate", "candidates_in", "computed_elsewhere", "propose_transforms"]

FUNCTIONS: Final = (
    *("count", "sum", "max", "max_by", "min_by", "newest_by", "newest_version", "first_unset"),
    *("lower", "upper", "join", "join_fields", "number"),
)
SEPARATORS: Final = (", ", ",", " ", "; ", " | ", "\n", "-", "/", ":")
_PICKS: Final = frozenset({"max_by", "min_by", "newest_by", "newest_version", "first_unset"})
_MIN_TEXT: Final = 3  # shorter strings equal a function's result by accident too easily
_MIN_ITEMS: Final = 3  # a sum, count or pick over two items equals a chosen value by accident too easily
_LATER_ITEM_RE: Final = re.compile(r"\[[1-9][0-9]*\]")
_NUMERAL_RE: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?")
# a currency sign, or thousands grouped by commas: `-$86.40`, `$1,204.00`, `€12.50`, `12,400.00`
_MONEY_RE: Final = re.compile(r"[-+]?[$€£¥]\s?-?\d+(?:,\d{3})*(?:\.\d+)?|-?\d{1,3}(?:,\d{3})+(?:\.\d+)?")


def _amount(text: str) -> float:
    return float(re.sub(r"[^0-9.-]", "", text))


_ID_RE: Final = re.compile(r"(?:^|_)(?:id|uid|uuid|key)$|Id$", re.IGNORECASE)
_NUMERAL_STRENGTH: Final = 0.8  # 5+ digits, or a decimal of 5+ characters: as for a number passed on as text


@dataclass(frozen=True, slots=True)
class Candidate:
    """One function of one earlier output: what it gives, and (written only when needed) its code."""

    function: str
    value: JSON
    source: str  # the ref to the output part it reads, e.g. `@create_order_1.lines`
    params: tuple[str, ...] = ()  # fields and separator, per function
    data: JSON = None  # the output part it reads
    first: bool = False  # a pick of the first item: "the first one" says as much, unless the argument says "top"

    def identity(self) -> tuple[str, tuple[str, ...], str]:
        """Two candidates reading equal data the same way are one explanation (the earliest source wins)."""
        return (self.function, self.params, _fingerprint(self.data))

    @property
    def code(self) -> str:
        keys = [_key(p) for p in self.params]
        return f"export default function(input) {{\n  {_BODY[(self.function, len(keys))].format(*keys)}\n}}\n"

    @property
    def what(self) -> str:
        return _WHAT[(self.function, len(self.params))].format(*self.params)


# --------------------------------------------------------------------------- the closed set of functions

_PICK = (
    "const key = (x) => {0};\n  let best = input.list[0];\n"
    "  for (const x of input.list) if (key(x) {1} key(best)) best = x;\n  return best[{{1}}];"
)
_AMONG = (
    "const list = input.list.filter((x) => x[{{2}}] === {{3}});\n"
    '  if (list.length === 0) throw new Error("no item has " + {{2}} + " = " + {{3}});\n'
    "  const key = (x) => {0};\n  let best = list[0];\n"
    "  for (const x of list) if (key(x) {1} key(best)) best = x;\n  return best[{{1}}];"
)
_BODY: Final = {
    ("count", 0): "return input.list.length;",
    ("sum", 0): "return input.list.reduce((a, x) => a + x, 0);",
    ("sum", 1): "return input.list.reduce((a, x) => a + x[{0}], 0);",
    ("max", 0): "return Math.max(...input.list);",
    ("max_by", 2): _PICK.format("Number(x[{0}])", ">"),  # (an amount written as text, `"8.90"`, too)
    ("min_by", 2): _PICK.format("Number(x[{0}])", "<"),
    # an amount written for people (`-$86.40`, `$1,204.00`): its digits, sign and point
    ("max_by", 3): _PICK.format('Number(String(x[{0}]).replace(/[^0-9.-]/g, ""))', ">"),
    ("min_by", 3): _PICK.format('Number(String(x[{0}]).replace(/[^0-9.-]/g, ""))', "<"),
    ("newest_by", 2): _PICK.format("Date.parse(x[{0}])", ">"),
    # the same among the items in one state (the newest *open* ticket)
    ("max_by", 4): _AMONG.format("Number(x[{0}])", ">"),
    ("min_by", 4): _AMONG.format("Number(x[{0}])", "<"),
    ("newest_by", 4): _AMONG.format("Date.parse(x[{0}])", ">"),
    ("newest_version", 2): (
        'const parts = (v) => String(v).replace(/^[vV]/, "").split(".").map(Number);\n'
        "  const newer = (a, b) => {{\n"
        "    const x = parts(a), y = parts(b);\n"
        "    for (let i = 0; i < Math.max(x.length, y.length); i++) {{\n"
        "      if ((x[i] || 0) !== (y[i] || 0)) return (x[i] || 0) > (y[i] || 0);\n"
        "    }}\n    return false;\n  }};\n"
        "  const stable = input.list\n"
        "    .filter((x) => /^[vV]?\\d+(\\.\\d+){{1,3}}$/.test(String(x[{0}])));\n"
        '  if (stable.length === 0) throw new Error("no release version at " + {0});\n'
        "  let best = stable[0];\n"
        "  for (const x of stable) if (newer(x[{0}], best[{0}])) best = x;\n  return best[{1}];"
    ),
    ("first_unset", 2): (
        "const best = input.list.find((x) => x[{0}] === null || x[{0}] === undefined);\n"
        '  if (best === undefined) throw new Error("no item has no " + {0});\n  return best[{1}];'
    ),
    ("lower", 0): "return input.text.toLowerCase();",
    ("upper", 0): "return input.text.toUpperCase();",
    ("number", 0): "return Number(input.text);",
    ("join", 1): "return input.list.join({0});",
    ("join", 2): "return input.list.map((x) => x[{0}]).join({1});",
    ("join_fields", 3): "return [input.item[{0}], input.item[{1}]].join({2});",
}
_WHAT: Final = {
    ("count", 0): "the number of items of",
    ("sum", 0): "the sum of",
    ("sum", 1): "the sum of `{0}` over",
    ("max", 0): "the largest of",
    ("max_by", 2): "`{1}` of the item with the largest `{0}` in",
    ("min_by", 2): "`{1}` of the item with the smallest `{0}` in",
    ("max_by", 3): "`{1}` of the item with the largest {2} `{0}` in",
    ("min_by", 3): "`{1}` of the item with the smallest {2} `{0}` in",
    ("newest_by", 2): "`{1}` of the item with the newest `{0}` in",
    ("max_by", 4): "`{1}` of the item with the largest `{0}` among those with `{2}` = {3!r} in",
    ("min_by", 4): "`{1}` of the item with the smallest `{0}` among those with `{2}` = {3!r} in",
    ("newest_by", 4): "`{1}` of the item with the newest `{0}` among those with `{2}` = {3!r} in",
    ("newest_version", 2): "`{1}` of the item with the newest release `{0}` (versions compared part by part) in",
    ("first_unset", 2): "`{1}` of the first item with no `{0}` in",
    ("lower", 0): "the lower case of",
    ("upper", 0): "the upper case of",
    ("number", 0): "the number written in",
    ("join", 1): "the items joined by {0!r} of",
    ("join", 2): "`{0}` of every item joined by {1!r} in",
    ("join_fields", 3): "`{0}` and `{1}` joined by {2!r} of",
}


def _key(name: str) -> str:
    return json.dumps(name, ensure_ascii=False)


def _number(value: JSON) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _moment(value: JSON) -> float | None:
    """An ISO 8601 date or date-time as seconds (naive ones read as UTC: only their order matters)."""
    if not isinstance(value, str) or len(value) < 10 or value[4:5] != "-":
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)).timestamp()


def _list_functions(source: str, items: list[JSON]) -> Iterator[Candidate]:
    yield Candidate("count", len(items), source, (), items)
    numbers = [x for x in items if _number(x)]
    if len(numbers) == len(items):
        yield Candidate("sum", _sum(numbers), source, (), items)
        yield Candidate("max", max(numbers), source, (), items)
    texts = [x for x in items if isinstance(x, str)]
    if len(texts) == len(items):
        for sep in SEPARATORS:
            yield Candidate("join", sep.join(texts), source, (sep,), items)
    records = [x for x in items if isinstance(x, dict)]
    if len(records) == len(items):
        yield from _record_functions(source, records)


def _sum(values: Sequence[int | float]) -> int | float:
    total: int | float = 0
    for value in values:  # left to right, as the script adds: the same float rounding
        total = total + value
    return total


def _record_functions(source: str, items: list[dict[str, JSON]]) -> Iterator[Candidate]:
    data: JSON = list(items)
    fields = [f for f in items[0] if all(f in item for item in items)]
    for f in fields:
        column = [item[f] for item in items]
        if any(x is None for x in column):
            yield from _first_unset(source, items, f)
        numbers = [x for x in column if _number(x)]
        texts = [x for x in column if isinstance(x, str)]
        if len(numbers) == len(items):
            yield Candidate("sum", _sum(numbers), source, (f,), data)
            yield from _picks("max_by", source, items, f, [float(x) for x in numbers])
            if not _ID_RE.search(f):  # the smallest id is the oldest, or chance: a pick by an id is none
                yield from _picks("min_by", source, items, f, [-float(x) for x in numbers])
        elif len(texts) == len(items) and all(_NUMERAL_RE.fullmatch(x) and "." in x for x in texts):  # `"8.90"`
            yield from _picks("max_by", source, items, f, [float(x) for x in texts])
            yield from _picks("min_by", source, items, f, [-float(x) for x in texts])
        elif len(texts) == len(items) and all(_VERSION_RE.fullmatch(x) for x in texts):  # `1.10.0`, `2.0.0-RC1`
            yield from _newest_version(source, items, f)
        elif len(texts) == len(items) and all(_MONEY_RE.fullmatch(x) for x in texts):  # `-$86.40`, `$1,204.00`
            amounts = [_amount(x) for x in texts]
            yield from _picks("max_by", source, items, f, amounts, written="amount")
            yield from _picks("min_by", source, items, f, [-x for x in amounts], written="amount")
        elif len(texts) == len(items):
            moments = [m for m in map(_moment, texts) if m is not None]
            if len(moments) == len(items):
                yield from _picks("newest_by", source, items, f, moments)
            for sep in SEPARATORS:
                yield Candidate("join", sep.join(texts), source, (f, sep), data)


def _picks(
    function: str, source: str, items: list[dict[str, JSON]], by: str, keys: list[float], written: str = ""
) -> Iterator[Candidate]:
    """A field of the item with the largest `by` (a number, or a date: newest; negated, the smallest); none when two
    items tie. `written`: "amount" when `by` holds amounts written for people (read by their digits)."""
    if not written and len(keys) == len(items):
        yield from _among(function, source, items, by, keys)
    top = max(keys)
    if len(keys) != len(items) or keys.count(top) > 1:
        return  # a tie
    if function == "min_by" and keys.index(top) == len(keys) - 1:
        return  # the last of a list sorted largest first: a page's cursor, "the last one", as well
    best = items[keys.index(top)]
    for field in _own_fields(items, best):
        params = (by, field, written) if written else (by, field)
        yield Candidate(function, best[field], source, params, list(items), first=keys.index(top) == 0)


def _own_fields(items: list[dict[str, JSON]], best: Mapping[str, JSON]) -> Iterator[str]:
    """The fields of the picked item whose value no other item has: a value others share too (`target: production`
    in every one) is no reason to pick this one."""
    for field in best:
        if sum(1 for item in items if item.get(field) == best[field]) == 1:
            yield field


def _among(function: str, source: str, items: list[dict[str, JSON]], by: str, keys: list[float]) -> Iterator[Candidate]:
    """The pick of `_picks` among the items in one state (`status` open or closed: a field of a few words shared by
    several items), when it is another item than the pick over all of them and not the first of its state."""
    overall = keys.index(max(keys))
    for state in items[0]:
        column = [item.get(state) for item in items]
        words = {v for v in column if isinstance(v, str)}
        if state == by or len(words) < 2 or len(words) > _STATES or len(words) == len(items):
            continue
        for word in sorted(words):
            members = [i for i, v in enumerate(column) if v == word]
            top = max(keys[i] for i in members)
            best = [i for i in members if keys[i] == top]
            if len(members) < 2 or len(best) > 1 or best[0] == overall or best[0] == members[0]:
                continue
            chosen = items[best[0]]
            for field in _own_fields(items, chosen):
                yield Candidate(function, chosen[field], source, (by, field, state, word), list(items))


_STATES: Final = 4
_AMONG_PARAMS: Final = 4  # (by, field, state, word)


def _newest_version(source: str, items: list[dict[str, JSON]], by: str) -> Iterator[Candidate]:
    """A field of the item with the newest release, versions compared part by part (`1.10.0` after `1.9.4`), pre-
    releases (`2.0.0-RC1`) left out; none when it is the first item or two items tie."""
    versions = [(i, str(item[by])) for i, item in enumerate(items)]
    stable = [(i, tuple(map(int, v.lstrip("vV").split(".")))) for i, v in versions if _STABLE_RE.fullmatch(v)]
    if len(stable) < _MIN_ITEMS - 1:
        return
    top = max(parts for _, parts in stable)
    at = [i for i, parts in stable if parts == top]
    if len(at) != 1 or at[0] == 0:
        return
    for field in _own_fields(items, best := items[at[0]]):
        yield Candidate("newest_version", best[field], source, (by, field), list(items))


_VERSION_RE: Final = re.compile(r"[vV]?\d+(?:\.\d+){1,3}(?:[-+][\w.]+)?")
_STABLE_RE: Final = re.compile(r"[vV]?\d+(?:\.\d+){1,3}")


def _first_unset(source: str, items: list[dict[str, JSON]], by: str) -> Iterator[Candidate]:
    """A field of the first item whose `by` is null, the items before it having one (the newest post that is
    not a boost: `reblog: null`); none when it is the first item ("the first one" explains it as well)."""
    first = next(i for i, item in enumerate(items) if item[by] is None)
    if first == 0:
        return
    for field in _own_fields(items, best := items[first]):
        if best[field] is not None:
            yield Candidate("first_unset", best[field], source, (by, field), list(items))


def _text_functions(source: str, text: str) -> Iterator[Candidate]:
    number = _numeral(text)
    if number is not None:
        yield Candidate("number", number, source, (), text)
        return
    if text.lower() != text:
        yield Candidate("lower", text.lower(), source, (), text)
    if text.upper() != text:
        yield Candidate("upper", text.upper(), source, (), text)


def _numeral(text: str) -> int | float | None:
    """The number a text writes, when it is one an agent would pass on as a number and that is unlikely to
    equal another number by chance (`"4521903"`, `"19.99"`; not `"100"`, `"1e3"` or `"007"`)."""
    if not _NUMERAL_RE.fullmatch(text):
        return None
    value: int | float = float(text) if "." in text else int(text)
    return value if strength(value) >= _NUMERAL_STRENGTH else None


def _object_functions(source: str, record: dict[str, JSON]) -> Iterator[Candidate]:
    texts = [k for k, v in record.items() if isinstance(v, str) and v]
    for first in texts:
        for second in texts:
            if first != second:
                for sep in SEPARATORS:
                    value = f"{record[first]}{sep}{record[second]}"
                    yield Candidate("join_fields", value, source, (first, second, sep), record)


def candidates_in(step: str, output: JSON) -> Iterator[Candidate]:
    """Every function of the closed set applied to every part of one step's output (paths without list
    indexes: a value found by position would be wrong on the next run anyway)."""
    for keys, node in walk(output):
        if any(isinstance(key, int) for key in keys):
            continue
        source = f"@{step}{json_path(keys)[1:]}"
        if isinstance(node, list) and len(node) >= _MIN_ITEMS:
            found = _list_functions(source, node)
        elif isinstance(node, str) and len(node) >= _MIN_TEXT:
            found = _text_functions(source, node)
        elif isinstance(node, dict):
            found = _object_functions(source, node)
        else:
            continue
        yield from found


# --------------------------------------------------------------------------- which arguments, which candidates


_ALL: Final = frozenset({"pick", "join", "other"})


def _family(function: str) -> str:
    return "pick" if function in _PICKS else "join" if function == "join" else "other"


def _role(leaf: JSON, recorded: JSON, runs: int, derived: frozenset[str]) -> frozenset[str]:
    """The families of functions that may replace a leaf of a step input (none: it is left as it is)."""
    if isinstance(leaf, str) and leaf.startswith("@input.") and leaf.removeprefix("@input.") in derived:
        return _ALL  # an input only because it varied: a function that explains every run is better
    if isinstance(leaf, str) and is_ref(leaf):
        positional = _LATER_ITEM_RE.search(leaf) is not None  # not the first item: a pick may explain it
        return frozenset({"pick"}) if positional else frozenset()
    if isinstance(leaf, str) and len(refs_in(leaf)) >= 2:
        return frozenset({"join"})  # pieces of a list by position: a join of the whole list
    if isinstance(leaf, str) and refs_in(leaf):
        return frozenset()
    if _number(recorded) and (runs > 1 or not _small(recorded)):
        return _ALL
    if isinstance(recorded, str) and len(recorded) >= _MIN_TEXT:
        return _ALL
    return frozenset()


def _page_size(keys: Keys, recorded: JSON) -> bool:
    """`take: 20`, `limit`, `per_page`: how much a call asks for at once, never a count or a sum of the data."""
    last = keys[-1] if keys else None
    return isinstance(last, str) and snake(last) in _PAGE_SIZE and isinstance(recorded, int)


_PAGE_SIZE: Final = frozenset(
    {"limit", "take", "per_page", "page_size", "size", "first", "top", "max_results", "page_limit"}
)


def _small(number: int | float) -> bool:
    """A single-digit whole number equals some count by accident too often to be evidence in one recording
    (a second recording, where it must hold again, makes it evidence)."""
    return float(number).is_integer() and abs(number) < SMALL_INT


def _equal(a: JSON, b: JSON) -> bool:
    """JSON has one number type: 3 and 3.0 are one value here (a script's numbers are doubles)."""
    if _number(a) and _number(b):
        return bool(a == b)
    return type(a) is type(b) and a == b


@dataclass(frozen=True, slots=True)
class _Found:
    step: str
    keys: Keys
    recorded: JSON
    candidate: Candidate


class _Pool:
    """Candidates of the outputs seen so far, by value and family. A family keeps at most two different
    explanations of one value (two already make it ambiguous), so each output is expanded once and a
    lookup costs the same however long the recording.

    A kept candidate is stored flat, as its plain fields in one tuple per value (the data it reads is kept
    once per source): a tuple of strings and numbers leaves the garbage collector's lists, so its full passes,
    which grow with what is alive, do not rescan every explanation of every output seen so far (they made a
    recording twice as long cost more than twice as much)."""

    def __init__(self) -> None:
        # per (value, family): function, value, source, params, first of each kept candidate, one after the other
        self._by_value: dict[tuple[tuple[str, JSON], str], tuple[JSON | tuple[str, ...], ...]] = {}
        self._data: dict[str, JSON] = {}

    def add(self, step: str, output: JSON) -> None:
        for candidate in candidates_in(step, output):
            key = _value_key(candidate.value)
            if key is None:
                continue
            slot = (key, _family(candidate.function))
            flat = self._by_value.get(slot, ())
            kept = self._candidates(flat)
            if len(kept) < 2 and not any(_same_explanation(other, candidate) for other in kept):
                self._data.setdefault(candidate.source, candidate.data)
                c = candidate
                self._by_value[slot] = (*flat, c.function, c.value, c.source, c.params, c.first)

    def equal_to(self, value: JSON, families: frozenset[str]) -> list[Candidate]:
        key = _value_key(value)
        if key is None:
            return []
        return [c for family in sorted(families) for c in self._candidates(self._by_value.get((key, family), ()))]

    def _candidates(self, flat: tuple[JSON | tuple[str, ...], ...]) -> list[Candidate]:
        out = []
        for at in range(0, len(flat), 5):
            function, value, source, params, first = flat[at : at + 5]
            assert isinstance(function, str) and isinstance(source, str) and isinstance(params, tuple)
            out.append(Candidate(function, cast(JSON, value), source, params, self._data[source], first is True))
        return out


def _same_explanation(a: Candidate, b: Candidate) -> bool:
    # The data are compared only when the function and its parameters agree (rarely, and cheaply then).
    return a.function == b.function and a.params == b.params and a.identity() == b.identity()


def _fingerprint(data: JSON) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _value_key(value: JSON) -> tuple[str, JSON] | None:
    if _number(value):
        return ("number", float(value))
    if isinstance(value, str):
        return ("text", value)
    return None


def _explain(
    record: StepRecord, spec: StepSpec, pool: _Pool, runs: Sequence[Run], derived: frozenset[str]
) -> Iterator[_Found]:
    recorded_input = record.resolved_input if record.resolved_input is not None else {}
    for keys, leaf in walk(spec.input):
        if isinstance(leaf, dict | list):
            continue
        found, recorded = get_at(recorded_input, keys)
        if keys and isinstance(keys[-1], int) and elements_of_one_list(get_at(spec.input, keys[:-1])[1]):
            continue  # one of a subset of a list's elements (the artist's starred songs), not its longest one
        asked = found and not _page_size(keys, recorded)
        families = _role(leaf, recorded, len(runs), derived) if asked else frozenset()
        if not families:
            continue
        matching: dict[tuple[str, tuple[str, ...], str], Candidate] = {}
        for candidate in pool.equal_to(recorded, families):
            if not candidate.first or _superlative(keys, candidate.function):
                matching.setdefault(candidate.identity(), candidate)
        if len(matching) > 1:  # the plainest explanation: over all items before among some, before the weakest
            plainest = min(map(_rank, matching.values()))
            matching = {k: c for k, c in matching.items() if _rank(c) == plainest}
        if len(matching) == 1:
            yield _Found(spec.name, keys, recorded, next(iter(matching.values())))


# Words of an argument's name that say which end of a list it holds (`top_plan`, `cheapest_rate`): there the first
# item, where a list sorted so put it, is still picked by what makes it first.
_ENDS: Final = {
    "max_by": frozenset({"top", "max", "most", "largest", "biggest", "highest", "best", "busiest", "peak"}),
    "min_by": frozenset({"min", "least", "lowest", "smallest", "cheapest", "fewest", "bottom"}),
    "newest_by": frozenset({"newest", "latest", "recent", "last"}),
}


def _superlative(keys: Keys, function: str) -> bool:
    last = next((key for key in reversed(keys) if isinstance(key, str)), "")
    return bool(set(key_tokens(last)) & _ENDS.get(function, frozenset()))


def _rank(candidate: Candidate) -> int:
    """0: a function over all items; 1: a pick among the items in one state; 2: a pick that explains an item only
    when nothing else does (the first with a field unset, the largest id)."""
    by = candidate.params[0] if candidate.params else ""
    if candidate.function == "first_unset" or (candidate.function == "max_by" and _ID_RE.search(by) is not None):
        return 2
    return 1 if candidate.function in _PICKS and len(candidate.params) == _AMONG_PARAMS else 0


def _reproduces(found: _Found, runs: Sequence[Run]) -> bool:
    """The script, run on each recording's outputs, gives exactly what that recording sent."""
    candidate = found.candidate
    compute = script_on(candidate.code, {_INPUT_NAME[candidate.function]: candidate.source})
    return reproduced(found.step, found.keys, runs, compute, lambda got, sent, _: _equal(got, sent))


_INPUT_NAME: Final = {
    **dict.fromkeys(
        ("count", "sum", "max", "max_by", "min_by", "newest_by", "newest_version", "first_unset", "join"), "list"
    ),
    "lower": "text",
    "upper": "text",
    "number": "text",
    "join_fields": "item",
}


# --------------------------------------------------------------------------- the template


def propose_transforms(
    template: Template, kept: Sequence[StepRecord], runs: Sequence[Run], named: Collection[str] = ()
) -> tuple[Template, tuple[Inference, ...]]:
    """The template with a `code` step before each argument a closed-set function explains, and the evidence.

    `named`: the inputs the user named (they stay); an input the templatizer made because its value varied
    between recordings gives way to a function that explains it in every recording."""
    derived = frozenset(template.inputs) - frozenset(named) if len(runs) > 1 else frozenset()
    specs = {step.name: step for step in template.steps}
    pool = _Pool()
    found: list[_Found] = []
    for record in kept:
        spec = specs.get(record.name)
        if spec is None:
            continue
        found += [f for f in _explain(record, spec, pool, runs, derived) if _reproduces(f, runs)]
        if record.name in runs[0].outputs:
            pool.add(record.name, runs[0].outputs[record.name])
        for view in runs[0].views.get(record.name, ()):
            pool.add(view, runs[0].outputs[view])
    if not found:
        return template, ()
    return _rewritten(template, found)


def computed_elsewhere(likely: Sequence[LikelyInput], transforms: Sequence[Inference]) -> list[LikelyInput]:
    """The likely inputs without those a transform now computes everywhere they were used (a value the workflow
    computes is not one the user must give); a text with a computed part still holds the user's words that stay
    literal in it (`{{@extract_1}}: Agreed to move standup`)."""
    pieced = {(i.step, i.input_path): i.ref for i in transforms if "{{" in i.ref}
    whole = {(i.step, i.input_path) for i in transforms if "{{" not in i.ref}

    def gone(item: LikelyInput, use: tuple[str, str]) -> bool:
        return use in whole or (use in pieced and not (isinstance(item.value, str) and item.value in pieced[use]))

    return [item for item in likely if not all(gone(item, use) for use in item.used_at)]


def _rewritten(template: Template, found: Sequence[_Found]) -> tuple[Template, tuple[Inference, ...]]:
    return with_code_steps(template, [_read(item) for item in found])


def _read(item: _Found) -> CodeRead:
    candidate = item.candidate

    def why(name: str) -> str:
        return (
            f"{item.recorded!r} is no earlier value but {candidate.what} {candidate.source} "
            f"({candidate.function}); the code step {name} reproduces it from the recording"
        )

    role = _INPUT_NAME[candidate.function]
    return CodeRead(
        item.step, item.keys, item.recorded, candidate.code, {role: candidate.source}, f"calc_{candidate.function}", why
    )
