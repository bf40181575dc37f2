"""`toolreel run`, `toolreel worker`, `toolreel executions cancel / resume / retry` (SPEC §10).

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
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Annotated, Any, TypeVar

import anyio
import anyio.to_thread
import typer

from toolreel._cli import USAGE, DbOption, JsonOption, fail
from toolreel.core import tracing
from toolreel.core.errors import (
    ConfigError,
    ExecutionError,
    NotFoundError,
    TemplateError,
    ToolreelError,
)
from toolreel.core.model import Execution, StepRecord
from toolreel.core.names import server_part
from toolreel.core.retention import parse_age, retaining
from toolreel.core.secrets import redact_logs
from toolreel.core.store import Store, check_statuses, open_store, riding_out
from toolreel.core.template import Template
from toolreel.core.template_io import stored_template, template_text
from toolreel.core.yaml_bounded import load_yaml
from toolreel.replayer._cli_view import LiveView, report
from toolreel.replayer._engine import Engine, load_template
from toolreel.replayer._inputs import parse_cli_value, parse_secret_option, read_secret, refuse_given_secrets
from toolreel.replayer._ledger import ClaimedElsewhere
from toolreel.replayer._llm_settings import LLMSettings
from toolreel.replayer._retry import check_retryable
from toolreel.replayer._worker import Worker
from toolreel.upstreams.auth import follow_store
from toolreel.upstreams.config import GatewayConfig, load_config
from toolreel.upstreams.hub import Hub, open_upstreams
from toolreel.upstreams.needed import config_for, remembered_servers, template_family
from toolreel.upstreams.upstream import UpstreamState

__all__ = ["executions_commands", "register", "retain_age"]

ConfigOption = Annotated[
    Path | None, typer.Option("--config", "-c", help="Client config with the upstream servers (or TOOLREEL_CONFIG).")
]
ConcurrencyOption = Annotated[int, typer.Option("--max-concurrency", help="Steps at once.", min=1)]
LeaseOption = Annotated[float, typer.Option("--lease-seconds", help="Claim lease, renewed while alive.", min=0.2)]
RetainOption = Annotated[
    str | None, typer.Option("--retain", help="Prune finished executions older than this (30d, 12h), hourly.")
]
_T = TypeVar("_T")


class _Usage(Exception):
    """A usage, config or store problem: exit 2."""


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("worker")(worker)


def executions_commands(group: typer.Typer) -> None:
    group.command("cancel")(cancel)
    group.command("resume")(resume)
    group.command("retry")(retry)
    group.command("prune")(prune)


# ---------------------------------------------------------------------- commands


def run(
    name: Annotated[str, typer.Argument(help="A saved template's name.")],
    inputs: Annotated[list[str] | None, typer.Option("--input", "-i", help="key=value (repeatable).")] = None,
    inputs_file: Annotated[Path | None, typer.Option("--inputs", help="A JSON or YAML file of inputs.")] = None,
    secret: Annotated[
        list[str] | None, typer.Option("--secret", help="A secret input: NAME=env:VAR or NAME=file:PATH (repeatable).")
    ] = None,
    version: Annotated[int | None, typer.Option("--version", help="Template version (default: the latest).")] = None,
    config: ConfigOption = None,
    json_out: JsonOption = False,
    db: DbOption = None,
    max_concurrency: ConcurrencyOption = 16,
    lease_seconds: LeaseOption = 15.0,
    deadline: Annotated[
        float | None, typer.Option("--deadline", help="Seconds the run may take; past them it fails.", min=0.001)
    ] = None,
    detach: Annotated[
        bool, typer.Option("--detach", help="Queue it for a worker and print its id (nothing runs here).")
    ] = False,
    run_id: Annotated[
        str | None,
        typer.Option("--id", help="The execution id to use; a run that has it already is shown, not run again."),
    ] = None,
    llm: Annotated[
        str, typer.Option("--llm", help="`live` (ask a model) or `recorded` (llm steps give their recorded answer).")
    ] = "live",
) -> None:
    """Run a saved template in auto mode, starting the upstreams it needs; a live view of its steps."""
    if llm not in ("live", "recorded"):
        raise fail(f"--llm is live or recorded, not {llm!r}", 2)
    if detach:
        _detach(db, name, version, inputs or [], inputs_file, secret or [], json_out, deadline, run_id)
        return

    async def main(store: Store) -> tuple[Execution, list[StepRecord]]:
        template = await _thread(_load, store, name, version)
        given = _read_inputs(template, inputs or [], inputs_file)
        secrets = _read_secrets(template, secret or [])
        view = None if json_out else LiveView()
        settings = LLMSettings.from_env("recorded" if llm == "recorded" else "live")
        async with _engine(store, config, template, max_concurrency, lease_seconds, view, settings) as engine:
            try:
                until = time.time() + deadline if deadline is not None else None
                refuse_given_secrets(template, given)
                execution_id = await engine.start(template, given, deadline=until, secrets=secrets, execution_id=run_id)
            except (ExecutionError, TemplateError) as exc:
                raise _Usage(str(exc)) from exc
            return await _watch(engine, execution_id, view, lambda: _run_once(engine, execution_id))

    report(*_main(db, main), json_out)


def _detach(
    db: str | None,
    name: str,
    version: int | None,
    pairs: Sequence[str],
    inputs_file: Path | None,
    secrets: Sequence[str],
    json_out: bool,
    deadline: float | None,
    run_id: str | None,
) -> None:
    """`run --detach`: a pending execution in the store, for any worker sharing it."""

    async def main(store: Store) -> str:
        template = await _thread(_load, store, name, version)
        if secrets:
            raise _Usage(
                "--secret cannot travel to the worker that drives a queued run (secrets are never stored); "
                "give the template's secret inputs a default source (secret: {env: VAR}) read where it runs"
            )
        given = _read_inputs(template, pairs, inputs_file)
        async with Engine(store, _no_upstreams()) as engine:
            try:
                refuse_given_secrets(template, given)
                until = time.time() + deadline if deadline is not None else None
                return await engine.enqueue(template, given, deadline=until, execution_id=run_id)
            except (ExecutionError, TemplateError) as exc:
                raise _Usage(str(exc)) from exc

    execution_id = _main(db, main)
    typer.echo(json.dumps({"execution_id": execution_id, "status": "pending"}) if json_out else execution_id)
    if not json_out:
        typer.echo(f"queued; watch it with: toolreel executions show {execution_id} --follow", err=True)


def resume(
    execution_id: Annotated[str, typer.Argument()],
    response: Annotated[
        str | None,
        typer.Option(
            "--response", help="Answer to a paused approval: yes or no, or a JSON object of the asked fields."
        ),
    ] = None,
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
        view = None if json_out else LiveView()
        async with _engine(store, config, template, max_concurrency, 15.0, view) as engine:
            return await _watch(engine, execution_id, view, lambda: engine.resume(execution_id, response))

    report(*_main(db, main), json_out)


def retry(
    execution_id: Annotated[str, typer.Argument()],
    from_step: Annotated[
        str | None, typer.Option("--from", help="Run this step and everything downstream again, even if done.")
    ] = None,
    inputs: Annotated[list[str] | None, typer.Option("--input", "-i", help="key=value: change an input.")] = None,
    config: ConfigOption = None,
    json_out: JsonOption = False,
    db: DbOption = None,
    max_concurrency: ConcurrencyOption = 16,
) -> None:
    """Try a failed or cancelled execution again: succeeded steps keep their outputs, the failed step
    (or --from STEP) and everything downstream run; driven to its end in this process."""

    async def main(store: Store) -> tuple[Execution, list[StepRecord]]:
        execution = await _thread(store.get_execution, execution_id)
        try:
            check_retryable(execution)
        except ExecutionError as exc:
            raise _Usage(str(exc)) from exc
        if execution.template is None or execution.template_version is None:
            raise _Usage(f"execution {execution_id} is not a run of a saved template: there is nothing to retry")
        template = await _thread(_load, store, execution.template, execution.template_version)
        given = _read_inputs(template, inputs or [], None)
        view = None if json_out else LiveView()
        async with _engine(store, config, template, max_concurrency, 15.0, view) as engine:
            retried = partial(engine.retry, execution_id, from_step=from_step, inputs=given)
            return await _watch(engine, execution_id, view, retried)

    report(*_main(db, main), json_out)


async def _run_once(engine: Engine, execution_id: str) -> Execution:
    """`run --id`: a run that has the id already and is driven elsewhere is shown as it is, not run twice."""
    try:
        return await engine.run(execution_id)
    except ClaimedElsewhere:
        return await engine.get(execution_id)


def cancel(execution_id: Annotated[str, typer.Argument()], json_out: JsonOption = False, db: DbOption = None) -> None:
    """Cancel an execution: no new step starts, in-flight calls are cancelled (wherever it runs)."""

    async def main(store: Store) -> tuple[Execution, list[StepRecord]]:
        async with Engine(store, _no_upstreams()) as engine:
            execution = await engine.cancel(execution_id)
        return execution, await _thread(store.get_steps, execution_id)

    execution, steps = _main(db, main)
    report(execution, steps, json_out, exit_by_status=False)


def worker(
    config: ConfigOption = None,
    db: DbOption = None,
    max_concurrency: ConcurrencyOption = 16,
    capacity: Annotated[int, typer.Option("--capacity", help="Executions driven at once.", min=1)] = 32,
    lease_seconds: LeaseOption = 15.0,
    poll: Annotated[float, typer.Option("--poll", help="Seconds between looks for work.", min=0.01)] = 0.5,
    grace: Annotated[float, typer.Option("--grace", help="Seconds to finish runs on SIGTERM.", min=0)] = 5.0,
    retain: RetainOption = None,
) -> None:
    """Drive pending and orphaned executions from a shared database until SIGTERM or SIGINT."""
    age = retain_age(retain)

    async def main(store: Store) -> None:
        async with (
            retaining(store, age),
            _engine(store, config, None, max_concurrency, lease_seconds, None) as engine,
        ):
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


def prune(
    older_than: Annotated[str, typer.Option("--older-than", help="Age: 30d, 12h, 90m, 2w, or seconds.")],
    status: Annotated[
        list[str] | None, typer.Option("--status", help="Only these statuses (repeatable; default: every finished).")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count what would go; delete nothing.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="The counts as JSON on stdout.")] = False,
    db: DbOption = None,
) -> None:
    """Delete finished executions older than an age, with their steps (never templates, never live runs)."""
    try:
        age, statuses = parse_age(older_than), check_statuses(status)
    except ValueError as exc:
        raise fail(str(exc), 2) from None

    async def main(store: Store) -> Any:
        before = time.time() - age
        return await _thread(lambda: store.prune_executions(before=before, statuses=statuses, dry_run=dry_run))

    report = _main(db, main)
    if json_out:
        typer.echo(json.dumps(report.as_dict()))
        return
    verb = "would delete" if dry_run else "deleted"
    freed = f"; the file shrank by {report.freed_bytes:,} bytes" if report.freed_bytes else ""
    typer.echo(f"{verb} {report.executions} executions and {report.steps} steps{freed}")


def retain_age(value: str | None) -> float | None:
    """`--retain D` as seconds; a bad value is a usage error."""
    if value is None:
        return None
    try:
        return parse_age(value)
    except ValueError as exc:
        raise fail(f"--retain: {exc}", 2) from None


# ---------------------------------------------------------------------- running


@asynccontextmanager
async def _engine(
    store: Store,
    config: Path | None,
    template: Template | None,
    max_concurrency: int,
    lease_seconds: float,
    view: LiveView | None,
    llm: LLMSettings | None = None,
) -> AsyncIterator[Engine]:
    upstreams = await _thread(_upstreams_config, store, config, template)
    store.redactor.add(upstreams.secret_values())
    redact_logs(store.redactor)  # what this run logs on stderr keeps the secrets its rows do not hold
    observer = view.observe if view is not None else None
    async with (
        open_upstreams(upstreams) as hub,
        Engine(
            store,
            hub,
            max_concurrency=max_concurrency,
            lease_seconds=lease_seconds,
            observer=observer,
            llm=llm,
            secret_values=upstreams.secret_values(),
        ) as engine,
    ):
        if template is not None:
            await hub.wait_settled(60.0)  # a loaded machine starts a server past the hub's first-answer budget
            _check_started(hub, template)
        yield engine


def _called(template: Template) -> set[str]:
    return {server_part(spec.tool) for spec in template.steps if spec.tool}


def _check_started(hub: Hub, template: Template) -> None:
    """A server the template calls that failed to start: one error naming it, the template and the cause."""
    for name in sorted(_called(template)):
        upstream = hub.upstreams.get(name)
        # A server that needs a sign-in does not stop the run: its steps pause for it (`sign_in_needed`).
        if upstream is not None and upstream.state is UpstreamState.FAILED and upstream.sign_in is None:
            cause = upstream.last_error or upstream.stderr_tail()[-300:] or "no cause given"
            raise _Usage(
                f"template {template.name!r}: server {name!r} ({upstream.config.describe()}) could not be "
                f"started: {cause}; fix it or pass --config with a server {name!r} that starts"
            )


async def _watch(
    engine: Engine,
    execution_id: str,
    view: LiveView | None,
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
    # What is printed is what the store holds: output piped to a file or a CI log keeps no secret either.
    shown = {"output": execution.output, "error": execution.error, "prompt": execution.prompt}
    shown = engine.store.redactor.fields(shown)
    return execution.replace(**shown), await _thread(engine.store.get_steps, execution_id)


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


def _no_upstreams() -> Hub:
    """A hub of no servers, never started: `--detach` and `cancel` call nothing here (the process
    driving the execution cancels its own calls), and a call would be refused as an unknown tool."""
    return Hub(GatewayConfig(servers=()))


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
            loaded = load_yaml(template_text(file.read_bytes(), f"--inputs {file}"), f"--inputs {file}")
        except OSError as exc:
            raise _Usage(f"--inputs {file}: cannot read it as JSON or YAML ({exc.strerror or exc})") from exc
        except TemplateError as exc:
            raise _Usage(str(exc)) from exc
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


def _read_secrets(template: Template, options: Sequence[str]) -> dict[str, str]:
    secrets: dict[str, str] = {}
    declared = [name for name, spec in template.inputs.items() if spec.secret]
    for option in options:
        try:
            name, source = parse_secret_option(option)
            if name not in declared:
                raise ValueError(
                    f"--secret {name}: template {template.name!r} has no secret input {name!r} "
                    f"(its secret inputs: {', '.join(declared) or 'none'})"
                )
            secrets[name] = read_secret(source)
        except ValueError as exc:
            raise _Usage(str(exc) if str(exc).startswith("--secret") else f"--secret {name}: {exc}") from exc
    return secrets


def _upstreams_config(store: Store, path: Path | None, template: Template | None) -> GatewayConfig:
    """The config's servers, only those the template (and its child templates) call when one is given;
    with no config, the servers the template (a worker: every saved template) remembers."""
    source = path or (Path(os.environ["TOOLREEL_CONFIG"]) if os.environ.get("TOOLREEL_CONFIG") else None)
    family = template_family(template, partial(load_template, store)) if template is not None else None
    try:
        if source is None:
            found = remembered_servers(family or _all_saved(store), None if family else _skipping)
            return GatewayConfig(servers=tuple(server for _, server in found.values()), source=None)
        config = load_config(source)
    except ToolreelError as exc:
        raise _Usage(str(exc)) from exc
    return config if family is None else config_for(config, family)


def _skipping(exc: ConfigError) -> None:
    # A worker serves every template: one whose servers cannot start must not stop the others.
    typer.echo(f"toolreel worker: skipping the servers of a template: {exc}", err=True)


def _all_saved(store: Store) -> list[Template]:
    saved = []
    for record in store.list_templates():
        try:
            saved.append(stored_template(record))
        except TemplateError:
            continue  # a template this version cannot read is reported when it is run, not here
    return saved


def _main(db: str | None, body: Callable[[Store], Awaitable[_T]]) -> _T:
    tracing.configure()  # OTEL_* only; without the SDK nothing changes
    follow_store(db)  # the upstreams' sign-ins live with this store
    try:
        store = open_store(db)
    except ToolreelError as exc:
        raise fail(exc, 2) from None
    try:
        return anyio.run(body, riding_out(store))  # a short store outage is waited out, not fatal
    except BaseException as exc:
        cause = _unwrap(exc)
        if isinstance(cause, _Usage):
            # A usage problem found by the tree keeps its code (an unknown input, a template not found).
            found = cause.__cause__
            raise fail(str(cause), 2, error=found.code if isinstance(found, ToolreelError) else USAGE) from None
        if isinstance(cause, NotFoundError):
            raise fail(cause, 2) from None
        if isinstance(cause, ToolreelError):
            raise fail(cause, 1) from None
        raise
    finally:
        store.close()


def _unwrap(exc: BaseException) -> BaseException:
    """The error that matters inside the exception groups task groups raise."""
    while isinstance(exc, BaseExceptionGroup):
        ours = [e for e in exc.exceptions if isinstance(_unwrap(e), _Usage | ToolreelError)]
        exc = _unwrap(ours[0]) if ours else exc.exceptions[0]
    return exc


async def _thread(func: Callable[..., _T], *args: Any) -> _T:
    return await anyio.to_thread.run_sync(func, *args)
