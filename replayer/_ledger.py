"""The store side of driving executions: claims, status transitions, checks, fenced step writes.

Synchronous (the engine calls it through worker threads). Every write that could race a newer
driver carries the claim's fence; a cancellation written by another process always stands.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from toolreel.core.errors import ExecutionError, NotFoundError, StaleClaimError
from toolreel.core.form import parse_answer_text
from toolreel.core.model import (
    JSON,
    Execution,
    ExecutionMode,
    ExecutionQuery,
    ExecutionStatus,
    StepKind,
    StepRecord,
    StepStatus,
)
from toolreel.core.store import Store
from toolreel.core.template import Template
from toolreel.core.template_io import stored_template, template_hash, template_to_dict
from toolreel.replayer._owners import gone_here
from toolreel.replayer._policy import parse_answer
from toolreel.replayer._state import DUE, Outcome, StopReason, awaiting_of, child_key, signs_in

__all__ = [
    "MAX_DEPTH",
    "ClaimedElsewhere",
    "Ledger",
    "check_cancellable",
    "child_execution_id",
    "definition_hash",
    "load_template",
]

MAX_DEPTH = 8


class ClaimedElsewhere(ExecutionError):
    """Another live process holds the execution's claim (until `lease_until`, if it stops renewing it)."""

    code: ClassVar[str] = "claimed_elsewhere"

    def __init__(self, message: str, *, execution_id: str | None = None, lease_until: float | None = None) -> None:
        super().__init__(message, execution_id=execution_id)
        self.lease_until = lease_until


