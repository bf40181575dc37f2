"""`--retain D` of `serve` and `worker`: prune the store on a timer (SPEC §9).

A prune runs when the process starts and then every `every` seconds (default: hourly), each
one off the event loop; a failed prune is logged and tried again next time, never fatal.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from toolreel.core.errors import StoreError

if TYPE_CHECKING:  # the store (SQLAlchemy) loads only when a prune runs
    from toolreel.core.store import PruneReport, Store

__all__ = ["RETAIN_EVERY", "parse_age", "prune_older_than", "retaining"]

logger = logging.getLogger("toolreel.retention")

RETAIN_EVERY = 3600.0  # seconds between prunes
_AGE_RE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)?\s*")
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def parse_age(value: str) -> float:
    """`30d`, `12h`, `90m`, `2w`, `45s` or a number of seconds -> seconds."""
    match = _AGE_RE.fullmatch(value)
    if match is None or float(match.group(1)) <= 0:
        raise ValueError(f"expected an age like 30d, 12h, 90m, 2w or 45s, not {value!r}")
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]


async def prune_older_than(store: Store, age: float) -> PruneReport:
    before = time.time() - age
    return await anyio.to_thread.run_sync(lambda: store.prune_executions(before=before))


async def _loop(store: Store, age: float, every: float) -> None:
    while True:
        try:
            report = await prune_older_than(store, age)
        except StoreError as exc:
            logger.warning("retention: pruning failed, trying again in %g s: %s", every, exc)
        else:
            if report.executions:
                logger.info(
                    "retention: pruned %d executions (%d steps) older than %g s",
                    report.executions,
                    report.steps,
                    age,
                )
        await anyio.sleep(every)


@contextlib.asynccontextmanager
async def retaining(store: Store, age: float | None, *, every: float = RETAIN_EVERY) -> AsyncIterator[None]:
    """Prune `store` of executions older than `age` seconds while the block runs (nothing if None)."""
    if age is None:
        yield
        return
    async with anyio.create_task_group() as tg:
        tg.start_soon(_loop, store, age, every)
        try:
            yield
        finally:
            tg.cancel_scope.cancel()
