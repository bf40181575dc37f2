"""`toolreel run`, `toolreel worker`, `toolreel executions cancel / resume` (SPEC §10).

`run` and `resume` exit 0 (succeeded), 1 (failed, cancelled or interrupted), 3 (paused); usage,
config and store errors exit 2 with one line on stderr. The live view of the steps goes to
stderr; stdout carries only the result (`--json`: the execution as `toolreel__get_execution`
shows it). SIGINT cancels the execution being run; SIGTERM interrupts it (a worker resumes it).
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import anyio
import anyio.to_thread
import typer
import yaml
from rich.console import Console
from rich.live import Live
from rich.table import Table

from toolreel.core.caller import ProgressFn
from toolreel.core.errors import ExecutionError, NotFoundError, TemplateError, ToolreelError, UpstreamError
from toolreel.core.model import Execution, ExecutionStatus, StepRecord
from toolreel.core.store import Store, open_store, riding_out
from toolreel.core.template import Template
from toolreel.replayer._engine import Engine, load_template
from toolreel.replayer._inputs import parse_cli_value
from toolreel.replayer._state import awaiting_of
from toolreel.replayer._view import execution_view
from toolreel.replayer._worker import Worker
from toolreel.upstreams.config import GatewayConfig, load_config
from toolreel.upstreams.hub import open_upstreams

__all__ = ["executions_commands", "register"]

DbOption = Annotated[str | None, typer.Option("--db", help="Store URL (default: TOOLREEL_DB, else the user data dir).")]
ConfigOption = Annotated[
    Path | None, typer.Option("--config", "-c", help="Client config with the upstream servers (or TOOLREEL_CONFIG).")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the execution as JSON on stdout.")]
ConcurrencyOption = Annotated[int, typer.Option("--max-concurrency", help="Steps at once.", min=1)]
LeaseOption = Annotated[float, typer.Option("--lease-seconds", help="Claim lease, renewed while alive.", min=0.2)]
_EXIT = {ExecutionStatus.SUCCEEDED: 0, ExecutionStatus.PAUSED: 3}
_T = TypeVar("_T")


class _Usage(Exception):
    """A usage, config or store problem: exit 2."""


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("worker")(worker)


def executions_commands(group: typer.Typer) -> None:
    group.command("cancel")(cancel)
    group.command("resume")(resume)


# ---------------------------------------------------------------------- commands


def run(
    name: Annotated[str, typer.Argument(help="A saved template's name.")],
    inputs: Annotated[list[str] | None, typer.Option("--input", "-i", help="key=value (repeatable).")] = None,
    inputs_file: Annotated[Path | None, typer.Option("--inputs", help="A JSON or YAML file of inputs.")] = None,
    version: Annotated[int | None, typer.Option("--version", help="Template version (default: the latest).")] = None,
    config: ConfigOption = None,
    json_out: JsonOption = False,
    db: DbOption = None,
    max_concurrency: ConcurrencyOption = 16,
    lease_seconds: LeaseOption = 15.0,
    deadline: Annotated[
        float | None, typer.Option("--deadline", help="Seconds the run may take; past them it fails.", min=0.001)
    ] = None,
) -> None:
    """Run a saved template in auto mode, starting the upstreams it needs; a live view of its steps."""

    async def main(store: Store) -> tuple[Execution, list[StepRecord]]:
        template = await _thread(_load, store, name, version)
        given = _read_inputs(template, inputs or [], inputs_file)
        view = None if json_out else _LiveView()
        async with _engine(store, config, template, max_concurrency, lease_seconds, view) as engine:
            try:
                until = time.time() + deadline if deadline is not None else None
                execution_id = await engine.start(template, given, deadline=until)
            except (ExecutionError, TemplateError) as exc:
                raise _Usage(str(exc)) from exc
            return await _watch(engine, execution_id, view, lambda: engine.run(execution_id))

    _report(*_main(db, main), json_out)


def resume(
    execution_id: Annotated[str, typer.Argument()],
    response: Annotated[str | None, typer.Option("--response", help="Answer to a paused approval: yes or no.")] = None,
    config: ConfigOption = None,
    json_out: JsonOption = False,
    db: DbOption = None,
    max_concurrency: ConcurrencyOption = 16,
) -> None:
    """Drive a paused or interrupted execution to its end in this process."""

    async def main(store: Store) -> tuple[Execution, list[StepRecord]]:
        execution = await _thread(store.get_execution, execution_id)
        template = None
        if execution.template is not None and execution.template_version is not None:
            template = await _thread(_load, store, execution.template, execution.template_version)
        view = None if json_out else _LiveView()
        async with _engine(store, config, template, max_concurrency, 15.0, view) as engine:
            return await _watch(engine, execution_id, view, lambda: engine.resume(execution_id, response))

    _report(*_main(db, main), json_out)


def cancel(execution_id: Annotated[str, typer.Argument()], json_out: JsonOption = False, db: DbOption = None) -> None:
    """Cancel an execution: no new step starts, in-flight calls are cancelled (wherever it runs)."""

    async def main(store: Store) -> tuple[Execution, list[StepRecord]]:
        async with Engine(store, _NoUpstreams()) as engine:
            execution = await engine.cancel(execution_id)
        return execution, await _thread(store.get_steps, execution_id)

    execution, steps = _main(db, main)
    _report(execution, steps, json_out, exit_by_status=False)


def worker(
    config: ConfigOption = None,
    db: DbOption = None,
    max_concurrency: ConcurrencyOption = 16,
    capacity: Annotated[int, typer.Option("--capacity", help="Executions driven at once.", min=1)] = 32,
    lease_seconds: LeaseOption = 15.0,
    poll: Annotated[float, typer.Option("--poll", help="Seconds between looks for work.", min=0.01)] = 0.5,
    grace: Annotated[float, typer.Option("--grace", help="Seconds to finish runs on SIGTERM.", min=0)] = 5.0,
) -> None:
    """Drive pending and orphaned executions from a shared database until SIGTERM or SIGINT."""

    async def main(store: Store) -> None:
        async with _engine(store, config, None, max_concurrency, lease_seconds, None) as engine:
            stop = anyio.Event()
            pool = Worker(engine, capacity=capacity, poll_interval=poll, on_claim=_claimed)
            async with anyio.create_task_group() as tg:
                tg.start_soon(_stop_on_signal, stop)
                typer.echo(f"toolreel worker {engine.owner}: ready", err=True)
                await pool.run(stop)
                tg.cancel_scope.cancel()
            await engine.aclose(grace=grace)
            typer.echo(f"toolreel worker {engine.owner}: stopped", err=True)

    _main(db, main)


# ---------------------------------------------------------------------- running


@asynccontextmanager
async def _engine(
    store: Store,
    config: Path | None,
    template: Template | None,
    max_concurrency: int,
    lease_seconds: float,
    view: _LiveView | None,
) -> AsyncIterator[Engine]:
    upstreams = await _thread(_upstreams_config, store, config, template)
    observer = view.observe if view is not None else None
    async with (
        open_upstreams(upstreams) as hub,
        Engine(store, hub, max_concurrency=max_concurrency, lease_seconds=lease_seconds, observer=observer) as engine,
    ):
        yield engine


async def _watch(
    engine: Engine,
    execution_id: str,
    view: _LiveView | None,
    drive: Callable[[], Awaitable[Execution]],
) -> tuple[Execution, list[StepRecord]]:
    """Drive with the live view on stderr; SIGINT cancels the execution, SIGTERM interrupts it."""
    if view is not None:
        view.execution_id = execution_id
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_signals, engine, execution_id)
            execution = await drive()
            tg.cancel_scope.cancel()
    finally:
        if view is not None:
            view.close()
    return execution, await _thread(engine.store.get_steps, execution_id)


async def _signals(engine: Engine, execution_id: str) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
        async for signum in received:
            if signum == signal.SIGINT:
                await engine.cancel(execution_id)
            else:
                await engine.aclose()


async def _stop_on_signal(stop: anyio.Event) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
        async for _ in received:
            stop.set()
            return


def _claimed(execution_id: str) -> None:
    typer.echo(f"toolreel worker: driving {execution_id}", err=True)


class _LiveView:
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
            tool = f"{record.server}__{record.tool}" if record.server else record.tool or record.kind
            status = "waiting" if awaiting_of(record) is not None else str(record.status)
            table.add_row(record.name, tool, status, str(record.attempt), f"{took:.2f}")
        return table


class _NoUpstreams:
    """`cancel` touches no upstream: the process driving the execution cancels its own calls."""

    def server_of(self, name: str) -> str | None:
        return None

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        timeout: float | None = None,
        progress: ProgressFn | None = None,
    ) -> dict[str, Any]:
        raise UpstreamError(f"tool {name!r}: this process has no upstreams", server=name.partition("__")[0])


# ---------------------------------------------------------------------- inputs, config, output


def _load(store: Store, name: str, version: int | None) -> Template:
    try:
        return load_template(store, name, version)
    except NotFoundError as exc:
        raise _Usage(str(exc)) from exc


def _read_inputs(template: Template, pairs: Sequence[str], file: Path | None) -> dict[str, Any]:
    given: dict[str, Any] = {}
    if file is not None:
        try:
            loaded = yaml.safe_load(file.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise _Usage(f"--inputs {file}: cannot read it as JSON or YAML ({exc})") from exc
        if not isinstance(loaded, dict):
            raise _Usage(f"--inputs {file}: expected an object of input name -> value")
        given.update(loaded)
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise _Usage(f"-i {pair!r}: write key=value")
        try:
            given[key] = parse_cli_value(template.inputs.get(key), text)
        except ValueError as exc:
            raise _Usage(f"-i {key}: {exc}") from exc
    return given


def _upstreams_config(store: Store, path: Path | None, template: Template | None) -> GatewayConfig:
    """The config's servers, only those the template (and its child templates) call when one is given."""
    source = path or (Path(os.environ["TOOLREEL_CONFIG"]) if os.environ.get("TOOLREEL_CONFIG") else None)
    if source is None:
        return GatewayConfig(servers=())
    try:
        config = load_config(source)
    except ToolreelError as exc:
        raise _Usage(str(exc)) from exc
    if template is None:
        return config
    needed = _servers_called(store, template)
    kept = tuple(server for server in config.servers if server.name in needed)
    if {server.name for server in kept} != needed:
        return config  # a tool with another prefix: start everything, the run names what is missing
    return GatewayConfig(servers=kept, source=config.source)


