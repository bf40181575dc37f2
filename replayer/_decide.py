"""Deciding a ready step before it is launched: `when`, `return`, and resolving what it will use.

A step whose `when` is false, a `return`, and a ref that cannot resolve decide here without calling
anything, so the run finishes them inline; any other step gets its resolved values and is launched.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from toolreel.core.errors import RefError
from toolreel.core.model import JSON, StepStatus
from toolreel.core.refs import resolve
from toolreel.core.template import StepSpec, When
from toolreel.replayer._policy import compare
from toolreel.replayer._state import RunScope, StepState

__all__ = ["Decided", "as_text", "prepare", "resolve_key"]


@dataclass(frozen=True, slots=True)
class Decided:
    """How a step finished without being launched: its status, its output (= its resolved value), why."""

    status: StepStatus
    output: JSON = None
    error: str | None = None


def prepare(state: StepState, scope: RunScope) -> Decided | None:
    """The step's end when it decides without calling anything, else None: launch it, with
    `state.args`, `state.items` and `state.key` resolved."""
    spec = state.spec
    field = "when"
    try:
        if spec.when is not None and not holds(spec.when, scope):
            return Decided(StepStatus.SKIPPED)
        if spec.has_return:
            field = "return"
            return Decided(StepStatus.SUCCEEDED, output=resolve(spec.return_, scope))
        if spec.approve is not None:
            field = "approve"
            state.args = as_text(resolve(spec.approve, scope))
        elif spec.for_each is not None:
            field = "for_each"
            state.items = _as_list(resolve(spec.for_each, scope), spec.for_each)
        else:
            field = "input"
            state.args = resolve(spec.input, scope) if spec.input is not None else {}
            field = "idempotency_key"
            state.key = resolve_key(spec, scope)
    except RefError as exc:
        return Decided(StepStatus.FAILED, error=f"{field}: {exc}")
    return None


def holds(when: When, scope: RunScope) -> bool:
    if when.all:
        return all(holds(part, scope) for part in when.all)
    if when.any:
        return any(holds(part, scope) for part in when.any)
    if when.not_ is not None:
        return not holds(when.not_, scope)
    try:
        subject = resolve(when.ref, scope)
    except RefError:
        if when.op != "exists":
            raise
        subject = None
    return compare(when, subject, resolve(when.value, scope), exists=subject is not None)


def resolve_key(spec: StepSpec, scope: RunScope) -> str | None:
    if spec.idempotency_key is None:
        return None
    return as_text(resolve(spec.idempotency_key, scope))


def as_text(value: JSON) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _as_list(value: JSON, ref: str) -> list[JSON]:
    if value is None:  # a skipped step gives null: nothing to iterate
        return []
    if not isinstance(value, list):
        raise RefError(f"`{ref}` gave {type(value).__name__}, not a list to iterate", ref=ref)
    return value
