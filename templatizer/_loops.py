"""Loops: repeated calls of one tool that walk the elements of a list become one `for_each` step.

A family is the recorded calls of one tool whose templatized arguments differ only by the element
they take: `@list_1.items[0].id`, `[1]`, `[2]` (an earlier output's list, or an earlier loop's output),
or `@input.title`, `@input.title_2` (one input per element, folded into one list input). The family
becomes one step over that list with per-item refs (`@item.id`), over a filter on the field the
handled elements share when only some were handled (or over a `select_*` code step keeping the elements
that meet two conditions, `_select`), or stays unrolled with the reason why. Refs of
other steps to the members become refs into the loop's output list (`@get_user_each[*].email`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Final

from toolreel.core.errors import RefError
from toolreel.core.model import JSON, StepRecord, StepStatus
from toolreel.core.refs import MappingScope, resolve, step_name_base
from toolreel.core.template import InputSpec
from toolreel.templatizer._affixes import built_around_item
from toolreel.templatizer._cuts import CUT_CODE, ZIP_CODE, cut_values, find_column, find_cut
from toolreel.templatizer._evidence import names_operation
from toolreel.templatizer._evident import evident_choice, evident_filter
from toolreel.templatizer._joined import join_kept, positional, select_unit
from toolreel.templatizer._mapped import MAP_CODE, Mapped, map_lists, marked_elements
from toolreel.templatizer._reftext import (
    collapse,
    index_of,
    indexed_bases,
    input_names,
    rewrite,
    strip_index,
    strip_input,
    substitute,
)
from toolreel.templatizer._result import Loop, Unit, Unrolled
from toolreel.templatizer._select import Condition, Select, selected, separating
from toolreel.templatizer._subsets import collapse_subsets
from toolreel.templatizer._values import free_name, items_schema, json_path, put_at, same, snake

if TYPE_CHECKING:  # the inference imports the result types, which name the loops
    from toolreel.templatizer._inputs import InputTable
    from toolreel.templatizer._runs import Run

__all__ = ["Folded", "Loop", "Unit", "Unrolled", "fold_loops"]

_INDEX_RE: Final = re.compile(r"\[(\d+)\]")
_KEY_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBERED_RE: Final = re.compile(r"_\d+$")
_CANDIDATES: Final = 3  # generalized forms tried per family


@dataclass(frozen=True, slots=True)
class Folded:
    units: tuple[Unit, ...]
    loops: tuple[Loop, ...] = ()
    unrolled: tuple[Unrolled, ...] = ()
    selects: tuple[Select, ...] = ()  # the select steps the loops walk
    explained: frozenset[tuple[str, str]] = frozenset()  # (step, input path) literals a loop's cut step gives


@dataclass(frozen=True, slots=True)
class _Walk:
    """How a family walks its list: the list ref and, per member, the placeholder it replaces by `@item`."""

    over: str
    per_item: JSON
    why: str
    list_input: tuple[str, InputSpec, list[list[JSON]]] | None = None  # (name, spec, values per run)
    folded: tuple[str, ...] = ()
    zipped: Mapping[str, str] | None = None  # several lists walked together: element key -> list ref
    elements: tuple[tuple[tuple[str, str], ...], ...] = ()  # per call: (`@item...` head, what it took)


@dataclass
class _Folding:
    units: list[Unit]
    runs: Sequence[Run]
    table: InputTable
    loops: list[Loop] = field(default_factory=list)
    unrolled: list[Unrolled] = field(default_factory=list)
    extra: dict[str, list[JSON]] = field(default_factory=dict)  # loop step -> its output in each recording
    calls: list[tuple[str, ...]] = field(default_factory=list)  # the family being folded: its calls per recording
    selects: dict[str, Select] = field(default_factory=dict)  # `@select_x` -> the select step it would be
    applied: list[Select] = field(default_factory=list)  # the select steps the loops walk
    cuts: dict[str, tuple[JSON, str]] = field(default_factory=dict)  # `@cut_x` -> its input, the argument it gives
    explained: set[tuple[str, str]] = field(default_factory=set)

    def resolved(self, ref: str, run: int) -> JSON:
        """`ref` in recording `run`, where the loops folded so far have their recorded outputs; None if absent."""
        outputs = self.runs[run].outputs
        steps = {**outputs, **{name: out[run] for name, out in self.extra.items()}}
        try:
            return resolve(ref, MappingScope(steps=steps, inputs=self.runs[run].inputs))
        except RefError:
            return None


def _kind(unit: Unit) -> tuple[str, str]:
    """A tool that calls others by name (`appwrite_call_tool` with `tool_name`, `wit_work_item` with `action`):
    each operation it dispatches is a tool of its own for the loops, so a per-item pair of operations folds as two
    families."""
    given = unit.input if isinstance(unit.input, dict) else {}
    operation = next(
        (v for k, v in given.items() if names_operation(k) and isinstance(v, str) and not v.startswith("@")), ""
    )
    return unit.tool, operation


def fold_loops(units: Sequence[Unit], runs: Sequence[Run], table: InputTable) -> Folded:
    """Fold every family of repeated calls that walks a list into one `for_each` unit, in recorded order."""
    folding = _Folding(list(units), runs, table)
    for kind in dict.fromkeys(_kind(u) for u in units if u.code is None):
        members = [u for u in folding.units if _kind(u) == kind and u.for_each is None]
        if len(members) >= 2:
            _fold_family(folding, _walking(members))

    def recorded_length(base: str) -> int | None:
        got = folding.resolved(base, 0)
        return len(got) if isinstance(got, list) else None

    whole = [u if (c := collapse(u.input, recorded_length)) is u.input else replace(u, input=c) for u in folding.units]
    whole = [unit for u in whole for unit in _subset_of(u, folding)]
    taken = {u.name for u in whole} | {n for run in runs for n in run.steps} | {n for run in runs for n in run.outputs}
    chosen: list[Select] = []
    whole = join_kept(whole, partial(_chosen, folding, chosen), chosen, taken, partial(folding.resolved, run=0))
    notes = [note for unit in whole for note in positional(unit, folding.loops)]
    for select in folding.applied:  # (their outputs are the recordings' too: what a text counts of them)
        for run, output in zip(runs, folding.extra[select.step], strict=True):
            run.outputs.setdefault(select.step, output)
    selects, explained = tuple(folding.applied), frozenset(folding.explained)
    return Folded(tuple(whole), tuple(folding.loops), tuple(folding.unrolled + notes), selects, explained)


def _subset_of(unit: Unit, folding: _Folding) -> list[Unit]:
    """The unit with its lists of some elements' field made that field of the elements a filter keeps
    (`_subsets`), and its lists of one object per element made a step's mapping them all (`_mapped`), after the
    select step a filter needs."""
    if unit.code is not None:
        return [unit]
    chosen: list[Select] = []
    mapped: list[Mapped] = []
    choose = partial(_chosen, folding, chosen, seq=unit.record.seq)
    changed = map_lists(collapse_subsets(unit.input, choose), choose, partial(_taken, folding), mapped)
    added = [select_unit(select, unit.record) for select in chosen]
    added += [Unit(m.name, "", unit.record, m.shape, for_each=m.over, code=MAP_CODE) for m in mapped]
    return [*added, unit if changed is unit.input else replace(unit, input=changed)]


def _taken(folding: _Folding) -> set[str]:
    return {u.name for u in folding.units} | set(folding.extra) | {n for run in folding.runs for n in run.outputs}


def _chosen(folding: _Folding, chosen: list[Select], base: str, at: list[int], seq: int | None = None) -> str | None:
    """The list that elements `at` of `base` are: `_listed`, else a select step's (new ones added to `chosen`)."""
    ref = _listed(folding, base, at)
    elements = folding.resolved(base, 0)
    if ref is None and isinstance(elements, list) and at and at[-1] < len(elements):
        ref = _selecting(base, elements, at, folding, seq)
    select = folding.selects.get(ref) if ref is not None else None
    if select is not None and select not in folding.applied:
        chosen.append(select)
        folding.applied.append(select)
    return ref


