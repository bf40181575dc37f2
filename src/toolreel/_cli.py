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

__all__ = ["DbOption", "JsonOption", "fail", "printable_output"]

DbOption = Annotated[
    str | None,
    typer.Option("--db", help="Store URL (default: TOOLREEL_DB, else SQLite in the user data dir)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")]


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print `toolreel: MESSAGE` on stderr and return the exit to raise (2: usage or config errors)."""
    typer.echo(f"toolreel: {message}", err=True)
    return typer.Exit(code)


def printable_output() -> None:
    """Outputs of tools are printed as they are, and some hold lone UTF-16 surrogates (half an emoji
    cut by a node server), which UTF-8 cannot encode: they are written as `\\udXXX` instead of
    ending the command, which inside a JSON string is the same value, escaped."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