def _servers_called(store: Store, template: Template, seen: frozenset[str] = frozenset()) -> set[str]:
    servers = {spec.tool.partition("__")[0] for spec in template.steps if spec.tool}
    for spec in template.steps:
        if spec.template is not None and spec.template not in seen:
            try:
                child = load_template(store, spec.template, spec.template_version)
            except NotFoundError:
                continue  # the run reports it where it matters, in the step
            servers |= _servers_called(store, child, seen | {template.name})
    return servers


def _main(db: str | None, body: Callable[[Store], Awaitable[_T]]) -> _T:
    try:
        store = open_store(db)
    except ToolreelError as exc:
        raise _fail(str(exc), 2) from None
    try:
        return anyio.run(body, riding_out(store))  # a short store outage is waited out, not fatal
    except BaseException as exc:
        cause = _unwrap(exc)
        if isinstance(cause, _Usage | NotFoundError):
            raise _fail(str(cause), 2) from None
        if isinstance(cause, ToolreelError):
            raise _fail(str(cause), 1) from None
        raise
    finally:
        store.close()


def _unwrap(exc: BaseException) -> BaseException:
    """The error that matters inside the exception groups task groups raise."""
    while isinstance(exc, BaseExceptionGroup):
        ours = [e for e in exc.exceptions if isinstance(_unwrap(e), _Usage | ToolreelError)]
        exc = _unwrap(ours[0]) if ours else exc.exceptions[0]
    return exc


