"""What every `toolreel` command shares: the `--db` and `--json` options and the one-line error.

The commands live in their packages (`gateway.cli`, `replayer.cli`, `recorder.cli`,
`templatizer.cli`) and are assembled into one application by `gateway.cli`; this module is their
common ground and imports nothing of theirs.
"""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["DbOption", "JsonOption", "fail"]

DbOption = Annotated[
    str | None,
    typer.Option("--db", help="Store URL (default: TOOLREEL_DB, else SQLite in the user data dir)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")]


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print `toolreel: MESSAGE` on stderr and return the exit to raise (2: usage or config errors)."""
    typer.echo(f"toolreel: {message}", err=True)
    return typer.Exit(code)
