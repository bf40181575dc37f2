"""`toolreel executions list` and `toolreel executions show ID`: the history in the store."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from toolreel._cli import DbOption, JsonOption, fail
from toolreel.core.errors import ToolreelError
from toolreel.core.limits import PAGE_LIMIT
from toolreel.core.model import ExecutionQuery, ExecutionStatus
from toolreel.core.store import Store, open_store
from toolreel.core.view import execution_view

__all__ = ["executions_commands"]

FOLLOW_EVERY = 0.25  # seconds between looks at the store: another process drives the execution
_FOLLOW_EXIT = {ExecutionStatus.SUCCEEDED: 0, ExecutionStatus.PAUSED: 3}


def _when(stamp: float | None) -> str:
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M:%S") if stamp else "-"


def list_executions(
    status: Annotated[str | None, typer.Option("--status", help="recording, running, paused, succeeded, ...")] = None,
    template: Annotated[str | None, typer.Option("--template", help="Only runs of this template.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=PAGE_LIMIT)] = 20,
    cursor: Annotated[str | None, typer.Option("--cursor", help="From a previous page's next_cursor.")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Executions, newest first."""
    try:
        wanted = ExecutionStatus(status) if status else None
    except ValueError:
        choices = ", ".join(s.value for s in ExecutionStatus)
        raise fail(f"--status {status!r} is not one of: {choices}") from None
    try:
        store = open_store(db)
        page, next_cursor = store.list_executions(ExecutionQuery(wanted, template, limit, cursor))
    except ToolreelError as exc:
        raise fail(exc, 1) from None
    rows: list[dict[str, Any]] = [
        {
            "execution_id": e.id,
            "status": e.status.value,
            "mode": e.mode.value,
            "template": e.template,
            "created_at": e.created_at,
            "error": e.error,
            "schedule": e.schedule,
        }
        for e in page
    ]
    if as_json:
        typer.echo(json.dumps({"executions": rows, "next_cursor": next_cursor}, indent=2))
        return
    for row in rows:
        label = row["template"] or ("recording" if row["mode"] == "record" else "-")
        scheduled = f"  schedule {row['schedule']}" if row["schedule"] else ""
        typer.echo(f"{row['execution_id']}  {row['status']:<10} {label:<24} {_when(row['created_at'])}{scheduled}")
    if next_cursor:
        typer.echo(f"(more: --cursor {next_cursor})")


def show_execution(
    execution_id: Annotated[str, typer.Argument(help="The execution id.")],
    db: DbOption = None,
    as_json: JsonOption = False,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Print each step as it changes until the execution ends or pauses.")
    ] = False,
) -> None:
    """An execution's status and steps (inputs as written, outputs, errors); --follow watches it live."""
    try:
        store = open_store(db)
        if follow:
            code = _follow(store, execution_id)
        execution = store.get_execution(execution_id)
        steps = store.get_steps(execution_id)
    except ToolreelError as exc:
        raise fail(exc, 1) from None
    view = execution_view(execution, steps)
    if follow:
        if as_json:
            typer.echo(json.dumps(view, indent=2, default=str))
        raise typer.Exit(code)
    if as_json:
        typer.echo(json.dumps(view, indent=2, default=str))
        return
    retried = f"  attempt {execution.attempt}" if execution.attempt > 1 else ""
    retried += f"  schedule {execution.schedule}" if execution.schedule else ""
    typer.echo(f"{execution.id}  {execution.status.value}  {execution.template or execution.mode.value}{retried}")
    if execution.error:
        typer.echo(f"  error: {execution.error}")
    for step in view["steps"]:
        took = (step["ended_at"] - step["started_at"]) * 1000 if step["ended_at"] and step["started_at"] else None
        timing = f" {took:.1f} ms" if took is not None else ""
        tries = f" (attempt {step['attempt']})" if step["attempt"] > 1 else ""
        typer.echo(f"  {step['name']:<28} {step['status']:<10} {step['tool'] or '-'}{timing}{tries}")
        typer.echo(f"    input:  {json.dumps(step.get('input'), ensure_ascii=False)[:200]}")
        if step.get("error"):
            typer.echo(f"    error:  {step['error'][:200]}")
        else:
            typer.echo(f"    output: {json.dumps(step.get('output'), ensure_ascii=False, default=str)[:200]}")


def _follow(store: Store, execution_id: str) -> int:
    """Print status and step changes on stderr until the execution ends (exit 0, 1) or pauses (3)."""
    seen: dict[str, tuple[str, int]] = {}
    status: ExecutionStatus | None = None
    while True:
        execution = store.get_execution(execution_id)
        for step in store.get_steps(execution_id):
            now = (step.status.value, step.attempt)
            if seen.get(step.name) != now:
                seen[step.name] = now
                retry = f" (attempt {step.attempt})" if step.attempt > 1 else ""
                typer.echo(f"  {step.name:<28} {step.status.value}{retry}", err=True)
        if execution.status != status:
            status = execution.status
            typer.echo(f"{execution.id}  {status.value}", err=True)
        if status.finished or status == ExecutionStatus.PAUSED:
            return _FOLLOW_EXIT.get(status, 1)
        time.sleep(FOLLOW_EVERY)


def executions_commands(group: typer.Typer) -> None:
    group.command("list")(list_executions)
    group.command("show")(show_execution)
