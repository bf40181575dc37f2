"""What `toolreel run` and `toolreel executions ...` show: the live table of steps on stderr while a run
goes on, and its end (its output on stdout, how to answer a pause, or its error) with the exit code."""

from __future__ import annotations

import json
import time
from typing import Any

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table

from toolreel.core.model import Execution, ExecutionStatus, StepRecord
from toolreel.core.names import prefixed_name
from toolreel.core.view import execution_view
from toolreel.replayer._state import awaiting_of, signs_in

__all__ = ["EXIT", "LiveView", "report"]

EXIT = {ExecutionStatus.SUCCEEDED: 0, ExecutionStatus.PAUSED: 3}
"""The exit code of a command that drove a run, by the run's status (any other status: 1)."""


class LiveView:
    """The steps of the execution being run on stderr, shown from its first step row on."""

    def __init__(self) -> None:
        self.execution_id: str | None = None
        self.rows: dict[str, StepRecord] = {}
        self._console = Console(stderr=True)
        self._live: Live | None = None

    def observe(self, record: StepRecord) -> None:
        if record.execution_id != self.execution_id:
            return
        self.rows[record.name] = record
        if self._live is None:
            self._live = Live(get_renderable=self.table, console=self._console, refresh_per_second=8)
            self._live.start()

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            if not self._console.is_terminal:
                self._console.print()  # the last render ends without a line break off a terminal

    def table(self) -> Table:
        table = Table("step", "tool", "status", "attempt", "seconds", title=f"execution {self.execution_id}")
        now = time.time()
        for record in sorted(self.rows.values(), key=lambda r: r.seq):
            took = (record.ended_at or now) - (record.started_at or now)
            tool = prefixed_name(record.server, record.tool) or record.kind
            status = "waiting" if awaiting_of(record) is not None else str(record.status)
            table.add_row(record.name, tool, status, str(record.attempt), f"{took:.2f}")
        return table


def report(execution: Execution, steps: list[StepRecord], json_out: bool, *, exit_by_status: bool = True) -> None:
    if json_out:
        typer.echo(json.dumps(execution_view(execution, steps), ensure_ascii=False, indent=2))
    else:
        _human(execution)
    if exit_by_status:
        raise typer.Exit(EXIT.get(execution.status, 1))


def _human(execution: Execution) -> None:
    line = f"execution {execution.id} {execution.status}"
    if execution.status == ExecutionStatus.SUCCEEDED:
        typer.echo(line, err=True)
        typer.echo(json.dumps(execution.output, ensure_ascii=False, indent=2))
    elif execution.status == ExecutionStatus.PAUSED:
        prompt = execution.prompt
        if signs_in(prompt):
            assert isinstance(prompt, dict)
            typer.echo(f"{line}: {prompt.get('message')}", err=True)
            typer.echo(f"then go on with: toolreel executions resume {execution.id}", err=True)
        elif isinstance(prompt, dict) and ("signal" in prompt or "llm" in prompt or prompt.get("wait") == "time"):
            typer.echo(f"{line}: {prompt.get('message')}", err=True)
            if "llm" in prompt:
                typer.echo(f"then: toolreel executions resume {execution.id}", err=True)
            elif "signal" in prompt:
                name = prompt["signal"]
                typer.echo(f"send it with: toolreel executions signal {execution.id} {name} --data JSON", err=True)
            else:
                typer.echo("a worker or gateway sharing the store drives it on then", err=True)
        elif isinstance(prompt, dict):
            typer.echo(f"{line}: {prompt.get('message')}", err=True)
            example = json.dumps(_example_answer(prompt.get("schema")))
            typer.echo(f"answer with: toolreel executions resume {execution.id} --response '{example}'", err=True)
        else:
            typer.echo(f"{line}: {prompt}", err=True)
            typer.echo(f"answer with: toolreel executions resume {execution.id} --response yes|no", err=True)
    elif execution.status == ExecutionStatus.RUNNING:
        typer.echo(f"{line}: interrupted; resume it with: toolreel executions resume {execution.id}", err=True)
    else:
        typer.echo(f"{line}: {execution.error}", err=True)


_EXAMPLES: dict[str, Any] = {"string": "...", "number": 0, "integer": 0, "boolean": True}


def _example_answer(form: Any) -> dict[str, Any]:
    """An answer of the right shape to show a person (an enum's first choice for a string)."""
    properties = form.get("properties", {}) if isinstance(form, dict) else {}
    return {
        name: (spec.get("enum") or [_EXAMPLES.get(spec.get("type"), "...")])[0] for name, spec in properties.items()
    }
