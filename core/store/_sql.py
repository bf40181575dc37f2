"""`SQLStore`: the `Store` protocol over SQLAlchemy Core, for SQLite and PostgreSQL alike.

Every method is one short transaction on a pooled connection, safe to call from any thread. Statements are
built once and reused, so SQLAlchemy compiles each only once. Claims use FOR UPDATE SKIP LOCKED on
PostgreSQL; on SQLite the BEGIN IMMEDIATE of every write transaction gives the same exclusivity.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from sqlalchemy import Connection, Integer, and_, bindparam, cast, exists, func, or_, select, tuple_, update
from sqlalchemy.exc import ArgumentError, IntegrityError
from sqlalchemy.sql.dml import Insert

from toolreel.core.errors import NotFoundError, StaleClaimError, StoreError
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
from toolreel.core.store import _schedules
from toolreel.core.store._engine import Database
from toolreel.core.store._insert import insert_for
from toolreel.core.store._migrate import upgrade
from toolreel.core.store._paths import display_url, normalize_url, resolve_url
from toolreel.core.store._prune import PRUNABLE, PruneReport, prune
from toolreel.core.store._recordings import claim_step_row, recording_row
from toolreel.core.store._rows import (
    EXECUTION_FIELDS,
    canonical_json,
    column_value,
    dumps,
    execution_from_row,
    execution_to_row,
    loads,
    step_from_row,
    step_to_row,
    template_from_row,
)
from toolreel.core.store._tables import EXECUTIONS, IDEMPOTENCY, META, STEPS, TEMPLATES
from toolreel.core.store_hooks import run_open_hooks

__all__ = ["SQLStore", "open_store"]

E, S, T, K, M = EXECUTIONS.c, STEPS.c, TEMPLATES.c, IDEMPOTENCY.c, META.c
# `fence` changes only by claiming, `id` never: update_execution refuses both.
_SETTABLE = EXECUTION_FIELDS - {"id", "fence"}
_SAVE_ATTEMPTS = 20
_FENCE = "claim_fence"  # bound parameter of the fenced step write; no column has this name
_RUNNABLE = (ExecutionStatus.PENDING.value, ExecutionStatus.RUNNING.value)
# try_put_steps leaves larger batches (characters of their encoded rows) to a worker thread: the loop
# must not spend long on them
_NOW_CHARS = 64 * 1024
# The execution columns that hold what a run was given or produced: redacted like step rows.
_EXECUTION_REDACTED = frozenset({"inputs", "output", "error", "prompt"})


class _Stale(Exception):
    """A fenced SQLite step batch found another fence: rolled back, then explained outside the transaction."""


def open_store(url: str | None = None) -> SQLStore:
    """Open (creating or migrating) the store at `url`, else $TOOLREEL_DB, else the default SQLite file;
    then run the open hooks (`core.store_hooks`: the recorder drains journals of dead processes)."""
    resolved = resolve_url(url)
    store = SQLStore(resolved)
    run_open_hooks(store, resolved)
    return store


class SQLStore:
    """The store over one database. `url` is the URL as shown: its password, if any, is masked.

    Every row written passes through `redactor` (SPEC §3 "Secrets"): whoever writes, no secret is stored
    in clear. Writers add the secret values they know (`store.redactor.add(...)`)."""

    def __init__(self, url: str) -> None:
        self.redactor = Redactor()
        try:
            parsed = normalize_url(url)
        except ArgumentError as exc:
            raise StoreError(
                f"store URL {url!r} is not a database URL ({exc}); use sqlite:///PATH or "
                "postgresql+psycopg://USER@HOST/DB"
            ) from exc
        self.url = display_url(parsed)
        self._db = Database(parsed, self.url)
        try:
            upgrade(self._db)
        except BaseException:  # cleanup only, re-raised: no half-opened engine is left behind
            self._db.close()
            raise
        self._prepare_statements()

    def _prepare_statements(self) -> None:
        insert = insert_for(self._db.is_sqlite)
        step_key = [S.execution_id, S.name, S.attempt]
        self._upsert_step = _upsert(insert(STEPS), step_key)
        fenced = insert(STEPS).from_select(list(STEPS.c), _if_fence_holds(typed=not self._db.is_sqlite))
        # SQLAlchemy keeps an INSERT's rowcount only when asked: 0 rows written is how a stale fence shows.
        self._upsert_step_fenced = _upsert(fenced, step_key).execution_options(preserve_rowcount=True)
        self._upsert_idempotent = _upsert(insert(IDEMPOTENCY), [K.key])
        self._upsert_meta = _upsert(insert(META), [M.key])
        # SQLite's step batches skip SQLAlchemy altogether: statements compiled once, rows handed to the
        # driver's executemany.
        dialect = self._db.engine.dialect
        self._step_columns = [c.name for c in STEPS.c]
        self._upsert_steps_sql = str(self._upsert_step.compile(dialect=dialect))
        self._fence_sql = str(select(E.fence).where(E.id == bindparam("id")).compile(dialect=dialect))
        self._insert_execution = insert(EXECUTIONS)
        self._insert_template = insert(TEMPLATES)

    def __enter__(self) -> SQLStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLStore({self.url!r})"

    def close(self) -> None:
        self._db.close()

    # executions -----------------------------------------------------------------------

    def create_execution(self, execution: Execution) -> None:
        given = {name: getattr(execution, name) for name in _EXECUTION_REDACTED}
        row = execution_to_row(execution.replace(**self._redacted_fields(given)))
        with self._db.write(f"creating execution {execution.id}") as conn:
            conn.execute(self._insert_execution, row)

    def update_execution(self, execution_id: str, *, fence: int | None = None, **fields: object) -> Execution:
        unknown = sorted(fields.keys() - _SETTABLE)
        if unknown:
            raise TypeError(f"update_execution: cannot set {unknown}; settable fields: {sorted(_SETTABLE)}")
        fields = {**fields, **self._redacted_fields(fields)}
        values = {name: column_value(name, value) for name, value in fields.items()}
        values.setdefault("updated_at", time.time())
        stmt = update(EXECUTIONS).where(E.id == execution_id)
        if fence is not None:
            stmt = stmt.where(E.fence == fence)
        with self._db.write(f"updating execution {execution_id}") as conn:
            row = conn.execute(stmt.values(values).returning(*EXECUTIONS.c)).mappings().first()
            if row is None:
                raise self._not_written(conn, execution_id, fence)
        return execution_from_row(row)

    def _redacted_fields(self, fields: Mapping[str, object]) -> dict[str, object]:
        return self.redactor.fields({name: fields[name] for name in _EXECUTION_REDACTED if name in fields})

    def get_execution(self, execution_id: str) -> Execution:
        with self._db.read(f"reading execution {execution_id}") as conn:
            row = conn.execute(select(EXECUTIONS).where(E.id == execution_id)).mappings().first()
        if row is None:
            raise self._no_execution(execution_id)
        return execution_from_row(row)

    def list_executions(self, query: ExecutionQuery = ExecutionQuery()) -> tuple[list[Execution], str | None]:
        limit = query.limit
        select_ = select(EXECUTIONS).order_by(E.created_at.desc(), E.id.desc()).limit(limit + 1)
        if query.status is not None:
            select_ = select_.where(E.status == ExecutionStatus(query.status).value)
        if query.template is not None:
            select_ = select_.where(E.template == query.template)
        if query.cursor is not None:
            select_ = select_.where(tuple_(E.created_at, E.id) < tuple_(*_decode_cursor(query.cursor)))
        with self._db.read("listing executions") as conn:
            page = [execution_from_row(row) for row in conn.execute(select_).mappings()]
        if len(page) <= limit:
            return page, None
        page = page[:limit]
        return page, _encode_cursor(page[-1])

    # steps ----------------------------------------------------------------------------

    def put_step(self, step: StepRecord, *, fence: int | None = None) -> None:
        row = step_to_row(self.redactor.step(step))
        what = f"writing step {step.name!r} of execution {step.execution_id}"
        if self._db.is_sqlite:
            self._put_sqlite([row], what, step.execution_id if fence is not None else None, fence)
            return
        with self._db.write(what) as conn:
            if fence is None:
                conn.execute(self._upsert_step, row)
            elif conn.execute(self._upsert_step_fenced, {**row, _FENCE: fence}).rowcount != 1:
                raise self._not_written(conn, step.execution_id, fence)

    def put_steps(self, steps: Sequence[StepRecord], *, fence: int | None = None) -> None:
        rows, execution_id = _step_rows(self.redactor, steps, fence)
        if not rows:
            return
        what = f"writing {len(rows)} steps"
        if self._db.is_sqlite:
            self._put_sqlite(rows, what, execution_id, fence)
            return
        with self._db.write(what) as conn:
            if execution_id is not None:
                # The fence is read under a share lock, so a claim cannot slip in between this check and
                # the write.
                current = conn.execute(
                    select(E.fence).where(E.id == execution_id).with_for_update(read=True)
                ).scalar_one_or_none()
                if current != fence:
                    raise self._not_written(conn, execution_id, fence)
            conn.execute(self._upsert_step, rows)

    def _put_sqlite(
        self, rows: list[dict[str, object]], what: str, execution_id: str | None, fence: int | None
    ) -> None:
        try:
            self._db.sqlite_write(what, partial(self._write_steps, rows=rows, execution_id=execution_id, fence=fence))
        except _Stale:
            raise self._stale(what, execution_id, fence) from None

    @property
    def writes_now(self) -> bool:
        return self._db.writes_now

    def try_put_steps(self, steps: Sequence[StepRecord], *, fence: int | None = None) -> bool:
        if not self._db.writes_now:
            return False
        rows, execution_id = _step_rows(self.redactor, steps, fence)
        if sum(len(value) for row in rows for value in row.values() if isinstance(value, str)) > _NOW_CHARS:
            return False
        what = f"writing {len(rows)} steps"
        try:
            return not rows or self._db.write_now(
                what, partial(self._write_steps, rows=rows, execution_id=execution_id, fence=fence)
            )
        except _Stale:
            raise self._stale(what, execution_id, fence) from None

    def _write_steps(
        self, driver: sqlite3.Connection, rows: list[dict[str, object]], execution_id: str | None, fence: int | None
    ) -> None:
        """SQLite's step batches skip SQLAlchemy: they are the hot path of both the recorder and the engine.
        The write transaction is exclusive, so a claim cannot slip in between the fence check and the write."""
        if execution_id is not None and driver.execute(self._fence_sql, (execution_id,)).fetchone() != (fence,):
            raise _Stale
        columns = self._step_columns
        driver.executemany(self._upsert_steps_sql, [tuple(row[c] for c in columns) for row in rows])

    def _stale(self, what: str, execution_id: str | None, fence: int | None) -> StoreError:
        assert execution_id is not None  # only a fenced write raises _Stale
        with self._db.read(what) as conn:
            return self._not_written(conn, execution_id, fence)

    def get_steps(self, execution_id: str, *, all_attempts: bool = False, after_seq: int = 0) -> list[StepRecord]:
        query = select(STEPS).where(S.execution_id == execution_id).order_by(S.seq, S.attempt)
        if after_seq:
            query = query.where(S.seq > after_seq)
        if not all_attempts:
            latest = STEPS.alias("latest")
            newest = select(func.max(latest.c.attempt)).where(
                latest.c.execution_id == S.execution_id, latest.c.name == S.name
            )
            query = query.where(S.attempt == newest.scalar_subquery())
        with self._db.read(f"reading the steps of execution {execution_id}") as conn:
            steps = [step_from_row(row) for row in conn.execute(query).mappings()]
            if not steps and not after_seq and conn.execute(select(E.id).where(E.id == execution_id)).first() is None:
                raise self._no_execution(execution_id)
        return steps

    # one recording across gateways ----------------------------------------------------

    def recording_of(self, session: str, *, active_since: float, new: Execution) -> Execution:
        sqlite = self._db.is_sqlite
        with self._db.write(f"finding the recording of client {session}") as conn:
            found = recording_row(conn, session, active_since, sqlite=sqlite)
            if found is not None:
                return found
            conn.execute(self._insert_execution, execution_to_row(new))
        return new

    def claim_step(self, step: StepRecord, *, after_seq: int) -> StepClaim:
        row = step_to_row(self.redactor.step(step))
        with self._db.write(f"claiming step {step.name!r} of execution {step.execution_id}") as conn:
            return claim_step_row(conn, row, after_seq, sqlite=self._db.is_sqlite)

    # templates ------------------------------------------------------------------------

    def save_template(self, draft: TemplateDraft) -> TemplateRecord:
        as_dict = dict(draft.definition)
        stored = dumps(as_dict, f"template {draft.name!r}")
        digest = hashlib.sha256(canonical_json(as_dict).encode()).hexdigest()
        row: dict[str, Any] = {
            "name": draft.name,
            "hash": digest,
            "definition": stored,
            "description": draft.description,
            "source_executions": json.dumps(list(draft.source_executions)),
        }
        for attempt in range(1, _SAVE_ATTEMPTS + 1):
            try:
                return self._insert_next_version(row)
            except StoreError as exc:
                # Two processes read the same max(version): the PK refuses the second insert; read again.
                if not isinstance(exc.__cause__, IntegrityError) or attempt == _SAVE_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    def _insert_next_version(self, row: dict[str, Any]) -> TemplateRecord:
        name = row["name"]
        with self._db.write(f"saving template {name!r}") as conn:
            latest = conn.execute(select(func.max(T.version)).where(T.name == name)).scalar()
            values = {**row, "version": (latest or 0) + 1, "created_at": time.time()}
            conn.execute(self._insert_template, values)
        return template_from_row(values)

    def get_template(self, name: str, version: int | None = None) -> TemplateRecord:
        query = select(TEMPLATES).where(T.name == name).order_by(T.version.desc()).limit(1)
        if version is not None:
            query = query.where(T.version == version)
        with self._db.read(f"reading template {name!r}") as conn:
            row = conn.execute(query).mappings().first()
            if row is None:
                raise self._no_template(conn, name, version)
        return template_from_row(row)

    def list_templates(self) -> list[TemplateRecord]:
        latest = TEMPLATES.alias("latest")
        newest = select(func.max(latest.c.version)).where(latest.c.name == T.name).scalar_subquery()
        query = select(TEMPLATES).where(T.version == newest).order_by(T.name)
        with self._db.read("listing templates") as conn:
            return [template_from_row(row) for row in conn.execute(query).mappings()]

    def delete_template(self, name: str) -> int:
        with self._db.write(f"deleting template {name!r}") as conn:
            deleted = conn.execute(TEMPLATES.delete().where(T.name == name)).rowcount
            if not deleted:
                raise self._no_template(conn, name, None)
        return int(deleted)

    # idempotency ----------------------------------------------------------------------

    def get_idempotent(self, key: str, *, now: float) -> JSON | None:
        key = self.redactor.key(key)  # a key holding a secret is stored as its keyed hash
        with self._db.read("reading an idempotency result") as conn:
            row = conn.execute(select(K.result, K.expires_at).where(K.key == key)).first()
        if row is None or (row.expires_at is not None and row.expires_at <= now):
            return None
        return loads(row.result)

    def put_idempotent(self, key: str, result: JSON, *, expires_at: float | None) -> None:
        key = self.redactor.key(key)
        text = dumps(self.redactor.clean(result), f"the result for idempotency key {key!r}")
        row = {"key": key, "result": text, "expires_at": expires_at}
        with self._db.write("storing an idempotency result") as conn:
            conn.execute(self._upsert_idempotent, row)

    # opaque values kept with the database (sign-ins: already encrypted by their owner) -----------------

    def get_kept(self, key: str) -> str | None:
        with self._db.read(f"reading {key!r}") as conn:
            value: str | None = conn.execute(select(M.value).where(M.key == key)).scalar()
        return value

    def put_kept(self, key: str, value: str) -> None:
        with self._db.write(f"storing {key!r}") as conn:
            conn.execute(self._upsert_meta, {"key": key, "value": value})

    def drop_kept(self, key: str) -> bool:
        with self._db.write(f"removing {key!r}") as conn:
            return bool(conn.execute(META.delete().where(M.key == key)).rowcount)

    def kept_keys(self, prefix: str) -> list[str]:
        with self._db.read(f"listing {prefix!r}") as conn:
            rows = conn.execute(select(M.key).where(M.key.startswith(prefix, autoescape=True)).order_by(M.key))
            return [str(key) for key in rows.scalars()]

    # retention --------------------------------------------------------------------------

    def prune_executions(
        self, *, before: float, statuses: Sequence[ExecutionStatus] = PRUNABLE, dry_run: bool = False
    ) -> PruneReport:
        return prune(self._db, before=before, statuses=statuses, dry_run=dry_run)

    # schedules --------------------------------------------------------------------------

    def add_schedule(self, schedule: Schedule) -> None:
        _schedules.add_schedule(self._db, schedule.replace(inputs=self.redactor.clean(schedule.inputs)))

    def list_schedules(self, *, active_only: bool = False) -> list[Schedule]:
        return _schedules.list_schedules(self._db, active_only=active_only)

    def get_schedule(self, schedule_id: str) -> Schedule:
        return _schedules.get_schedule(self._db, schedule_id)

    def delete_schedule(self, schedule_id: str) -> None:
        _schedules.delete_schedule(self._db, schedule_id)

    def pause_schedule(self, schedule_id: str, *, paused: bool, now: float) -> Schedule:
        return _schedules.pause_schedule(self._db, schedule_id, paused=paused, now=now)

    def start_tick(self, schedule_id: str, tick: float, execution: Execution) -> bool:
        given = {name: getattr(execution, name) for name in _EXECUTION_REDACTED}
        return _schedules.start_tick(self._db, schedule_id, tick, execution.replace(**self._redacted_fields(given)))

    # claims ---------------------------------------------------------------------------

    def claim_executions(
        self, owner: str, *, lease_seconds: float, limit: int, now: float, take_over: Sequence[str] = ()
    ) -> list[Execution]:
        runnable = or_(
            and_(E.status.in_(_RUNNABLE), _lease_free(now, take_over)),
            # A paused root whose wait is due: its lease_until is when it wakes (replayer._wait).
            and_(
                E.status == ExecutionStatus.PAUSED.value,
                E.parent_id.is_(None),
                E.claimed_by.is_(None),
                E.lease_until.is_not(None),
                E.lease_until <= now,
            ),
        )
        # Oldest first, so a busy fleet still drains its backlog in order.
        pick = select(E.id).where(runnable).order_by(E.created_at, E.id).limit(limit)
        with self._db.write(f"claiming executions for {owner}") as conn:
            ids = list(conn.execute(pick.with_for_update(skip_locked=True)).scalars())
            if not ids:
                return []
            rows = conn.execute(_claim(owner, lease_seconds, now).where(E.id.in_(ids))).mappings().all()
        return sorted((execution_from_row(row) for row in rows), key=lambda e: (e.created_at, e.id))

    def claim_execution(
        self, execution_id: str, owner: str, *, lease_seconds: float, now: float, take_over: Sequence[str] = ()
    ) -> Execution | None:
        stmt = _claim(owner, lease_seconds, now).where(
            E.id == execution_id, or_(E.claimed_by == owner, _lease_free(now, take_over))
        )
        with self._db.write(f"claiming execution {execution_id} for {owner}") as conn:
            row = conn.execute(stmt).mappings().first()
            if row is None and conn.execute(select(E.id).where(E.id == execution_id)).first() is None:
                raise self._no_execution(execution_id)
        return None if row is None else execution_from_row(row)

    def renew_claims(self, owner: str, *, lease_seconds: float, now: float) -> int:
        stmt = update(EXECUTIONS).where(E.claimed_by == owner).values(lease_until=now + lease_seconds)
        with self._db.write(f"renewing the claims of {owner}") as conn:
            return int(conn.execute(stmt).rowcount)

    def release_claim(self, execution_id: str, owner: str) -> None:
        stmt = update(EXECUTIONS).where(E.id == execution_id, E.claimed_by == owner)
        with self._db.write(f"releasing execution {execution_id}") as conn:
            conn.execute(stmt.values(claimed_by=None, lease_until=None))

    # errors ---------------------------------------------------------------------------

    def _not_written(self, conn: Connection, execution_id: str, fence: int | None) -> StoreError:
        """Why a write guarded by the execution's id (and fence) touched no row."""
        row = conn.execute(select(E.fence, E.claimed_by).where(E.id == execution_id)).first()
        if row is None:
            return self._no_execution(execution_id)
        return StaleClaimError(
            f"execution {execution_id} is now driven by {row.claimed_by or 'no process'} (claim fence "
            f"{row.fence}, this write carried {fence}): this process lost its claim and must stop driving it"
        )

    def _no_execution(self, execution_id: str) -> NotFoundError:
        return NotFoundError(
            f"no execution {execution_id!r} in store {self.url} (`toolreel executions list` shows the stored ones)"
        )

    def _no_template(self, conn: Connection, name: str, version: int | None) -> NotFoundError:
        versions = conn.execute(select(func.min(T.version), func.max(T.version)).where(T.name == name)).first()
        if version is not None and versions is not None and versions[1] is not None:
            return NotFoundError(
                f"template {name!r} has no version {version} in store {self.url} "
                f"(versions {versions[0]}..{versions[1]} exist; the latest is {versions[1]})"
            )
        names = list(conn.execute(select(T.name).distinct().order_by(T.name).limit(11)).scalars())
        known = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "") if names else "none"
        return NotFoundError(f"no template named {name!r} in store {self.url} (stored templates: {known})")


