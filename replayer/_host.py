"""The seam between a run and its step kinds: what every run of an engine shares (`RunContext`) and
what a step kind may see and do of the run that launched it (`StepHost`).

Kinds (`_kinds`, `_child`, `_script`, ...) import this module, never `_run`: the run imports the kinds
to dispatch to them, so the kinds knowing only the protocol keeps the import graph a tree.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import anyio

from toolreel.core.caller import Approver, Sampler, ToolCaller
from toolreel.core.model import JSON, Execution, StepRecord
from toolreel.core.store import Store
from toolreel.replayer._llm_settings import LLMSettings
from toolreel.replayer._state import ChildRequest, RunScope, StepState, StopCause

__all__ = ["RunContext", "StepHost"]


@dataclass(frozen=True, slots=True)
class RunContext:
    """What every run of one engine shares: the store, the upstream caller, the slot limits, the
    approver, how rows are written and how a child execution is run (the engine's `_run_child`)."""

    store: Store
    caller: ToolCaller
    limiter: anyio.CapacityLimiter
    max_concurrency: int
    approver: Approver | None
    write_rows: Callable[[Sequence[StepRecord], int], None]
    write_rows_now: Callable[[Sequence[StepRecord], int], bool] | None
    run_child: Callable[[ChildRequest], Awaitable[Execution]]
    observer: Callable[[StepRecord], None] | None = None
    secret_values: tuple[str, ...] = ()
    sampler: Sampler | None = None  # asks the model of the client that started the run (`llm` steps)
    llm: LLMSettings = field(default_factory=LLMSettings)
    # Code steps take turns: the sandbox's time limit counts the process's CPU time, so two scripts
    # running at once would spend each other's budget.
    code_lane: anyio.CapacityLimiter = field(default_factory=lambda: anyio.CapacityLimiter(1))


class StepHost(Protocol):
    """What a step kind may read and do of the run that launched it (the run is `replayer._run.Run`).

    The calling convention of a step kind:

        async def my_kind(host: StepHost, state: StepState, record: StepRecord, value: JSON) -> StepRecord

    - `_kinds.execute` dispatches on the step's spec field to the kind; a new kind is a module of its own
      with one such function, and one line in `execute` (and one in `_kinds.STEP_KINDS` for its `StepKind`).
    - `state.args` holds the step's resolved `input` (the prompt of an `approve`), `state.key` its resolved
      idempotency key; `record` is the step's `running` row, already announced.
    - The kind returns the step's final row: `_state.succeeded(record, output, result)` or
      `_state.failed(record, error, ...)`; or the `running` row with `result={AWAITING: ..., "prompt": ...}`
      to wait for a person or a paused child (the run pauses; `take_response` gives the answer on resume).
      A wait that ends on its own also puts `DUE: epoch` in that result (the paused run wakes then);
      `take_due` gives it back on resume, so the clock does not restart; `take_signal` gives a signal's data.
    - An attempt that fails and is tried again: `host.end_attempt(ended)`, wait, then
      `record = host.next_attempt(record)`; the final row is returned as above.
    - Rows of its own (a script's calls, for_each items): `host.next_seq()` numbers them, `host.submit`
      queues them, `await host.commit(rows)` makes them durable and is False when the run stops being
      driven (the kind then returns at once).
    - Upstream calls hold a slot of `host.ctx.limiter`; waiting for a person or a child holds none.
    - Refs a kind resolves itself (a for_each item's input) go through `_decide.bounded` (the ref budget:
      a costly filter runs in a worker process, never on the event loop).
    - A kind never touches the run's fields: everything it may change goes through these methods.
    """

    @property
    def ctx(self) -> RunContext: ...

    @property
    def execution(self) -> Execution: ...

    @property
    def execution_id(self) -> str: ...

    @property
    def ancestry(self) -> tuple[str, ...]: ...

    @property
    def scope(self) -> RunScope: ...

    def stop_cause(self) -> StopCause | None:
        """Why the run stops, as its children see it (None while it goes on)."""
        ...

    def next_seq(self) -> int: ...

    def submit(self, rows: Sequence[StepRecord]) -> None:
        """Queue rows for the store (and the observer); `commit` waits for them."""
        ...

    async def commit(self, rows: Sequence[StepRecord]) -> bool:
        """`rows` and all before them durable; False when the run must stop driving."""
        ...

    def end_attempt(self, ended: StepRecord) -> None:
        """An attempt (or a for_each item) finished with row `ended`: no longer in flight, queued."""
        ...

    def next_attempt(self, record: StepRecord) -> StepRecord:
        """The `running` row of the next attempt of `record`'s step, in flight and queued."""
        ...

    def begin_item(self, state: StepState, index: int, args: JSON, key: str | None) -> StepRecord:
        """The `running` row of for_each item `index`, in flight and announced."""
        ...

    def cancel_items(self, step: str, note: str) -> None:
        """Record the items of `step` still in flight as cancelled with `note`."""
        ...

    def take_response(self, row: str) -> str | None:
        """The resume response meant for row `row`, once (None if there is none for it)."""
        ...

    def failed_attempts(self, row: str) -> int:
        """How many attempts of row `row` failed before (a retry's child is keyed by it)."""
        ...

    def count_failure(self, row: str) -> None:
        """One more failed attempt of row `row`."""
        ...

    def take_elapsed(self, row: str) -> float:
        """Seconds of its timeout row `row`'s attempt used before a pause, once (0 if none)."""
        ...

    def take_due(self, row: str) -> float | None:
        """When waiting row `row` stops waiting on its own, kept from its first wait, once (None if none):
        a resumed wait or approval timeout keeps its clock."""
        ...

    def has_signal(self, name: str) -> bool:
        """Whether signal `name` was sent to this run and not yet consumed."""
        ...

    def take_signal(self, name: str) -> JSON:
        """The data of signal `name` (checked against its schema when it was sent), consumed."""
        ...
