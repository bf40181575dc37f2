"""Group commit of step rows: many rows, one transaction, in submission order.

`submit` queues rows without waiting (a step's start, a failed attempt); `commit` queues rows
and returns once they, and everything queued before them, are durable. One batch is written at
a time: on the event loop itself when the store can commit a small batch without waiting (a
SQLite file whose lock is free), else in a worker thread, so a 1,000-wide fan-out writes its
starts in a few transactions and a chain needs one commit per step. A failed write
(StaleClaimError: another process took the execution) is raised to every waiter, and to every
later `commit`.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread

from toolreel.core.errors import StoreError
from toolreel.core.model import StepRecord

__all__ = ["Announcer", "Journal", "small_rows"]

# What the event loop may write itself (`write_now`); more goes to a worker thread, so a large output
# never holds up the loop's other work.
NOW_ROWS = 64
NOW_CHARS = 32 * 1024

WriteFn = Callable[[Sequence[StepRecord]], None]
WriteNowFn = Callable[[Sequence[StepRecord]], bool]


class Journal:
    """`write` runs in a worker thread; `write_now`, if given, is tried first on the event loop and
    says whether it wrote the batch (a SQLite commit of a few small rows: cheaper than the two
    thread hops, which are most of a chain's time per step)."""

    def __init__(self, write: WriteFn, *, write_now: WriteNowFn | None = None, max_batch: int = 2000) -> None:
        self._write = write
        self._write_now = write_now
        self._max_batch = max_batch
        self._queue: list[StepRecord] = []
        self._queued = 0  # rows ever queued
        self._durable = 0  # rows ever committed
        self._wake = anyio.Event()
        self._waiters: list[tuple[int, int, anyio.Event]] = []
        self._order = itertools.count()
        self._error: BaseException | None = None
        self._closing = False
        self._stopped = False
        self._writing = False

    @property
    def error(self) -> BaseException | None:
        return self._error

    def submit(self, rows: Sequence[StepRecord]) -> int:
        """Queue rows; returns the ticket `wait` takes."""
        if rows:
            self._queue.extend(rows)
            self._queued += len(rows)
            self._wake.set()
        return self._queued

    async def commit(self, rows: Sequence[StepRecord] = ()) -> None:
        await self.wait(self.submit(rows))

    async def wait(self, ticket: int) -> None:
        while self._durable < ticket and self._error is None:
            if self._stopped:
                raise StoreError("the run's step journal is closed; these rows were not written")
            if not self._writing:
                # Nobody is writing: write ourselves rather than wake the writer task and wait for it
                # (a chain of steps saves two trips through the event loop per step).
                await self._write_batch()
                continue
            # Only the waiters a batch covers are woken: a 1,000-wide fan-out must not wake 1,000 tasks per batch.
            event = anyio.Event()
            heapq.heappush(self._waiters, (ticket, next(self._order), event))
            await event.wait()
        if self._error is not None:
            raise self._error

    async def run(self) -> None:
        """The writer of rows nobody waits for; returns after `close()` once the queue is empty, or on
        the first failed write."""
        try:
            while self._error is None:
                if self._queue and not self._writing:
                    await self._write_batch()
                elif self._closing and not self._queue and not self._writing:
                    return
                else:
                    self._wake = anyio.Event()
                    await self._wake.wait()
        finally:
            self._stopped = True
            if self._durable < self._queued and self._error is None:
                self._error = StoreError("the run's step journal stopped with rows still queued")
            self._notify()

    async def _write_batch(self) -> None:
        """One transaction of the oldest queued rows; one batch at a time, so rows land in queue order."""
        batch = self._queue[: self._max_batch]
        del self._queue[: len(batch)]
        self._writing = True
        written_here = False
        try:
            written_here = self._write_now is not None and self._write_now(batch)
            if not written_here:
                # Shielded: a batch that reached the database must be counted, even if its writer is cancelled.
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(self._write, batch)
        except Exception as exc:
            self._error = exc
        else:
            self._durable += len(batch)
        finally:
            self._writing = False
        self._notify()
        if self._queue or self._closing:
            self._wake.set()  # the writer task takes over what was queued meanwhile, or ends
        if written_here:
            # Written without an await: let the loop run the others (a cancel, a progress message) first.
            await anyio.lowlevel.checkpoint()

    def close(self) -> None:
        """Let `run` return once what is queued is written."""
        self._closing = True
        self._wake.set()

    def _notify(self) -> None:
        waiters = self._waiters
        while waiters and (self._error is not None or waiters[0][0] <= self._durable):
            heapq.heappop(waiters)[2].set()


def small_rows(rows: Sequence[StepRecord]) -> bool:
    """At most NOW_ROWS rows holding about NOW_CHARS characters of JSON or less. The walk stops as
    soon as the budget is spent, so a 10 MB output costs one len()."""
    if len(rows) > NOW_ROWS:
        return False
    budget = NOW_CHARS
    stack: list[Any] = []
    for row in rows:
        stack += (row.input, row.resolved_input, row.result, row.output)
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            budget -= len(value)
        elif isinstance(value, dict | list):
            budget -= 8 * len(value)  # keys, separators
            if budget >= 0:
                stack.extend(value.values() if isinstance(value, dict) else value)
        else:
            budget -= 8
        if budget < 0:
            return False
    return True


class Announcer:
    """Start rows, written once an attempt has run for `after` seconds.

    A quick step's result row (which carries its start) replaces its start row anyway, so the
    start is written only for the slow ones, where `get_execution` must show them running;
    recovery needs no start row (a step without a finished row is run again).
    """

    def __init__(self, journal: Journal, current: Callable[[StepRecord], bool], *, after: float = 0.05) -> None:
        self._journal = journal
        self._current = current  # is this attempt still in flight?
        self._after = after
        self._queue: deque[tuple[float, StepRecord]] = deque()
        self._wake = anyio.Event()
        self._scope = anyio.CancelScope()

    def announce(self, record: StepRecord) -> None:
        self._queue.append((anyio.current_time() + self._after, record))
        self._wake.set()

    def close(self) -> None:
        self._scope.cancel()

    async def run(self) -> None:
        with self._scope:
            while True:
                if not self._queue:
                    self._wake = anyio.Event()
                    await self._wake.wait()
                    continue
                wait = self._queue[0][0] - anyio.current_time()
                if wait > 0:
                    await anyio.sleep(wait)
                    continue
                due = []
                while self._queue and self._queue[0][0] <= anyio.current_time():
                    record = self._queue.popleft()[1]
                    if self._current(record):
                        due.append(record)
                self._journal.submit(due)
