"""The `toolreel` command loads a package's commands only when one is named: `--version` and `--help`
import neither the MCP SDK nor the store, and what `--help` lists unloaded is each command's own help."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Mapping

import pytest
import typer
import typer.main
from typer.core import TyperGroup

from toolreel._cli import LazyCommand
from toolreel.gateway import cli

# What the commands' packages import and `--version` / `--help` must not (pydantic is not one: Typer
# itself reads a command's parameters with it).
HEAVY = ("mcp", "mcp_types", "sqlalchemy", "sqlmodel", "toolreel.replayer", "toolreel.upstreams")


def _first_paragraph(text: str | None) -> str:
    return " ".join((text or "").split("\n\n")[0].split())


def _group(path: tuple[str, ...]) -> tuple[TyperGroup, typer.Context]:
    group = typer.main.get_command(cli.app)
    assert isinstance(group, TyperGroup)
    ctx = typer.Context(group)
    for name in path:
        inner = group.get_command(ctx, name)
        assert isinstance(inner, TyperGroup), f"{name} is not a group of commands"
        group, ctx = inner, typer.Context(inner, parent=ctx)
    return group, ctx


@pytest.mark.parametrize(("path", "table"), [((), cli._COMMANDS), (("executions",), cli._EXECUTIONS)])
def test_each_lazy_command_loads_and_lists_its_own_help(
    path: tuple[str, ...], table: Mapping[str, LazyCommand]
) -> None:
    group, ctx = _group(path)
    assert set(table) <= set(group.list_commands(ctx))
    for name, lazy in table.items():
        command = group.get_command(ctx, name)
        assert command is not None, f"{name} is listed but does not load"
        assert isinstance(command, TyperGroup) == lazy.group, name
        assert _first_paragraph(command.help) == lazy.help, f"{name}: the help listed differs from the command's"


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["executions", "--help"]])
def test_version_and_help_import_no_package_of_commands(argv: list[str]) -> None:
    code = f"""
        import json, sys
        sys.argv = ["toolreel", *{argv!r}]
        from toolreel.gateway.launch import main
        try:
            main()
        except SystemExit:
            pass
        heavy = {HEAVY!r}
        print(json.dumps(sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))))
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded == [], f"toolreel {' '.join(argv)} imported {loaded[:8]}"
