"""One recording shared by gateways that share a store: the statements behind `Store.recording_of`
and `Store.claim_step`.

A stateless-era client behind a load balancer may send each call to another gateway. Both gateways
must then agree on the client's execution and on its step names: the store decides, one short
transaction each, serialised per client (finding a recording) and per execution (claiming a name).
"""

from __future__ import annotations

import hashlib
from typing import Any

from sqlalchemy import Connection, func, or_, select, text

from toolreel.core.model import Execution, ExecutionMode, StepClaim, StepRecord
from toolreel.core.store._insert import insert_for
from toolreel.core.store._rows import execution_from_row, step_from_row
from toolreel.core.store._tables import EXECUTIONS, STEPS

__all__ = ["claim_step_row", "recording_row"]

E, S = EXECUTIONS.c, STEPS.c


def recording_row(conn: Connection, session: str, active_since: float, *, sqlite: bool) -> Execution | None:
    """The newest recording of `session` with a step started (or, without steps, created) at or after
    `active_since`. On PostgreSQL a transaction-scoped advisory lock on the session comes first, so two
    gateways finding no recording for one client do not both create one (SQLite's BEGIN IMMEDIATE
    serialises the whole transaction already)."""
    if not sqlite:
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _lock_key(session)})
    last_step = select(func.max(S.started_at)).where(S.execution_id == E.id).scalar_subquery()
    query = (
        select(EXECUTIONS)
        .where(E.session == session, E.mode == ExecutionMode.RECORD.value)
        .where(or_(last_step >= active_since, E.created_at >= active_since))
        .order_by(E.created_at.desc())
        .limit(1)
    )
    row = conn.execute(query).mappings().first()
    return execution_from_row(row) if row is not None else None


def claim_step_row(conn: Connection, row: dict[str, Any], after_seq: int, *, sqlite: bool) -> StepClaim:
    """Insert a step row at the next `seq` of its execution unless its name is taken, and return what was
    written above `after_seq` (the last seq the caller read) before it, for the caller to read in. The
    execution's row is locked first (PostgreSQL), so seqs are handed out in commit order: a reader that has
    seen seq n has seen every claim below it. A name chosen before the newest steps were read is still
    unique (the primary key holds names): only its number may come out of order."""
    execution_id = row["execution_id"]
    if not sqlite:
        conn.execute(select(E.id).where(E.id == execution_id).with_for_update())
    last = int(
        conn.execute(select(func.coalesce(func.max(S.seq), 0)).where(S.execution_id == execution_id)).scalar_one()
    )
    insert = insert_for(sqlite)(STEPS)
    statement = insert.values({**row, "seq": last + 1}).on_conflict_do_nothing(
        index_elements=[S.execution_id, S.name, S.attempt]
    )
    written = conn.execute(statement.execution_options(preserve_rowcount=True)).rowcount == 1
    newer: tuple[StepRecord, ...] = ()
    if last > after_seq:
        query = select(STEPS).where(S.execution_id == execution_id, S.seq > after_seq, S.seq <= last)
        newer = tuple(step_from_row(r) for r in conn.execute(query.order_by(S.seq, S.attempt)).mappings())
    return StepClaim(last + 1 if written else None, newer)


def _lock_key(session: str) -> int:
    """A signed 64-bit advisory lock key for a client's session key."""
    return int.from_bytes(hashlib.sha256(session.encode()).digest()[:8], "big", signed=True)