def _listed(folding: _Folding, base: str, at: list[int]) -> str | None:
    """The list whose elements are exactly elements `at` of `base` when recorded: `base` itself, or an evident
    filter of it; None when no field tells them apart (or they are not in order)."""
    elements = folding.resolved(base, 0)
    if not isinstance(elements, list) or at != sorted(set(at)) or (at and at[-1] >= len(elements)):
        return None
    if at == list(range(len(elements))):
        return base
    filtered = _evidently(base, elements, at, folding)
    if filtered is None or not same(folding.resolved(filtered, 0), [elements[i] for i in at]):
        return None
    return filtered


def _evidently(base: str, elements: list[JSON], at: list[int], folding: _Folding) -> str | None:
    """`evident_filter`, or a select step on its one condition where the value is the user's choice (the category
    whose items the task handles, so that it can be an input)."""
    choice = evident_choice(elements, at)
    return _select_step(base, (choice,), folding) if choice is not None else evident_filter(base, elements, at)


def _walking(members: list[Unit]) -> list[Unit]:
    """The calls of a family that take elements of a list, when at least two do: a call of the same tool that
    takes no element (the `aws s3api list-objects-v2` whose output the `delete-object` calls walk) is no
    member of the loop."""
    walking = [m for m in members if indexed_bases(m.input)]
    return walking if 2 <= len(walking) < len(members) else members


