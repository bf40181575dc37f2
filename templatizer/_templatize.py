"""`templatize`: recordings in, a validated template and every decision with its evidence out.

One pass over the primary recording in order (each step is inferred against the index of
what earlier steps produced, then its output is added), then verification (every ref must
reproduce the recorded argument), the `steps=[...]` subset, and validation of the result.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection, Mapping, Sequence
from functools import partial

from toolreel.core.errors import RefError, TemplateError
from toolreel.core.model import JSON, StepKind, StepRecord, StepStatus
from toolreel.core.names import prefixed_name
from toolreel.core.refs import RESERVED_ROOTS, MappingScope, ref_roots, refs_in, resolve
from toolreel.core.secrets import REDACTED
from toolreel.core.template import StepSpec, Template
from toolreel.core.template_io import parse_template, template_to_dict
from toolreel.templatizer._capture import propose_captures
from toolreel.templatizer._codesteps import drop_unread
from toolreel.templatizer._complete import complete_walks
from toolreel.templatizer._conditions import (
    guard_on_absence,
    guard_on_checks,
    guard_on_copies,
    guard_on_picks,
    guard_on_state,
    guard_on_transitions,
    guard_reads_for,
    guard_sequels,
    guard_writes,
)
from toolreel.templatizer._dates import propose_dates
from toolreel.templatizer._epochs import Epoch, propose_epochs
from toolreel.templatizer._groups import group_items
from toolreel.templatizer._index import OutputIndex
from toolreel.templatizer._infer import StepInferrer, StepResult
from toolreel.templatizer._inputs import InputTable, Schemas
from toolreel.templatizer._likely import likely_inputs
from toolreel.templatizer._lines import opening_inputs
from toolreel.templatizer._linewise import propose_lines
from toolreel.templatizer._loops import Unit, fold_loops
from toolreel.templatizer._offsets import Offset, Timing, clocks_before, offset_inputs, propose_offsets
from toolreel.templatizer._order import Call, order_after
from toolreel.templatizer._pages import find_pagings, merge_pages, page_steps
from toolreel.templatizer._picks import drop_unused_picks, pick_by_identity, pick_inputs
from toolreel.templatizer._pieces import literal
from toolreel.templatizer._result import Inference, TemplatizeResult
from toolreel.templatizer._runs import Run, named_in_runs
from toolreel.templatizer._select import select_inputs
from toolreel.templatizer._tallies import propose_tallies
from toolreel.templatizer._transforms import computed_elsewhere, propose_transforms
from toolreel.templatizer._values import Keys, get_at, json_path, producer_words, put_at, same
from toolreel.templatizer._views import VIEW_CODE, View, read_view
from toolreel.templatizer._wording import OutputWords

MANAGEMENT_SERVER = "toolreel"


def templatize(
    recordings: Sequence[Sequence[StepRecord]],
    *,
    name: str,
    description: str | None = None,
    inputs: Mapping[str, JSON] | None = None,
    steps: Sequence[str] | None = None,
    include_failed: bool = False,
    keep_order: bool = True,
    read_only: Collection[str] = (),
    schemas: Schemas | None = None,
) -> TemplatizeResult:
    """Turn one or more recordings of a task into a template (the save_template of the management tools).

    `recordings[0]` is the one templatized; the others (same task, other values) confirm or
    refute its mappings. `inputs` names literal values that become `@input.<name>`. `steps`
    keeps a subset (plus what it depends on). `keep_order` adds `depends_on` so a replay keeps
    the recorded order of side effects: each step waits for the last step before it that may
    write, and a step that may write also waits for the reads since then. Tools named in
    `read_only` (`server__tool`, MCP's `readOnlyHint`) are reads, so reads between two writes
    replay in parallel; with no such knowledge every step is a write and the order is the recording's.
    `schemas` (`server__tool` -> the tool's `inputSchema`) is evidence for which literals are inputs.
    """
    if not recordings or not recordings[0]:
        raise TemplateError("nothing to templatize: the recording has no steps", template=name)
    kept, left_out = _select(recordings[0], include_failed)
    if not kept:
        why = "; ".join(f"{step}: {reason}" for step, reason in left_out)
        raise TemplateError(f"no step of the recording can be templatized ({why})", template=name)
    runs = [_run(recording, include_failed) for recording in recordings]
    pagings = find_pagings(kept) if len(runs) == 1 else []  # (across recordings, pages would have to agree)
    kept = merge_pages(kept, runs[0], pagings)
    table = InputTable(runs=len(runs))
    table.add_named(inputs or {})
    for values, found in zip(table.values[1:], named_in_runs(inputs or {}, kept, runs), strict=True):
        values.update(found)  # each recording verifies with its own values of the named inputs
    for run, values in zip(runs, table.values, strict=True):
        run.inputs = values  # the same dict: inputs derived while inferring are seen at once
    views: list[View] = []
    results = _infer_all(kept, runs, table, views)
    dropped = _verify(kept, results, runs[0])
    names = _subset(kept, results, steps, name)
    left_out += [(r.name, "not among the steps asked for, nor needed by them") for r in kept if r.name not in names]
    reads = frozenset(read_only)
    units = [Unit(r.name, _listed(r), r, results[r.name].template_input) for r in kept if r.name in names]
    units, filled = complete_walks(_with_views(units, views), runs)
    folded = fold_loops(units, runs, table)
    picked, picks = pick_by_identity(folded.units, runs, table.values[0])
    template = _build(name, description or _describe(kept), picked, table, keep_order, reads)
    template, lined = propose_lines(template, kept, runs)
    template, transforms = propose_transforms(template, kept, runs, named=set(inputs or {}))
    transforms += lined
    template, tallies = propose_tallies(template, kept, runs)
    template, captures, openings = propose_captures(template, kept, runs, table.specs)
    template, dates = propose_dates(template, kept, runs)
    looped = {member: loop.step for loop in folded.loops for member in loop.members}
    clocks = clocks_before(template, kept, runs[0].outputs)
    timing = Timing(kept, runs, clocks, table.values[0], table.specs, looped)
    template, offsets, moved = propose_offsets(template, timing)
    template, unix_times, epochs = propose_epochs(template, timing)
    timed: tuple[Offset | Epoch, ...] = (*moved, *epochs)
    transforms += tallies + captures + dates + offsets + unix_times
    template, picks = drop_unused_picks(template, picks)
    template, _ = drop_unread(template, {view.name for view in views})
    template, guards = guard_writes(template, reads)
    template, states = guard_on_state(template, reads, runs[0].outputs)
    guards += states
    template, chosen_by_state = guard_on_picks(template, reads, picks)
    guards += chosen_by_state
    template, checks = guard_on_checks(template, reads, runs[0].outputs)
    guards += checks
    template, absent = guard_on_absence(template, reads, runs[0].outputs)
    guards += absent
    template, transitions = guard_on_transitions(template, reads, picks, runs[0].outputs)
    guards += transitions
    template, sequels = guard_sequels(template, reads, guards)
    guards += sequels
    template = guard_reads_for(template, reads)
    template, copies = guard_on_copies(template, reads, runs[0].outputs)
    guards += copies
    template = _without_unused_code(template)
    template, loops = group_items(template, folded.loops, {name: r.seq for name, r in runs[0].steps.items()})
    template, paged = page_steps(template, pagings)
    loops += paged
    chosen = [results[r.name] for r in kept if r.name in names]
    # A literal a code step now computes whole is no candidate, nor does it explain another (a slug inside a URL
    # that is read out of an output is the user's own again); a text with a computed part still holds the user's.
    computed = {(inference.step, inference.input_path) for inference in transforms if "{{" not in str(inference.ref)}
    computed |= {(inference.step, inference.input_path) for inference in tallies}  # (its words report the list)
    computed |= {  # a time a loop's calls all take from the clock
        (member, json_path(item.keys)) for item in timed for member, loop in looped.items() if loop == item.at
    }
    computed |= folded.explained | filled  # a value a loop cuts out of each element, or one a walk's gap read
    computed_steps = {step for step, _ in computed}  # (a literal inside a computed argument is no candidate either)
    opening = min(kept, key=lambda r: r.seq).name if kept else None
    literals = [
        dataclasses.replace(lit, reads=lit.tool in reads, opening=lit.step == opening)
        for res in chosen
        for lit in res.literals
        if lit.step not in computed_steps
        or not any((lit.step, json_path(lit.keys[:n])) in computed for n in range(1, len(lit.keys) + 1))
    ]
    likely, stayed = (
        likely_inputs(literals, set(template.inputs), schemas, partial(_produced, runs[0]), _words(runs[0]))
        if len(runs) == 1
        else ([], [])
    )
    likely = computed_elsewhere(likely, transforms)
    if len(runs) == 1:
        likely = offset_inputs(timed, likely, set(template.inputs) | {item.name for item in likely})
        likely = pick_inputs(picks, likely, set(template.inputs))
        likely = select_inputs(folded.selects, likely, set(template.inputs))
        likely = opening_inputs(openings, likely, set(template.inputs) | {item.name for item in likely})
    return TemplatizeResult(
        template=template,
        applied=tuple(inf for res in chosen for _, inf in res.applied) + transforms,
        candidates=tuple(inf for res in chosen for inf in res.candidates),
        likely_inputs=tuple(likely),
        dropped=tuple(inf for inf in dropped if inf.step in names),
        left_out=tuple(left_out),
        input_values={k: v for k, v in table.values[0].items() if k in template.inputs},
        run_inputs=tuple({k: v for k, v in run.items() if k in template.inputs} for run in table.values),
        stayed_literal=tuple(stayed),
        loops=loops,
        unrolled=folded.unrolled,
        picks=tuple(picks),
        conditions=tuple((guard.step, guard.why) for guard in guards),
    )


# --------------------------------------------------------------------------- selection


def _latest(recording: Sequence[StepRecord]) -> list[StepRecord]:
    latest: dict[str, StepRecord] = {}
    for record in recording:
        current = latest.get(record.name)
        if current is None or record.attempt > current.attempt:
            latest[record.name] = record
    return sorted(latest.values(), key=lambda r: (r.seq, r.name))


def _ok(record: StepRecord) -> bool:
    return record.status == StepStatus.SUCCEEDED and not record.is_error


def _select(recording: Sequence[StepRecord], include_failed: bool) -> tuple[list[StepRecord], list[tuple[str, str]]]:
    kept: list[StepRecord] = []
    left_out: list[tuple[str, str]] = []
    for record in _latest(recording):
        if record.kind != StepKind.TOOL:
            left_out.append((record.name, f"a {record.kind.value} step: only tool calls are templatized"))
        elif record.server == MANAGEMENT_SERVER:
            left_out.append((record.name, "a toolreel management call"))
        elif not _ok(record) and not include_failed:
            left_out.append((record.name, f"{record.status.value} (isError); pass include_failed to keep it"))
        elif record.status in (StepStatus.SUCCEEDED, StepStatus.FAILED):
            kept.append(record)
        else:
            left_out.append((record.name, f"{record.status.value}: it never finished"))
    return kept, left_out


def _run(recording: Sequence[StepRecord], include_failed: bool) -> Run:
    kept, _ = _select(recording, include_failed)
    return Run(steps={r.name: r for r in kept}, outputs={r.name: r.output for r in kept if _ok(r)})


def _words(run: Run) -> OutputWords:
    return OutputWords(run.outputs, {name: record.seq for name, record in run.steps.items()})


def _produced(run: Run, text: str, step: str) -> bool:
    """Some output recorded before `step` holds `text` (looked up only for the few texts that need it)."""
    before = run.steps[step].seq if step in run.steps else 0
    return any(
        text in json.dumps(output, ensure_ascii=False)
        for name, output in run.outputs.items()
        if name in run.steps and run.steps[name].seq < before  # (a view's rows are its step's text again)
    )


def _listed(record: StepRecord) -> str:
    return prefixed_name(record.server, record.tool or record.name) or record.name


def _describe(kept: Sequence[StepRecord]) -> str:
    return f"Recorded in execution {kept[0].execution_id}: {', '.join(_listed(r) for r in kept[:5])}" + (
        ", ..." if len(kept) > 5 else ""
    )


# --------------------------------------------------------------------------- inference and verification


def _infer_all(
    kept: Sequence[StepRecord], runs: Sequence[Run], table: InputTable, views: list[View]
) -> dict[str, StepResult]:
    """Each step inferred against what the steps before it produced; `views` gets the rows read out of text."""
    index = OutputIndex()
    results: dict[str, StepResult] = {}
    taken = {name for run in runs for name in run.steps}
    for order, record in enumerate(kept, start=1):
        inferrer = StepInferrer(record, index, table, runs)
        results[record.name] = inferrer.infer()
        index.note_input(order, inferrer.ids)
        if _ok(record):
            producer = producer_words(record.tool or record.name, record.resolved_input)
            index.add_output(record.name, producer, order, record.output)
            view = read_view(record, runs, taken)
            if view is not None:
                taken.add(view.name)
                views.append(view)
                index.add_output(view.name, producer, order, list(view.rows[0] or []))
                for run, rows in zip(runs, view.rows, strict=True):
                    run.outputs[view.name] = rows
                    run.views.setdefault(record.name, []).append(view.name)
    return results


def _with_views(units: list[Unit], views: Sequence[View]) -> list[Unit]:
    """The units with each view's code step right after the step whose text it reads."""
    after = {view.step: view for view in views}
    out: list[Unit] = []
    for unit in units:
        out.append(unit)
        view = after.get(unit.name)
        if view is not None:
            out.append(Unit(view.name, "", unit.record, view.input, code=VIEW_CODE))
    return out


def _verify(kept: Sequence[StepRecord], results: dict[str, StepResult], primary: Run) -> list[Inference]:
    """Resolve every applied ref against the recording; one that does not reproduce goes back to literal."""
    scope = primary.scope()
    dropped: list[Inference] = []
    for record in kept:
        result = results[record.name]
        recorded = record.resolved_input if record.resolved_input is not None else {}
        if _reproduces(result.template_input, scope, recorded):
            continue
        keep: list[tuple[Keys, Inference]] = []
        for keys, inference in result.applied:
            found, value = get_at(recorded, keys)
            if found and _reproduces(inference.ref, scope, value):
                keep.append((keys, inference))
                continue
            result.template_input = put_at(result.template_input, keys, literal(value))
            dropped.append(_as_dropped(inference, scope))
        result.applied = keep
        if not _reproduces(result.template_input, scope, recorded):  # a bug of ours: never ship it
            dropped += [_as_dropped(inf, scope) for _, inf in keep]
            result.applied = []
            result.template_input = literal(recorded)
    return dropped


def _reproduces(template_value: JSON, scope: MappingScope, recorded: JSON) -> bool:
    try:
        return _same_but_secrets(resolve(template_value, scope), recorded)
    except RefError:
        return False


def _same_but_secrets(got: JSON, recorded: JSON) -> bool:
    """`same`, where a value redacted when recorded matches anything: it cannot be checked, and a ref the
    agent wrote there (`@create_session_1.id`) must not fall back to the placeholder."""
    if recorded == REDACTED:
        return True
    if isinstance(got, dict) and isinstance(recorded, dict):
        return got.keys() == recorded.keys() and all(_same_but_secrets(got[k], v) for k, v in recorded.items())
    if isinstance(got, list) and isinstance(recorded, list):
        return len(got) == len(recorded) and all(map(_same_but_secrets, got, recorded))
    return same(got, recorded)


def _as_dropped(inference: Inference, scope: MappingScope) -> Inference:
    try:
        got = f"it gives {resolve(inference.ref, scope)!r}"
    except RefError as exc:
        got = f"it does not resolve ({exc})"
    evidence = f"{inference.evidence}; dropped: {got}, not the recorded argument"
    return Inference(inference.step, inference.input_path, inference.ref, "low", 0.0, evidence, inference.kind)


# --------------------------------------------------------------------------- subset and build


def _deps(result: StepResult) -> set[str]:
    return ref_roots(result.template_input) - RESERVED_ROOTS


def _subset(
    kept: Sequence[StepRecord], results: dict[str, StepResult], steps: Sequence[str] | None, template: str
) -> set[str]:
    everything = [r.name for r in kept]
    if steps is None:
        return set(everything)
    unknown = [s for s in steps if s not in results]
    if unknown:
        raise TemplateError(
            f"steps {', '.join(map(repr, unknown))} are not templatizable steps of the recording; "
            f"those are: {', '.join(everything)}",
            template=template,
            field="steps",
        )
    names: set[str] = set()
    todo = list(steps)
    while todo:
        step = todo.pop()
        if step not in names:
            names.add(step)
            todo += [dep for dep in _deps(results[step]) if dep in results]
    return names


def _build(
    name: str,
    description: str,
    units: Sequence[Unit],
    table: InputTable,
    keep_order: bool,
    read_only: frozenset[str],
) -> Template:
    calls = [Call(u.name, u.tool, frozenset(_unit_deps(u))) for u in units if u.tool]
    order = order_after(calls, read_only) if keep_order else {}
    specs: list[StepSpec] = []
    used: dict[str, list[str]] = {}
    for unit in units:
        for ref in refs_in([unit.input, unit.for_each]):
            if ref.root == "input" and ref.path:
                used.setdefault(_input_of(ref.path), []).append(unit.name)
        if unit.code is not None:  # pure: it waits for its data only
            specs.append(StepSpec(name=unit.name, code=unit.code, input=unit.input, for_each=unit.for_each))
            continue
        # A loop of writes keeps the recorded one-at-a-time order of its side effects.
        one_by_one = unit.for_each is not None and unit.tool not in read_only
        specs.append(
            StepSpec(
                name=unit.name,
                tool=unit.tool,
                input=unit.input,
                for_each=unit.for_each,
                concurrency=1 if one_by_one else None,
                depends_on=tuple(order.get(unit.name, ())),
                include_failed=not _ok(unit.record),
            )
        )
    table.used_by = {k: list(dict.fromkeys(v)) for k, v in used.items()}
    kept = {u.name for u in units}
    draft = Template(name=name, description=description, steps=tuple(specs), inputs=table.final_specs(kept))
    return parse_template(template_to_dict(draft))


def _without_unused_code(template: Template) -> Template:
    """The template without `code` steps nothing reads: a pick whose ref a later rule replaced (the list is
    joined now) computes nothing the replay needs, and would fail on data where its item is gone."""
    steps = list(template.steps)
    while True:
        read = ref_roots([[s.input, s.for_each, s.when and [leaf.ref for leaf in s.when.leaves()]] for s in steps])
        read |= {name for s in steps for name in s.depends_on}
        if template.has_output:
            read |= ref_roots(template.output)
        unused = [s for s in steps[:-1] if s.code is not None and s.name not in read]
        if not unused:
            break
        steps = [s for s in steps if s not in unused]
    if len(steps) == len(template.steps):
        return template
    return parse_template(template_to_dict(dataclasses.replace(template, steps=tuple(steps))))


def _unit_deps(unit: Unit) -> set[str]:
    return ref_roots([unit.input, unit.for_each]) - RESERVED_ROOTS


def _input_of(path: str) -> str:
    for i, char in enumerate(path):
        if char in ".[":
            return path[:i]
    return path
