"""The schedules table: add, list, pause, remove, and the one statement that makes a tick start once.

`start_tick` moves a schedule's `last_tick` forward only if it is still behind the tick, and inserts the
tick's execution in the same transaction: of any number of workers racing for one tick, exactly one
moves it (PostgreSQL's row lock makes the others re-read the row and find it moved; SQLite's write
transactions are exclusive), so exactly one execution exists per tick, and none if the insert fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import select, update

from toolreel.core.errors import NotFoundError
from toolreel.core.model import Execution
from toolreel.core.schedule import Schedule
from toolreel.core.store._engine import Database
from toolreel.core.store._rows import dumps, execution_to_row, loads
from toolreel.core.store._tables import EXECUTIONS, SCHEDULES

__all__ = ["add_schedule", "delete_schedule", "get_schedule", "list_schedules", "pause_schedule", "start_tick"]

C = SCHEDULES.c


def add_schedule(db: Database, schedule: Schedule) -> None:
    row = {
        "id": schedule.id,
        "template": schedule.template,
        "cron": schedule.cron,
        "tz": schedule.tz,
        "inputs": dumps(schedule.inputs, f"the inputs of schedule {schedule.id}"),
        "paused": schedule.paused,
        "created_at": schedule.created_at,
        "last_tick": schedule.last_tick,
    }
    with db.write(f"adding schedule {schedule.id}") as conn:
        conn.execute(SCHEDULES.insert().values(row))


def list_schedules(db: Database, *, active_only: bool = False) -> list[Schedule]:
    query = select(SCHEDULES).order_by(C.template, C.created_at, C.id)
    if active_only:
        query = query.where(C.paused.is_(False))
    with db.read("listing schedules") as conn:
        return [_schedule(row) for row in conn.execute(query).mappings()]


def get_schedule(db: Database, schedule_id: str) -> Schedule:
    with db.read(f"reading schedule {schedule_id}") as conn:
        row = conn.execute(select(SCHEDULES).where(C.id == schedule_id)).mappings().first()
    if row is None:
        raise _not_found(db, schedule_id)
    return _schedule(row)


def delete_schedule(db: Database, schedule_id: str) -> None:
    with db.write(f"removing schedule {schedule_id}") as conn:
        if not conn.execute(SCHEDULES.delete().where(C.id == schedule_id)).rowcount:
            raise _not_found(db, schedule_id)


def pause_schedule(db: Database, schedule_id: str, *, paused: bool, now: float) -> Schedule:
    """Pause, or resume from `now`: the ticks that fell while it was paused are not started later."""
    values: dict[str, Any] = {"paused": paused}
    if not paused:
        values["last_tick"] = now
    stmt = update(SCHEDULES).where(C.id == schedule_id).values(values).returning(*SCHEDULES.c)
    with db.write(f"{'pausing' if paused else 'resuming'} schedule {schedule_id}") as conn:
        row = conn.execute(stmt).mappings().first()
    if row is None:
        raise _not_found(db, schedule_id)
    return _schedule(row)


def start_tick(db: Database, schedule_id: str, tick: float, execution: Execution) -> bool:
    """Insert `execution` as the run of tick `tick` unless that tick (or a later one) was started: one
    transaction, so of racing callers exactly one returns True."""
    moved = update(SCHEDULES).where(C.id == schedule_id, C.last_tick < tick, C.paused.is_(False))
    with db.write(f"starting tick {tick:.0f} of schedule {schedule_id}") as conn:
        if conn.execute(moved.values(last_tick=tick)).rowcount != 1:
            return False
        conn.execute(EXECUTIONS.insert().values(execution_to_row(execution)))
    return True


def _schedule(row: Mapping[Any, Any]) -> Schedule:
    return Schedule(
        id=row["id"],
        template=row["template"],
        cron=row["cron"],
        tz=row["tz"],
        inputs=loads(row["inputs"]),
        created_at=row["created_at"],
        last_tick=row["last_tick"],
        paused=bool(row["paused"]),
    )


def _not_found(db: Database, schedule_id: str) -> NotFoundError:
    return NotFoundError(
        f"no schedule {schedule_id!r} in store {db.shown} (`toolreel schedule list` shows the stored ones)"
    )