def _fold_family(folding: _Folding, members: list[Unit]) -> None:
    names = tuple(m.name for m in members)
    if any(m.record.is_error or m.record.status != StepStatus.SUCCEEDED for m in members):
        folding.unrolled.append(Unrolled(names, "one of the calls failed when recorded"))
        return
    # In each other recording the loop stands for that recording's calls of the tool, as many as its list has
    # (when the family is every call of the tool); else for the same calls by name.
    every = _calls_of(folding.runs[0], members[0].tool) == names
    calls = [names] + [_calls_of(run, members[0].tool) if every else names for run in folding.runs[1:]]
    if not all(all(n in run.steps for n in c) for run, c in zip(folding.runs, calls, strict=True)):
        folding.unrolled.append(Unrolled(names, "the other recordings do not make the same calls"))
        return
    folding.calls = calls
    found = _walk_of(members, folding)
    if isinstance(found, str):
        folding.unrolled.append(Unrolled(names, found))
        return
    _apply(folding, members, found)


def _apply(folding: _Folding, members: list[Unit], walk: _Walk) -> None:
    taken = {u.name for u in folding.units} | {n for run in folding.runs for n in run.steps}
    name = free_name(f"{step_name_base(members[0].tool.partition('__')[2] or members[0].tool)}_each", taken)
    if walk.list_input is not None:
        input_name, spec, per_run = walk.list_input
        folding.table.specs[input_name] = spec
        for values, run_values in zip(folding.table.values, per_run, strict=True):
            values[input_name] = run_values
    names = tuple(m.name for m in members)
    added: list[Unit] = []
    for walked in walk.zipped.values() if walk.zipped is not None else [walk.over]:
        cut, path = folding.cuts.get(walked, (None, ""))
        items = cut["items"] if isinstance(cut, dict) else walked
        if (
            isinstance(items, str)
            and (select := folding.selects.get(items)) is not None
            and select not in folding.applied
        ):
            added.append(select_unit(select, members[0].record))
            folding.applied.append(select)
        if cut is not None:
            added.append(Unit(walked[1:], "", members[0].record, cut, code=CUT_CODE))
            folding.explained |= {(m.name, path) for m in members}
    over = walk.over
    if walk.zipped is not None:
        zipped = free_name(f"{name}_items", taken | {name})
        added.append(Unit(zipped, "", members[0].record, dict(walk.zipped), code=ZIP_CODE))
        over = f"@{zipped}"
    added.append(Unit(name, members[0].tool, members[0].record, walk.per_item, over, names))
    folding.extra[name] = [
        [run.outputs.get(m) for m in calls] for run, calls in zip(folding.runs, folding.calls, strict=True)
    ]
    rename = {member: f"@{name}[{i}]" for i, member in enumerate(names)}
    out: list[Unit] = []
    for unit in folding.units:
        if unit.name == names[0]:
            out += added
        elif unit.name not in names:
            walks = rewrite(unit.for_each, rename) if unit.for_each is not None else None
            counted = {f"@{name}": len(names)}.get
            out.append(replace(unit, input=collapse(rewrite(unit.input, rename), counted), for_each=walks))
    folding.units = out
    loop = Loop(name, members[0].tool, walk.over, names, walk.why, walk.folded, walk.elements, tuple(folding.calls))
    folding.loops.append(loop)


