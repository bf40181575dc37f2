"""`Engine`: starts, drives, cancels and resumes auto-mode executions in this process.

Every drive holds the execution's claim (lease renewed by one heartbeat for the whole process)
and writes with the claim's fence, so a process that lost its claim can never overwrite the
newer driver's rows. Cancellation from another process is seen by polling the status of the
executions driven here (every `poll_interval`, at most ~50 executions a tick).
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from types import TracebackType
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup

from toolreel.core import tracing
from toolreel.core.caller import Approver, ProgressFn, Sampler, ToolCaller
from toolreel.core.errors import ExecutionError, StoreError, ToolreelError
from toolreel.core.model import JSON, Execution, ExecutionStatus, StepRecord
from toolreel.core.store import Store
from toolreel.core.template import Template
from toolreel.core.view import execution_view
from toolreel.replayer._host import RunContext
from toolreel.replayer._ledger import (
    MAX_DEPTH,
    ClaimedElsewhere,
    Ledger,
    check_cancellable,
    child_execution_id,
    definition_hash,
    load_template,
)
from toolreel.replayer._llm_settings import LLMSettings
from toolreel.replayer._origins import Origins, TemplateLoader
from toolreel.replayer._retry import (
    RetryRequest,
    check_execution_id,
    check_retryable,
    existing_run,
    reset_for_retry,
)
from toolreel.replayer._run import Run
from toolreel.replayer._signals import signal_target
from toolreel.replayer._state import ChildRequest, Outcome, StopCause, StopReason, signs_in

__all__ = ["MAX_DEPTH", "Engine", "TemplateLoader", "child_execution_id", "definition_hash", "load_template"]

logger = logging.getLogger("toolreel.replayer")

_T = TypeVar("_T")
_CANCEL_WAIT = 1.0  # how long `cancel` waits for a driver to record the cancellation
_LEASE_MARGIN = 0.5  # seconds past a lease before claiming again (clocks of two processes)
_POLL_BATCH = 50


@dataclass(eq=False)
class _Slot:
    """An execution driven by this engine right now: its run once built, a stop asked for before that."""

    run: Run | None = None
    requested: StopReason | None = None  # a stop asked for before the run was built
    done: anyio.Event = field(default_factory=anyio.Event)

    def stop(self, reason: StopReason) -> None:
        if self.run is not None:
            self.run.stop(reason)
        elif self.requested is None:
            self.requested = reason


class Engine:
    """Drives executions in this process. Use as an async context manager: it owns the heartbeat
    and the background drives (`run_template(wait=False)`, `recover`)."""

    def __init__(
        self,
        store: Store,
        caller: ToolCaller,
        *,
        owner: str | None = None,
        max_concurrency: int = 16,
        lease_seconds: float = 15.0,
        approver: Approver | None = None,
        template_loader: TemplateLoader | None = None,
        observer: Callable[[StepRecord], None] | None = None,
        secret_values: Iterable[str] = (),
        poll_interval: float = 0.1,
        sampler: Sampler | None = None,
        llm: LLMSettings | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}")
        self.store = store
        llm = llm if llm is not None else LLMSettings.from_env()
        secret_values = (*secret_values, *((llm.key,) if llm.key else ()))
        store.redactor.add(secret_values)  # also for rows written outside a run (inputs, outcomes, idempotency)
        self.caller = caller
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.lease_seconds = lease_seconds
        self._ledger = Ledger(store, self.owner, lease_seconds)
        self._approver = approver
        loader = template_loader or partial(load_template, store)
        self._origins = Origins(store, caller, owner=self.owner, lease_seconds=lease_seconds, loader=loader)
        self._poll_interval = poll_interval
        self._ctx = RunContext(
            store=store,
            caller=caller,
            limiter=anyio.CapacityLimiter(max_concurrency),
            max_concurrency=max_concurrency,
            approver=approver,
            write_rows=self._ledger.write_rows,
            write_rows_now=self._ledger.write_rows_now if store.writes_now else None,
            run_child=self._run_child,
            observer=observer,
            secret_values=tuple(secret_values),
            sampler=sampler,
            llm=llm,
        )
        self._active: dict[str, _Slot] = {}
        self._signals: dict[str, dict[str, JSON]] = {}  # signals being delivered, by execution id and name
        self._tg: TaskGroup | None = None

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Engine:
        if self._tg is not None:
            raise RuntimeError("this Engine is already running; create one Engine per process and share it")
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._monitor)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        return await self._tg.__aexit__(exc_type, exc, tb)

    async def aclose(self, *, grace: float = 0.0) -> None:
        """Let executions driven here finish for `grace` seconds, then interrupt the rest: they stay
        `running` with their claims released, and another process (or the next start) resumes them."""
        with anyio.move_on_after(grace):
            await self._all_done()
        for slot in list(self._active.values()):
            slot.stop(StopReason.INTERRUPT)
        with anyio.CancelScope(shield=True), anyio.move_on_after(10):
            await self._all_done()

    @property
    def driving(self) -> int:
        """How many executions this process drives now (children included)."""
        return len(self._active)

    # ------------------------------------------------------------------ the API

    async def start(
        self,
        template: Template,
        inputs: Mapping[str, Any],
        *,
        deadline: float | None = None,
        secrets: Mapping[str, str] | None = None,
        execution_id: str | None = None,
    ) -> str:
        """Create a `pending` execution claimed by this process; returns its id. Inputs are checked
        (unknown and missing names, declared types) and every tool must be listed by an upstream.
        `secrets`: secret inputs read from their sources (`--secret`); one not given is read from the
        template's default source. Entry points for people and LLMs refuse secrets in `inputs`.
        `execution_id` (the caller's): if a run of this template has it already, nothing is created and
        that run's id is returned, so a start sent twice runs once."""
        if execution_id is not None and await self._thread(
            existing_run, self.store, template.name, check_execution_id(execution_id)
        ):
            return execution_id
        given = {**inputs, **(secrets or {})}
        try:
            execution = await self._thread(
                partial(self._origins.create, template, given, deadline=deadline, execution_id=execution_id)
            )
        except StoreError:
            if execution_id is not None and await self._thread(existing_run, self.store, template.name, execution_id):
                return execution_id  # another start with this id won the race
            raise
        return execution.id

    async def retry(
        self,
        execution_id: str,
        *,
        from_step: str | None = None,
        inputs: Mapping[str, Any] | None = None,
        progress: ProgressFn | None = None,
    ) -> Execution:
        """Try a failed or cancelled execution again under its id (its `attempt` + 1): succeeded steps keep
        their outputs, the failed ones (or `from_step`) and everything downstream run; `inputs` change some
        inputs first. Drives it to its end like `resume`."""
        execution = await self.get(execution_id)
        check_retryable(execution)
        template = await self._thread(self._origins.template_of, execution)
        request = RetryRequest(execution_id, template, from_step, inputs or {}, self._origins.inputs.get(execution_id))
        _, bound = await self._thread(reset_for_retry, self._ledger, request)
        if bound is not None:
            self._origins.inputs[execution_id] = bound
        return await self._drive(execution_id, progress=progress, parent_reason=_exit_reason(True))

    async def enqueue(
        self,
        template: Template,
        inputs: Mapping[str, Any],
        *,
        deadline: float | None = None,
        execution_id: str | None = None,
    ) -> str:
        """Store a `pending` execution that no process claims: any worker (or gateway) sharing the
        store takes it. Inputs are checked here; tools are checked by whoever drives it. A run that
        has the caller's `execution_id` already is not queued again."""
        if execution_id is not None and await self._thread(
            existing_run, self.store, template.name, check_execution_id(execution_id)
        ):
            return execution_id
        execution = await self._thread(
            partial(self._origins.create, template, inputs, deadline=deadline, queued=True, execution_id=execution_id)
        )
        return execution.id

    async def run(
        self, execution_id: str, *, progress: ProgressFn | None = None, cancel_on_exit: bool = True
    ) -> Execution:
        """Drive an execution to its end (or until it pauses); returns its final state.
        If the awaiting task is cancelled, the execution is cancelled (or, with
        `cancel_on_exit=False`, left `running` for another process to resume)."""
        return await self._drive(execution_id, progress=progress, parent_reason=_exit_reason(cancel_on_exit))

    async def run_template(
        self,
        template: Template,
        inputs: Mapping[str, Any],
        *,
        wait: bool = True,
        deadline: float | None = None,
        progress: ProgressFn | None = None,
        execution_id: str | None = None,
    ) -> Execution:
        """Start and drive; with `wait=False`, drive in the background and return the pending execution.
        A run that already has the caller's `execution_id` is driven on if nobody drives it, else returned."""
        execution_id = await self.start(template, inputs, deadline=deadline, execution_id=execution_id)
        current = await self.get(execution_id)
        if current.claimed_by not in (None, self.owner) or execution_id in self._active:
            return current  # the first start of this id is being driven (here or elsewhere)
        if wait:
            return await self.run(execution_id, progress=progress)
        self._background(execution_id, progress=progress)
        return await self.get(execution_id)

    async def cancel(self, execution_id: str) -> Execution:
        """Cancel: no step starts any more, in-flight calls are cancelled upstream; `cancelled` within a second."""
        slot = self._active.get(execution_id)
        if slot is not None:
            slot.stop(StopReason.CANCEL)
            with anyio.move_on_after(_CANCEL_WAIT):
                await slot.done.wait()
            return await self.get(execution_id)
        execution = await self.get(execution_id)
        check_cancellable(execution)
        claimed = await self._thread(self._ledger.claim_or_none, execution_id)
        if claimed is not None:
            return await self._thread(self._ledger.cancel_undriven, claimed)
        # Another live process drives it: it sees the status at its next poll and cancels its steps.
        await self._thread(
            partial(
                self.store.update_execution,
                execution_id,
                status=ExecutionStatus.CANCELLED,
                error="cancelled by request",
            )
        )
        with anyio.move_on_after(_CANCEL_WAIT):
            await self._until_released(execution_id)
        return await self.get(execution_id)

    async def resume(
        self, execution_id: str, response: str | None = None, *, progress: ProgressFn | None = None
    ) -> Execution:
        """Continue a paused (give `response`: yes/no) or interrupted execution; returns its final state.
        A child execution is resumed through its root."""
        execution = await self.get(execution_id)
        while execution.parent_id is not None:
            execution = await self.get(execution.parent_id)
        Ledger.check_resumable(execution, response, can_ask=self._approver is not None)
        await self._thread(self._origins.template_of, execution)
        waited = 0.0
        while True:
            try:
                return await self._drive(
                    execution.id, response=response, progress=progress, parent_reason=_exit_reason(True), wake=True
                )
            except ClaimedElsewhere as exc:
                # A live process (or one on another host) holds it: wait for its lease, saying how long, as
                # long as one lease could take; a holder that keeps renewing is alive, and is reported.
                wait = max(0.0, (exc.lease_until or 0.0) - time.time()) + _LEASE_MARGIN
                if waited + wait > self.lease_seconds * 2 + _LEASE_MARGIN:
                    raise
                logger.warning("%s; waiting %.1f s for the lease to lapse", exc, wait)
                await anyio.sleep(wait)
                waited += wait

    async def signal(
        self, execution_id: str, name: str, data: JSON = None, *, progress: ProgressFn | None = None
    ) -> Execution:
        """Deliver signal `name` (its `data` the waiting step's output) to the step of this execution (or of a
        child it waits on) that waits for it, and drive the execution on like `resume`; returns the state of
        the execution driven (its root). A `SignalError` when no step waits for it or the data does not fit."""
        target = await self._thread(signal_target, self.store, execution_id, name, data)
        self._signals.setdefault(target.execution_id, {})[name] = data
        try:
            return await self._drive(target.root_id, progress=progress, parent_reason=_exit_reason(True), wake=True)
        finally:
            self._signals.pop(target.execution_id, None)

    async def recover(self, *, limit: int = 64) -> list[str]:
        """Claim executions left `running` without a live claim (and unclaimed `pending` ones) and drive
        them in the background; returns their ids. Children are driven by their parents."""
        dead = await self._thread(self._ledger.dead_owners)  # their claims are taken over at once
        claimed = await self._thread(
            partial(
                self.store.claim_executions,
                self.owner,
                lease_seconds=self.lease_seconds,
                limit=limit,
                now=time.time(),
                take_over=dead,
            )
        )
        started = []
        for execution in claimed:
            slot = self._active.get(execution.id)
            if slot is not None and slot.run is not None:
                slot.run.adopt(execution)  # our own lease had lapsed: carry on under the new claim
            elif execution.parent_id is not None:
                await self._thread(self._ledger.settle_orphan, execution)
            else:
                started.append(execution.id)
                self._background(execution.id, wake=execution.status == ExecutionStatus.PAUSED)
        return started

    async def wait(self, execution_id: str) -> Execution:
        """The execution once its drive here ended, or (driven elsewhere) once it finished or paused."""
        slot = self._active.get(execution_id)
        if slot is not None:
            await slot.done.wait()
            return await self.get(execution_id)
        return await self._wait_settled(execution_id)

    async def get(self, execution_id: str) -> Execution:
        return await self._thread(self.store.get_execution, execution_id)

    async def view(self, execution_id: str) -> dict[str, Any]:
        """`toolreel__get_execution`'s JSON for one execution."""
        execution = await self.get(execution_id)
        steps = await self._thread(self.store.get_steps, execution_id)
        return execution_view(execution, steps)

    # ------------------------------------------------------------------ creating

    def scheduled_execution(
        self, template: Template, inputs: Mapping[str, Any], *, schedule: str, execution_id: str
    ) -> Execution:
        """The pending execution of one tick of `schedule`, not stored yet (`Store.start_tick` stores it
        once per tick); inputs are checked against the template as it is now."""
        return self._origins.scheduled_execution(template, inputs, schedule=schedule, execution_id=execution_id)

    # ------------------------------------------------------------------ driving

    def _background(self, execution_id: str, *, progress: ProgressFn | None = None, wake: bool = False) -> None:
        if self._tg is None:
            raise RuntimeError("use the Engine as `async with Engine(...) as engine:` to drive in the background")
        self._tg.start_soon(partial(self._drive_logged, execution_id, progress, wake=wake))

    async def _drive_logged(self, execution_id: str, progress: ProgressFn | None, *, wake: bool = False) -> None:
        try:
            await self._drive(execution_id, progress=progress, parent_reason=_exit_reason(False), wake=wake)
        except ToolreelError as exc:
            logger.warning("execution %s was not driven: %s", execution_id, exc)

    async def _drive(
        self,
        execution_id: str,
        *,
        response: str | None = None,
        progress: ProgressFn | None = None,
        parent_reason: Callable[[], StopCause | None] | None = None,
        ancestry: tuple[str, ...] | None = None,
        wake: bool = False,
    ) -> Execution:
        """`wake`: drive a paused execution even with nobody to answer it (a wait is due, a signal came)."""
        if execution_id in self._active:
            raise ExecutionError(
                f"execution {execution_id} is already being driven by this process", execution_id=execution_id
            )
        slot = self._active[execution_id] = _Slot()
        try:
            return await self._drive_slot(slot, execution_id, response, progress, parent_reason, ancestry, wake)
        finally:
            del self._active[execution_id]
            slot.done.set()

    async def _drive_slot(
        self,
        slot: _Slot,
        execution_id: str,
        response: str | None,
        progress: ProgressFn | None,
        parent_reason: Callable[[], StopCause | None] | None,
        ancestry: tuple[str, ...] | None,
        wake: bool,
    ) -> Execution:
        # Shielded from the claim until the run exists: a drive cancelled in between (a for_each sibling
        # failed just as this child was claimed) then ends through the run, which records why and lets go
        # of the claim, instead of leaving the execution claimed and `pending`.
        with anyio.CancelScope(shield=True):
            execution = await self._thread(self._ledger.claim, execution_id)
            if execution.status.finished or (
                execution.status == ExecutionStatus.PAUSED
                and response is None
                and self._approver is None
                and not wake
                and not signs_in(execution.prompt)  # a sign-in is not asked of anyone: its step is tried again
            ):
                return await self._thread(self._ledger.release, execution)
            try:
                template, inputs = await self._thread(self._origins.prepare, execution)
            except ExecutionError as exc:
                return await self._thread(self._ledger.conclude, execution, Outcome("failed", error=str(exc)))
            records = await self._thread(partial(self.store.get_steps, execution_id, all_attempts=True))
            execution = await self._thread(self._ledger.mark_running, execution)
            if ancestry is None:
                ancestry = await self._thread(self._ledger.ancestry, execution)
        assert ancestry is not None  # the shield is never cancelled itself: the block ran to its end
        run = Run(
            self._ctx,
            execution,
            template,
            inputs,
            records,
            ancestry=ancestry,
            response=response,
            progress=progress,
            parent_reason=parent_reason,
            clear=self._origins.clear.setdefault(execution_id, {}),
            signals=self._signals.get(execution_id),
        )
        slot.run = run
        if slot.requested is not None or execution.status == ExecutionStatus.CANCELLED:
            run.stop(slot.requested or StopReason.CANCEL)
        try:
            if tracing.ENABLED:
                await _traced_drive(run, execution)
            else:
                await run.drive()
        finally:
            with anyio.CancelScope(shield=True):
                outcome = run.outcome or Outcome("interrupted")
                final = await self._thread(self._ledger.conclude, execution, outcome, run.redact)
                if final.status.finished:
                    self._origins.forget(execution_id)
        if outcome.kind != final.status:
            return final
        return final.replace(output=outcome.output, error=outcome.error, prompt=outcome.prompt)  # in clear

    # ------------------------------------------------------------------ children

    async def _run_child(self, request: ChildRequest) -> Execution:
        name = request.step.template
        assert name is not None
        if name in request.ancestry:
            chain = " -> ".join([*request.ancestry, name])
            raise ExecutionError(f"templates form a cycle at run time: {chain}; a template cannot run itself")
        if request.parent.depth + 1 > MAX_DEPTH:
            raise ExecutionError(
                f"nesting too deep: running {name!r} would make depth {request.parent.depth + 1}, "
                f"the limit is {MAX_DEPTH} ({' -> '.join(request.ancestry)})"
            )
        child_id = child_execution_id(request.parent.id, request.key)
        child = await self._thread(self._origins.child_execution, request, child_id)
        if child_id in self._active:
            await self._active[child_id].done.wait()
            return await self.get(child_id)
        wake = child_id in self._signals or _due(child)
        if child.status.finished or (
            child.status == ExecutionStatus.PAUSED and request.response is None and self._approver is None and not wake
        ):
            return child
        try:
            return await self._drive(
                child_id,
                response=request.response,
                parent_reason=request.parent_reason,
                ancestry=(*request.ancestry, name),
                wake=wake,
            )
        except ClaimedElsewhere:
            return await self._wait_settled(child_id)

    async def _until_released(self, execution_id: str) -> None:
        # Another process holds the claim: only polling the store can tell when it let go.
        while (await self.get(execution_id)).claimed_by is not None:  # noqa: ASYNC110
            await anyio.sleep(0.02)

    async def _wait_settled(self, execution_id: str) -> Execution:
        """Another process drives this child: wait until it finishes or pauses."""
        while True:
            execution = await self.get(execution_id)
            if execution.status.finished or execution.status == ExecutionStatus.PAUSED:
                return execution
            await anyio.sleep(self._poll_interval * 2)

    # ------------------------------------------------------------------ heartbeat and remote cancels

    async def _monitor(self) -> None:
        renewed = anyio.current_time()
        offset = 0
        while True:
            await anyio.sleep(self._poll_interval)
            if not self._active:
                continue
            if anyio.current_time() - renewed >= self.lease_seconds / 3:
                renewed = anyio.current_time()
                await self._guarded(
                    partial(self.store.renew_claims, self.owner, lease_seconds=self.lease_seconds, now=time.time())
                )
            ids = list(self._active)
            if not ids:  # the last run ended while the claims were renewed
                continue
            offset = offset % len(ids)
            batch = (ids[offset:] + ids[:offset])[:_POLL_BATCH]
            offset += _POLL_BATCH
            fences = {i: slot.run.execution.fence for i in batch if (slot := self._active.get(i)) and slot.run}
            stops = await self._guarded(partial(self._ledger.stops_among, fences))
            for execution_id, reason in (stops or {}).items():
                slot = self._active.get(execution_id)
                if slot is not None:
                    slot.stop(reason)

    async def _guarded(self, call: Callable[[], _T]) -> _T | None:
        try:
            return await anyio.to_thread.run_sync(call)
        except ToolreelError as exc:  # the store is briefly unavailable: the next tick tries again
            logger.warning("replayer heartbeat: %s", exc)
            return None

    # ------------------------------------------------------------------ plumbing

    async def _all_done(self) -> None:
        while self._active:
            await next(iter(self._active.values())).done.wait()

    @staticmethod
    async def _thread(func: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        return await anyio.to_thread.run_sync(partial(func, *args, **kwargs))


def _exit_reason(cancel: bool) -> Callable[[], StopCause | None]:
    cause: StopCause | None = (StopReason.CANCEL, "") if cancel else None
    return lambda: cause


def _due(execution: Execution) -> bool:
    """A paused execution whose wait (a time, an approval's timeout) is due: unclaimed, its lease is its wake."""
    wakes = execution.lease_until if execution.claimed_by is None else None
    return execution.status == ExecutionStatus.PAUSED and wakes is not None and wakes <= time.time()


async def _traced_drive(run: Run, execution: Execution) -> None:
    """A replay execution's span: its steps' spans are its children."""
    attributes = {
        "toolreel.execution": execution.id,
        "toolreel.template": execution.template,
        "toolreel.template.version": execution.template_version,
        "toolreel.parent_execution": execution.parent_id,
    }
    with tracing.span(f"toolreel.execution {execution.template}", attributes) as current:
        await run.drive()
        outcome = run.outcome
        if outcome is not None:
            current.set_attribute("toolreel.status", outcome.kind)
            if outcome.kind == "failed":
                current.set_attribute("error.type", "execution_failed")
