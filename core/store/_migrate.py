"""Schema versioning: `meta.schema_version`, an ordered list of migrations, applied on open.

A new database gets the current tables directly and is stamped SCHEMA_VERSION. An older one gets each
migration above its version, in order, in one transaction. A newer one is refused (SchemaVersionError).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, inspect, select, text

from toolreel.core.errors import SchemaVersionError
from toolreel.core.store._engine import Database
from toolreel.core.store._insert import insert_for
from toolreel.core.store._tables import META, METADATA

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Migration", "upgrade"]

_VERSION_KEY = "schema_version"
# Any constant shared by every toolreel process: serializes concurrent first opens of one PostgreSQL database.
_PG_LOCK_ID = 0x746F6F6C7265656C >> 1


@dataclass(frozen=True, slots=True)
class Migration:
    """Brings a database at `version - 1` to `version`. Write new ones as ALTER/CREATE statements that
    depend on nothing but the previous version's schema (never on the current table definitions)."""

    version: int
    summary: str
    apply: Callable[[Connection], None]


def _create_v1(conn: Connection) -> None:
    METADATA.create_all(conn, checkfirst=True)


def _index_sessions_v2(conn: Connection) -> None:
    conn.execute(text("CREATE INDEX IF NOT EXISTS ix_executions_session ON executions (session)"))


def _execution_attempt_v3(conn: Connection) -> None:
    conn.execute(text("ALTER TABLE executions ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1"))


def _schedules_v4(conn: Connection) -> None:
    conn.execute(text("ALTER TABLE executions ADD COLUMN schedule TEXT"))
    conn.execute(
        text(
            "CREATE TABLE IF NOT EXISTS schedules (id TEXT PRIMARY KEY, template TEXT NOT NULL, cron TEXT NOT NULL, "
            "tz TEXT NOT NULL, inputs TEXT, paused BOOLEAN NOT NULL, created_at DOUBLE PRECISION NOT NULL, "
            "last_tick DOUBLE PRECISION NOT NULL)"
        )
    )


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial schema: executions, steps, templates, idempotency, meta", _create_v1),
    Migration(2, "executions found by their client session (one recording across gateways)", _index_sessions_v2),
    Migration(3, "executions count their attempts (a failed run retried goes on under its id)", _execution_attempt_v3),
    Migration(4, "schedules, and the schedule that started an execution", _schedules_v4),
)
SCHEMA_VERSION = MIGRATIONS[-1].version


def upgrade(db: Database, *, migrations: Sequence[Migration] = MIGRATIONS) -> int:
    """Bring the database to the last of `migrations`; returns the version it was at (0: new)."""
    target = migrations[-1].version if migrations else 0
    with db.read("reading the schema version") as conn:
        found = read_version(conn)
    _refuse_newer(db, found, target)
    if found == target:
        return found
    with db.write("creating or migrating the schema") as conn:
        if not db.is_sqlite:
            conn.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": _PG_LOCK_ID})
        found = read_version(conn)  # another process may have done it while we waited for the lock
        _refuse_newer(db, found, target)
        if found == 0:
            METADATA.create_all(conn, checkfirst=True)
        else:
            for migration in migrations:
                if found < migration.version <= target:
                    migration.apply(conn)
        if found != target:
            write_version(conn, target, sqlite=db.is_sqlite)
    return found


def read_version(conn: Connection) -> int:
    if not inspect(conn).has_table(META.name):
        return 0
    value = conn.execute(select(META.c.value).where(META.c.key == _VERSION_KEY)).scalar()
    return int(value) if value is not None else 0


def write_version(conn: Connection, version: int, *, sqlite: bool) -> None:
    insert = insert_for(sqlite)(META)
    stmt = insert.values(key=_VERSION_KEY, value=str(version))
    conn.execute(stmt.on_conflict_do_update(index_elements=[META.c.key], set_={"value": stmt.excluded.value}))


def _refuse_newer(db: Database, found: int, supported: int) -> None:
    if found > supported:
        raise SchemaVersionError(
            f"the database at {db.shown} has schema v{found}, this toolreel supports up to v{supported}: "
            "upgrade toolreel (pip install -U toolreel), or point --db/TOOLREEL_DB at another database"
        )
