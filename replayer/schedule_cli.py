"""`toolreel schedule add / list / remove / pause / resume` (SPEC §10, §15).

A schedule is stored beside the templates; `toolreel worker` processes sharing the store start its ticks,
each exactly once. Inputs are checked against the template when the schedule is added (and again at each
tick, against the template's latest version); secret inputs are never stored, so they need a source in
the template (`secret: {env: VAR}`), read by the worker.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from toolreel._cli import DbOption, JsonOption
from toolreel.core.errors import ExecutionError, ScheduleError, TemplateError
from toolreel.core.model import new_id
from toolreel.core.schedule import Schedule, check_cron, describe_cron, zone
from toolreel.core.store import Store
from toolreel.replayer._inputs import bind_inputs, refuse_given_secrets
from toolreel.replayer.cli import _load, _main, _read_inputs, _thread, _Usage

__all__ = ["register"]

schedule_app = typer.Typer(help="Scheduled runs of templates: add, list, remove, pause, resume.", no_args_is_help=True)
IdArgument = Annotated[str, typer.Argument(help="The schedule's id (`toolreel schedule list`).")]


def register(app: typer.Typer) -> None:
    app.add_typer(schedule_app, name="schedule")


@schedule_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="A saved template's name.")],
    cron: Annotated[str, typer.Option("--cron", help='When: 5 cron fields ("0 3 * * *"), or 6 with seconds first.')],
    tz: Annotated[str, typer.Option("--tz", help="The IANA time zone the expression is read in.")] = "UTC",
    inputs: Annotated[list[str] | None, typer.Option("--input", "-i", help="key=value (repeatable).")] = None,
    inputs_file: Annotated[Path | None, typer.Option("--inputs", help="A JSON or YAML file of inputs.")] = None,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Run a saved template on a cron expression; workers sharing the store start each tick once."""

    async def main(store: Store) -> Schedule:
        template = await _thread(_load, store, name, None)
        given = _read_inputs(template, inputs or [], inputs_file)
        try:
            expr = check_cron(cron, tz)
            refuse_given_secrets(template, given)
            bind_inputs(template, given)
        except (ScheduleError, ExecutionError, TemplateError) as exc:
            raise _Usage(str(exc)) from exc
        now = time.time()
        schedule = Schedule(new_id()[:12], template.name, expr, tz, given, created_at=now, last_tick=now)
        await _thread(store.add_schedule, schedule)
        return schedule

    schedule = _main(db, main)
    if json_out:
        typer.echo(json.dumps(schedule.as_dict()))
        return
    typer.echo(schedule.id)
    typer.echo(f"{_when(schedule)}; workers (toolreel worker) start its runs", err=True)


@schedule_app.command("list")
def list_(json_out: JsonOption = False, db: DbOption = None) -> None:
    """The schedules, by template: cron, time zone, next tick, paused or not."""

    async def main(store: Store) -> list[Schedule]:
        return await _thread(store.list_schedules)

    schedules = _main(db, main)
    if json_out:
        typer.echo(json.dumps([schedule.as_dict() for schedule in schedules]))
        return
    if not schedules:
        typer.echo("no schedules (toolreel schedule add NAME --cron EXPR adds one)", err=True)
    for schedule in schedules:
        state = "paused" if schedule.paused else "active"
        typer.echo(f"{schedule.id}  {schedule.template}  {schedule.cron!r} {schedule.tz}  {state}  {_when(schedule)}")


@schedule_app.command("remove")
def remove(schedule_id: IdArgument, db: DbOption = None) -> None:
    """Delete a schedule; the executions it started stay."""

    async def main(store: Store) -> None:
        await _thread(store.delete_schedule, schedule_id)

    _main(db, main)
    typer.echo(f"removed schedule {schedule_id}", err=True)


@schedule_app.command("pause")
def pause(schedule_id: IdArgument, db: DbOption = None) -> None:
    """Stop starting runs of a schedule (runs already started go on)."""
    _set_paused(db, schedule_id, paused=True)


@schedule_app.command("resume")
def resume(schedule_id: IdArgument, db: DbOption = None) -> None:
    """Start runs of a paused schedule again, from now on (ticks that fell while paused are skipped)."""
    _set_paused(db, schedule_id, paused=False)


def _set_paused(db: str | None, schedule_id: str, *, paused: bool) -> None:
    async def main(store: Store) -> Schedule:
        return await _thread(lambda: store.pause_schedule(schedule_id, paused=paused, now=time.time()))

    schedule = _main(db, main)
    typer.echo(f"schedule {schedule.id}: {'paused' if paused else _when(schedule)}", err=True)


def _when(schedule: Schedule) -> str:
    upcoming: Any = schedule.as_dict()["next"]
    reading = describe_cron(schedule.cron)
    if upcoming is None:
        return f"{reading} ({schedule.tz})"
    at = datetime.fromisoformat(upcoming).astimezone(zone(schedule.tz))
    return f"{reading} ({schedule.tz}); next at {at:%Y-%m-%d %H:%M:%S %Z}"