# --------------------------------------------------------------------------- finding the walk


def _walk_of(members: Sequence[Unit], folding: _Folding) -> _Walk | str:
    """How the family walks a list, or why it does not (a sentence for the summary).

    Each call's arguments, with the element it took replaced by `@item`, are a candidate; the first
    candidate that gives back every call's recorded arguments wins (one list walked, then several
    walked together)."""
    if all(same(members[0].input, other.input) for other in members[1:]):
        return "the same call repeated with the same arguments: no list to walk"
    lists = _list_inputs(folding)
    marked = [replace(m, input=marked_elements(m.input, lists)) for m in members] if lists else list(members)
    walkable = _walkable([m.input for m in marked])
    tries = [[base] for base in walkable] + ([list(walkable)] if len(walkable) >= 2 else [])
    reason = "their arguments differ by values that no list explains"
    for bases in tries:
        found = _walk_over(marked, {base: walkable[base] for base in bases}, folding)
        if isinstance(found, _Walk):
            return found
        reason = found or reason
    walked = _input_walk(members, folding) or _cut_walk(members, folding) or _column_walk(members, folding)
    return walked if walked is not None else reason


def _cut_walk(members: Sequence[Unit], folding: _Folding) -> _Walk | None:
    """The calls take one value cut out of each element of an earlier list (`_cuts`): a loop over a cut step."""
    if len(folding.runs) != 1:
        return None  # (the cut is proved on one recording; several recordings confirm other walks)
    run, seq = folding.runs[0], members[0].record.seq
    before = sorted((r for r in run.steps.values() if r.seq < seq and r.name in run.outputs), key=lambda r: r.seq)
    found = find_cut([m.input for m in members], [(r.name, run.outputs[r.name]) for r in before])
    if found is None:
        return None
    elements, at = list(found.elements), list(found.at)
    if at == list(range(len(elements))):
        over: str | None = found.base
    else:
        over = _evidently(found.base, elements, at, folding) or _selecting(found.base, elements, at, folding, seq)
    if over is None or not same(folding.resolved(over, 0), [elements[i] for i in at]):
        return None
    values = cut_values(folding.resolved(over, 0), found.key, found.prefix, found.suffix)
    per_item = put_at(members[0].input, found.path, "@item")
    if values is None or not _gives_back(per_item, [m.record for m in members], values, folding):
        return None
    taken = {u.name for u in folding.units} | set(folding.extra) | {n for n in run.steps} | {n for n in run.outputs}
    name = free_name(f"cut_{snake(found.key.rsplit('.', 1)[-1])}", taken)
    cut: JSON = {"items": over, "key": found.key, "prefix": found.prefix, "suffix": found.suffix}
    folding.cuts[f"@{name}"] = (cut, json_path(found.path))
    folding.extra[name] = [values]
    why = f"each call takes {found.key} of an element of {found.base} between {found.prefix!r} and {found.suffix!r}"
    took = tuple((("@item", f"{found.base}[{i}].{found.key}"),) for i in at)
    return _Walk(f"@{name}", per_item, why, elements=took)


def _column_walk(members: Sequence[Unit], folding: _Folding) -> _Walk | None:
    """The calls' one varying argument is one field of distinct elements of an earlier list, in its order
    (`find_column`): the loop over those elements, as if each call had named its element."""
    if len(folding.runs) != 1:
        return None  # (proved on one recording; several recordings confirm the walks refs make)
    run, seq = folding.runs[0], members[0].record.seq
    before = sorted((r for r in run.steps.values() if r.seq < seq and r.name in run.outputs), key=lambda r: -r.seq)
    found = find_column([m.record.resolved_input for m in members], [(r.name, run.outputs[r.name]) for r in before])
    if found is None:
        return None
    path, base, at, key = found
    marked = [replace(m, input=put_at(m.input, path, f"{base}[{i}].{key}")) for m, i in zip(members, at, strict=True)]
    walked = _walk_over(marked, {base: at}, folding)
    return walked if isinstance(walked, _Walk) else None


