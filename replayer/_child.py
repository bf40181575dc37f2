"""`template` steps: each attempt runs a child execution under the step's `timeout` and `retry` (SPEC §8).

An attempt's child is keyed by the step row's name and its child number (1 + the row's failed attempts
before it): a resumed parent adopts the child its crashed predecessor started, and a retry always runs a
new child (the failed one stays as it is). `timeout` bounds the time the parent drives the child in one
attempt; past it the child is cancelled (its upstream calls with it) and the attempt fails as `timeout`.
A paused child ends the parent's drive, so paused time does not count: the resumed attempt gets the rest.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import anyio
import anyio.to_thread

from toolreel.core.errors import NotFoundError, ToolreelError
from toolreel.core.model import JSON, Execution, ExecutionStatus, StepRecord, StepStatus
from toolreel.core.store import Store
from toolreel.replayer._host import StepHost
from toolreel.replayer._ledger import child_execution_id
from toolreel.replayer._policy import (
    CHILD_TIMEOUT,
    NO_RETRY,
    child_failure_kind,
    child_start_failure_kind,
    retry_delay,
    should_retry,
)
from toolreel.replayer._state import (
    AWAITING,
    DUE,
    ELAPSED,
    ChildRequest,
    StepState,
    StopCause,
    StopReason,
    failed,
    succeeded,
)

__all__ = ["template_step"]

Attempt = tuple[StepRecord, str | None]  # the attempt's row, and its failure's `retry_on` kind


def _no_cause() -> StopCause | None:
    return None


async def template_step(
    host: StepHost,
    state: StepState,
    record: StepRecord,
    args: JSON,
    stopping: Callable[[], StopCause | None] = _no_cause,
) -> StepRecord:
    """Run a template step (or one for_each item of it) to its final row, retrying per its policy.
    `stopping` says why the step itself is being stopped, if it is (a for_each sibling failed)."""
    policy = state.spec.retry or NO_RETRY
    attempt = 1  # attempts in this drive, as for tool steps: a re-run after a crash spends no retry
    while True:
        ended, kind = await _attempt(host, state, record, args, stopping)
        if ended.status != StepStatus.FAILED or not should_retry(policy, attempt, kind):
            return ended
        host.end_attempt(ended)  # ended: its start row must not be announced after this
        host.count_failure(record.name)
        # Durable before the retry's child exists: a resumed parent counts failed rows to find its child.
        await host.commit(())
        attempt += 1
        await anyio.sleep(retry_delay(policy, attempt))
        record = host.next_attempt(record)


async def _attempt(
    host: StepHost, state: StepState, record: StepRecord, args: JSON, stopping: Callable[[], StopCause | None]
) -> Attempt:
    spec = state.spec
    response = host.take_response(record.name)
    number = host.failed_attempts(record.name) + 1
    spent = host.take_elapsed(record.name)  # a resumed attempt keeps what it used before its pause
    budget = max(spec.timeout - spent, 0.0) if spec.timeout else math.inf
    begun = anyio.current_time()
    with anyio.CancelScope(deadline=begun + budget) as timer:
        request = ChildRequest(
            parent=host.execution,
            ancestry=host.ancestry,
            step=spec,
            store_name=record.name,
            inputs=args,
            response=response,
            parent_reason=partial(_cause, host, timer, _timeout_note(host, record.name, spec.timeout or 0.0), stopping),
            number=number,
        )
        try:
            child = await host.ctx.run_child(request)
        except ToolreelError as exc:
            return failed(record, f"template {spec.template!r}: {exc}"), child_start_failure_kind(exc)
    if timer.cancelled_caught:
        return await _timed_out(host, record, request, spec.timeout or 0.0)
    return _ended(record, child, spent + anyio.current_time() - begun)


def _cause(
    host: StepHost, timer: anyio.CancelScope, note: str, stopping: Callable[[], StopCause | None]
) -> StopCause | None:
    """What a child cancelled from outside records: this step's timeout, why the step is stopped, else
    why the parent stops (None: the process is shutting down, and the child is resumed later)."""
    if timer.cancel_called:
        return (StopReason.TIMEOUT, note)
    return stopping() or host.stop_cause()


def _timeout_note(host: StepHost, name: str, seconds: float) -> str:
    return f"{CHILD_TIMEOUT} {seconds:g} s passed (step {name} of execution {host.execution_id})"


async def _timed_out(host: StepHost, record: StepRecord, request: ChildRequest, seconds: float) -> Attempt:
    child_id = child_execution_id(host.execution_id, request.key)
    note = f"cancelled: {_timeout_note(host, record.name, seconds)}"
    # Driven here, the child recorded its cancellation as it unwound; one driven by another process (or
    # cut off before its drive began) is cancelled in the store, where its driver sees it.
    await anyio.to_thread.run_sync(partial(_cancel_unfinished, host.ctx.store, child_id, note))
    error = (
        f"template {request.step.template!r} of step {record.name} ran past the step's timeout of {seconds:g} s; "
        f"its child execution {child_id} was cancelled"
    )
    return failed(record, error, {"execution_id": child_id}), "timeout"


def _cancel_unfinished(store: Store, child_id: str, error: str) -> None:
    try:
        child = store.get_execution(child_id)
    except NotFoundError:
        return  # it was never created
    if not child.status.finished:
        store.update_execution(child_id, status=ExecutionStatus.CANCELLED, error=error, prompt=None)


def _ended(record: StepRecord, child: Execution, elapsed: float) -> Attempt:
    result = {"execution_id": child.id}
    if child.status == ExecutionStatus.SUCCEEDED:
        return succeeded(record, child.output, result), None
    if child.status == ExecutionStatus.PAUSED:
        waiting = {AWAITING: "child", "execution_id": child.id, "prompt": child.prompt, ELAPSED: elapsed}
        if child.lease_until is not None and child.claimed_by is None:  # a paused child's lease: when it wakes
            waiting[DUE] = child.lease_until
        return record.replace(result=waiting), None
    error = f"child execution {child.id} of template {child.template!r} {child.status}: {child.error}"
    return failed(record, error, result), child_failure_kind(child.status, child.error)
