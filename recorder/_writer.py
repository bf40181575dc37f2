"""Hands recordings to the drain process, off the request path.

A call only appends its packed entry to a list. LINGER seconds after a batch's first entry
(sooner when BATCH wait or someone flushes) one task encodes the list as one frame and writes
it to the drain (`recorder.drain`), a child process at the lowest CPU priority that builds the rows and
writes them once a burst of calls is over (or when someone flushes); so the gateway's CPU
goes to forwarding, and parsing, redaction and SQL run when the machine has time. A batch
stays in memory until the drain says it is committed: a drain that dies is started again
and given every batch it had not confirmed. A failed write is never swallowed: `on_error`
reports it (to the agent and on stderr).

The backlog (entries queued or unconfirmed, and their packed bytes) has a high-water mark:
BACKLOG calls (`TOOLREEL_RECORD_BACKLOG` overrides it) or BACKLOG_BYTES, whichever comes first.
Past it, `room()` holds each new call until confirmations bring the backlog under half the mark,
but never longer than HOLD: a recorder that keeps up sets the pace of calls and bounds memory,
and one that cannot (no CPU, the store down) is reported once, and calls still complete.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from toolreel.core.errors import ConfigError, StoreError
from toolreel.recorder._journal import HEADER_SIZE, decode, encode, frame_length, pack, unpack
from toolreel.recorder._rows import Entry, entry, write_entries
from toolreel.recorder._spool import Spool

if TYPE_CHECKING:
    from toolreel.core.store import Store

__all__ = ["BACKLOG", "BACKLOG_BYTES", "BACKLOG_ENV", "GRACE_ENV", "HOLD", "StoreWriter", "backlog_mark"]

logger = logging.getLogger("toolreel.recorder")

BATCH = 4096
LINGER = 0.05  # seconds a batch waits for company: one frame and one transaction per many steps
RESTART_DELAYS = (0.2, 1.0, 5.0)
SHUTDOWN_GRACE = 10.0  # seconds the recorder process gets at shutdown; what it has not written stays journaled
GRACE_ENV = "TOOLREEL_RECORD_GRACE"
DRAIN = (sys.executable, "-P", "-m", "toolreel.recorder.drain")  # -P: never import a `recorder` from the cwd
# The backlog's high-water mark. A healthy recorder process holds at most 20,000 calls (drain.MAX_HELD),
# and a burst at ~4,000 calls/s leaves at most a few seconds' worth unconfirmed: 50,000 is reached
# only when it gets no CPU or cannot write for a while. At ~1-5 KB a call that is 50-250 MB, and
# BACKLOG_BYTES bounds calls with large results (files, images).
BACKLOG = 50_000
BACKLOG_BYTES = 256 * 1024 * 1024
BACKLOG_ENV = "TOOLREEL_RECORD_BACKLOG"
HOLD = 2.0  # seconds a call past the mark waits at most for the recorder to catch up
FAILING_WAIT = 2.0  # seconds a flush waits at most while the store's writes fail


class _DrainLost(Exception):
    pass


class StoreWriter:
    def __init__(
        self,
        db: str | None = None,
        secret_values: Sequence[str] = (),
        *,
        on_error: Callable[[StoreError], None] | None = None,
        local_store: Callable[[], Awaitable[Store]] | None = None,
        backlog: int | None = None,
        backlog_bytes: int = BACKLOG_BYTES,
        hold: float = HOLD,
        spool: Spool | None = None,
    ) -> None:
        """`backlog`: the high-water mark in calls (default: $TOOLREEL_RECORD_BACKLOG, else BACKLOG);
        `hold`: seconds a call waits at most past it."""
        self._db = db
        self._local_store = local_store  # a database only this process can see: written from here
        self._spool = spool  # the journal every entry is appended to before it is queued
        self._journal_reported = False
        self._secret_values = list(secret_values)
        self._on_error = on_error
        self._queue: list[bytes] = []  # packed entries
        # (entries, their packed bytes, frame) sent, not yet committed
        self._unconfirmed: deque[tuple[int, int, bytes]] = deque()
        self._submitted = 0
        self._written = 0
        self._bytes = 0  # packed bytes queued or unconfirmed
        self._high = backlog_mark() if backlog is None else backlog
        self._low = (self._high + 1) // 2
        self._high_bytes, self._low_bytes = backlog_bytes, (backlog_bytes + 1) // 2
        self._hold = hold
        self.holding = False  # past the high mark, not yet back under the low one: calls wait
        self._caught_up = anyio.Event()  # set when holding ends
        self._reported = False  # "recording is behind" said once per holding spell
        self._wake = anyio.Event()
        self._idle = False  # the batching task waits for a first entry, with no timer running
        self._progress = anyio.Event()
        self._last_error: str | None = None  # the last problem reported, nothing written since
        self._failing: str | None = None  # the store refused the last write, nothing written since
        self._flush_wanted = False  # someone waits: the drain is asked to write at once
        self.wanted = anyio.Event()  # set by the first entry: the drain is started then

    def submit(self, item: Entry) -> None:
        self.submit_packed(pack(item))

    def submit_packed(self, packed: bytes) -> None:
        """Queue an entry packed with `recorder._journal.pack` (a call's path packs it once
        and keeps the bytes for its refs too)."""
        self._submitted += 1
        spool = self._spool
        if spool is not None and not spool.append(packed) and not self._journal_reported:
            self._journal_reported = True
            self._report(f"{spool.error}; recorded calls are kept in memory only until they are saved")
        if self._submitted == 1:  # the first entry ever: the drain is started now
            self.wanted.set()
        self._bytes += len(packed)
        queue = self._queue
        queue.append(packed)
        if self._idle or len(queue) >= BATCH:
            self._idle = False
            self._wake.set()

    @property
    def unsaved(self) -> int:
        """Records (steps, executions) submitted and not yet confirmed in the store."""
        return self._submitted - self._written

    @property
    def backlog_bytes(self) -> int:
        """Packed bytes of the unsaved records (all of them in this process's memory)."""
        return self._bytes

    @property
    def idle(self) -> bool:
        """Nothing queued: the batching task sleeps until an entry comes, no timer running."""
        return self._idle

    @property
    def full(self) -> bool:
        """The backlog is past its mark, or not yet back under half of it: calls wait in `room`.
        (A property the call path reads before awaiting anything: most calls find room.)"""
        return self.holding or self._submitted - self._written >= self._high or self._bytes >= self._high_bytes

    async def room(self) -> None:
        """Return at once while the backlog is under its mark. Past it, wait until the recorder
        brings it under half the mark, or `hold` seconds: a call is slowed, never stopped (SPEC:
        a store that cannot be written is reported, and the call completes)."""
        if self.full:
            await self._held_back()

    async def _held_back(self) -> None:
        if not self.holding:
            self.holding = True
            self._caught_up = anyio.Event()
        self._flush_wanted = True  # the recorder process writes what it holds now, not after the burst
        self._wake.set()
        with anyio.move_on_after(self._hold):
            await self._caught_up.wait()
            return
        if self.holding and not self._reported:
            self._reported = True
            self._behind()

    def _behind(self) -> None:
        message = (
            f"recording is behind by {self.unsaved} calls: the recorder process has not written them "
            f"(it gets no CPU, or the store is slow or down); they are kept in the gateway's memory, and "
            f"calls wait up to {self._hold:g} s each for it until it catches up"
        )
        logger.warning("%s", message)
        if self._on_error is not None:
            self._on_error(StoreError(message))

    @property
    def failing(self) -> str | None:
        """Why the last write failed, while nothing has been written since (the store is down, full,
        read-only, or gone); None when recording is healthy."""
        return self._failing

    async def flush(self, timeout: float = 15.0, *, failing_timeout: float = FAILING_WAIT) -> None:
        """Wait until everything submitted so far is in the store (reads, tests, status). While writes
        fail, wait `failing_timeout` at most: a read on a broken store answers promptly, with the error."""
        target = self._submitted
        with anyio.move_on_after(timeout) as scope:
            while self._written < target:
                if self._failing is not None:
                    scope.deadline = min(scope.deadline, anyio.current_time() + failing_timeout)
                self._flush_wanted = True
                self._wake.set()
                await self._progress.wait()
            return
        why = f": {self._last_error}" if self._last_error else " (the recorder process is still starting)"
        raise StoreError(f"{target - self._written} recorded calls are not in the store yet{why}; try again shortly")

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        await self.wanted.wait()
        if self._local_store is not None:
            await self._write_here(self._local_store)
            return
        failures = 0
        try:
            while True:
                try:
                    await self._feed_one_drain()
                except _DrainLost as exc:
                    self._report(f"the recorder process stopped ({exc}); starting it again")
                failures += 1
                await anyio.sleep(RESTART_DELAYS[min(failures, len(RESTART_DELAYS)) - 1])
        finally:
            self._closed()

    def _closed(self) -> None:
        unsaved = self._submitted - self._written
        spool = self._spool
        kept = spool.close(self._written) if spool is not None else 0
        if kept and spool is not None and spool.complete:
            logger.warning(
                "%d recorded calls were not saved before the gateway stopped; they are kept in the journal "
                "%s and written the next time a toolreel command opens the store",
                kept,
                spool.path or "folder",
            )
        elif unsaved:
            logger.error("%d recorded calls were not saved before the gateway stopped", unsaved)

    async def _write_here(self, local_store: Callable[[], Awaitable[Store]]) -> None:
        """The drain's work in this process, for a database in this process's memory."""
        created: set[str] = set()
        while True:
            await self._next_batch()
            self._flush_wanted = False  # a flush here is this write: nothing else to ask
            if not self._queue:
                continue
            batch, self._queue = self._queue, []
            size = sum(map(len, batch))  # once a batch, not once a call
            while True:
                try:
                    store = await local_store()
                    store.redactor.add(self._secret_values)
                    entries = [entry(unpack(packed)) for packed in batch]
                    await anyio.to_thread.run_sync(write_entries, store, entries, created)
                    break
                except StoreError as exc:
                    self._report(f"recording not saved: {exc}", store_error=str(exc))
                    await anyio.sleep(RESTART_DELAYS[-1])
            self._confirmed(len(batch), size)

    # one drain process ----------------------------------------------------------------------
    async def _feed_one_drain(self) -> None:
        """Run one drain until it ends (raises _DrainLost) or we are cancelled (it is given
        what is queued and SHUTDOWN_GRACE to write it)."""
        # A session of its own: a hangup or Ctrl-C of the gateway's group never reaches it, not even while it is
        # still starting (before it can ignore them; on a busy machine its imports take seconds). It ends when the
        # gateway ends its input, or is gone.
        process = await anyio.open_process(
            list(DRAIN), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, start_new_session=True
        )
        assert process.stdin is not None and process.stdout is not None
        stdin, replies = process.stdin, BufferedByteReceiveStream(process.stdout)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._watch, replies, tg.cancel_scope)
            try:
                await stdin.send(encode(("hello", self._db, self._secret_values)))
                for _, _, frame in self._unconfirmed:  # a new drain first gets what the last one left
                    await stdin.send(frame)
                await self._send_batches(stdin)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                await anyio.sleep_forever()  # the drain is gone; the watch task sees it and ends this
            finally:
                with anyio.CancelScope(shield=True):
                    await self._hand_over(process)
        raise _DrainLost(f"exit code {process.returncode}")

    async def _send_batches(self, stdin: anyio.abc.ByteSendStream) -> None:
        while True:
            await self._next_batch()
            await self._send_queued(stdin)
            if self._flush_wanted:
                self._flush_wanted = False
                await stdin.send(encode(("flush",)))

    async def _next_batch(self) -> None:
        """Wait for a batch: for its first entry (or a flush) with no timer running, then LINGER
        seconds for company, or until BATCH entries wait or someone flushes. An idle gateway
        sleeps: a 50 ms timer kept firing cost it 15 ms of CPU a second here (a wake-up from
        idle costs this VM about 0.2 ms)."""
        if not self._queue and not self._flush_wanted:
            self._idle = True
            await self._wake.wait()
            self._idle = False
            self._wake = anyio.Event()
        if not self._flush_wanted and len(self._queue) < BATCH:
            with anyio.move_on_after(LINGER):
                await self._wake.wait()
            self._wake = anyio.Event()

    async def _send_queued(self, stdin: anyio.abc.ByteSendStream) -> None:
        if not self._queue:
            return
        batch, self._queue = self._queue, []
        size = sum(map(len, batch))  # once a batch, not once a call
        frame = encode(("batch", batch))
        self._unconfirmed.append((len(batch), size, frame))  # kept until committed: a new drain gets it again
        await stdin.send(frame)

    async def _watch(self, replies: BufferedByteReceiveStream, scope: anyio.CancelScope) -> None:
        # Shielded: confirmations are read until the drain ends, shutdown included.
        with anyio.CancelScope(shield=True):
            while (message := await _read(replies)) is not None:
                self._on_reply(message)
        scope.cancel()

    def _on_reply(self, message: Sequence[Any]) -> None:
        kind = message[0]
        if kind == "done":
            count, size, _ = self._unconfirmed.popleft()
            self._confirmed(count, size)
        elif kind == "error":
            self._report(f"recording not saved: {message[1]}", store_error=str(message[1]))

    async def _hand_over(self, process: anyio.abc.Process) -> None:
        """Give the drain what is queued and end its input; wait (SHUTDOWN_GRACE at most) for
        it to write everything and exit, else stop it."""
        assert process.stdin is not None
        with anyio.move_on_after(_grace()):
            try:
                await self._send_queued(process.stdin)
                await process.stdin.aclose()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()

    def _confirmed(self, count: int, size: int) -> None:
        self._written += count
        self._bytes -= size
        if self._spool is not None:
            self._spool.confirmed(self._written)
            self._journal_reported = self._journal_reported and self._spool.error is not None
        self._last_error = self._failing = None
        self._progress.set()
        self._progress = anyio.Event()
        if self.holding and self._submitted - self._written < self._low and self._bytes < self._low_bytes:
            self.holding = False
            self._caught_up.set()
            if self._reported:
                self._reported = False
                logger.warning("recording has caught up (%d calls unsaved); calls no longer wait for it", self.unsaved)

    def _report(self, message: str, *, store_error: str | None = None) -> None:
        if (store_error or message) != self._last_error:  # a store that stays down is said once, not every retry
            logger.error("%s", message)
        self._last_error = store_error or message
        if store_error is not None:
            self._failing = store_error
        self._progress.set()  # a flush waiting on a failing store answers promptly
        self._progress = anyio.Event()
        if self._on_error is not None:
            self._on_error(StoreError(store_error or message))


