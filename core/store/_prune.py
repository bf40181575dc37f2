"""Retention: delete finished executions older than a cutoff, with their steps (SPEC §9).

Never templates, never pending, running or paused executions, never a recording that took a
step after the cutoff, never a child whose parent is still going, never a recording a
template was saved from. Deletes go in batches of short transactions so recording and
claims interleave with them (PostgreSQL skips rows another transaction holds); a SQLite
file then gives the freed pages back (incremental vacuum).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Select, and_, delete, exists, func, not_, or_, select
from sqlalchemy.orm import aliased

from toolreel.core.model import ExecutionStatus
from toolreel.core.store._engine import Database
from toolreel.core.store._tables import EXECUTIONS, STEPS, TEMPLATES

__all__ = ["PRUNABLE", "PruneReport", "check_statuses", "prune"]

PRUNABLE = (
    ExecutionStatus.SUCCEEDED,
    ExecutionStatus.FAILED,
    ExecutionStatus.CANCELLED,
    ExecutionStatus.RECORDING,
)
BATCH = 500  # executions per delete transaction
_GOING = (ExecutionStatus.PENDING, ExecutionStatus.RUNNING, ExecutionStatus.PAUSED)

E, S = EXECUTIONS.c, STEPS.c


@dataclass(frozen=True, slots=True)
class PruneReport:
    executions: int
    steps: int
    dry_run: bool
    freed_bytes: int | None = None  # SQLite: how much the file shrank

    def as_dict(self) -> dict[str, object]:
        return {
            "executions": self.executions,
            "steps": self.steps,
            "dry_run": self.dry_run,
            "freed_bytes": self.freed_bytes,
        }


def check_statuses(statuses: Sequence[str] | None) -> tuple[ExecutionStatus, ...]:
    if not statuses:
        return PRUNABLE
    out: list[ExecutionStatus] = []
    for status in statuses:
        try:
            parsed = ExecutionStatus(status)
        except ValueError:
            raise ValueError(
                f"unknown status {status!r}; prunable statuses: {', '.join(s.value for s in PRUNABLE)}"
            ) from None
        if parsed not in PRUNABLE:
            raise ValueError(
                f"{parsed.value} executions are never pruned (they may still run); "
                f"prunable statuses: {', '.join(s.value for s in PRUNABLE)}"
            )
        out.append(parsed)
    return tuple(out)


def prune(
    db: Database,
    *,
    before: float,
    statuses: Sequence[ExecutionStatus] = PRUNABLE,
    dry_run: bool = False,
    batch: int = BATCH,
) -> PruneReport:
    with db.read("reading the templates' source executions") as conn:
        kept = _template_sources([row[0] for row in conn.execute(select(TEMPLATES.c.source_executions))])
    chosen = _candidates(before, statuses, kept)
    if dry_run:
        with db.read("counting prunable executions") as conn:
            listed = select(chosen.subquery().c.id)
            executions = conn.execute(select(func.count()).select_from(chosen.subquery())).scalar_one()
            steps = conn.execute(select(func.count()).where(S.execution_id.in_(listed))).scalar_one()
        return PruneReport(int(executions), int(steps), dry_run=True)
    size = _sqlite_size(db)
    executions = steps = 0
    while True:
        with db.write("pruning executions") as conn:
            pick = chosen.order_by(E.created_at, E.id).limit(batch)
            if not db.is_sqlite:
                pick = pick.with_for_update(of=EXECUTIONS, skip_locked=True)
            ids = list(conn.execute(pick).scalars())
            if ids:
                steps += conn.execute(delete(STEPS).where(S.execution_id.in_(ids))).rowcount
                executions += conn.execute(delete(EXECUTIONS).where(E.id.in_(ids))).rowcount
        if len(ids) < batch:
            break
    freed = None if size is None else max(0, size - _vacuum(db))
    return PruneReport(executions, steps, dry_run=False, freed_bytes=freed)


def _candidates(before: float, statuses: Sequence[ExecutionStatus], kept: set[str]) -> Select[tuple[str]]:
    parent = aliased(EXECUTIONS)
    recent_step = exists(select(S.execution_id).where(S.execution_id == E.id, S.started_at >= before))
    parent_going = exists(
        select(parent.c.id).where(parent.c.id == E.parent_id, parent.c.status.in_([s.value for s in _GOING]))
    )
    conditions = [
        E.status.in_([s.value for s in statuses]),
        E.updated_at < before,
        or_(E.status != ExecutionStatus.RECORDING.value, not_(recent_step)),
        or_(E.parent_id.is_(None), not_(parent_going)),
    ]
    if kept:
        conditions.append(E.id.not_in(sorted(kept)))
    return select(E.id).where(and_(*conditions))


def _template_sources(values: Sequence[str | None]) -> set[str]:
    kept: set[str] = set()
    for value in values:
        try:
            ids = json.loads(value or "[]")
        except ValueError:
            continue
        kept.update(str(i) for i in ids if isinstance(i, str))
    return kept


def _sqlite_size(db: Database) -> int | None:
    if not db.writes_now:  # PostgreSQL reuses freed space itself; an in-memory SQLite has no file
        return None
    with db.read("measuring the database") as conn:
        pages = conn.exec_driver_sql("PRAGMA page_count").scalar_one()
        page_size = conn.exec_driver_sql("PRAGMA page_size").scalar_one()
    return int(pages) * int(page_size)


def _vacuum(db: Database) -> int:
    """Give freed pages back to the file system. A file made before incremental vacuum was on is
    converted once by a full VACUUM; afterwards each prune frees only what it emptied."""
    pooled = db.engine.raw_connection()
    try:
        driver = pooled.driver_connection
        assert driver is not None
        with db.failing("vacuuming the database"):
            mode = driver.execute("PRAGMA auto_vacuum").fetchone()[0]
            if mode != 2:  # 2 = incremental
                driver.execute("PRAGMA auto_vacuum=INCREMENTAL")
                driver.execute("VACUUM")
            else:
                # run to completion by sqlite3_exec: a cursor would free one page per step
                driver.executescript("PRAGMA incremental_vacuum;")
            driver.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            pages = driver.execute("PRAGMA page_count").fetchone()[0]
            page_size = driver.execute("PRAGMA page_size").fetchone()[0]
    finally:
        pooled.close()
    return int(pages) * int(page_size)
