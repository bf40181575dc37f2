"""The `toolreel` command loads a package's commands only when one is named: `--version` and `--help`
import neither the MCP SDK nor the store, `executions list` imports the store and not the gateway, and
what `--help` lists unloaded is each command's own help."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path

import pytest
import typer
import typer.main
from typer.core import TyperGroup

from toolreel._cli import LazyCommand
from toolreel.core.model import Execution, ExecutionMode, ExecutionStatus
from toolreel.core.store import open_store
from toolreel.gateway import cli

# What the commands' packages import and `--version` / `--help` must not (pydantic is not one: Typer
# itself reads a command's parameters with it).
HEAVY = ("mcp", "mcp_types", "sqlalchemy", "sqlmodel", "toolreel.replayer", "toolreel.upstreams")
# What Typer's help renderer would import for Markdown help and pretty tracebacks, which toolreel uses neither of.
HELP_UNUSED = ("markdown_it", "rich.markdown", "rich.traceback", "rich.pretty")
# What `toolreel executions list` needs is the store and the recorder's open hook (`recorder._spool`):
# not the gateway and its SDK, the live recording machinery, the templatizer or the replayer.
LIST_UNUSED = (
    "mcp",
    "mcp_types",
    "httpx",
    "rich",
    "jsonpath_ng",
    "uvicorn",
    "starlette",
    "anyio",
    "toolreel.upstreams",
    "toolreel.replayer",
    "toolreel.templatizer",
    "toolreel.ui",
    "toolreel.recorder._recorder",
    "toolreel.recorder._session",
    "toolreel.recorder._writer",
)


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
        heavy = {(*HEAVY, *HELP_UNUSED)!r}
        print(json.dumps(sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))))
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded == [], f"toolreel {' '.join(argv)} imported {loaded[:8]}"


@pytest.mark.slow
def test_executions_list_imports_the_store_and_nothing_it_does_not_use(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'list.db'}"
    with open_store(url) as store:
        store.create_execution(
            Execution(
                id="listed-1",
                mode=ExecutionMode.RECORD,
                status=ExecutionStatus.SUCCEEDED,
                created_at=1.0,
                updated_at=1.0,
            )
        )
    code = f"""
        import contextlib, gc, io, json, sys
        sys.argv = ["toolreel", "executions", "list"]
        from toolreel.gateway.launch import main
        listing = io.StringIO()
        with contextlib.redirect_stdout(listing), contextlib.suppress(SystemExit):
            main()
        unused = {LIST_UNUSED!r}
        loaded = sorted(m for m in sys.modules if any(m == u or m.startswith(u + ".") for u in unused))
        ids = [line.split()[0] for line in listing.getvalue().splitlines()]
        print(json.dumps([ids, loaded, "toolreel.core.store" in sys.modules, gc.isenabled()]))
    """
    ids, loaded, store_loaded, collecting = json.loads(_run_python(code, {"TOOLREEL_DB": url}))
    assert ids == ["listed-1"]
    assert loaded == [], f"toolreel executions list imported {loaded[:8]}"
    assert store_loaded
    assert collecting, "the garbage collector stays off after the command's imports"


def _run_python(code: str, env: Mapping[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, **(env or {})},
    )
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_help_renderers_stand_ins_build_the_real_rich_objects() -> None:
    """`--help` loads Typer's renderer without `rich.markdown` / `rich.traceback`; what it would build with
    them is still the real thing, and any other importer gets the real modules."""
    code = """
        import json, sys
        sys.argv = ["toolreel", "--help"]
        from toolreel.gateway.launch import _load_help_renderer
        _load_help_renderer()
        from typer import rich_utils
        before = sorted(m for m in ("rich.markdown", "rich.traceback") if m in sys.modules)
        made = rich_utils._make_rich_text(text="**bold**", style="", markup_mode="markdown")
        try:
            raise ValueError("boom")
        except ValueError as exc:
            trace = rich_utils.Traceback.from_exception(type(exc), exc, exc.__traceback__)
        import rich.markdown, rich.traceback
        print(json.dumps([before, type(made).__module__, type(made).__name__, type(trace).__module__,
                          rich.markdown.Markdown.__module__, isinstance(made, rich.markdown.Markdown)]))
    """
    assert json.loads(_run_python(code)) == [[], "rich.markdown", "Markdown", "rich.traceback", "rich.markdown", True]
