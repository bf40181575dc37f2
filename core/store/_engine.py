"""One SQLAlchemy engine per store, tuned per dialect, and the one place DB errors become `StoreError`.

SQLite: the file is created 0600 before SQLite opens it (its -wal/-shm copy that mode), WAL, synchronous=NORMAL,
a busy timeout, foreign keys; transactions that write start with BEGIN IMMEDIATE so two writers queue on the
busy timeout instead of failing a lock upgrade. PostgreSQL: psycopg 3; a pooled connection idle for a second
is pinged before reuse.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError, DisconnectionError, SQLAlchemyError
from sqlalchemy.pool import StaticPool

from toolreel.core.errors import StoreError

__all__ = ["WRITE_OPTION", "Database"]

WRITE_OPTION = "toolreel_write"
BUSY_TIMEOUT_MS = 10_000
PG_IDLE_PING_SECONDS = 1.0
NOW_COMMITS = 100  # at a few WAL pages each: the pool's auto-checkpoint (1,000 pages) runs every few hundred


class Database:
    """An engine plus the store URL as shown (password masked) for every message."""

    def __init__(self, url: URL, shown: str) -> None:
        self.shown = shown
        self.dialect = url.get_backend_name()
        if self.dialect not in ("sqlite", "postgresql"):
            raise StoreError(
                f"store {shown}: unsupported database {self.dialect!r}; use sqlite:///PATH or "
                "postgresql+psycopg://USER@HOST/DB"
            )
        self._memory = self.dialect == "sqlite" and _is_memory(url)
        # One shared in-memory connection is only safe if transactions never interleave across threads.
        self._lock: contextlib.AbstractContextManager[Any] = threading.Lock() if self._memory else _NO_LOCK
        with self.failing("opening the database"):
            self.engine = _sqlite_engine(url, self._memory) if self.dialect == "sqlite" else _pg_engine(url)
        self.writer = self.engine.execution_options(**{WRITE_OPTION: True})
        self._url = url
        self._now: sqlite3.Connection | None = None  # write_now's own connection, opened on first use
        self._now_lock = threading.Lock()
        self._now_commits = 0

    @property
    def is_sqlite(self) -> bool:
        return self.dialect == "sqlite"

    @property
    def writes_now(self) -> bool:
        """Whether write_now can ever write: a SQLite file (not a network database, not in memory)."""
        return self.dialect == "sqlite" and not self._memory

    @contextlib.contextmanager
    def failing(self, what: str) -> Iterator[None]:
        """Turn a database or file-system error into StoreError naming the store and what failed."""
        try:
            yield
        except SQLAlchemyError as exc:
            raise StoreError(f"store {self.shown}: {what} failed: {_reason(exc)}") from exc
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"store {self.shown}: {what} failed: {_with_hint(str(exc))}") from exc

    @contextlib.contextmanager
    def write(self, what: str) -> Iterator[Connection]:
        """A write transaction (BEGIN IMMEDIATE on SQLite), committed on exit."""
        with self.failing(what), self._lock, self.writer.begin() as conn:
            yield conn

    def sqlite_write(self, what: str, work: Callable[[sqlite3.Connection], None]) -> None:
        """Run `work` in a write transaction on a pooled connection's driver connection: for the step
        writes, where SQLAlchemy's per-statement work was most of the cost (a one-row fenced write
        took 0.18 ms through a Connection, 0.03-0.07 ms here)."""
        if not self.is_sqlite:
            raise TypeError(f"store {self.shown}: sqlite_write on a {self.dialect} database")
        with self.failing(what), self._lock:
            pooled = self.engine.raw_connection()
            try:
                _immediate(pooled.driver_connection, work)  # type: ignore[arg-type]
            finally:
                pooled.close()  # back to the pool

    def write_now(self, what: str, work: Callable[[sqlite3.Connection], None]) -> bool:
        """Run `work` in a write transaction on the calling thread, if that needs no waiting: a SQLite
        file whose write lock is free. False (nothing done) otherwise: use a worker thread then.

        For an event loop that must commit small rows before it goes on: a hop to a worker thread and
        back costs more than the commit itself. The connection never waits for a lock (busy timeout 0)
        and never checkpoints (the fsync that could stall the loop). Every NOW_COMMITS commits it declines
        one, so a pool connection in a worker thread commits it and runs SQLite's auto-checkpoint: a WAL
        left to grow makes every page lookup slower (a 10,000-step run grew it by 70 MB)."""
        if not self.writes_now or not self._now_lock.acquire(blocking=False):
            return False
        try:
            if self._now_commits >= NOW_COMMITS:
                self._now_commits = 0
                return False
            with self.failing(what):
                try:
                    _immediate(self._now or self._open_now(), work)
                except sqlite3.OperationalError as exc:
                    if exc.sqlite_errorcode in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                        return False  # another connection holds the write lock: nothing was written
                    raise
                self._now_commits += 1
                return True
        finally:
            self._now_lock.release()

    def _open_now(self) -> sqlite3.Connection:
        cargs, cparams = self.engine.dialect.create_connect_args(self._url)
        cparams.update(check_same_thread=False, timeout=0)  # the lock above keeps it to one thread at a time
        driver: sqlite3.Connection = self.engine.dialect.loaded_dbapi.connect(*cargs, **cparams)
        _sqlite_on_connect(driver, None)
        driver.execute("PRAGMA busy_timeout=0")
        driver.execute("PRAGMA wal_autocheckpoint=0")
        self._now = driver
        return driver

    @contextlib.contextmanager
    def read(self, what: str) -> Iterator[Connection]:
        with self.failing(what), self._lock, self.engine.begin() as conn:
            yield conn

    def close(self) -> None:
        with self._now_lock:
            if self._now is not None:
                self._now.close()
                self._now = None
        self.engine.dispose()


_NO_LOCK = contextlib.nullcontext()


def _immediate(driver: sqlite3.Connection, work: Callable[[sqlite3.Connection], None]) -> None:
    """BEGIN IMMEDIATE, `work`, COMMIT on a driver connection."""
    driver.execute("BEGIN IMMEDIATE")
    try:
        work(driver)
    except BaseException:  # rollback only, re-raised: a cancelled or failed write leaves no open transaction
        driver.rollback()
        raise
    driver.commit()


def _reason(exc: SQLAlchemyError) -> str:
    # The driver's own message, never SQLAlchemy's rendering, which appends the statement and its parameters
    # (megabytes of step output, possibly values that must not be shown).
    detail = str(exc.orig) if isinstance(exc, DBAPIError) else str(exc).split("\n", 1)[0]
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return " ".join(detail.split()) + " (the connection was lost; the next call reconnects)"
    return _with_hint(detail)


def _with_hint(detail: str) -> str:
    """The driver's message on one line, with what to check for the failures a user can mend."""
    detail = " ".join(detail.split())
    hint = ""
    if "locked" in detail:
        hint = " (another process held a write lock longer than the busy timeout)"
    elif "readonly" in detail or "read-only" in detail:
        hint = " (the database refuses writes: check its permissions, read-only settings and the URL)"
    elif "connect" in detail:
        hint = " (is the server running, and are host, port, user and database in the URL right?)"
    return detail + hint