def _fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"toolreel: {message}", err=True)
    return typer.Exit(code)


def _report(execution: Execution, steps: list[StepRecord], json_out: bool, *, exit_by_status: bool = True) -> None:
    if json_out:
        typer.echo(json.dumps(execution_view(execution, steps), ensure_ascii=False, indent=2))
    else:
        _human(execution)
    if exit_by_status:
        raise typer.Exit(_EXIT.get(execution.status, 1))


def _human(execution: Execution) -> None:
    line = f"execution {execution.id} {execution.status}"
    if execution.status == ExecutionStatus.SUCCEEDED:
        typer.echo(line, err=True)
        typer.echo(json.dumps(execution.output, ensure_ascii=False, indent=2))
    elif execution.status == ExecutionStatus.PAUSED:
        typer.echo(f"{line}: {execution.prompt}", err=True)
        typer.echo(f"answer with: toolreel executions resume {execution.id} --response yes|no", err=True)
    elif execution.status == ExecutionStatus.RUNNING:
        typer.echo(f"{line}: interrupted; resume it with: toolreel executions resume {execution.id}", err=True)
    else:
        typer.echo(f"{line}: {execution.error}", err=True)


async def _thread(func: Callable[..., _T], *args: Any) -> _T:
    return await anyio.to_thread.run_sync(func, *args)
