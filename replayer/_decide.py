"""Deciding a ready step before it is launched: `when`, `return`, and resolving what it will use.

A step whose `when` is false, a `return`, and a ref that cannot resolve decide here without calling
anything, so the run finishes them inline; any other step gets its resolved values and is launched.
Refs resolve within the ref budget (`core.bounded_refs`): a JSONPath filter over a large output runs in
a worker process, so a hostile filter fails its step with `ref_budget_exceeded` while the event loop
(the run's other steps, the gateway's other clients) goes on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial

from toolreel.core.bounded_refs import Source, costly, resolve_bounded
from toolreel.core.errors import RefBudgetError, RefError
from toolreel.core.model import JSON, StepStatus
from toolreel.core.refs import refs_in
from toolreel.core.template import StepSpec, When
from toolreel.replayer import _switch, _wait
from toolreel.replayer._policy import compare
from toolreel.replayer._state import RunScope, StepState

__all__ = ["Decided", "as_text", "bounded", "needs_worker", "prepare", "ref_failure", "resolve_key"]


@dataclass(frozen=True, slots=True)
class Decided:
    """How a step finished without being launched: its status, its output (= its resolved value), why."""

    status: StepStatus
    output: JSON = None
    error: str | None = None


async def prepare(state: StepState, scope: RunScope, steps: Mapping[str, StepState]) -> Decided | None:
    """The step's end when it decides without calling anything, else None: launch it, with
    `state.args`, `state.items` and `state.key` resolved. `steps`: the run's, for the switch a branch's step
    is under."""
    spec = state.spec
    field = "when"
    resolve = partial(bounded, scope=scope)
    try:
        if not _in_chosen_branch(spec, steps) or not _quorum(state):
            return Decided(StepStatus.SKIPPED)
        if spec.when is not None and not await holds(spec.when, scope):
            return Decided(StepStatus.SKIPPED)
        if spec.switch is not None:
            field = "switch"
            return Decided(StepStatus.SUCCEEDED, output=await _switch.pick(spec.switch, resolve))
        if spec.has_return:
            field = "return"
            return Decided(StepStatus.SUCCEEDED, output=await bounded(spec.return_, scope))
        if spec.approve is not None:
            field = "approve"
            state.args = as_text(await bounded(spec.approve, scope))
        elif spec.llm is not None:
            field = "llm.prompt"
            state.args = as_text(await bounded(spec.llm.prompt, scope))
        elif spec.wait is not None:
            field = "wait.until"
            state.args = await _wait.wait_args(spec.wait, resolve)
        elif spec.for_each is not None:
            field = "for_each"
            state.items = _as_list(await bounded(spec.for_each, scope), spec.for_each)
        else:
            field = "input"
            state.args = await bounded(spec.input, scope) if spec.input is not None else {}
            field = "idempotency_key"
            state.key = await resolve_key(spec, scope)
    except RefError as exc:
        return Decided(StepStatus.FAILED, error=ref_failure(field, exc))
    return None


def _in_chosen_branch(spec: StepSpec, steps: Mapping[str, StepState]) -> bool:
    if spec.branch is None:
        return True
    switch, index = spec.branch
    return _switch.chose(steps[switch].output, index)


def _quorum(state: StepState) -> bool:
    """A join whose dependencies all finished without enough of them succeeding is skipped."""
    need = state.spec.wait_for
    return need is None or state.arrived >= need


def needs_worker(spec: StepSpec) -> bool:
    """Whether deciding the step may run a costly ref (a JSONPath filter or descendant search): it is then
    decided in a task of its own, so the steps ready beside it do not wait for its budget."""
    values: list[JSON] = [spec.return_ if spec.has_return else None, spec.approve, spec.for_each, spec.input]
    values.append(spec.idempotency_key)
    values += [spec.llm.prompt if spec.llm else None, spec.wait.until if spec.wait else None]
    pending = [spec.when] if spec.when is not None else []
    if spec.switch is not None:
        values.append(spec.switch.ref)
        pending += [case.when for case in spec.switch.cases]
    while pending:
        when = pending.pop()
        values += [when.ref, when.value]
        pending += [*when.all, *when.any, *([when.not_] if when.not_ is not None else [])]
    return any(costly(ref) for ref in refs_in(values))


def ref_failure(field: str, exc: RefError) -> str:
    """A step's error for a ref of `field` that did not resolve; a spent budget leads with its code."""
    if isinstance(exc, RefBudgetError):
        return f"{exc.code}: {field}: {exc}"
    return f"{field}: {exc}"


async def holds(when: When, scope: RunScope) -> bool:
    if when.all:  # short-circuits as `all` does: a part after a false one is not resolved
        for part in when.all:
            if not await holds(part, scope):
                return False
        return True
    if when.any:
        for part in when.any:
            if await holds(part, scope):
                return True
        return False
    if when.not_ is not None:
        return not await holds(when.not_, scope)
    try:
        subject = await bounded(when.ref, scope)
    except RefError:
        if when.op != "exists":
            raise
        subject = None
    return compare(when, subject, await bounded(when.value, scope), exists=subject is not None)


async def resolve_key(spec: StepSpec, scope: RunScope) -> str | None:
    if spec.idempotency_key is None:
        return None
    return as_text(await bounded(spec.idempotency_key, scope))


async def bounded(value: JSON, scope: RunScope) -> JSON:
    """`core.refs.resolve(value, scope)` within the ref budget: on the loop when it is cheap (no filter, or
    one over a small output), else in a worker process (RefBudgetError past the budget)."""
    return await resolve_bounded(value, scope, partial(_source, scope))


def _source(scope: RunScope, name: str) -> Source | None:
    """A finished step's output as JSON bytes, for the worker to parse (and the budget to size); None for
    one that cannot be read (the caller's `resolve` then says why)."""
    if not scope.has_step(name):
        return None
    try:
        value = scope.step_output(name)
    except RefError:
        return None
    return json.loads, json.dumps(value, ensure_ascii=False).encode()


def as_text(value: JSON) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _as_list(value: JSON, ref: str) -> list[JSON]:
    if value is None:  # a skipped step gives null: nothing to iterate
        return []
    if not isinstance(value, list):
        raise RefError(f"`{ref}` gave {type(value).__name__}, not a list to iterate", ref=ref)
    return value
