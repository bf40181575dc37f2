"""Records and threads for the store tests: `execution` and `step` build rows with defaults around `T0`;
`run_threads` starts callers together so that they race for real; `span` reads a finished step's times."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from toolreel.core.model import Execution, ExecutionMode, ExecutionStatus, StepKind, StepRecord, StepStatus

T0 = 1_700_000_000.0


def execution(
    id: str, created_at: float = T0, *, status: ExecutionStatus = ExecutionStatus.PENDING, **fields: Any
) -> Execution:
    return Execution(
        id=id,
        mode=ExecutionMode.AUTO,
        status=ExecutionStatus(status),
        created_at=created_at,
        updated_at=created_at,
        **fields,
    )


def step(
    name: str, seq: int, *, execution_id: str = "e1", status: StepStatus = StepStatus.SUCCEEDED, **fields: Any
) -> StepRecord:
    return StepRecord(execution_id=execution_id, name=name, seq=seq, kind=StepKind.TOOL, status=status, **fields)


def run_threads(count: int, target: Callable[[int], object]) -> None:
    """Run target(0..count-1) in threads released together by a barrier; re-raise the first failure."""
    barrier = threading.Barrier(count)

    def body(index: int) -> object:
        barrier.wait(timeout=30)
        return target(index)

    with ThreadPoolExecutor(count) as pool:
        for future in [pool.submit(body, index) for index in range(count)]:
            future.result(timeout=60)


def span(row: StepRecord) -> tuple[float, float]:
    """When a finished step started and ended (failing the test if the row lacks either)."""
    assert row.started_at is not None and row.ended_at is not None, f"step {row.name} has no start or end time"
    return row.started_at, row.ended_at
