"""`toolreel executions signal ID NAME [--data JSON]`: deliver a signal and drive the execution on here."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from toolreel._cli import DbOption, JsonOption, fail
from toolreel.core.errors import SignalError
from toolreel.core.model import JSON, Execution, StepRecord
from toolreel.core.store import Store
from toolreel.replayer._cli_view import LiveView, report
from toolreel.replayer.cli import (
    ConcurrencyOption,
    ConfigOption,
    _engine,
    _load,
    _main,
    _thread,
    _Usage,
    _watch,
)

__all__ = ["signal", "signal_commands"]


def signal_commands(group: typer.Typer) -> None:
    """`executions signal`, added to the executions group beside `replayer.cli.executions_commands`."""
    group.command("signal")(signal)


def signal(
    execution_id: Annotated[str, typer.Argument()],
    name: Annotated[str, typer.Argument(help="The signal's name, as the waiting step's `wait: {signal: NAME}`.")],
    data: Annotated[
        str | None, typer.Option("--data", help="The signal's data as JSON: the waiting step's output.")
    ] = None,
    config: ConfigOption = None,
    json_out: JsonOption = False,
    db: DbOption = None,
    max_concurrency: ConcurrencyOption = 16,
) -> None:
    """Send a signal to the step that waits for it, then drive the execution on in this process."""
    value = _parse_data(data)

    async def main(store: Store) -> tuple[Execution, list[StepRecord]]:
        execution = await _thread(store.get_execution, execution_id)
        template = None
        if execution.template is not None and execution.template_version is not None:
            template = await _thread(_load, store, execution.template, execution.template_version)
        view = None if json_out else LiveView()
        async with _engine(store, config, template, max_concurrency, 15.0, view) as engine:

            async def deliver() -> Execution:
                try:
                    return await engine.signal(execution_id, name, value)
                except SignalError as exc:
                    raise _Usage(str(exc)) from exc

            return await _watch(engine, execution_id, view, deliver)

    report(*_main(db, main), json_out)


def _parse_data(data: str | None) -> JSON:
    if data is None:
        return None
    try:
        return json.loads(data)
    except json.JSONDecodeError as exc:
        raise fail(f"--data is not JSON ({exc.msg} at character {exc.pos}); nothing was sent", 2) from None
