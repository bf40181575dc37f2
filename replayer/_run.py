"""Driving one claimed execution: event-driven scheduling, durable step rows, how the run ends.

A step starts the moment its last dependency finishes (no waves). Steps that decide without
calling anything (`when` false, `return`, a ref that cannot resolve) finish inline, so a skip
cascade costs no task. A finished step's row and the start rows of the dependents it unblocks
are committed in one transaction before those dependents run. On failure, `return`, cancel and
deadline, in-flight steps are cancelled (their upstream calls with them) and recorded so.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import anyio
from anyio.abc import TaskGroup

from toolreel.core import tracing
from toolreel.core.caller import ProgressFn
from toolreel.core.errors import StaleClaimError, StoreError
from toolreel.core.model import JSON, Execution, StepRecord, StepStatus
from toolreel.core.template import StepSpec, Template
from toolreel.core.view import item_name
from toolreel.replayer import _kinds
from toolreel.replayer._decide import needs_worker, prepare
from toolreel.replayer._ending import CHILD_REASON, checked, closing_note, final_outcome
from toolreel.replayer._host import RunContext
from toolreel.replayer._inputs import secret_values
from toolreel.replayer._journal import Announcer, Journal, small_rows
from toolreel.replayer._state import (
    DUE,
    Outcome,
    RunScope,
    StepState,
    StopCause,
    StopReason,
    awaiting_of,
    build_states,
    failed,
    load_rows,
)

__all__ = ["Run", "RunContext"]  # RunContext lives in _host: re-exported for the engine

logger = logging.getLogger("toolreel.replayer")

_V = TypeVar("_V")


class Run:
    """One drive of one claimed execution, in this process: the step graph in memory, its scheduling
    (a step launches the moment its last dependency finishes), its rows on their way to the store, and
    how it ends. It is the `StepHost` of the step kinds it launches (`_kinds.execute`), which reach it
    only through that protocol. Built and driven by the `Engine` (`drive()` once); `stop()` may be
    called from anywhere (the engine's heartbeat, a cancel): the first reason wins."""

    def __init__(
        self,
        ctx: RunContext,
        execution: Execution,
        template: Template,
        inputs: Mapping[str, JSON],
        records: Sequence[StepRecord],
        *,
        ancestry: tuple[str, ...],
        response: str | None = None,
        progress: ProgressFn | None = None,
        parent_reason: Callable[[], StopCause | None] | None = None,
        clear: dict[str, JSON] | None = None,
        signals: dict[str, JSON] | None = None,
    ) -> None:
        self.ctx = ctx
        self.execution = execution
        self.template = template
        self.inputs = inputs
        self.ancestry = ancestry
        self.response = response
        self.outcome: Outcome | None = None
        self._progress = progress
        self._parent_reason = parent_reason
        # The store's redactor: what it learns from this run's rows (a secret copied by a ref) it applies to
        # every other row, the idempotency table and the execution's outcome as well.
        self._redactor = ctx.store.redactor
        self._redactor.add([*ctx.secret_values, *secret_values(template, inputs)])
        self.clear = clear if clear is not None else {}  # outputs stored redacted, in clear, by step row name
        self._steps = build_states(template)
        self.scope = RunScope(self._steps, inputs)
        self._journal = Journal(self._write, write_now=self._write_now if ctx.write_rows_now else None)
        self._announcer = Announcer(self._journal, lambda record: self.running.get(record.name) is record)
        self.running: dict[str, StepRecord] = {}  # attempt rows in flight, by store name
        self._waiting: dict[str, StepRecord] = {}
        self._deferred: set[str] = set()  # launched to be decided in their task (a costly ref: a worker's budget)
        self._stop: tuple[StopReason, str] | None = None
        self._cancel: anyio.CancelScope | None = None
        self._tg: TaskGroup | None = None
        self._returned: JSON = None
        self._servers: dict[str, tuple[str | None, str | None]] = {}
        loaded = load_rows(self._steps, records, self.clear)
        self._seq, self._done, self._order = loaded.seq, loaded.done, loaded.order
        self._opening, self._reuse, self.answer_for = loaded.opening, loaded.reuse, loaded.answer_for
        self.failures = loaded.failures  # failed attempt rows by row name: a retry's child is keyed by it
        self.elapsed = loaded.elapsed  # timeout spent before a pause, by waiting row name
        self.due = loaded.due  # when waiting rows stop waiting on their own, by row name
        self.signals = signals if signals is not None else {}  # signals sent to this run, by name: consumed

    # ------------------------------------------------------------------ public surface

    @property
    def execution_id(self) -> str:
        return self.execution.id

    def stop_cause(self) -> StopCause | None:
        """Why this run stops, as its children see it (no message of theirs: they say their parent stopped).
        A child not stopped itself answers for its parent: a grandchild unwinds before its parent adopts
        the reason."""
        if self._stop is not None:
            return (self._stop[0], "")
        if self.execution.parent_id is None or self._parent_reason is None:
            return None
        return self._parent_reason()

    def adopt(self, claimed: Execution) -> None:
        """This process claimed the execution again (its lease had lapsed): write with the new fence."""
        self.execution = self.execution.replace(fence=claimed.fence)

    def stop(self, reason: StopReason | str, message: str = "") -> None:
        """End the run early (a `StopReason`, or its value). The first reason wins."""
        if self._stop is None:
            self._stop = (StopReason(reason), message)
        if self._cancel is not None:
            self._cancel.cancel()

    async def drive(self) -> Outcome:
        try:
            async with anyio.create_task_group() as outer:
                outer.start_soon(self._write_loop)
                outer.start_soon(self._announcer.run)
                try:
                    await self._drive_steps()
                except anyio.get_cancelled_exc_class():
                    self._external_stop()
                    raise
                finally:
                    self._announcer.close()
                    self.submit(self._closing_rows())
                    self._journal.close()
        finally:
            self.outcome = await self._conclude()
        return self.outcome

    async def _write_loop(self) -> None:
        # Shielded: the closing rows of a run cancelled from outside must still reach the store.
        with anyio.CancelScope(shield=True):
            await self._journal.run()

    # ------------------------------------------------------------------ scheduling

    async def _drive_steps(self) -> None:
        with anyio.CancelScope(deadline=self._deadline()) as deadline_scope:
            self._cancel = anyio.CancelScope()
            if self._stop is not None:
                self._cancel.cancel()
            with self._cancel:
                async with anyio.create_task_group() as self._tg:
                    ready = [name for name, state in self._steps.items() if not state.finished and state.ready]
                    for name in ready:
                        self._steps[name].readied = True
                    rows, launch = await self.advance(ready, ())
                    if await self.commit(self._opening + rows):
                        self._launch(launch)
        if deadline_scope.cancelled_caught:
            self.stop(StopReason.DEADLINE, self._deadline_message())

    async def advance(self, ready: Iterable[str], finished: Iterable[str]) -> tuple[list[StepRecord], list[str]]:
        """Unblock dependents of `finished`, start `ready` steps; steps that decide inline finish here
        (cascading). Returns the rows to commit and the steps to launch once they are durable."""
        rows: list[StepRecord] = []
        launch: list[str] = []
        ready_q = deque(ready)
        done_q = deque(finished)
        while ready_q or done_q:
            if done_q:
                done = self._steps[done_q.popleft()]
                for name in done.dependents:
                    state = self._steps[name]
                    state.dependency_finished(done.spec.name, done.status)
                    if state.ready and not state.finished and not state.readied:
                        state.readied = True
                        ready_q.append(name)
                continue
            name = ready_q.popleft()
            if self._stop is not None:
                continue
            state = self._steps[name]
            if needs_worker(state.spec):
                self._deferred.add(name)
                launch.append(name)
                continue
            decided = await self._prepare(state)
            if decided is None:
                self._begin(state)
                launch.append(name)
            else:
                rows.extend(self.settle(name, decided))
                done_q.append(name)
        if self._stop is not None and launch:
            # The cascade stopped the run (a failure, a return): steps begun in it never start.
            for name in launch:
                self.running.pop(name, None)
                self._deferred.discard(name)
            launch = []
        return rows, launch

    def _launch(self, names: Iterable[str]) -> None:
        assert self._tg is not None
        for name in names:
            self._steps[name].launched = True
            self._tg.start_soon(self._step_task, name)

    async def _step_task(self, name: str) -> None:
        # A chain runs in one task: the first step a finished step unblocks continues here.
        following: str | None = name
        while following is not None:
            following = await self._run_step(following)

    async def _traced_step(self, state: StepState) -> StepRecord:
        """A step's span, named as MCP's semantic conventions name a tool call when it is one."""
        spec = state.spec
        attributes = {
            "toolreel.execution": self.execution_id,
            "toolreel.step": spec.name,
            "mcp.method.name": "tools/call" if spec.tool else None,
            "gen_ai.tool.name": spec.tool,
            "gen_ai.operation.name": "execute_tool" if spec.tool else None,
        }
        name = f"tools/call {spec.tool}" if spec.tool else f"toolreel.step {spec.name}"
        with tracing.span(name, attributes, kind="client" if spec.tool else "internal") as current:
            record = await self._execute(state)
            current.set_attribute("toolreel.step.status", record.status.value)
            if record.status == StepStatus.FAILED:
                current.set_attribute("error.type", "tool_error" if record.is_error else "step_failed")
            return record

    async def _run_step(self, name: str) -> str | None:
        state = self._steps[name]
        if name in self._deferred:  # its refs may take a worker's budget: decided here, not in the cascade
            decided = await self._prepare(state)
            self._deferred.discard(name)
            if decided is not None:
                return await self._settled(name, decided)
            self._begin(state)
        try:
            record = await (self._traced_step(state) if tracing.ENABLED else self._execute(state))
        except Exception as exc:  # a bug in a step kind must fail the step, not the engine
            logger.exception("step %s of execution %s raised", name, self.execution_id)
            current = self.running.get(name)
            error = f"internal error: {exc!r}"
            record = failed(current, error) if current else self.row(state, StepStatus.FAILED, error=error)
        self.running.pop(name, None)
        if awaiting_of(record) is not None:
            state.awaiting = True
            self._waiting[name] = record
            await self.commit([record])
            return None
        return await self._settled(name, record)

    def _execute(self, state: StepState) -> Awaitable[StepRecord]:
        return _kinds.execute(self, state, self.running[state.spec.name])

    async def _settled(self, name: str, record: StepRecord) -> str | None:
        """The step finished with `record`: its row and the rows of the steps it decides inline are
        committed, the steps it unblocks launched; the first of them continues in this task."""
        rows = self.settle(name, record)
        more, launch = await self.advance((), (name,))
        if not await self.commit(rows + more):
            return None
        if launch:
            self._launch(launch[1:])
            self._steps[launch[0]].launched = True
        await self._report(name, record)
        return launch[0] if launch else None

    def settle(self, name: str, record: StepRecord) -> list[StepRecord]:
        """Record a step as finished in memory; a failure stops the run and fails its dependents."""
        state = self._steps[name]
        state.finish(record)
        self._order[name] = len(self._order)
        self._done += 1
        rows = [record]
        if record.status == StepStatus.FAILED and not state.spec.include_failed and state.spec.on_error != "continue":
            rows += self._fail_dependents(name, record.error or "failed")
            self.stop(StopReason.FAILED, f"step {name} failed: {record.error}")
        elif state.spec.has_return and record.status == StepStatus.SUCCEEDED:
            self._returned = record.output
            self.stop(StopReason.RETURN, f"step {name} returned")
        return rows

    def _fail_dependents(self, name: str, error: str) -> list[StepRecord]:
        rows = []
        for dependent in self._steps[name].dependents:
            state = self._steps[dependent]
            if state.finished or state.launched:
                continue
            record = self.row(
                state, StepStatus.FAILED, error=f"not run: it depends on step {name}, which failed: {error}"
            )
            state.finish(record)
            rows.append(record)
        return rows

    # ------------------------------------------------------------------ deciding a ready step

    async def _prepare(self, state: StepState) -> StepRecord | None:
        """A finished row when the step decides without calling anything, else None (launch it)."""
        decided = await prepare(state, self.scope, self._steps)
        if decided is None:
            return None
        return self.row(state, decided.status, output=decided.output, resolved=decided.output, error=decided.error)

    # ------------------------------------------------------------------ the step kinds' host

    def take_response(self, row: str) -> str | None:
        if self.answer_for != row or self.response is None:
            return None
        response, self.response = self.response, None
        return response

    def failed_attempts(self, row: str) -> int:
        return self.failures.get(row, 0)

    def count_failure(self, row: str) -> None:
        self.failures[row] = self.failures.get(row, 0) + 1

    def take_elapsed(self, row: str) -> float:
        return self.elapsed.pop(row, 0.0)

    def take_due(self, row: str) -> float | None:
        return self.due.pop(row, None)

    def has_signal(self, name: str) -> bool:
        return name in self.signals

    def take_signal(self, name: str) -> JSON:
        return self.signals.pop(name)

    def end_attempt(self, ended: StepRecord) -> None:
        self.running.pop(ended.name, None)  # ended: its start row must not be announced after this
        self.submit([ended])

    def cancel_items(self, step: str, note: str) -> None:
        prefix = f"{step}["
        cut = [name for name in self.running if name.startswith(prefix)]
        now = time.time()
        self.submit(
            [self.running.pop(name).replace(status=StepStatus.CANCELLED, ended_at=now, error=note) for name in cut]
        )

    # ------------------------------------------------------------------ rows

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def record(self, state: StepState, store_name: str, attempt: int, **fields: Any) -> StepRecord:
        spec = state.spec
        server, tool = self._server_tool(spec)
        written = spec.approve if spec.approve is not None else spec.return_ if spec.has_return else spec.input
        if spec.llm is not None:
            written = spec.llm.prompt
        now = time.time()
        base: dict[str, Any] = {"started_at": now, "status": StepStatus.RUNNING}
        base.update(fields)
        return StepRecord(
            execution_id=self.execution_id,
            name=store_name,
            seq=self.next_seq(),
            kind=_kinds.STEP_KINDS[spec.kind],
            attempt=attempt,
            server=server,
            tool=tool,
            input=written,
            **base,
        )

    def _server_tool(self, spec: StepSpec) -> tuple[str | None, str | None]:
        if spec.tool is None:
            return None, spec.template
        found = self._servers.get(spec.tool)
        if found is None:
            server = self.ctx.caller.server_of(spec.tool)
            found = (server, spec.tool.removeprefix(f"{server}__") if server else spec.tool)
            self._servers[spec.tool] = found
        return found

    def row(
        self,
        state: StepState,
        status: StepStatus,
        *,
        output: JSON = None,
        resolved: JSON = None,
        error: str | None = None,
    ) -> StepRecord:
        """A row for a step that finishes without being launched (skipped, returned, failed to resolve)."""
        state.attempt += 1
        now = time.time()
        return self.record(
            state,
            state.spec.name,
            state.attempt,
            status=status,
            output=output,
            resolved_input=resolved,
            error=error,
            started_at=now,
            ended_at=now,
        )

    def _begin(self, state: StepState) -> None:
        name = state.spec.name
        if name in self._reuse:
            self._reuse.discard(name)
        else:
            state.attempt += 1
        resolved = {"for_each": state.items} if state.items is not None else state.args
        record = self.record(state, name, state.attempt, resolved_input=resolved, idempotency_key=state.key)
        self.running[name] = record
        self._announce(record)

    def begin_item(self, state: StepState, index: int, args: JSON, key: str | None) -> StepRecord:
        name = item_name(state.spec.name, index)
        if name in self._reuse:
            self._reuse.discard(name)
        else:
            state.item_attempts[index] = state.item_attempts.get(index, 0) + 1
        record = self.record(state, name, state.item_attempts[index], resolved_input=args, idempotency_key=key)
        self.running[name] = record
        self._announce(record)
        return record

    def next_attempt(self, record: StepRecord) -> StepRecord:
        again = record.replace(
            attempt=record.attempt + 1,
            seq=self.next_seq(),
            status=StepStatus.RUNNING,
            started_at=time.time(),
            ended_at=None,
            result=None,
            output=None,
            is_error=False,
            error=None,
        )
        self.running[record.name] = again
        self.submit([again])
        return again

    # ------------------------------------------------------------------ durability

    def submit(self, rows: Sequence[StepRecord]) -> None:
        if rows:
            self._journal.submit(rows)
            if self.ctx.observer is not None:
                for record in rows:
                    self.ctx.observer(record)

    async def commit(self, rows: Sequence[StepRecord]) -> bool:
        """Make `rows` (and all before) durable. False when the run must stop driving (lost claim, store down)."""
        self.submit(rows)
        try:
            await self._journal.wait(self._journal.submit(()))
        except StaleClaimError as exc:
            self.stop(StopReason.STALE, str(exc))
            return False
        except StoreError as exc:
            logger.error(
                "execution %s: the store refused a write, this process stops driving it: %s", self.execution_id, exc
            )
            self.stop(StopReason.INTERRUPT, str(exc))
            return False
        return True

    def _announce(self, record: StepRecord) -> None:
        if self.ctx.observer is not None:
            self.ctx.observer(record)
        self._announcer.announce(record)

    def _write(self, rows: Sequence[StepRecord]) -> None:
        """In a worker thread: secrets are redacted here, off the event loop."""
        self.ctx.write_rows([self._redacted(row) for row in rows], self.execution.fence)

    def _write_now(self, rows: Sequence[StepRecord]) -> bool:
        """On the event loop, when the store can commit without waiting and the rows are small."""
        if self.ctx.write_rows_now is None or not small_rows(rows):
            return False
        return self.ctx.write_rows_now([self._redacted(row) for row in rows], self.execution.fence)

    def _redacted(self, record: StepRecord) -> StepRecord:
        redacted = self._redactor.step(record)
        if redacted.output is not record.output:
            self.clear[record.name] = record.output  # what later steps of this process must still see
        return redacted

    def redact(self, value: _V) -> _V:
        """`value` without the secrets this run knows (config values, secret inputs, secret-looking keys)."""
        clean: _V = self._redactor.redact(value)[0]
        return clean

    # ------------------------------------------------------------------ ending

    def _external_stop(self) -> None:
        """Cancelled from outside (a parent run stopping, the engine shutting down): adopt the reason."""
        if self._stop is not None:
            return
        cause = self._parent_reason() if self._parent_reason else None
        reason = CHILD_REASON.get(cause[0], StopReason.INTERRUPT) if cause else StopReason.INTERRUPT
        if cause is not None and cause[1]:
            message = cause[1]
        elif self.execution.parent_id is None:
            message = "the caller stopped waiting for the execution"
        else:
            message = f"the parent execution {self.execution.parent_id} stopped ({cause[0] if cause else None})"
        self._stop = (reason, message)

    def _closing_rows(self) -> list[StepRecord]:
        if self._stop is None or self._stop[0] in (StopReason.INTERRUPT, StopReason.STALE):
            return []
        reason, message = self._stop
        now = time.time()
        note = closing_note(reason, message)
        rows = [r.replace(status=StepStatus.CANCELLED, ended_at=now, error=note) for r in self.running.values()]
        rows += [r.replace(status=StepStatus.CANCELLED, ended_at=now, error=note) for r in self._waiting.values()]
        self.running.clear()
        if reason == StopReason.RETURN:
            for state in self._steps.values():
                if not state.finished and (not state.launched or state.spec.name in self._deferred):
                    rows.append(self.row(state, StepStatus.SKIPPED))
        return rows

    async def _conclude(self) -> Outcome:
        if self._journal.error is not None and self._stop is None:
            stale = isinstance(self._journal.error, StaleClaimError)
            self._stop = (StopReason.STALE if stale else StopReason.INTERRUPT, "")
        if self._stop is None:
            if self._waiting:
                first = min(self._waiting.values(), key=lambda r: r.seq)
                marker = awaiting_of(first) or {}
                return Outcome("paused", prompt=marker.get("prompt"), wake=self._wake())
            return await final_outcome(self.template, self.scope, self._steps, self._order)
        reason, message = self._stop
        if reason in (StopReason.STALE, StopReason.INTERRUPT):
            return Outcome("stale" if reason == StopReason.STALE else "interrupted", error=message)
        if reason == StopReason.CANCEL:
            return Outcome("cancelled", error=f"cancelled: {message}" if message else "cancelled by request")
        if reason == StopReason.RETURN:
            return checked(self.template, Outcome("succeeded", output=self._returned))
        return Outcome("failed", error=message)  # deadline, failed

    def _wake(self) -> float | None:
        """When the earliest waiting step stops waiting on its own (a time, an approval's timeout)."""
        markers = [awaiting_of(row) or {} for row in self._waiting.values()]
        dues = [float(due) for marker in markers if isinstance(due := marker.get(DUE), int | float)]
        return min(dues, default=None)

    def _deadline(self) -> float:
        if self.execution.deadline is None:
            return float("inf")
        return anyio.current_time() + (self.execution.deadline - time.time())

    def _deadline_message(self) -> str:
        running = ", ".join(sorted(self.running)) or "none"
        return f"deadline_exceeded: the execution's deadline passed (steps running then: {running})"

    async def _report(self, name: str, record: StepRecord) -> None:
        if self._progress is None:
            return
        try:
            await self._progress(float(self._done), float(len(self._steps)), f"{name}: {record.status}")
        except Exception:  # a client that went away must not fail the run
            logger.warning("execution %s: progress callback failed; no more progress is sent", self.execution_id)
            self._progress = None
