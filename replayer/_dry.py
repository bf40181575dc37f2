"""A dry replay: a template run against a recording, each step's recorded output preset, nothing called.

It resolves every step's input exactly as a run does (`bind_inputs`, the run's `RunScope`,
`core.refs.resolve`) and compares it with the input the step received while recording, so a
template that passes would send the recorded arguments if the servers answered as they did.
A `code` step (the templatizer's inferred transforms) has no recording: it is pure, so it is run
in its sandbox on the resolved input, and its output feeds the steps after it. A `script` step the
templatizer wrote for calls that took turns runs too, its calls answered from the recorded ones.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from toolreel.core.errors import CodeError, ExecutionError, RefError
from toolreel.core.model import JSON, StepRecord, StepStatus
from toolreel.core.refs import resolve
from toolreel.core.sandbox import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT, CodeLimits, run_code
from toolreel.core.template import StepSpec, Template
from toolreel.core.template_io import topo_order
from toolreel.replayer._differences import Difference, diff, shown
from toolreel.replayer._dry_script import check_script
from toolreel.replayer._inputs import bind_inputs
from toolreel.replayer._state import RunScope, StepState, build_states

__all__ = ["Difference", "dry_replay"]


def dry_replay(
    template: Template,
    inputs: Mapping[str, JSON],
    recording: Sequence[StepRecord],
    items: Mapping[str, Sequence[str]] | None = None,
) -> list[Difference]:
    """The steps and fields whose resolved input differs from the recording's; [] when every one matches.

    A `for_each` tool step is compared item by item with the recorded calls `items[step]` names (a loop
    the templatizer folded from repeated calls), else with the rows a replay stores, `step[i]`."""
    try:
        bound = bind_inputs(template, inputs)
    except ExecutionError as exc:
        return [Difference("(inputs)", "$", "the recorded input values", str(exc))]
    recorded = _latest(recording)
    states = build_states(template)
    scope = RunScope(states, bound)
    differences: list[Difference] = []
    for name in topo_order(template):
        state = states[name]
        if state.spec.kind == "code":
            differences += _run_code(state, scope)
            continue
        if state.spec.kind == "tool" and state.spec.for_each is not None:
            differences += _check_loop(state, scope, recorded, (items or {}).get(name))
            continue
        if state.spec.kind == "script" and name in (items or {}):
            differences += check_script(state, scope, recorded, (items or {})[name])
            continue
        differences += _check(state.spec, scope, recorded.get(name))
        _preset(state, recorded.get(name))
    return differences


def _check_loop(
    state: StepState, scope: RunScope, recorded: Mapping[str, StepRecord], members: Sequence[str] | None
) -> list[Difference]:
    """Each element's resolved input against its recorded call; the loop's output is their recorded outputs."""
    spec = state.spec
    assert spec.for_each is not None
    try:
        elements = resolve(spec.for_each, scope)
    except RefError as exc:
        state.status, state.error = StepStatus.FAILED, str(exc)
        return [Difference(spec.name, "for_each", spec.for_each, f"does not resolve: {exc}")]
    if not isinstance(elements, list):
        state.status, state.error = StepStatus.FAILED, "for_each is not a list"
        return [Difference(spec.name, "for_each", "a list", shown(elements))]
    names = list(members) if members is not None else [f"{spec.name}[{i}]" for i in range(len(elements))]
    if len(names) != len(elements):
        state.status, state.error = StepStatus.FAILED, "another number of elements"
        return [Difference(spec.name, "for_each", f"{len(names)} recorded calls", f"{len(elements)} elements")]
    differences: list[Difference] = []
    outputs: list[JSON] = []
    for index, (element, member) in enumerate(zip(elements, names, strict=True)):
        item = dataclasses.replace(spec, name=f"{spec.name}[{index}]", for_each=None)
        differences += _check(item, scope.for_item(element, index), recorded.get(member))
        record = recorded.get(member)
        outputs.append(record.output if record is not None else None)
    state.status, state.output = StepStatus.SUCCEEDED, outputs
    return differences


def _run_code(state: StepState, scope: RunScope) -> list[Difference]:
    """A code step's output, as a replay computes it (for each element, under `for_each`: the list of outputs)."""
    spec = state.spec
    assert spec.code is not None
    limits = CodeLimits(timeout=spec.timeout or DEFAULT_TIMEOUT, memory_mb=spec.memory_mb or DEFAULT_MEMORY_MB)
    try:
        if spec.for_each is not None:
            elements = resolve(spec.for_each, scope)
            if not isinstance(elements, list):
                raise RefError(f"for_each gives no list: {shown(elements)}")
            each = [resolve(spec.input, scope.for_item(e, i)) for i, e in enumerate(elements)]
            state.status, state.output = StepStatus.SUCCEEDED, [run_code(spec.code, v, limits) for v in each]
            return []
        value = resolve(spec.input, scope) if spec.input is not None else None
        state.status, state.output = StepStatus.SUCCEEDED, run_code(spec.code, value, limits)
    except (RefError, CodeError) as exc:
        state.status, state.error = StepStatus.FAILED, str(exc)
        return [Difference(spec.name, "$", "(a computed value)", f"the code step failed: {exc}")]
    return []


def _check(spec: StepSpec, scope: RunScope, record: StepRecord | None) -> list[Difference]:
    if spec.kind != "tool" or spec.for_each is not None:
        return []  # only tool calls are recorded with their arguments
    if record is None:
        return [Difference(spec.name, "$", "(no such step in this recording)", "(a call)")]
    try:
        got = resolve(spec.input, scope) if spec.input is not None else {}
    except RefError as exc:
        return [Difference(spec.name, "$", shown(record.resolved_input), f"does not resolve: {exc}")]
    want = record.resolved_input if record.resolved_input is not None else {}
    return [Difference(spec.name, path, shown(a), shown(b)) for path, a, b in diff(want, got, "$")]


def _preset(state: StepState, record: StepRecord | None) -> None:
    if record is None:
        state.status, state.error = StepStatus.FAILED, "not in this recording"
    elif record.status == StepStatus.SUCCEEDED and not record.is_error:
        state.status, state.output = StepStatus.SUCCEEDED, record.output
    else:
        state.status, state.error = StepStatus.FAILED, record.error or "failed while recording"


def _latest(recording: Sequence[StepRecord]) -> dict[str, StepRecord]:
    latest: dict[str, StepRecord] = {}
    for record in recording:
        current = latest.get(record.name)
        if current is None or record.attempt > current.attempt:
            latest[record.name] = record
    return latest