def _list_inputs(folding: _Folding) -> dict[str, list[JSON]]:
    """The list inputs the user gave (named), whose elements calls may have taken one by one."""
    values = folding.table.values[0]
    return {
        name: value
        for name, value in values.items()
        if isinstance(value, list) and len(value) >= 2 and not folding.table.specs[name].secret
    }


def _walkable(inputs: Sequence[JSON]) -> dict[str, list[int]]:
    """Lists the calls take one element of each, with the element per call. A call that does not name an
    element of a list is given the element of a list walked in step with it (the same index in every other
    call): `@get_user_each[0]` and `Hello Ann` stand for `@list_users_1.users[0]` when calls 2 and 3 took
    `[1]` and `[2]` of both."""
    found: dict[str, list[int | None]] = {}
    # A list every call walks is named by the first call or (when it took the element in step) the second:
    # looking no further keeps a family of n calls linear.
    for base in dict.fromkeys(b for value in inputs[:2] for b in indexed_bases(value)):
        found[base] = [index_of(value, base) for value in inputs]
    # Anchors are lists every call walks, one distinct element each (not `@project[0]` taken by every call).
    complete = {b: at for b, at in found.items() if None not in at and len(set(at)) == len(at)}
    out: dict[str, list[int]] = {}
    for base, at in found.items():
        if None in at:
            if _INDEX_RE.search(base):
                continue  # a list inside an element (`@each[0].results`): another call reads another element's
            anchor = next(
                (a for a in complete.values() if all(x in (None, y) for x, y in zip(at, a, strict=True))), None
            )
            if anchor is None:
                continue
            at = list(anchor)
        known = [i for i in at if i is not None]
        if len(set(known)) == len(known) == len(inputs):
            out[base] = known
    return out


def _agrees(partial_at: Sequence[int | None], full: Sequence[int | None]) -> bool:
    return all(x is None or x == y for x, y in zip(partial_at, full, strict=True))


def _walk_over(members: Sequence[Unit], walked: Mapping[str, list[int]], folding: _Folding) -> _Walk | str | None:
    """The loop over `walked` (one list, or several zipped) if some call's generalized arguments give back
    every call's recorded arguments; else why not (or None: no candidate fits)."""
    keys = {base: free_name(re.sub(r"[^A-Za-z0-9_]+", "_", base[1:]).strip("_"), set()) for base in walked}
    single = len(walked) == 1
    candidates: list[JSON] = []
    for i, member in enumerate(members):
        value = member.input
        for base, at in walked.items():
            item = "@item" if single else f"@item.{keys[base]}"
            value = substitute(value, partial(strip_index, base=base, n=at[i], item=item))
        if not any(same(value, c) for c in candidates):
            candidates.append(value)
    elements = {base: folding.resolved(base, 0) for base in walked}
    if not all(isinstance(e, list) for e in elements.values()):
        return None
    items = [_element(elements, walked, keys, i, single) for i in range(len(members))]
    # A few candidates: the calls' arguments generalize to one form, or to none (n distinct ones).
    records = [m.record for m in members]
    per_item = next((c for c in candidates[:_CANDIDATES] if _gives_back(c, records, items, folding)), None)
    if per_item is None:
        return None
    overs: dict[str, str] = {}
    whys: list[str] = []
    for base, at in walked.items():
        found = _over_list(base, at, folding, members[0].record.seq)
        if isinstance(found, str):
            return found
        overs[keys[base]] = found[0]
        whys.append(found[1] if single else f"{found[0]}: {found[1]}")
    for run in range(1, len(folding.runs)):
        if not _fits_run(per_item, overs, single, run, folding):
            return "in another recording the same loop does not give back its calls' arguments"
    heads = {base: "@item" if single else f"@item.{keys[base]}" for base in walked}
    took = tuple(tuple((heads[base], f"{base}[{at[i]}]") for base, at in walked.items()) for i in range(len(members)))
    if single:
        return _Walk(next(iter(overs.values())), per_item, whys[0], elements=took)
    why = f"the elements of {len(overs)} lists walked together ({'; '.join(whys)})"
    return _Walk(f"zip of {', '.join(overs.values())}", per_item, why, zipped=overs, elements=took)