def _grace(environ: Mapping[str, str] = os.environ) -> float:
    """$TOOLREEL_RECORD_GRACE seconds, else SHUTDOWN_GRACE (a bad value is said, and the default used)."""
    raw = environ.get(GRACE_ENV, "").strip()
    try:
        return float(raw) if raw else SHUTDOWN_GRACE
    except ValueError:
        logger.warning("%s=%r is not a number of seconds; using %g", GRACE_ENV, raw, SHUTDOWN_GRACE)
        return SHUTDOWN_GRACE


def backlog_mark(environ: Mapping[str, str] = os.environ) -> int:
    """The backlog's high-water mark in calls: $TOOLREEL_RECORD_BACKLOG, else BACKLOG."""
    raw = environ.get(BACKLOG_ENV, "").strip()
    if not raw:
        return BACKLOG
    try:
        mark = int(raw)
    except ValueError:
        mark = 0
    if mark < 1:
        raise ConfigError(
            f"{BACKLOG_ENV}={raw!r} is not a positive whole number: set it to the number of unsaved "
            f"recorded calls past which calls wait for the recorder (default {BACKLOG}), or unset it"
        )
    return mark


async def _read(replies: BufferedByteReceiveStream) -> Sequence[Any] | None:
    try:
        header = await replies.receive_exactly(HEADER_SIZE)
        return decode(await replies.receive_exactly(frame_length(header)))
    except (anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError, anyio.BrokenResourceError):
        return None
