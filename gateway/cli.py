"""The `toolreel` command line: `serve`, `config check`, and the commands of the other packages.

Errors are one line on stderr that says what and where; exit code 2 for usage and config
errors. stdout carries only the MCP protocol (serve over stdio) or requested output. A command
imports only what it uses: the other packages' commands load when named (`_COMMANDS`), and this
module's own load the gateway inside them, so `--version` and `--help` start no heavier than Typer.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from toolreel._cli import DbOption, LazyCommand, fail, lazy_group, printable_output
from toolreel.core.errors import ConfigError, ToolreelError
from toolreel.core.limits import DEFAULT_MAX_BODY_MB

if TYPE_CHECKING:
    from toolreel.upstreams.config import GatewayConfig

__all__ = ["app", "main"]

# The other packages' commands: `FUNCTION(app)` of MODULE adds them; the help is what `--help` lists
# without importing them (tests/product/test_cli.py pins it to each command's own docstring).
_TEMPLATIZER = "toolreel.templatizer.cli"
_REPLAYER = "toolreel.replayer.cli"
_RECORDER = "toolreel.recorder.cli"
_AUTH = "toolreel.gateway.auth_cli"
_COMMANDS = {
    "templatize": LazyCommand(
        _TEMPLATIZER,
        "register",
        "Run the templatizer on stored recordings; print the template and what it inferred.",
    ),
    "schema": LazyCommand(_TEMPLATIZER, "register", "Print the JSON Schema of template files (draft 2020-12)."),
    "run": LazyCommand(
        _REPLAYER,
        "register",
        "Run a saved template in auto mode, starting the upstreams it needs; a live view of its steps.",
    ),
    "worker": LazyCommand(
        _REPLAYER,
        "register",
        "Drive pending and orphaned executions from a shared database until SIGTERM or SIGINT.",
    ),
    "call": LazyCommand(
        _AUTH,
        "register",
        "Connect to one MCP server as the gateway would (signing in if needed); list its tools or call one.",
    ),
    "auth": LazyCommand(_AUTH, "register", "Sign in to OAuth-protected HTTP servers.", group=True),
    "schedule": LazyCommand(
        "toolreel.replayer.schedule_cli",
        "register",
        "Scheduled runs of templates: add, list, remove, pause, resume.",
        group=True,
    ),
    "templates": LazyCommand(
        _TEMPLATIZER,
        "register",
        "The template catalogue: list, show, export, import, delete, validate, check.",
        group=True,
    ),
}
_EXECUTIONS = {
    "list": LazyCommand(_RECORDER, "executions_commands", "Executions, newest first."),
    "show": LazyCommand(
        _RECORDER,
        "executions_commands",
        "An execution's status and steps (inputs as written, outputs, errors); --follow watches it live.",
    ),
    "cancel": LazyCommand(
        _REPLAYER,
        "executions_commands",
        "Cancel an execution: no new step starts, in-flight calls are cancelled (wherever it runs).",
    ),
    "resume": LazyCommand(
        _REPLAYER,
        "executions_commands",
        "Drive a paused or interrupted execution to its end in this process.",
    ),
    "retry": LazyCommand(
        _REPLAYER,
        "executions_commands",
        "Try a failed or cancelled execution again: succeeded steps keep their outputs, the failed step "
        "(or --from STEP) and everything downstream run; driven to its end in this process.",
    ),
    "signal": LazyCommand(
        "toolreel.replayer.signal_cli",
        "signal_commands",
        "Send a signal to the step that waits for it, then drive the execution on in this process.",
    ),
    "prune": LazyCommand(
        _REPLAYER,
        "executions_commands",
        "Delete finished executions older than an age, with their steps (never templates, never live runs).",
    ),
}

app = typer.Typer(
    cls=lazy_group(_COMMANDS),
    name="toolreel",
    help="A recording MCP gateway: record tool calls as a DAG, save templates, replay them without the LLM.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
config_app = typer.Typer(help="Client config files.", no_args_is_help=True)
app.add_typer(config_app, name="config")
executions_app = typer.Typer(
    cls=lazy_group(_EXECUTIONS), help="Recorded and replayed executions.", no_args_is_help=True
)
app.add_typer(executions_app, name="executions")


def _print_version(value: bool) -> None:
    if value:
        from toolreel import __version__

        typer.echo(f"toolreel {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """A recording MCP gateway: record tool calls as a DAG, save templates, replay them without the LLM."""


def gateway_config(config: Path | None, command: list[str] | None, name: str | None) -> GatewayConfig:
    from toolreel.upstreams.config import load_config, wrap_config

    if config is not None and command:
        raise ConfigError("give either --config PATH or a command after '--', not both")
    if config is not None:
        return load_config(config)
    if command:
        return wrap_config(command, name)
    raise ConfigError("nothing to serve: give --config PATH, or wrap one server: toolreel serve -- COMMAND [ARGS...]")


@app.command(context_settings={"allow_interspersed_args": False})
def serve(
    command: Annotated[list[str] | None, typer.Argument(help="A stdio server to wrap, after '--'.")] = None,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="mcpServers / servers JSON file.")] = None,
    http: Annotated[str | None, typer.Option("--http", help="Serve streamable HTTP at [HOST:]PORT/mcp.")] = None,
    token_env: Annotated[
        list[str] | None,
        typer.Option(
            "--token-env",
            metavar="VAR",
            help="Require Authorization: Bearer $VAR. Repeat it (or VAR1,VAR2) to give each client its own "
            "token: a client then sees only the recordings made with its token. Without a token any local "
            "client may read any recording and cancel any run.",
        ),
    ] = None,
    max_body_mb: Annotated[
        float, typer.Option("--max-body-mb", help="Largest HTTP request body, in MiB (larger: 413).")
    ] = DEFAULT_MAX_BODY_MB,
    name: Annotated[str | None, typer.Option("--name", help="Server name of a wrapped command.")] = None,
    prefix: Annotated[
        bool | None,
        typer.Option("--prefix/--no-prefix", help="List tools as server__tool (default: on with --config)."),
    ] = None,
    db: DbOption = None,
    annotate: Annotated[
        bool, typer.Option("--annotate", help="Append a text item naming the step to results.")
    ] = False,
    record: Annotated[bool, typer.Option("--record/--no-record", help="Record tool calls (default on).")] = True,
    max_concurrency: Annotated[int, typer.Option("--max-concurrency", help="Steps at once in auto mode.")] = 16,
    no_ui: Annotated[bool, typer.Option("--no-ui", help="No web view at /ui/ (HTTP mode).")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logs on stderr.")] = False,
    retain: Annotated[
        str | None, typer.Option("--retain", help="Prune finished executions older than this (30d, 12h), hourly.")
    ] = None,
    tools: Annotated[
        str | None,
        typer.Option(
            "--tools", help="List all tools, or search and call tools (search), or search past a size (auto)."
        ),
    ] = None,
) -> None:
    """Serve the upstreams of a config, or wrap one stdio server transparently."""
    _logging(verbose)
    from toolreel.gateway._trim import limit_arenas

    limit_arenas()  # before any thread starts: a long-running gateway gives memory back (gateway/_trim.py)
    from toolreel.core.retention import parse_age

    try:
        age = parse_age(retain) if retain is not None else None
    except ValueError as exc:
        raise fail(f"--retain: {exc}") from None
    from toolreel.gateway.search import parse_tools_mode
    from toolreel.gateway.serve import parse_http, run_gateway

    try:
        cfg = gateway_config(config, command, name)
        options = parse_http(http, token_env, ui=not no_ui, max_body_mb=max_body_mb) if http else None
        tools_mode = parse_tools_mode(tools, path="--tools") if tools is not None else None
        if record:
            from toolreel.recorder import backlog_mark

            backlog_mark()  # a bad TOOLREEL_RECORD_BACKLOG is a usage error, before anything starts
    except ToolreelError as exc:
        raise fail(exc) from None
    from toolreel.core.secrets import Redactor, redact_logs

    redact_logs(Redactor(cfg.secret_values()))
    use_prefix = prefix if prefix is not None else config is not None
    hook_factory = _hook_factory(
        cfg, db=db, annotate=annotate, record=record, max_concurrency=max_concurrency, retain=age, tools=tools_mode
    )
    import anyio

    try:
        anyio.run(
            lambda: run_gateway(cfg, http=options, prefix=use_prefix, hook_factory=hook_factory),
            backend_options=loop_options(),
        )
    except ToolreelError as exc:
        raise fail(exc, 1) from None
    except KeyboardInterrupt:
        pass


def _hook_factory(cfg: GatewayConfig, **options: Any) -> Any:
    """The recording and management layer above the pipe."""
    from toolreel.gateway.assembly import hook_factory

    return hook_factory(cfg, **options)


@app.command("ui")
def ui(
    http: Annotated[str, typer.Option("--http", help="Serve the web view at [HOST:]PORT/ui/.")] = "127.0.0.1:8765",
    token_env: Annotated[str | None, typer.Option("--token-env", help="Require the token in $VAR.")] = None,
    db: DbOption = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logs on stderr.")] = False,
) -> None:
    """The web view on its own, over a store: executions, templates, save as template."""
    _logging(verbose)
    from toolreel.gateway.serve import parse_http, run_web_view
    from toolreel.ui import StoreBackend

    try:
        options = parse_http(http, token_env)
    except ToolreelError as exc:
        raise fail(exc) from None

    def opener() -> Any:
        from toolreel.core.store import open_store

        return open_store(db)

    backend = StoreBackend(opener)
    import anyio

    try:
        anyio.run(lambda: run_web_view(options, backend), backend_options=loop_options())
    except ToolreelError as exc:
        raise fail(exc, 1) from None
    except KeyboardInterrupt:
        pass
    finally:
        backend.close()


@config_app.command("check")
def config_check(
    path: Annotated[Path, typer.Argument(help="The config file.")],
    start: Annotated[bool, typer.Option("--start/--no-start", help="Start the servers and list their tools.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for the servers.")] = 30.0,
) -> None:
    """Validate a client config and list what it would serve."""
    import anyio

    from toolreel.upstreams.config import load_config

    _logging(False)
    try:
        cfg = load_config(path)
    except ConfigError as exc:
        raise fail(exc) from None
    report = anyio.run(_check, cfg, start, timeout)
    if as_json:
        typer.echo(json.dumps(report, indent=2))
    else:
        _print_check(report)
    if any(s["state"] == "failed" for s in report["servers"]):
        raise typer.Exit(1)


async def _check(cfg: GatewayConfig, start: bool, timeout: float) -> dict[str, Any]:
    from toolreel.upstreams.hub import ALL_CLIENT_CAPABILITIES, open_hub

    servers: list[dict[str, Any]] = []
    if not start:
        for s in cfg.servers:
            servers.append({"name": s.name, "transport": s.transport, "target": s.describe(), "state": "not started"})
        return {"file": cfg.source, "servers": servers}
    async with open_hub(cfg, prefix=True, capabilities=ALL_CLIENT_CAPABILITIES, wait=timeout) as hub:
        for upstream in hub.upstreams.values():
            listed = [t["name"] for t in hub.listed_tools() if hub.server_of(t["name"]) == upstream.name]
            servers.append(
                {
                    "name": upstream.name,
                    "transport": upstream.config.transport,
                    "target": upstream.config.describe(),
                    "state": upstream.state.value,
                    "error": upstream.last_error,
                    "tools": listed,
                    "resources": len(upstream.listing.resources),
                    "prompts": len(upstream.listing.prompts),
                }
            )
        mapped = [{"listed": m.listed, "server": m.server, "name": m.name} for m in hub.mappings()]
    return {"file": cfg.source, "servers": servers, "mapped_names": mapped}


def _print_check(report: dict[str, Any]) -> None:
    typer.echo(f"{report['file']}: {len(report['servers'])} server(s)")
    for s in report["servers"]:
        typer.echo(f"  {s['name']} [{s['transport']}] {s['target']}: {s['state']}")
        if s.get("error"):
            typer.echo(f"    error: {s['error']}")
        for tool in s.get("tools", []):
            typer.echo(f"    - {tool}")
    for m in report.get("mapped_names", []):
        typer.echo(f"  mapped: {m['listed']} = {m['server']} / {m['name']}")


def loop_options() -> dict[str, Any]:
    """uvloop when installed: a forwarded call is mostly event-loop hops."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return {}
    return {"use_uvloop": True}


def _logging(verbose: bool) -> None:
    level = logging.DEBUG if verbose or os.environ.get("TOOLREEL_DEBUG") else logging.WARNING
    logging.basicConfig(stream=sys.stderr, level=level, format="toolreel: %(name)s: %(message)s")


def main() -> None:
    argv = sys.argv[1:]
    if not argv or argv[0] != "serve":  # (serve's stdout is the protocol channel: its own writer escapes)
        printable_output()
    app()
