"""The drain: a child process of the gateway that writes its recordings to the store.

`python -m toolreel.recorder.drain` reads batches of recorded calls from stdin (`recorder._journal`),
builds the rows (outputs per SPEC §4, secrets redacted), writes them in one transaction and
acknowledges each batch on stdout. A failed write is reported to the gateway and retried;
the drain ends at end of input, or when its gateway is gone.

It stays out of the way of forwarding twice over. It runs at the lowest CPU priority
(SCHED_IDLE where there is one: a CPU running only it still counts as idle when the kernel
places a waking process) from its first write on. Its start (SQLAlchemy, the store, the first
statements compiled: about half a second of CPU) runs at the gateway's own priority: at
SCHED_IDLE, on a machine that other work keeps busy, it got next to no CPU, and no recording
reached the store for minutes. And it holds what it reads while calls are streaming in, writing
once the input has been quiet for QUIET, the oldest held call is MAX_DELAY old, MAX_HELD
calls are held, or the gateway asks for a flush: even at the lowest priority, a process
that works during a burst of calls on two cores moved the gateway's processes between
them and cost up to a fifth of the burst's throughput. Holding costs no safety: the gateway
keeps every batch until its write is confirmed, and at end of input everything is written.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from toolreel.core.errors import StoreError
from toolreel.core.store_peek import in_memory
from toolreel.recorder._journal import FrameReader, encode, unpack
from toolreel.recorder._rows import ExecutionEntry, entry, write_entries
from toolreel.recorder._spool import know_secrets

if TYPE_CHECKING:
    from toolreel.core.store import Store

__all__ = ["main"]

logger = logging.getLogger("toolreel.drain")
RETRY_DELAY = 1.0
CHUNK = 64  # entries per transaction once a larger write failed
LAST_TRIES = 3  # attempts left for a batch once the gateway is gone
QUIET = 0.2  # seconds without input that end a burst (the gateway sends a batch every 50 ms while busy)
MAX_DELAY = 2.0  # seconds the oldest held call waits at most
MAX_HELD = 20_000  # calls held at most


class _Reply:
    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream

    def __call__(self, *message: Any) -> bool:
        """Send a message to the gateway; False when it is gone (then the store is what matters)."""
        try:
            self._stream.write(encode(message))
            self._stream.flush()
        except (BrokenPipeError, ValueError):
            return False
        return True


def main() -> int:
    # Ctrl-C, and the hangup of a closing terminal, reach the whole process group; the gateway
    # decides when recording ends (end of input), and is given the time to hand everything over.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="toolreel recorder: %(message)s")
    # psycopg logs each connection it gives up while the server is down; the failed write says it once
    logging.getLogger("psycopg").setLevel(logging.CRITICAL)
    source, reply = FrameReader(sys.stdin.fileno()), _Reply(sys.stdout.buffer)
    parent = os.getppid()
    hello = _next_frame(source, None)
    if hello is None or hello[0] != "hello":
        logger.error("expected a hello from the gateway, got %r; exiting", hello)
        return 2
    _, db, secret_values = hello
    know_secrets(secret_values)  # journals of a dead gateway with the same secrets are written at the opening
    store = _open(db, reply, parent)
    if store is None:
        return 1
    reply("ready")
    store.redactor.add(secret_values)  # the store redacts every row it writes
    target = _Target(db, store)
    try:
        return _drain(target, source, reply, parent)
    finally:
        target.store.close()


def _open(db: str | None, reply: _Reply, parent: int) -> Store | None:
    from toolreel.core.store import open_store  # SQLAlchemy: loaded once a call is recorded, not at the gateway's start

    while True:
        try:
            return open_store(db)
        except StoreError as exc:  # file-system errors included
            if not reply("error", str(exc)):  # the gateway reports what it is told; else say it here
                logger.error("%s; retrying in %g s", exc, RETRY_DELAY)
        if os.getppid() != parent:
            return None
        time.sleep(RETRY_DELAY)


class _Target:
    """The store written to. A SQLite file deleted or replaced under a running gateway is noticed
    (its inode): the store is opened again, which creates it anew, instead of writing on into a
    file nobody can read any more."""

    def __init__(self, db: str | None, store: Store) -> None:
        self.db = db
        self.store = store
        self.path = _sqlite_file(db)
        self.identity = self._identity()

    def _identity(self) -> tuple[int, int] | None:
        if self.path is None:
            return None
        try:
            stat = os.stat(self.path)
        except OSError:
            return None
        return (stat.st_dev, stat.st_ino) if stat.st_size else None  # an emptied file is a store no more

    def moved(self) -> bool:
        return self.path is not None and self._identity() != self.identity

    def gone_message(self) -> str:
        return f"the store file {self.path} was deleted, emptied or replaced under the running gateway"

    def reopen(self) -> None:
        from toolreel.core.store import open_store

        secrets = self.store.redactor  # what the old store learned to redact, the new one redacts too
        self.store.close()
        if self.path is not None and self.path.exists() and not self.path.stat().st_size:
            for leftover in (self.path, *(self.path.with_name(self.path.name + x) for x in ("-wal", "-shm"))):
                leftover.unlink(missing_ok=True)  # an emptied file beside an old WAL: start clean
        self.store = open_store(self.db)
        self.store.redactor = secrets
        self.identity = self._identity()


def _sqlite_file(db: str | None) -> Path | None:
    from toolreel.core.store import default_db_url  # platformdirs only, SQLAlchemy is loaded by now anyway

    url = db or os.environ.get("TOOLREEL_DB") or default_db_url()
    prefix = "sqlite:///"
    if not url.startswith(prefix) or "?" in url or in_memory(url):
        return None
    return Path(url[len(prefix) :]).absolute()


def _normal_priority() -> None:
    with contextlib.suppress(AttributeError, OSError):  # not Linux, or not allowed back up: it stays at the lowest
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def _lowest_priority() -> None:
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):  # not Linux
        os.nice(19)


class _Held:
    """Batches read and not yet written: their packed entries (unpacked when written, so a
    burst costs this process only the reads), and how many calls each had."""

    def __init__(self) -> None:
        self.packed: list[bytes] = []
        self.batches: list[int] = []
        self.since = 0.0  # when the oldest was read

    def add(self, packed: list[bytes]) -> None:
        if not self.batches:
            self.since = time.monotonic()
        self.packed.extend(packed)
        self.batches.append(len(packed))

    def wait(self, last_input: float) -> float | None:
        """Seconds to wait for more input before writing; None: nothing to write."""
        if not self.batches:
            return None
        if len(self.packed) >= MAX_HELD:
            return 0.0
        return max(0.0, min(last_input + QUIET, self.since + MAX_DELAY) - time.monotonic())


def _drain(target: _Target, source: FrameReader, reply: _Reply, parent: int) -> int:
    created: set[str] = set()
    held = _Held()
    last_input = time.monotonic()
    lowered = False
    while True:
        wait = held.wait(last_input)
        messages = _poll(source, wait)
        if messages is None:  # end of input: write what is held, and stop
            _normal_priority()  # the gateway gives it a bounded time now: at the lowest, a busy machine starves it
            return 0 if _write_held(target, held, created, reply, parent) else 1
        if messages:
            last_input = time.monotonic()
        flush = False
        for message in messages:
            if message[0] == "batch":
                held.add(message[1])
            elif message[0] == "flush":
                flush = True
            else:
                logger.error("ignored an unknown message %r", message[0])
        due = flush or held.wait(last_input) == 0.0  # a quiet moment, the oldest too old, or too many held
        if due:
            writing = bool(held.batches)
            if not _write_held(target, held, created, reply, parent, lower=not lowered):
                return 1
            lowered = lowered or writing


def _write_held(
    target: _Target,
    held: _Held,
    created: set[str],
    reply: _Reply,
    parent: int,
    *,
    lower: bool = False,
) -> bool:
    """Write what is held and confirm it; `lower`: then go to the lowest priority (after the first
    write, what remains is steady work, for idle CPU), before the confirmation goes out. All of it
    in one transaction; if that fails, batch by batch, each confirmed once written (a disk with room
    for some of it takes that much, and what follows is not held up by what does not fit)."""
    if not held.batches:
        return True
    entries = [entry(unpack(packed)) for packed in held.packed]
    try:
        _write_checked(target, entries, created, reply)
        batches: list[tuple[int, list[Any]]] = [(count, []) for count in held.batches]
    except StoreError as exc:
        _said(reply, exc)
        batches, at = [], 0
        for count in held.batches:
            batches.append((count, entries[at : at + count]))
            at += count
    for count, pending in batches:
        if pending and not _write_until_done(target, pending, created, reply, parent):
            logger.error(
                "%d recorded calls not saved: the store kept failing and the gateway is gone; they stay in its "
                "journal and are written the next time a toolreel command opens the store",
                sum(c for c, _ in batches),
            )
            return False
        if lower:
            _lowest_priority()
            lower = False
        reply("done", count)
    held.packed, held.batches = [], []
    return True


def _next_frame(source: FrameReader, timeout: float | None) -> Any:
    messages = _poll(source, timeout, limit=1)
    return messages[0] if messages else None


def _poll(source: FrameReader, timeout: float | None, *, limit: int | None = None) -> list[Any] | None:
    try:
        return source.poll(timeout, limit=limit)
    except (ValueError, EOFError, TypeError) as exc:
        logger.error("the gateway sent a frame that cannot be read (%s); stopping", exc)
        return None


def _write_until_done(target: _Target, entries: list[Any], created: set[str], reply: _Reply, parent: int) -> bool:
    """Write `entries`, CHUNK at a time, retrying every RETRY_DELAY s: what was written stays written
    (a full disk freed a little takes the next chunk). False once the gateway is gone and LAST_TRIES
    more attempts failed."""
    tries_left: int | None = None
    done = 0
    while True:
        try:
            while done < len(entries):
                # each execution is looked for again before its steps: a database restored, recreated,
                # or that lost its last commits in a crash may no longer hold it
                created.clear()
                _write_checked(target, _with_executions(entries[done : done + CHUNK]), created, reply)
                done += CHUNK
            return True
        except StoreError as exc:
            _said(reply, exc)
        if os.getppid() != parent:
            tries_left = LAST_TRIES if tries_left is None else tries_left - 1
            if tries_left <= 0:
                return False
        time.sleep(RETRY_DELAY)


def _write_checked(target: _Target, entries: list[Any], created: set[str], reply: _Reply) -> None:
    """One transaction into the store's current file; StoreError if the file was deleted or replaced
    during it (the rows went with the old file: they are written again into the new one)."""
    for item in entries:
        if isinstance(item, ExecutionEntry):
            _EXECUTIONS[item.id] = item
    if target.moved():
        target.reopen()
        _said(reply, StoreError(f"{target.gone_message()}; a new store was created there and recording goes on in it"))
        created.clear()
        entries = _with_executions(entries)
    write_entries(target.store, entries, created)
    if target.moved():
        raise StoreError(f"{target.gone_message()} while recorded calls were written; writing them again")


def _said(reply: _Reply, exc: StoreError) -> None:
    if not reply("error", str(exc)):  # the gateway reports what it is told; else say it here
        logger.error("recording not saved: %s", exc)


_EXECUTIONS: dict[str, ExecutionEntry] = {}  # every execution this process was given, by id


def _with_executions(entries: list[Any]) -> list[Any]:
    """`entries`, led by the execution entries of its steps that it does not hold itself."""
    held = {item.id for item in entries if isinstance(item, ExecutionEntry)}
    wanted = {item.execution_id for item in entries if not isinstance(item, ExecutionEntry)} - held
    return [_EXECUTIONS[i] for i in sorted(wanted) if i in _EXECUTIONS] + entries


if __name__ == "__main__":
    sys.exit(main())