def _is_memory(url: URL) -> bool:
    database = url.database or ""
    return database in ("", ":memory:") or "mode=memory" in database or url.query.get("mode") == "memory"


def _create_sqlite_file(url: URL) -> None:
    """Create the parent directory (0700) and an empty file with mode 0600 before SQLite opens it."""
    database = url.database or ""
    if database.startswith("file:"):  # a SQLite URI (uri=true): the caller chose its own mode
        return
    path = Path(database).expanduser()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except FileExistsError as exc:  # mkdir's own message names the path but not the problem
        blocking = next(p for p in (path.parent, *path.parent.parents) if p.exists() and not p.is_dir())
        raise NotADirectoryError(errno.ENOTDIR, "exists and is not a directory", str(blocking)) from exc
    if path.exists():
        return
    with contextlib.suppress(FileExistsError):  # another process created it between the check and here
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        os.chmod(path, 0o600)  # umask could only have removed bits; make the mode exact anyway
        _incremental_vacuum(path)


def _incremental_vacuum(path: Path) -> None:
    """A new file is made for incremental vacuum (retention gives freed pages back): the setting only
    holds if it comes before the header is first written, which turning on WAL does."""
    driver = sqlite3.connect(path, isolation_level=None)
    try:
        driver.execute("PRAGMA auto_vacuum=INCREMENTAL")
        driver.execute("PRAGMA journal_mode=WAL")
    finally:
        driver.close()


def _sqlite_engine(url: URL, memory: bool) -> Engine:
    if not memory:
        _create_sqlite_file(url)
    engine = create_engine(
        url,
        connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
        poolclass=StaticPool if memory else None,
    )
    event.listen(engine, "connect", _sqlite_on_connect)
    event.listen(engine, "begin", _sqlite_on_begin)
    return engine


def _sqlite_on_connect(dbapi_connection: Any, _record: Any) -> None:
    # Autocommit at the driver level: pysqlite's own implicit BEGIN would defeat BEGIN IMMEDIATE below.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", f"busy_timeout={BUSY_TIMEOUT_MS}", "foreign_keys=ON"):
            cursor.execute(f"PRAGMA {pragma}")
    finally:
        cursor.close()


def _sqlite_on_begin(conn: Any) -> None:
    write = conn.get_execution_options().get(WRITE_OPTION, False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def _pg_engine(url: URL) -> Engine:
    engine = create_engine(url, pool_size=5, max_overflow=20)
    event.listen(engine, "checkin", _mark_idle)
    event.listen(engine, "checkout", functools.partial(_ping_if_idle, engine.dialect))
    return engine


def _mark_idle(_dbapi_connection: Any, record: Any) -> None:
    record.info["idle_since"] = time.monotonic()


def _ping_if_idle(dialect: Any, dbapi_connection: Any, record: Any, _proxy: Any) -> None:
    """A gateway lives for days while the server may restart: a pooled connection idle for a while is pinged
    before use, and a dead one replaced (DisconnectionError makes the pool retry with a new connection).
    Unlike pool_pre_ping, a busy writer pays nothing: pinging every checkout doubled put_step's latency."""
    idle_since = record.info.get("idle_since")
    if idle_since is None or time.monotonic() - idle_since < PG_IDLE_PING_SECONDS:
        return
    try:
        dialect.do_ping(dbapi_connection)
        dbapi_connection.rollback()
    except dialect.loaded_dbapi.Error as exc:
        raise DisconnectionError(f"pooled connection is dead: {exc}") from exc
