"""Writes recordings to the store off the request path.

Records are queued without waiting and written in batches by one task, in order (an
execution before its steps). A failed write is never swallowed: `on_error` reports it
(to the agent and on stderr) and the records stay queued for the next attempt.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import anyio
import anyio.abc
import anyio.lowlevel

from core.errors import StoreError
from core.model import Execution, StepRecord

if TYPE_CHECKING:
    from core.store import Store

__all__ = ["StoreWriter"]

logger = logging.getLogger("toolreel.recorder")

BATCH = 2048
RETRY_DELAY = 1.0


class Deferred(Protocol):
    """A record whose row is built on the writer's thread (parsing, redaction)."""

    def build(self) -> StepRecord: ...


Record = Execution | StepRecord | Deferred
BUILD_SLICE = 32
LINGER = 0.25  # seconds a batch waits for company: one transaction per many steps


async def _built(batch: list[Record]) -> list[Record]:
    """Rows are built (outputs parsed, secrets redacted) on the event loop, in slices between
    which calls go on: pure-Python work in a thread would fight the loop for the GIL, which
    costs more than the work itself."""
    built: list[Record] = []
    for start in range(0, len(batch), BUILD_SLICE):
        for record in batch[start : start + BUILD_SLICE]:
            built.append(record if isinstance(record, Execution | StepRecord) else record.build())
        await anyio.lowlevel.checkpoint()
    return built


class StoreWriter:
    """Queues records without waking anything; one task writes them every LINGER seconds
    (sooner when BATCH are waiting or someone flushes), so a call never pays a task
    switch for its recording."""

    def __init__(self, store: Store | None = None, *, on_error: Callable[[StoreError], None] | None = None) -> None:
        self.store = store
        self._attached = anyio.Event()
        if store is not None:
            self._attached.set()
        self._on_error = on_error
        self._queue: list[Record] = []
        self._wake = anyio.Event()
        self._submitted = 0
        self._written = 0
        self._progress = anyio.Event()
        self._created: set[str] = set()  # executions already written: a retried batch skips them
        self.wanted = anyio.Event()  # set by the first record: a store opened lazily is needed now

    def attach(self, store: Store) -> None:
        """The store, once open: records queued before this are written then."""
        self.store = store
        self._attached.set()

    def submit(self, record: Record) -> None:
        if not self.wanted.is_set():
            self.wanted.set()
        self._submitted += 1
        self._queue.append(record)
        if len(self._queue) >= BATCH:
            self._wake.set()

    async def flush(self, timeout: float = 10.0) -> None:
        """Wait until everything submitted so far is written (tests, status, shutdown)."""
        target = self._submitted
        with anyio.fail_after(timeout):
            while self._written < target:
                self._wake.set()
                await self._progress.wait()

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        try:
            await self._attached.wait()
            while True:
                with anyio.move_on_after(LINGER):
                    await self._wake.wait()
                self._wake = anyio.Event()
                if self._queue:
                    batch, self._queue = self._queue, []
                    await self._write_until_done(batch)
        finally:
            # On shutdown, write what is still queued (bounded) so a clean exit loses nothing.
            with anyio.move_on_after(10, shield=True):
                if self._queue:
                    await self._attached.wait()  # a store still opening at shutdown is waited for
                    batch, self._queue = self._queue, []
                    await self._write_until_done(batch, attempts=1)

    async def _write_until_done(self, batch: list[Record], attempts: int | None = None) -> None:
        batch = await _built(batch)
        tries = 0
        while True:
            tries += 1
            try:
                await anyio.to_thread.run_sync(self._write, batch)
            except StoreError as exc:
                logger.error("recording not saved: %s", exc)
                if self._on_error is not None:
                    self._on_error(exc)
                if attempts is not None and tries >= attempts:
                    return
                await anyio.sleep(RETRY_DELAY)
                continue
            self._written += len(batch)
            self._progress.set()
            self._progress = anyio.Event()
            return

    def _write(self, batch: list[Record]) -> None:
        assert self.store is not None
        steps: list[StepRecord] = []
        for record in batch:
            if isinstance(record, Execution):
                if steps:
                    self.store.put_steps(steps)
                    steps = []
                if record.id not in self._created:
                    self.store.create_execution(record)
                    self._created.add(record.id)
            elif isinstance(record, StepRecord):
                steps.append(record)
        if steps:
            self.store.put_steps(steps)
