"""What every `toolreel` command shares: the `--db` and `--json` options and the one-line error.

The commands live in their packages (`gateway.cli`, `replayer.cli`, `recorder.cli`,
`templatizer.cli`) and are assembled into one application by `gateway.cli`, which loads a package's
commands only when one of them is named (`lazy_group`); this module is their common ground and imports
nothing of theirs.
"""

from __future__ import annotations

import importlib
import io
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated

import typer
import typer.main
from typer import _click as click  # Typer's own copy of Click, whose Group hooks load commands lazily
from typer.core import TyperCommand, TyperGroup

from toolreel._loading import loading
from toolreel.core.errors import ToolreelError

__all__ = ["USAGE", "DbOption", "JsonOption", "LazyCommand", "fail", "lazy_group", "printable_output"]

USAGE = "usage"
"""The code of a command line's own usage problems (a bad option value), which are no exception of the tree."""

DbOption = Annotated[
    str | None,
    typer.Option("--db", help="Store URL (default: TOOLREEL_DB, else SQLite in the user data dir)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")]


def fail(problem: str | ToolreelError, code: int = 2, *, error: str = USAGE) -> typer.Exit:
    """Print `toolreel: MESSAGE [CODE]` on stderr and return the exit to raise (2: usage or config errors).
    CODE is the error's stable code (docs/errors.md): the exception's own, else `error`."""
    name = problem.code if isinstance(problem, ToolreelError) else error
    typer.echo(f"toolreel: {problem} [{name}]", err=True)
    return typer.Exit(code)


def printable_output() -> None:
    """Outputs of tools are printed as they are, and some hold lone UTF-16 surrogates (half an emoji
    cut by a node server), which UTF-8 cannot encode: they are written as `\\udXXX` instead of
    ending the command, which inside a JSON string is the same value, escaped."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


@dataclass(frozen=True)
class LazyCommand:
    """A command of another package, loaded when named: `function(typer_app)` in `module` adds it
    (beside others) to a Typer app. `help` is what `--help` lists without loading it."""

    module: str
    function: str
    help: str
    group: bool = False  # a group of commands (listed after the plain commands, as Typer does)


def lazy_group(commands: Mapping[str, LazyCommand]) -> type[TyperGroup]:
    """A Typer group class (for `typer.Typer(cls=...)`) that holds `commands` unloaded: naming one
    imports its package; listing them in `--help` imports nothing."""

    class _LazyGroup(TyperGroup):
        _listing = False  # set while help is written: listed commands stay unloaded

        def list_commands(self, ctx: click.Context) -> list[str]:
            names = [*self.commands, *(name for name in commands if name not in self.commands)]
            return sorted(names, key=lambda name: self._is_group(name))  # stable: Typer's order otherwise

        def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
            if cmd_name in self.commands or cmd_name not in commands:
                return self.commands.get(cmd_name)
            lazy = commands[cmd_name]
            if self._listing:
                return TyperCommand(cmd_name, help=lazy.help)
            self.commands[cmd_name] = _load(lazy, cmd_name)
            return self.commands[cmd_name]

        def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
            self._listing = True
            try:
                super().format_help(ctx, formatter)
            finally:
                self._listing = False

        def _is_group(self, name: str) -> bool:
            if name in self.commands:
                return isinstance(self.commands[name], TyperGroup)
            return commands[name].group

    return _LazyGroup


def _load(lazy: LazyCommand, name: str) -> click.Command:
    holder = typer.Typer()
    with loading():
        getattr(importlib.import_module(lazy.module), lazy.function)(holder)
    command = typer.main.get_group(holder).commands.get(name)
    if command is None:  # a wrong table entry: a programming error, caught by the CLI tests
        raise LookupError(f"{lazy.module}.{lazy.function} adds no command {name!r}")
    return command
