"""`Worker`: the loop of `toolreel worker` — start due schedule ticks, claim runnable executions from a
shared store and drive them.

Claims are taken `FOR UPDATE SKIP LOCKED` (PostgreSQL), so several workers and gateways share one
database without driving an execution twice; a dead process's claims expire and are taken here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import anyio

from toolreel.core.errors import ToolreelError
from toolreel.replayer._engine import Engine
from toolreel.replayer._scheduler import Scheduler

__all__ = ["Worker"]

logger = logging.getLogger("toolreel.replayer")


class Worker:
    def __init__(
        self,
        engine: Engine,
        *,
        capacity: int = 32,
        poll_interval: float = 0.5,
        on_claim: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.engine = engine
        self.scheduler = Scheduler(engine, clock=clock)
        self.on_claim = on_claim
        self.capacity = capacity
        self.poll_interval = poll_interval
        self.claimed = 0  # how many executions this worker started driving

    async def run(self, stop: anyio.Event, *, ready: anyio.Event | None = None) -> None:
        """Claim and drive until `stop` is set; the engine's `aclose(grace=...)` then bounds the shutdown."""
        if ready is not None:
            ready.set()
        while not stop.is_set():
            await self._start_ticks()
            free = self.capacity - self.engine.driving
            if free > 0:
                try:
                    started = await self.engine.recover(limit=free)
                except ToolreelError as exc:  # the store is briefly unavailable: try again at the next tick
                    logger.warning("worker %s: claiming failed: %s", self.engine.owner, exc)
                    started = []
                self.claimed += len(started)
                for execution_id in started:
                    if self.on_claim is not None:
                        self.on_claim(execution_id)
            with anyio.move_on_after(self.poll_interval):
                await stop.wait()

    async def _start_ticks(self) -> None:
        try:
            await self.scheduler.start_due()
        except ToolreelError as exc:  # the store is briefly unavailable: the tick is still due at the next poll
            logger.warning("worker %s: starting scheduled runs failed: %s", self.engine.owner, exc)