class Ledger:
    def __init__(self, store: Store, owner: str, lease_seconds: float) -> None:
        self.store = store
        self.owner = owner
        self.lease_seconds = lease_seconds

    def claim(self, execution_id: str) -> Execution:
        execution = self.claim_or_none(execution_id)
        if execution is None:
            current = self.store.get_execution(execution_id)
            raise ClaimedElsewhere(
                f"execution {execution_id} is being driven by {current.claimed_by} (lease until "
                f"{time.strftime('%H:%M:%S', time.localtime(current.lease_until or 0))}); cancel it there, or wait "
                "for that lease to expire if the process died",
                execution_id=execution_id,
                lease_until=current.lease_until,
            )
        return execution

    def claim_or_none(self, execution_id: str) -> Execution | None:
        """The claim, if free, expired, ours, or held by a process of this host that is gone (taken over
        at once: a dead process renews nothing); None while another live process may hold it."""
        lease = self.lease_seconds
        claimed = self.store.claim_execution(execution_id, self.owner, lease_seconds=lease, now=time.time())
        if claimed is not None:
            return claimed
        holder = self.store.get_execution(execution_id).claimed_by
        if not gone_here(holder):
            return None
        assert holder is not None
        return self.store.claim_execution(
            execution_id, self.owner, lease_seconds=self.lease_seconds, now=time.time(), take_over=[holder]
        )

    def dead_owners(self) -> list[str]:
        """Owners of running executions' claims that ran on this host and are gone."""
        running, _ = self.store.list_executions(ExecutionQuery(ExecutionStatus.RUNNING, limit=500))
        return sorted({e.claimed_by for e in running if e.claimed_by and gone_here(e.claimed_by)})

    def release(self, execution: Execution) -> Execution:
        """Let go of a claim without driving; a paused execution keeps its wake time (its lease, unclaimed)."""
        wake = self._wake_of(execution.id) if execution.status == ExecutionStatus.PAUSED else None
        try:
            return self.store.update_execution(execution.id, fence=execution.fence, claimed_by=None, lease_until=wake)
        except StaleClaimError:
            return self.store.get_execution(execution.id)

    def _wake_of(self, execution_id: str) -> float | None:
        """When a paused execution's earliest waiting step stops waiting on its own (replayer._wait)."""
        dues = []
        for row in self.store.get_steps(execution_id):
            marker = awaiting_of(row) or {}
            if isinstance(due := marker.get(DUE), int | float):
                dues.append(float(due))
        return min(dues, default=None)

    def mark_running(self, execution: Execution) -> Execution:
        current = self.store.get_execution(execution.id)
        if current.status == ExecutionStatus.CANCELLED:
            return current
        return self.store.update_execution(
            execution.id, fence=execution.fence, status=ExecutionStatus.RUNNING, prompt=None
        )

    def ancestry(self, execution: Execution) -> tuple[str, ...]:
        names = [execution.template or ""]
        current = execution
        while current.parent_id is not None and len(names) <= MAX_DEPTH + 1:
            current = self.store.get_execution(current.parent_id)
            names.append(current.template or "")
        return tuple(reversed(names))

    def conclude(self, execution: Execution, outcome: Outcome, redact: Callable[[Any], Any] | None = None) -> Execution:
        """Record how the drive ended (secrets redacted) and release the claim; a cancellation recorded
        meanwhile stands."""
        if outcome.kind == "stale":
            return self.store.get_execution(execution.id)
        fields: dict[str, Any] = {"claimed_by": None, "lease_until": None}
        current = self.store.get_execution(execution.id)
        if current.status != ExecutionStatus.CANCELLED and outcome.kind != "interrupted":
            fields.update(_outcome_fields(outcome))
            for name in ("output", "error", "prompt"):
                if redact is not None and name in fields:
                    fields[name] = redact(fields[name])
        try:
            return self.store.update_execution(execution.id, fence=execution.fence, **fields)
        except StaleClaimError:
            return self.store.get_execution(execution.id)

    def settle_orphan(self, execution: Execution) -> None:
        """A child claimed by `recover`: its parent drives it, unless the parent is over (then it is cancelled)."""
        assert execution.parent_id is not None
        parent = self.store.get_execution(execution.parent_id)
        if parent.status.finished:
            self.cancel_undriven(execution)
        else:
            self.release(execution)

    # ------------------------------------------------------------------ cancel / resume helpers

    def cancel_undriven(self, execution: Execution) -> Execution:
        """Cancel an execution nobody drives (paused, pending, or orphaned), and its unfinished children."""
        now = time.time()
        stored = self.store.get_steps(execution.id)
        rows = [
            row.replace(status=StepStatus.CANCELLED, ended_at=now, error="cancelled by request")
            for row in stored
            if row.status == StepStatus.RUNNING
        ]
        if rows:
            self.write_rows(rows, execution.fence)
        failures = Counter(row.name for row in stored if row.status == StepStatus.FAILED)
        for row in rows:
            if row.kind == StepKind.TEMPLATE:
                self.cancel_child(_child_of(execution.id, row, failures[row.name] + 1))
        return self.store.update_execution(
            execution.id,
            fence=execution.fence,
            status=ExecutionStatus.CANCELLED,
            error="cancelled by request",
            prompt=None,
            claimed_by=None,
            lease_until=None,
        )

    def cancel_child(self, child_id: str) -> None:
        try:
            child = self.store.claim_execution(child_id, self.owner, lease_seconds=self.lease_seconds, now=time.time())
        except NotFoundError:
            return
        if child is not None and not child.status.finished:
            self.cancel_undriven(child)

    @staticmethod
    def check_resumable(execution: Execution, response: str | None, *, can_ask: bool) -> None:
        status = execution.status
        if execution.mode != ExecutionMode.AUTO:
            raise ExecutionError(f"execution {execution.id} is a recording, not an auto-mode run: nothing to resume")
        if status.finished:
            raise ExecutionError(
                f"execution {execution.id} already {status} at {_clock(execution.updated_at)}"
                f"{f' ({execution.error})' if execution.error else ''}: there is nothing to resume",
                execution_id=execution.id,
            )
        if status == ExecutionStatus.PAUSED and signs_in(execution.prompt):
            if response is not None:
                raise ExecutionError(
                    f"execution {execution.id} waits for a sign-in, not an answer: run `{_command(execution.prompt)}`,"
                    " then resume it without a response",
                    execution_id=execution.id,
                )
        elif status == ExecutionStatus.PAUSED:
            _check_waits(execution, response)
            if response is None and not can_ask and _waits_for(execution.prompt) != "time":
                raise ExecutionError(
                    f"execution {execution.id} is paused asking {execution.prompt!r}: "
                    f"resume it with a response ({_expected(execution.prompt)})",
                    execution_id=execution.id,
                )
            if response is not None:
                try:
                    _check_response(execution.prompt, response)
                except ValueError as exc:
                    raise ExecutionError(
                        f"execution {execution.id}: {exc}; it stays paused", execution_id=execution.id
                    ) from exc
        elif response is not None:
            raise ExecutionError(
                f"execution {execution.id} is {status}, not paused: there is no question to answer",
                execution_id=execution.id,
            )

    def stops_among(self, fences: Mapping[str, int]) -> dict[str, StopReason]:
        """Executions driven here (id -> the fence of our claim) that must stop: `cancel` when another
        process cancelled them, `stale` when another process claimed them (our lease lapsed)."""
        stops = {}
        for execution_id, fence in fences.items():
            try:
                current = self.store.get_execution(execution_id)
            except NotFoundError:
                continue
            if current.status == ExecutionStatus.CANCELLED:
                stops[execution_id] = StopReason.CANCEL
            elif current.fence != fence:
                stops[execution_id] = StopReason.STALE
        return stops

    def write_rows(self, rows: Sequence[StepRecord], fence: int) -> None:
        self.store.put_steps(rows, fence=fence)

    def write_rows_now(self, rows: Sequence[StepRecord], fence: int) -> bool:
        """write_rows on the event loop, if the store can without waiting; False (nothing written) if not."""
        return self.store.try_put_steps(rows, fence=fence)