def _step_rows(
    redactor: Redactor, steps: Sequence[StepRecord], fence: int | None
) -> tuple[list[dict[str, object]], str | None]:
    """The rows to write, and the execution whose fence guards them (None for an unfenced write). Later
    records of one (execution, name, attempt) replace earlier ones, as sequential put_step would:
    PostgreSQL refuses one statement touching a row twice, so only the last survives here."""
    latest = {(s.execution_id, s.name, s.attempt): s for s in steps}
    rows = [step_to_row(redactor.step(s)) for s in latest.values()]
    if fence is None:
        return rows, None
    executions = {s.execution_id for s in steps}
    if len(executions) > 1:
        raise ValueError("a fenced put_steps writes the steps of one execution")
    return rows, next(iter(executions), None)


def _upsert(insert: Insert, keys: list[Any]) -> Insert:
    """INSERT ... ON CONFLICT (keys) DO UPDATE every other column (both dialects' insert() offer it)."""
    stmt: Any = insert
    others = {c.name: stmt.excluded[c.name] for c in insert.table.columns if c.name not in {k.name for k in keys}}
    result: Insert = stmt.on_conflict_do_update(index_elements=keys, set_=others)
    return result


def _if_fence_holds(*, typed: bool) -> Any:
    """SELECT the step's values as bound parameters only while the execution's fence is the writer's: check
    and write in one statement. FOR SHARE (PostgreSQL; SQLite's BEGIN IMMEDIATE already excludes others)
    makes a concurrent claim wait for this commit instead of letting a stale write land after it."""
    current = select(E.id).where(E.id == bindparam("execution_id"), E.fence == bindparam(_FENCE, type_=Integer))
    # PostgreSQL types a bare NULL parameter in a SELECT list as text: cast each to its column's type.
    values = [cast(bindparam(column.name), column.type) if typed else bindparam(column.name) for column in STEPS.c]
    return select(*values).where(exists(current.with_for_update(read=True)))


def _lease_free(now: float, take_over: Sequence[str] = ()) -> Any:
    free = or_(E.claimed_by.is_(None), E.lease_until.is_(None), E.lease_until < now)
    return or_(free, E.claimed_by.in_(list(take_over))) if take_over else free


def _claim(owner: str, lease_seconds: float, now: float) -> Any:
    values = {"fence": E.fence + 1, "claimed_by": owner, "lease_until": now + lease_seconds}
    return update(EXECUTIONS).values(values).returning(*EXECUTIONS.c)


def _encode_cursor(last: Execution) -> str:
    raw = json.dumps([last.created_at, last.id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[float, str]:
    try:
        created_at, execution_id = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        return float(created_at), str(execution_id)
    except (binascii.Error, ValueError, TypeError) as exc:
        raise ValueError(
            f"cursor {cursor!r} was not returned by list_executions: pass the next cursor of a previous page"
        ) from exc
