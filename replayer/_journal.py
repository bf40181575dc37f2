"""Group commit of step rows: many rows, one transaction, in submission order.

`submit` queues rows without waiting (a step's start, a failed attempt); `commit` queues rows
and returns once they, and everything queued before them, are durable. One writer task runs
the batches in a worker thread, so a 1,000-wide fan-out writes its starts in a few transactions
and a chain needs one commit per step. A failed write (StaleClaimError: another process took
the execution) is raised to every waiter, and to every later `commit`.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Sequence

import anyio
import anyio.to_thread

from core.errors import StoreError
from core.model import StepRecord

__all__ = ["Journal"]

WriteFn = Callable[[Sequence[StepRecord]], None]


class Journal:
    def __init__(self, write: WriteFn, *, max_batch: int = 2000) -> None:
        self._write = write
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
        if self._durable < ticket and self._error is None:
            if self._stopped:
                raise StoreError("the run's step journal is closed; these rows were not written")
            # Only the waiters a batch covers are woken: a 1,000-wide fan-out must not wake 1,000 tasks per batch.
            event = anyio.Event()
            heapq.heappush(self._waiters, (ticket, next(self._order), event))
            await event.wait()
        if self._error is not None:
            raise self._error

    async def run(self) -> None:
        """The writer loop; returns after `close()` once the queue is empty, or on the first failed write."""
        try:
            await self._write_batches()
        finally:
            self._stopped = True
            if self._durable < self._queued and self._error is None:
                self._error = StoreError("the run's step journal stopped with rows still queued")
            self._notify()

    async def _write_batches(self) -> None:
        while self._error is None:
            if not self._queue:
                if self._closing:
                    return
                self._wake = anyio.Event()
                await self._wake.wait()
                continue
            batch = self._queue[: self._max_batch]
            del self._queue[: len(batch)]
            try:
                # Shielded: a batch that reached the database must be counted, even if the run is cancelled.
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(self._write, batch)
            except Exception as exc:
                self._error = exc
            else:
                self._durable += len(batch)
            self._notify()

    def close(self) -> None:
        """Let `run` return once what is queued is written."""
        self._closing = True
        self._wake.set()

    def _notify(self) -> None:
        waiters = self._waiters
        while waiters and (self._error is not None or waiters[0][0] <= self._durable):
            heapq.heappop(waiters)[2].set()
