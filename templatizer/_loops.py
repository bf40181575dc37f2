"""Loops: repeated calls of one tool that walk the elements of a list become one `for_each` step.

A family is the recorded calls of one tool whose templatized arguments differ only by the element
they take: `@list_1.items[0].id`, `[1]`, `[2]` (an earlier output's list, or an earlier loop's output),
or `@input.title`, `@input.title_2` (one input per element, folded into one list input). The family
becomes one step over that list with per-item refs (`@item.id`), over a filter on the field the
handled elements share when only some were handled, or stays unrolled with the reason why. Refs of
other steps to the members become refs into the loop's output list (`@get_user_each[*].email`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from toolreel.core.errors import RefError
from toolreel.core.model import JSON, StepRecord, StepStatus
from toolreel.core.refs import resolve, step_name_base
from toolreel.core.template import InputSpec
from toolreel.templatizer._values import same

if TYPE_CHECKING:  # the inference imports the result types, which name the loops
    from toolreel.templatizer._infer import Run
    from toolreel.templatizer._inputs import InputTable

__all__ = ["Folded", "Loop", "Unit", "Unrolled", "fold_loops"]

# A plain ref as it appears in a string (whole or inside `{{...}}`): dotted keys and `[n]` indexes.
_TOKEN_RE: Final = re.compile(r"(?<![@\w])@[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_][A-Za-z0-9_-]*|\[-?\d+\])*")
_INDEX_RE: Final = re.compile(r"\[(\d+)\]")
_KEY_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBERED_RE: Final = re.compile(r"_\d+$")
_OWN_ROOTS: Final = ("@input", "@item", "@index")


@dataclass(frozen=True, slots=True)
class Unit:
    """One step of the template being built: a recorded call, or a loop standing for several."""

    name: str
    tool: str  # listed name, server__tool
    record: StepRecord  # the recorded call (a loop's first member)
    input: JSON
    for_each: str | None = None
    members: tuple[str, ...] = ()  # the recorded calls a loop stands for, in element order


@dataclass(frozen=True, slots=True)
class Loop:
    step: str
    tool: str
    over: str
    members: tuple[str, ...]
    why: str
    folded_inputs: tuple[str, ...] = ()  # the per-call inputs the list input replaces

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"step": self.step, "tool": self.tool, "for_each": self.over}
        out.update(replaces=list(self.members), why=self.why)
        return out | ({"folded_inputs": list(self.folded_inputs)} if self.folded_inputs else {})


@dataclass(frozen=True, slots=True)
class Unrolled:
    steps: tuple[str, ...]
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"steps": list(self.steps), "why": self.why}


@dataclass(frozen=True, slots=True)
class Folded:
    units: tuple[Unit, ...]
    loops: tuple[Loop, ...] = ()
    unrolled: tuple[Unrolled, ...] = ()


@dataclass(frozen=True, slots=True)
class _Walk:
    """How a family walks its list: the list ref and, per member, the placeholder it replaces by `@item`."""

    over: str
    per_item: JSON
    why: str
    list_input: tuple[str, InputSpec, list[list[JSON]]] | None = None  # (name, spec, values per run)
    folded: tuple[str, ...] = ()


@dataclass
class _Folding:
    units: list[Unit]
    runs: Sequence[Run]
    table: InputTable
    loops: list[Loop] = field(default_factory=list)
    unrolled: list[Unrolled] = field(default_factory=list)


def fold_loops(units: Sequence[Unit], runs: Sequence[Run], table: InputTable) -> Folded:
    """Fold every family of repeated calls that walks a list into one `for_each` unit, in recorded order."""
    folding = _Folding(list(units), runs, table)
    for tool in dict.fromkeys(u.tool for u in units):
        members = [u for u in folding.units if u.tool == tool and u.for_each is None]
        if len(members) >= 2:
            _fold_family(folding, members)
    primary = runs[0]

    def recorded_length(base: str) -> int | None:
        got = _resolved(base, primary)
        return len(got) if isinstance(got, list) else None

    whole = [replace(u, input=_collapse(u.input, recorded_length)) for u in folding.units]
    return Folded(tuple(whole), tuple(folding.loops), tuple(folding.unrolled))


def _fold_family(folding: _Folding, members: list[Unit]) -> None:
    names = tuple(m.name for m in members)
    if any(m.record.is_error or m.record.status != StepStatus.SUCCEEDED for m in members):
        folding.unrolled.append(Unrolled(names, "one of the calls failed when recorded"))
        return
    if not all(all(n in run.steps for n in names) for run in folding.runs[1:]):
        folding.unrolled.append(Unrolled(names, "the other recordings do not make the same calls"))
        return
    found = _walk_of(members, folding)
    if isinstance(found, str):
        folding.unrolled.append(Unrolled(names, found))
        return
    _apply(folding, members, found)


def _apply(folding: _Folding, members: list[Unit], walk: _Walk) -> None:
    taken = {u.name for u in folding.units} | {n for run in folding.runs for n in run.steps}
    name = _free(f"{step_name_base(members[0].tool.partition('__')[2] or members[0].tool)}_each", taken)
    if walk.list_input is not None:
        input_name, spec, per_run = walk.list_input
        folding.table.specs[input_name] = spec
        for values, run_values in zip(folding.table.values, per_run, strict=True):
            values[input_name] = run_values
    names = tuple(m.name for m in members)
    loop = Unit(name, members[0].tool, members[0].record, walk.per_item, walk.over, names)
    rename = {member: f"@{name}[{i}]" for i, member in enumerate(names)}
    out: list[Unit] = []
    for unit in folding.units:
        if unit.name == names[0]:
            out.append(loop)
        elif unit.name not in names:
            over = _rewrite(unit.for_each, rename) if unit.for_each is not None else None
            counted = {f"@{name}": len(names)}.get
            out.append(replace(unit, input=_collapse(_rewrite(unit.input, rename), counted), for_each=over))
    folding.units = out
    folding.loops.append(Loop(name, members[0].tool, walk.over, names, walk.why, walk.folded))


# --------------------------------------------------------------------------- finding the walk


def _walk_of(members: Sequence[Unit], folding: _Folding) -> _Walk | str:
    """How the family walks a list, or why it does not (a sentence for the summary)."""
    inputs = [m.input for m in members]
    if all(same(inputs[0], other) for other in inputs[1:]):
        return "the same call repeated with the same arguments: no list to walk"
    for base in _bases(inputs[0]):
        indexes = [_index_of(value, base) for value in inputs]
        if None in indexes or len(set(indexes)) != len(indexes):
            continue
        at = [i for i in indexes if i is not None]
        pairs = zip(inputs, at, strict=True)
        generalized = [_substitute(value, partial(_strip_index, base=base, n=n)) for value, n in pairs]
        if all(same(generalized[0], g) for g in generalized[1:]):
            return _over_list(base, at, generalized[0], folding)
    walked = _input_walk(members, folding)
    if walked is not None:
        return walked
    return "their arguments differ by values that no list explains"


def _over_list(base: str, at: list[int], per_item: JSON, folding: _Folding) -> _Walk | str:
    elements = _resolved(base, folding.runs[0])
    if not isinstance(elements, list):
        return f"{base} is not a list"
    count = len(at)
    if at == list(range(len(elements))):
        over, why = base, f"{count} calls when recorded, one per element"
    elif at != sorted(at):
        return f"they handle the elements of {base} out of order ({at})"
    else:
        filtered = _evident_filter(base, elements, at)
        if filtered is None:
            return (
                f"they handle elements {at} of {base} ({len(elements)} elements) and no field tells the handled "
                "ones apart from the others: kept unrolled"
            )
        over = filtered
        why = f"only the elements the filter keeps: {count} of {len(elements)} when recorded"
    for run in folding.runs[1:]:
        got = _resolved(over, run)
        if not isinstance(got, list) or len(got) != count:
            return f"in another recording {over} does not give the {count} elements its calls took"
    return _Walk(over, per_item, why)


def _evident_filter(base: str, elements: list[JSON], at: list[int]) -> str | None:
    """`base[?(@.key == value)]` when the handled elements share a value at `key` that no other element has."""
    handled = [elements[i] for i in at]
    others = [e for i, e in enumerate(elements) if i not in at]
    if not all(isinstance(e, dict) for e in handled):
        return None
    first = handled[0]
    assert isinstance(first, dict)
    for key, value in first.items():
        if not _KEY_RE.fullmatch(key) or not isinstance(value, str | bool | int) or isinstance(value, float):
            continue
        if all(isinstance(e, dict) and same(e.get(key), value) for e in handled) and not any(
            isinstance(e, dict) and same(e.get(key), value) for e in others
        ):
            return f"{base}[?(@.{key} == {json.dumps(value)})]"
    return None


def _input_walk(members: Sequence[Unit], folding: _Folding) -> _Walk | None:
    """One input per call (`title`, `title_2`, ...): one list input walked by the loop."""
    used = [_input_names(m.input) for m in members]
    common = set.intersection(*used)
    varying = [u - common for u in used]
    if not all(len(v) == 1 for v in varying):
        return None
    names = [next(iter(v)) for v in varying]
    if not _alone(members, folding.units) or _used_elsewhere(set(names), members, folding.units):
        return None  # inputs other steps use too, or calls between them: the user's own values, not a list
    if len(set(names)) != len(names) or any(folding.table.specs.get(n, InputSpec()).secret for n in names):
        return None  # a secret stays one secret input per place: a list of secrets would be typed at once
    pairs = zip(members, names, strict=True)
    generalized = [_substitute(m.input, partial(_strip_input, name=n)) for m, n in pairs]
    if not all(same(generalized[0], g) for g in generalized[1:]):
        return None
    per_run: list[list[JSON]] = []
    for values in folding.table.values:
        if not all(n in values for n in names):
            return None
        per_run.append([values[n] for n in names])
    base = _NUMBERED_RE.sub("", names[0])
    name = _free(base if base.endswith("s") else f"{base}s", set(folding.table.specs))
    spec = InputSpec(
        type="array", description=f"one {base} per call of {members[0].tool}, in order (recorded {per_run[0]!r})"
    )
    over = f"@input.{name}"
    why = f"one input per call when recorded ({', '.join(names)}), now one list input"
    return _Walk(over, generalized[0], why, (name, spec, per_run), tuple(names))


def _alone(members: Sequence[Unit], units: Sequence[Unit]) -> bool:
    """The members follow one another with no other call between them."""
    at = [i for i, u in enumerate(units) if u in members]
    return at == list(range(at[0], at[0] + len(members)))


def _used_elsewhere(names: set[str], members: Sequence[Unit], units: Sequence[Unit]) -> bool:
    return any(_input_names([u.input, u.for_each]) & names for u in units if u not in members)


# --------------------------------------------------------------------------- ref text


def _tokens(value: JSON) -> list[str]:
    if isinstance(value, str):
        return _TOKEN_RE.findall(value)
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tokens(v)]
    if isinstance(value, list):
        return [t for v in value for t in _tokens(v)]
    return []


def _substitute(value: JSON, change: Callable[[str], str]) -> JSON:
    if isinstance(value, str):
        return _TOKEN_RE.sub(lambda m: change(m.group(0)), value)
    if isinstance(value, dict):
        return {k: _substitute(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, change) for v in value]
    return value


def _heads(token: str, prefix: str) -> bool:
    """`token` is `prefix` or goes on from it with a path (`@a.b` heads `@a.b.c`, not `@a.bc`)."""
    return token.startswith(prefix) and (len(token) == len(prefix) or token[len(prefix)] in ".[")


def _bases(value: JSON) -> list[str]:
    """Every `@step.path` that some ref of `value` indexes with a literal `[n]` (candidate lists to walk)."""
    found: list[str] = []
    for token in _tokens(value):
        if token.split(".")[0].split("[")[0] in _OWN_ROOTS:
            continue
        found += [token[: m.start()] for m in _INDEX_RE.finditer(token)]
    return list(dict.fromkeys(found))


def _index_of(value: JSON, base: str) -> int | None:
    """The one index by which `value` takes an element of `base`, or None (none, or several)."""
    seen = {int(m.group(1)) for t in _tokens(value) if (m := re.match(re.escape(base) + r"\[(\d+)\]", t))}
    return next(iter(seen)) if len(seen) == 1 else None


def _strip_index(token: str, *, base: str, n: int) -> str:
    head = f"{base}[{n}]"
    return "@item" + token[len(head) :] if _heads(token, head) else token


def _strip_input(token: str, *, name: str) -> str:
    head = f"@input.{name}"
    return "@item" + token[len(head) :] if _heads(token, head) else token


def _input_names(value: JSON) -> set[str]:
    return {re.split(r"[.\[]", t[len("@input.") :])[0] for t in _tokens(value) if t.startswith("@input.")}


def _rewrite(value: JSON, rename: Mapping[str, str]) -> Any:
    def change(token: str) -> str:
        root = re.split(r"[.\[]", token)[0][1:]
        target = rename.get(root)
        return target + token[len(root) + 1 :] if target is not None else token

    return _substitute(value, change)


def _collapse(value: JSON, length: Callable[[str], int | None]) -> JSON:
    """A list of refs to every element of one list in order (`[@l[0].id, @l[1].id]`) becomes `@l[*].id`:
    it then follows the list's length. `length(base)` is the list's length when recorded."""
    if isinstance(value, dict):
        return {k: _collapse(v, length) for k, v in value.items()}
    if not isinstance(value, list):
        return value
    whole = _whole_walk(value, length)
    return whole if whole is not None else [_collapse(v, length) for v in value]


def _whole_walk(value: list[JSON], length: Callable[[str], int | None]) -> str | None:
    first = value[0] if len(value) >= 2 else None  # one element: "all of them" or "the first" is a guess
    if not isinstance(first, str) or not _TOKEN_RE.fullmatch(first):
        return None
    for m in re.finditer(r"\[0\]", first):
        base, rest = first[: m.start()], first[m.end() :]
        if all(v == f"{base}[{i}]{rest}" for i, v in enumerate(value)) and length(base) == len(value):
            return f"{base}[*]{rest}" if rest else base
    return None


def _resolved(ref: str, run: Run) -> JSON:
    try:
        return resolve(ref, run.scope())
    except RefError:
        return None


def _free(base: str, taken: set[str]) -> str:
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    return name
