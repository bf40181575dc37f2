"""Retrying a failed or cancelled execution under its own id: which steps run again, and the rows
that say so (docs/decisions/retry.md).

A retry writes, for every step to run again, a `pending` row one attempt above its latest one,
marked `{"retry": N}` in its result. A run rebuilding its state from rows takes a step whose latest
row is `pending` as not finished, so the retry is durable by the same rule as crash recovery: the
marker rows are written before the execution leaves `failed`, and a crash after them is resumed
(or retried again) with no other record to keep in step.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolreel.core.errors import ExecutionError, NotFoundError
from toolreel.core.model import Execution, ExecutionMode, ExecutionStatus, StepRecord, StepStatus
from toolreel.core.store import Store
from toolreel.core.template import Template
from toolreel.core.view import split_item_name
from toolreel.replayer._inputs import bind_inputs, redact_inputs
from toolreel.replayer._ledger import Ledger
from toolreel.replayer._state import RETRY, build_states, retry_of

__all__ = [
    "RETRY",
    "RetryPlan",
    "RetryRequest",
    "check_execution_id",
    "check_retryable",
    "existing_run",
    "plan_retry",
    "reset_for_retry",
    "retry_of",
]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
_KEPT = (StepStatus.SUCCEEDED, StepStatus.SKIPPED)


@dataclass(frozen=True, slots=True)
class RetryPlan:
    """What a retry does: the execution's next attempt, the steps it runs again, their marker rows."""

    attempt: int
    rerun: tuple[str, ...]  # template order
    rows: tuple[StepRecord, ...]


def check_retryable(execution: Execution) -> None:
    """Only a finished root auto-mode run that did not succeed can be retried."""
    where = f"execution {execution.id}"
    if execution.mode != ExecutionMode.AUTO:
        raise ExecutionError(f"{where} is a recording, not an auto-mode run: there is nothing to retry")
    if execution.parent_id is not None:
        raise ExecutionError(
            f"{where} is the child of step {execution.parent_step!r} of execution {execution.parent_id}: "
            f"retry the parent (toolreel executions retry {execution.parent_id})",
            execution_id=execution.id,
        )
    if execution.status not in (ExecutionStatus.FAILED, ExecutionStatus.CANCELLED):
        hint = {
            ExecutionStatus.SUCCEEDED: "it succeeded; run the template again for a new run",
            ExecutionStatus.PAUSED: "it is paused; answer it with toolreel executions resume",
        }.get(execution.status, "it has not ended; wait for it, or cancel it first")
        raise ExecutionError(
            f"{where} is {execution.status}, and only a failed or cancelled execution is retried: {hint}",
            execution_id=execution.id,
        )


def check_execution_id(execution_id: str) -> str:
    """A caller-chosen execution id: printable, short, and safe in a URL path (the web view's pages)."""
    if not _ID.fullmatch(execution_id):
        raise ExecutionError(
            f"execution id {execution_id!r} is not usable: write 1 to 128 characters of letters, digits and "
            "_ . : -, starting with a letter or a digit"
        )
    return execution_id


def existing_run(store: Store, template: str, execution_id: str) -> bool:
    """Whether a caller-chosen id names a run of `template` already (a start sent again); an id taken
    by anything else is refused."""
    try:
        found = store.get_execution(execution_id)
    except NotFoundError:
        return False
    if found.template != template or found.parent_id is not None or found.mode != ExecutionMode.AUTO:
        taken = "a recording" if found.mode != ExecutionMode.AUTO else f"a run of template {found.template!r}"
        raise ExecutionError(
            f"execution id {execution_id!r} is taken by {taken}: choose another id for a run of {template!r}",
            execution_id=execution_id,
        )
    return True