def _fits_run(per_item: JSON, overs: Mapping[str, str], single: bool, run: int, folding: _Folding) -> bool:
    """The loop over `overs` in recording `run` gives back that recording's calls, element by element."""
    lists = {key: folding.resolved(over, run) for key, over in overs.items()}
    calls = folding.calls[run]
    if not all(isinstance(v, list) and len(v) == len(calls) for v in lists.values()):
        return False
    items = [
        next(iter(lists.values()))[i] if single else {key: v[i] for key, v in lists.items()} for i in range(len(calls))
    ]
    records = [folding.runs[run].steps[name] for name in calls]
    return _gives_back(per_item, records, items, folding, run)


def _element(
    elements: Mapping[str, JSON], walked: Mapping[str, list[int]], keys: Mapping[str, str], i: int, single: bool
) -> JSON:
    picked = {}
    for base, at in walked.items():
        listed = elements[base]
        assert isinstance(listed, list)
        picked[keys[base]] = listed[at[i]] if 0 <= at[i] < len(listed) else None
    return next(iter(picked.values())) if single else picked


def _gives_back(
    per_item: JSON, records: Sequence[StepRecord], items: Sequence[JSON], folding: _Folding, run_index: int = 0
) -> bool:
    """Each call's recorded arguments come back from `per_item` with its element, in recording `run_index`."""
    run = folding.runs[run_index]
    steps = {**run.outputs, **{name: out[run_index] for name, out in folding.extra.items()}}
    for index, (record, item) in enumerate(zip(records, items, strict=True)):
        scope = MappingScope(steps=steps, inputs=run.inputs, item=item, index=index, in_loop=True)
        recorded = record.resolved_input if record.resolved_input is not None else {}
        try:
            if not same(resolve(per_item, scope), recorded):
                return False
        except RefError:
            return False
    return True


def _over_list(base: str, at: Sequence[int], folding: _Folding, seq: int) -> tuple[str, str] | str:
    """(the ref the loop walks, why) for calls that took elements `at` of `base`; or why there is none."""
    elements = folding.resolved(base, 0)
    if not isinstance(elements, list):
        return f"{base} is not a list"
    count = len(at)
    if at and max(at) >= len(elements):
        return f"the calls take elements {at} of {base}, which had {len(elements)} when recorded"
    if at == list(range(len(elements))):
        over, why = base, f"{count} calls when recorded, one per element"
    elif at != sorted(at):
        return f"they handle the elements of {base} out of order ({at})"
    else:
        filtered = _evidently(base, elements, at, folding) or _selecting(base, elements, at, folding, seq)
        if filtered is None:
            return (
                f"they handle elements {at} of {base} ({len(elements)} elements) and no field tells the handled "
                "ones apart from the others: kept unrolled"
            )
        if not same(folding.resolved(filtered, 0), [elements[i] for i in at]):
            return f"the filter {filtered} does not give back the elements {at} the calls took"
        over = filtered
        why = f"only the elements the filter keeps: {count} of {len(elements)} when recorded"
        if filtered in folding.selects:
            kept = " and ".join(c.describe() for c in folding.selects[filtered].where)
            why = f"only the elements whose {kept}: {count} of {len(elements)} when recorded"
    for run in range(1, len(folding.runs)):
        got = folding.resolved(over, run)
        if not isinstance(got, list) or len(got) != len(folding.calls[run]):
            return f"in another recording {over} does not give as many elements as its calls there"
    return over, why


