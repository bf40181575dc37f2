"""`python -m toolreel.replayer run|worker|executions ...`: the replayer's commands without the rest of the CLI."""

from __future__ import annotations

import typer

import toolreel.recorder  # noqa: F401 - its open hook: a store opened here writes dead gateways' journals
from toolreel._cli import printable_output
from toolreel.replayer.cli import executions_commands, register
from toolreel.replayer.signal_cli import signal_commands

app = typer.Typer(name="replayer", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
register(app)
executions = typer.Typer(help="Auto-mode executions.", no_args_is_help=True)
executions_commands(executions)
signal_commands(executions)
app.add_typer(executions, name="executions")

if __name__ == "__main__":
    printable_output()
    app()