def plan_retry(
    execution: Execution, template: Template, records: Sequence[StepRecord], *, from_step: str | None = None
) -> RetryPlan:
    """The steps to run again: those that did not succeed (or `from_step`) and every step downstream of
    them. Succeeded steps elsewhere keep their outputs. A for_each step that failed keeps its succeeded
    items; one run again because of `from_step` or an upstream step runs every item again."""
    latest = _latest(records)
    states = build_states(template)
    if from_step is not None:
        if from_step not in states:
            raise ExecutionError(
                f"execution {execution.id}: template {template.name!r} has no step {from_step!r} to retry from "
                f"(its steps: {', '.join(states)})",
                execution_id=execution.id,
            )
        roots = {from_step}
    else:
        roots = {name for name in states if name in latest and latest[name].status not in _KEPT}
    rerun = _downstream(roots, {name: state.dependents for name, state in states.items()})
    attempt = execution.attempt + 1
    forced = rerun if from_step is not None else rerun - roots
    seq = max((record.seq for record in records), default=0)
    rows = []
    for record in sorted(latest.values(), key=lambda r: r.seq):
        step = split_item_name(record.name)
        if _marked(record, step[0] if step else None, rerun, forced):
            seq += 1
            rows.append(_marker(record, seq, attempt))
    return RetryPlan(attempt, tuple(name for name in states if name in rerun), tuple(rows))


def _marked(record: StepRecord, item_of: str | None, rerun: set[str], forced: set[str]) -> bool:
    if item_of is None:
        return record.name in rerun and record.status != StepStatus.PENDING
    # An item row of a step run again: a failed item runs again by itself, a succeeded one only when forced.
    return item_of in forced and record.status == StepStatus.SUCCEEDED


def _marker(record: StepRecord, seq: int, attempt: int) -> StepRecord:
    return StepRecord(
        execution_id=record.execution_id,
        name=record.name,
        seq=seq,
        kind=record.kind,
        status=StepStatus.PENDING,
        attempt=record.attempt + 1,
        server=record.server,
        tool=record.tool,
        input=record.input,
        result={RETRY: attempt},
        started_at=time.time(),
    )


def _latest(records: Iterable[StepRecord]) -> dict[str, StepRecord]:
    latest: dict[str, StepRecord] = {}
    for record in sorted(records, key=lambda r: (r.attempt, r.seq)):
        latest[record.name] = record
    return latest


def _downstream(roots: set[str], dependents: Mapping[str, list[str]]) -> set[str]:
    found = set(roots)
    todo = list(roots)
    while todo:
        for name in dependents.get(todo.pop(), ()):
            if name not in found:
                found.add(name)
                todo.append(name)
    return found


@dataclass(frozen=True, slots=True)
class RetryRequest:
    """One `retry`: the execution, what to change, and the inputs this process holds in clear (if any)."""

    execution_id: str
    template: Template
    from_step: str | None = None
    inputs: Mapping[str, Any] = field(default_factory=dict)
    held: Mapping[str, Any] | None = None


def reset_for_retry(ledger: Ledger, request: RetryRequest) -> tuple[Execution, dict[str, Any] | None]:
    """Under the execution's claim: write the marker rows, then make it `pending` at its next attempt
    (a new deadline is not inherited: the old one has passed). Returns it, still claimed by `ledger`'s
    owner, and the inputs bound anew when `request.inputs` changed some (None otherwise)."""
    execution = ledger.claim(request.execution_id)
    try:
        check_retryable(execution)
        template = request.template
        records = ledger.store.get_steps(execution.id, all_attempts=True)
        plan = plan_retry(execution, template, records, from_step=request.from_step)
        fields: dict[str, Any] = {}
        bound = None
        if request.inputs:
            bound = bind_inputs(template, {**(request.held or execution.inputs or {}), **request.inputs})
            fields["inputs"] = redact_inputs(template, bound)
        ledger.write_rows(plan.rows, execution.fence)
        execution = ledger.store.update_execution(
            execution.id,
            fence=execution.fence,
            status=ExecutionStatus.PENDING,
            attempt=plan.attempt,
            output=None,
            error=None,
            prompt=None,
            deadline=None,
            **fields,
        )
    except BaseException:
        ledger.release(execution)
        raise
    return execution, bound