def _selecting(base: str, elements: list[JSON], at: list[int], folding: _Folding, seq: int | None) -> str | None:
    """`@select_x`, a code step keeping the elements that meet two conditions (`_select`), its output in each
    recording known to the folding; None when no two conditions keep exactly the handled elements."""
    run = folding.runs[0]
    # (only what was read before the call that takes them: a write's own answer listing the ids it took is no
    # reason to take them, and a select waiting on that write would make a cycle)
    before = {k: v for k, v in run.outputs.items() if seq is None or (k in run.steps and run.steps[k].seq < seq)}
    where = separating(elements, at, before, base[1:].split(".", 1)[0].split("[", 1)[0])
    return _select_step(base, where, folding) if where is not None else None


def _select_step(base: str, where: tuple[Condition, ...], folding: _Folding) -> str:
    """`@select_x`, the code step keeping the elements of `base` that meet `where`, its output in each recording
    known to the folding (the one already made for the same elements, where there is one)."""
    named = folding.table.values[0]
    # A condition's value the user named already is that input, in each recording its own value.
    refs = tuple(next((name for name, value in named.items() if same(value, c.value)), None) for c in where)
    for ref, known in folding.selects.items():  # a second family over the same elements (a per-item pair of writes)
        if (known.base, known.where, known.refs) == (base, where, refs):
            return ref
    taken = {u.name for u in folding.units} | set(folding.extra) | {s.step for s in folding.selects.values()}
    taken |= {n for run in folding.runs for n in (*run.steps, *run.outputs)}
    last = _KEY_RE.findall(base.rsplit(".", 1)[-1]) or ["items"]
    select = Select(free_name(f"select_{last[0]}", taken), base, where, refs)
    outputs: list[JSON] = []
    for n, run in enumerate(folding.runs):
        # (a condition on what another output lists: what it lists in this recording)
        listed = [c.listing(folding.resolved(c.among, n)) if c.among else c for c in where]
        conditions = [c if ref is None else c.valued(run.inputs.get(ref)) for c, ref in zip(listed, refs, strict=True)]
        outputs.append(selected(folding.resolved(base, n), conditions))
    folding.extra[select.step] = outputs
    folding.selects[f"@{select.step}"] = select
    return f"@{select.step}"


def _input_walk(members: Sequence[Unit], folding: _Folding) -> _Walk | None:
    """One input per call (`title`, `title_2`, ...): one list input walked by the loop."""
    if any(c != folding.calls[0] for c in folding.calls[1:]):
        return None  # per-call inputs in recordings with other numbers of calls: no names to line up
    used = [input_names(m.input) for m in members]
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
    generalized = [substitute(m.input, partial(strip_input, name=n)) for m, n in pairs]
    if not all(same(generalized[0], g) for g in generalized[1:]):
        return None
    per_run: list[list[JSON]] = []
    for values in folding.table.values:
        if not all(n in values for n in names):
            return None
        per_run.append([values[n] for n in names])
    per_item, per_run = built_around_item(generalized[0], per_run)
    base = _NUMBERED_RE.sub("", names[0])
    name = free_name(base if base.endswith("s") else f"{base}s", set(folding.table.specs))
    spec = InputSpec(
        type="array",
        description=f"one {base} per call of {members[0].tool}, in order (recorded {per_run[0]!r})",
        items=items_schema(per_run[0]),
    )
    over = f"@input.{name}"
    why = f"one input per call when recorded ({', '.join(names)}), now one list input"
    took = tuple((("@item", f"@input.{n}"),) for n in names)
    return _Walk(over, per_item, why, (name, spec, per_run), tuple(names), elements=took)


def _alone(members: Sequence[Unit], units: Sequence[Unit]) -> bool:
    """The members follow one another with no other call between them."""
    at = [i for i, u in enumerate(units) if u in members]
    return at == list(range(at[0], at[0] + len(members)))


def _used_elsewhere(names: set[str], members: Sequence[Unit], units: Sequence[Unit]) -> bool:
    return any(input_names([u.input, u.for_each]) & names for u in units if u not in members)


def _calls_of(run: Run, tool: str) -> tuple[str, ...]:
    """The recording's calls of `tool` (listed name), in recorded order."""
    records = sorted(run.steps.values(), key=lambda r: r.seq)
    return tuple(
        r.name for r in records if (f"{r.server}__{r.tool or r.name}" if r.server else r.tool or r.name) == tool
    )
