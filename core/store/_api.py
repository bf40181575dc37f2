"""The store's interface: what the recorder, templatizer and replayer may ask of it.

One SQL implementation (`SQLStore`, sqlmodel) serves SQLite and PostgreSQL. Methods are
synchronous and thread-safe; async callers run them with `anyio.to_thread.run_sync`.
Every write commits before it returns and raises `StoreError` (never swallowed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from toolreel.core.model import (
    JSON,
    Execution,
    ExecutionQuery,
    ExecutionStatus,
    StepClaim,
    StepRecord,
    TemplateDraft,
    TemplateRecord,
)
from toolreel.core.schedule import Schedule
from toolreel.core.secrets import Redactor
from toolreel.core.store._prune import PRUNABLE, PruneReport


class Store(Protocol):
    url: str
    redactor: Redactor
    """Every row written passes through it; writers add the secret values they know."""

    @property
    def writes_now(self) -> bool:
        """Whether try_put_steps can ever write (a SQLite file): if not, don't call it."""
        ...

    # opaque values kept with the database (sign-ins, pinned tools' digests) -------------
    def get_kept(self, key: str) -> str | None: ...

    def put_kept(self, key: str, value: str) -> None: ...

    def kept_keys(self, prefix: str) -> list[str]: ...

    # executions -----------------------------------------------------------------------
    def create_execution(self, execution: Execution) -> None: ...

    def update_execution(self, execution_id: str, *, fence: int | None = None, **fields: object) -> Execution:
        """Set fields (names of `Execution`); with `fence`, refuse (StaleClaimError) unless it is current."""
        ...

    def get_execution(self, execution_id: str) -> Execution:
        """Raises NotFoundError naming the id."""
        ...

    def list_executions(self, query: ExecutionQuery = ExecutionQuery()) -> tuple[list[Execution], str | None]:
        """Newest first; returns (page, next cursor or None)."""
        ...

    # steps ----------------------------------------------------------------------------
    def put_step(self, step: StepRecord, *, fence: int | None = None) -> None:
        """Insert or replace the row (execution_id, name, attempt)."""
        ...

    def put_steps(self, steps: Sequence[StepRecord], *, fence: int | None = None) -> None:
        """Several rows in one transaction (the recorder's batched writer); with `fence`, the
        steps of one execution, refused (StaleClaimError) unless the fence is current."""
        ...

    def try_put_steps(self, steps: Sequence[StepRecord], *, fence: int | None = None) -> bool:
        """put_steps on the calling thread, only if that needs no waiting (a SQLite file with its write
        lock free, a small batch); False, with nothing written, otherwise (a network database, a lock
        held elsewhere): call put_steps from a worker thread then. Meant for an event loop."""
        ...

    def get_steps(self, execution_id: str, *, all_attempts: bool = False, after_seq: int = 0) -> list[StepRecord]:
        """Ordered by seq; by default only the latest attempt of each step; with `after_seq`, only the
        steps whose seq is above it."""
        ...

    # one recording across gateways ----------------------------------------------------
    def recording_of(self, session: str, *, active_since: float, new: Execution) -> Execution:
        """The recording client `session` made that was active at or after `active_since`, else `new`,
        created now: in one transaction, so gateways sharing the store agree on a client's recording."""
        ...

    def claim_step(self, step: StepRecord, *, after_seq: int) -> StepClaim:
        """Insert `step` (a running step: the claim of its name) at the next seq of its execution unless its
        name is taken, and return that seq with the steps written above `after_seq` before it."""
        ...

    # templates ------------------------------------------------------------------------
    def save_template(self, draft: TemplateDraft) -> TemplateRecord:
        """A new version (1, 2, ...) of `draft.name`; the hash is sha256 of the canonical JSON."""
        ...

    def get_template(self, name: str, version: int | None = None) -> TemplateRecord:
        """The latest version unless `version`; NotFoundError otherwise."""
        ...

    def list_templates(self) -> list[TemplateRecord]:
        """The latest version of each template, by name."""
        ...

    def delete_template(self, name: str) -> int:
        """Deletes every version; returns how many. NotFoundError if none."""
        ...

    # idempotency ----------------------------------------------------------------------
    def get_idempotent(self, key: str, *, now: float) -> JSON | None:
        """The stored result for a full key (scope already folded in), unless expired."""
        ...

    def put_idempotent(self, key: str, result: JSON, *, expires_at: float | None) -> None: ...

    # retention ------------------------------------------------------------------------
    def prune_executions(
        self, *, before: float, statuses: Sequence[ExecutionStatus] = PRUNABLE, dry_run: bool = False
    ) -> PruneReport:
        """Delete finished executions (and recordings idle since) last updated before `before`, with their
        steps, in batches; never templates nor pending/running/paused executions (SPEC §9)."""
        ...

    # schedules (SPEC §15) ----------------------------------------------------------------
    def add_schedule(self, schedule: Schedule) -> None: ...

    def list_schedules(self, *, active_only: bool = False) -> list[Schedule]:
        """By template; `active_only`: the ones not paused."""
        ...

    def get_schedule(self, schedule_id: str) -> Schedule:
        """Raises NotFoundError naming the id."""
        ...

    def delete_schedule(self, schedule_id: str) -> None:
        """Raises NotFoundError naming the id; the executions it started stay."""
        ...

    def pause_schedule(self, schedule_id: str, *, paused: bool, now: float) -> Schedule:
        """Pause, or resume from `now` (the ticks that fell while paused are never started)."""
        ...

    def start_tick(self, schedule_id: str, tick: float, execution: Execution) -> bool:
        """Create `execution` as tick `tick`'s run unless that tick or a later one was started (by anyone),
        in one transaction: exactly one of any number of racing callers returns True."""
        ...

    # claims (auto mode) ---------------------------------------------------------------
    def claim_executions(
        self, owner: str, *, lease_seconds: float, limit: int, now: float, take_over: Sequence[str] = ()
    ) -> list[Execution]:
        """Claim runnable executions (pending, or running with an expired/no lease, or claimed by one of
        `take_over`: owners known to be dead, or a paused root whose wake time, its unclaimed `lease_until`,
        has come) with FOR UPDATE SKIP LOCKED where supported; bumps `fence`, sets claimed_by/lease_until."""
        ...

    def claim_execution(
        self, execution_id: str, owner: str, *, lease_seconds: float, now: float, take_over: Sequence[str] = ()
    ) -> Execution | None:
        """Claim one given execution if unclaimed or expired (or already ours, or held by one of `take_over`);
        None if another holds it."""
        ...

    def renew_claims(self, owner: str, *, lease_seconds: float, now: float) -> int: ...

    def release_claim(self, execution_id: str, owner: str) -> None: ...

    def close(self) -> None: ...
