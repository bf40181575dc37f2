"""A schedule: a template run on a cron expression in an explicit time zone (SPEC §15).

`Schedule` is the stored value; `check_cron` validates an expression and zone once, at the edge; `due_tick`
is the one rule for which tick a worker starts now. Cron arithmetic is cronsim's (Debian cron semantics,
daylight-saving changes included, an optional leading seconds field), never hand-written here.

Missed ticks are caught up once: when several ticks passed since the last one started (every worker was
down, or busy), only the latest starts (docs/decisions/schedules.md).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from toolreel.core.errors import ScheduleError
from toolreel.core.model import JSON

__all__ = ["Schedule", "check_cron", "describe_cron", "due_tick", "next_tick", "zone"]


@dataclass(frozen=True, slots=True)
class Schedule:
    """Runs `template` (its latest version at each tick) with `inputs` on `cron`, read in time zone `tz`.
    `last_tick` is the epoch second of the latest tick started (or of the creation or resumption: ticks
    before it are never started)."""

    id: str
    template: str
    cron: str
    tz: str
    inputs: JSON
    created_at: float
    last_tick: float
    paused: bool = False

    def replace(self, **changes: Any) -> Schedule:
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, JSON]:
        """What `schedule list --json` shows, with the next tick as an ISO time in the schedule's zone."""
        upcoming = None if self.paused else next_tick(self, self.last_tick)
        return {
            "id": self.id,
            "template": self.template,
            "cron": self.cron,
            "tz": self.tz,
            "inputs": self.inputs,
            "paused": self.paused,
            "created_at": self.created_at,
            "last_tick": self.last_tick,
            "next": None if upcoming is None else _local(upcoming, self.tz).isoformat(),
        }


def zone(name: str) -> ZoneInfo:
    """The IANA time zone `name`; ScheduleError naming it if unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ScheduleError(
            f"unknown time zone {name!r}: give an IANA name such as UTC, Europe/Paris or America/New_York"
        ) from exc


def check_cron(expr: str, tz: str) -> str:
    """`expr` with its fields separated by single spaces, once cronsim accepts it in zone `tz`."""
    normalized = " ".join(expr.split())
    try:
        CronSim(normalized, datetime.now(zone(tz)))
    except CronSimError as exc:
        raise ScheduleError(
            f"cron expression {expr!r} is not valid ({exc}): write 5 fields (minute hour day month weekday, "
            'as "0 3 * * *") or 6 with seconds first'
        ) from exc
    return normalized


def describe_cron(expr: str) -> str:
    """A reading of the expression in English ("At 03:00"), or the expression itself if cronsim has none."""
    try:
        return CronSim(expr, datetime.now(UTC)).explain()
    except (CronSimError, ValueError, KeyError):
        return expr


def due_tick(schedule: Schedule, now: float) -> float | None:
    """The tick to start at `now`: the latest one after `last_tick` and not after `now`, else None.
    Earlier missed ticks are not started (catch up one)."""
    if schedule.paused:
        return None
    start = _local(now, schedule.tz)
    # cronsim's reverse walk yields its start itself only when it has a fraction of a second
    start = start.replace(microsecond=max(start.microsecond, 1))
    latest = next(CronSim(schedule.cron, start, reverse=True), None)
    if latest is None:
        return None
    tick = latest.timestamp()
    return tick if schedule.last_tick < tick <= now else None


def next_tick(schedule: Schedule, after: float) -> float | None:
    """The first tick after the epoch second `after`."""
    found = next(CronSim(schedule.cron, _local(after, schedule.tz)), None)
    return None if found is None else found.timestamp()


def _local(epoch: float, tz: str) -> datetime:
    return datetime.fromtimestamp(epoch, zone(tz))
