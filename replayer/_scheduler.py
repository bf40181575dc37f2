"""`Scheduler`: what a worker does for schedules at each poll — start the runs of the ticks that fell due.

Every worker sharing a store runs one; `Store.start_tick` makes each tick's execution exist exactly once
whichever worker gets there first. A started tick is a `pending` execution naming its schedule (id
`<schedule>.<tick epoch>`), which the workers then claim and drive like any queued run. A tick whose run
cannot be built (the template was deleted, or changed its inputs) is recorded as a failed execution of
the schedule, so that it is seen, not retried at every poll.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import anyio.to_thread

from toolreel.core.errors import ToolreelError
from toolreel.core.model import Execution, ExecutionMode, ExecutionStatus
from toolreel.core.schedule import Schedule, due_tick
from toolreel.replayer._engine import Engine, load_template

__all__ = ["Scheduler", "tick_execution_id"]

logger = logging.getLogger("toolreel.replayer")


def tick_execution_id(schedule_id: str, tick: float) -> str:
    """One id per tick, so that even two inserts of one tick could not both land (the primary key)."""
    return f"{schedule_id}.{int(tick)}"


class Scheduler:
    """Starts due ticks through `engine` (its store and its checks); `clock` is epoch seconds (tests pass
    their own)."""

    def __init__(self, engine: Engine, *, clock: Callable[[], float] = time.time) -> None:
        self.engine = engine
        self.clock = clock

    async def start_due(self) -> list[str]:
        """The ids of the executions this call started (ticks other workers took are not among them)."""
        return await anyio.to_thread.run_sync(self._start_due)

    def _start_due(self) -> list[str]:
        now = self.clock()
        started = []
        for schedule in self.engine.store.list_schedules(active_only=True):
            tick = due_tick(schedule, now)
            if tick is None:
                continue
            execution = self._execution(schedule, tick)
            if self.engine.store.start_tick(schedule.id, tick, execution):
                logger.info("schedule %s: tick %d started execution %s", schedule.id, tick, execution.id)
                started.append(execution.id)
        return started

    def _execution(self, schedule: Schedule, tick: float) -> Execution:
        execution_id = tick_execution_id(schedule.id, tick)
        inputs = schedule.inputs if isinstance(schedule.inputs, dict) else {}
        try:
            template = load_template(self.engine.store, schedule.template)
            return self.engine.scheduled_execution(template, inputs, schedule=schedule.id, execution_id=execution_id)
        except ToolreelError as exc:
            now = time.time()
            return Execution(
                id=execution_id,
                mode=ExecutionMode.AUTO,
                status=ExecutionStatus.FAILED,
                created_at=now,
                updated_at=now,
                template=schedule.template,
                inputs=schedule.inputs,
                error=f"schedule {schedule.id}: this tick's run could not start: {exc}",
                schedule=schedule.id,
            )