def _waits_for(prompt: JSON) -> str | None:
    """`signal` or `time` when a paused execution's prompt is a `wait` step's, else None (a question)."""
    if not isinstance(prompt, dict):
        return None
    if isinstance(prompt.get("signal"), str):
        return "signal"
    # A model wanted (`llm`) is driven again like a time: it asks the model there is now, or pauses again.
    return "time" if prompt.get("wait") == "time" or "llm" in prompt else None


def _check_waits(execution: Execution, response: str | None) -> None:
    """A paused execution waiting for a signal takes the signal, not an answer; one waiting for a time
    takes nothing (driven before then, it pauses again)."""
    prompt = execution.prompt
    waits = _waits_for(prompt)
    if waits == "signal":
        name = prompt["signal"]
        raise ExecutionError(
            f"execution {execution.id} waits for signal {name!r}, not for an answer: send it with "
            f"`toolreel executions signal {execution.id} {name} --data JSON` (or toolreel__signal_execution)",
            execution_id=execution.id,
        )
    if waits == "time" and response is not None:
        awaited = f"for a model ({prompt['llm']})" if "llm" in prompt else f"until {prompt.get('until')}"
        raise ExecutionError(
            f"execution {execution.id} waits {awaited}, not for an answer: resume it without a response "
            "(a worker or gateway sharing the store drives a time wait on by itself)",
            execution_id=execution.id,
        )


def _check_response(prompt: JSON, response: str) -> None:
    """A response fits the question: a JSON object of the asked fields, or yes/no."""
    form = prompt.get("schema") if isinstance(prompt, dict) else None
    if isinstance(form, dict):
        parse_answer_text(form, response)
    else:
        parse_answer(response)


def _command(prompt: JSON) -> str:
    return str(prompt.get("command") if isinstance(prompt, dict) else "") or "toolreel auth login SERVER"


def _expected(prompt: JSON) -> str:
    form = prompt.get("schema") if isinstance(prompt, dict) else None
    if not isinstance(form, dict):
        return "yes or no"
    fields = ", ".join(f"{name}: {spec.get('type')}" for name, spec in (form.get("properties") or {}).items())
    return f"a JSON object with {fields}"


def load_template(store: Store, name: str, version: int | None = None) -> Template:
    """A saved template (the latest version unless `version`), with its version and hash set."""
    return stored_template(store.get_template(name, version))


def definition_hash(template: Template) -> str:
    """The hash stored with an execution and checked on resume: of the canonical definition."""
    return template_hash(template_to_dict(template))


def child_execution_id(parent_id: str, store_name: str) -> str:
    """Deterministic, so a resumed parent finds the child its crashed predecessor started."""
    return hashlib.sha256(f"{parent_id}/{store_name}".encode()).hexdigest()[:32]


def _child_of(parent_id: str, row: StepRecord, number: int) -> str:
    """The child a template step's row started: the row names it once it waits on it; before, the
    child's id follows from how many attempts of the row failed (a retry's child is its own)."""
    recorded = row.result.get("execution_id") if isinstance(row.result, dict) else None
    return recorded if isinstance(recorded, str) else child_execution_id(parent_id, child_key(row.name, number))


def _outcome_fields(outcome: Outcome) -> dict[str, Any]:
    if outcome.kind == "succeeded":
        return {"status": ExecutionStatus.SUCCEEDED, "output": outcome.output, "error": None, "prompt": None}
    if outcome.kind == "paused":
        # Unclaimed, a paused execution's lease_until is when it wakes: any process sharing the store claims
        # it then (a root; a child is woken by its parent, whose waiting row carries the same time).
        return {"status": ExecutionStatus.PAUSED, "prompt": outcome.prompt, "lease_until": outcome.wake}
    if outcome.kind == "cancelled":
        return {"status": ExecutionStatus.CANCELLED, "error": outcome.error, "prompt": None}
    return {"status": ExecutionStatus.FAILED, "error": outcome.error, "prompt": None}


def _clock(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))


def check_cancellable(execution: Execution) -> None:
    if execution.mode != ExecutionMode.AUTO:
        raise ExecutionError(f"execution {execution.id} is a recording, not an auto-mode run: it cannot be cancelled")
    if execution.status.finished:
        raise ExecutionError(
            f"execution {execution.id} already {execution.status}: there is nothing to cancel",
            execution_id=execution.id,
        )
