"""What every `toolreel` command shares: the `--db` and `--json` options and the one-line error.

The commands live in their packages (`gateway.cli`, `replayer.cli`, `recorder.cli`,
`templatizer.cli`) and are assembled into one application by `gateway.cli`; this module is their
common ground and imports nothing of theirs.
"""

from __future__ import annotations

import io
import sys
from typing import Annotated

import typer

from toolreel.core.errors import ToolreelError

__all__ = ["USAGE", "DbOption", "JsonOption", "fail", "printable_output"]

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
