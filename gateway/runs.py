"""Auto mode in a gateway as a typed service: start, wait, cancel, resume, retry, signal.

The gateway owns one replayer `Engine` over its own upstreams; on start it resumes the executions a
previous process left running (SPEC §8). An `approve` step asks the client that started the run, in its
own era (gateway.questions), or pauses when that client cannot be asked.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from toolreel.core.caller import ModelAnswer
from toolreel.core.errors import ExecutionError, StoreError
from toolreel.gateway import questions
from toolreel.gateway.on_demand import OnDemand

if TYPE_CHECKING:
    from toolreel.core.caller import ProgressFn
    from toolreel.core.model import JSON, Execution
    from toolreel.core.store import Store
    from toolreel.core.template import Template
    from toolreel.gateway.management import GatewayHook
    from toolreel.replayer import Engine

__all__ = ["ENGINE_WAIT", "RECOVER_EVERY", "RetryRun", "Runs", "StartRun", "load_saved"]

logger = logging.getLogger("toolreel.gateway")

RECOVER_EVERY = 5.0  # seconds between looks for executions a dead process left running
ENGINE_WAIT = 30.0  # seconds a run waits for the engine of a gateway that is still starting


@dataclass(frozen=True, slots=True)
class StartRun:
    """A run of the saved template `name` (its latest version unless `version`)."""

    name: str
    inputs: Mapping[str, Any] = field(default_factory=dict)
    version: int | None = None
    wait: bool = True  # False: return the pending execution, the run goes on in the background
    deadline: float | None = None  # seconds the run may take; past them it fails
    execution_id: str | None = None  # the id the run gets: a run that has it already is returned, not started

    def __post_init__(self) -> None:
        if self.deadline is not None and not self.deadline > 0:
            raise ExecutionError("'deadline' is a positive number of seconds the run may take")


@dataclass(frozen=True, slots=True)
class RetryRun:
    """A failed or cancelled execution tried again under its id, from its failed step (or `from_step`),
    with some inputs changed first."""

    execution_id: str
    from_step: str | None = None
    inputs: Mapping[str, Any] = field(default_factory=dict)


def load_saved(store: Store, name: str, version: int | None = None) -> Template:
    from toolreel.replayer import load_template  # the replayer (and SQLAlchemy) load on first use

    return load_template(store, name, version)


class _Approver:
    """Asks the client that started the run, in its own era (gateway.questions); None = nobody to ask: pause."""

    def __init__(self, hook: GatewayHook) -> None:
        self.hook = hook

    async def approve(self, prompt: str, form: Mapping[str, Any] | None = None) -> bool | dict[str, Any] | None:
        schema = dict(form) if form is not None else {"type": "object", "properties": {}}
        result = await questions.elicit(prompt, schema)
        if result is None or result.action == "cancel":
            return None
        if form is not None and result.action == "accept":
            return dict(result.content or {})
        return bool(result.action == "accept")


class _Sampler:
    """Asks the model of the client that started the run, in its own era (gateway.questions)."""

    async def sample(self, prompt: str, *, max_tokens: int) -> ModelAnswer | None:
        answer = await questions.sample(prompt, max_tokens)
        return None if answer is None else ModelAnswer(answer[0], answer[1], "sampling")


class Runs:
    """Auto mode in a gateway, as typed calls (`StartRun`, `RetryRun` and ids in, `Execution` out): the one
    engine over the gateway's upstreams, and the servers a template remembers started on demand. Every
    front goes through it: the MCP tools and `reel__<name>` (`tools_runs`) and the web view (`web`)."""

    def __init__(self, hook: GatewayHook, max_concurrency: int) -> None:
        self.hook = hook
        self.max_concurrency = max_concurrency
        self.engine: Engine | None = None
        self._tg: anyio.abc.TaskGroup | None = None  # runs resumed in the background go on here
        self._up = anyio.Event()
        self.on_demand = OnDemand(hook.hub)  # a template's servers the config lacks, started for its runs

    @contextlib.asynccontextmanager
    async def service(self) -> AsyncIterator[None]:
        from toolreel.replayer import Engine

        store = self.hook.store
        engine = Engine(
            store,
            self.on_demand,
            max_concurrency=self.max_concurrency,
            approver=_Approver(self.hook),
            sampler=_Sampler(),
            template_loader=lambda name, version: load_saved(store, name, version),
            secret_values=self.hook.secret_values,
        )
        async with self.on_demand.running(), engine, anyio.create_task_group() as tg:
            self.engine, self._tg = engine, tg
            self._up.set()
            tg.start_soon(self._keep_recovering, engine)
            try:
                yield
            finally:
                self.engine = self._tg = None
                tg.cancel_scope.cancel()

    async def _keep_recovering(self, engine: Engine) -> None:
        """Resume what a dead process left, at start and then every RECOVER_EVERY seconds: a claim
        still under its lease at start is taken once it lapses (SPEC §9 Leases), and another process's
        crash is noticed too. A store that cannot be read is said once and tried again."""
        await self.hook.hub.wait_started(30.0)
        failing = False
        while True:
            try:
                await engine.recover()
            except StoreError as exc:
                if not failing:
                    logger.warning("looking for executions to resume failed (%s); retrying in %g s", exc, RECOVER_EVERY)
                failing = True
            else:
                failing = False
            await anyio.sleep(RECOVER_EVERY)

    async def engine_ready(self) -> Engine:
        await self.hook.ready_store()  # a store opened lazily: the engine starts right after it
        with anyio.move_on_after(ENGINE_WAIT):
            await self._up.wait()
        if self.engine is None:
            raise ExecutionError("auto mode is not running in this gateway yet; try again in a moment")
        return self.engine

    async def start(self, request: StartRun, progress: ProgressFn | None = None) -> Execution:
        """Start a run; with `request.wait`, its end (or its pause)."""
        store = await self.hook.ready_store()
        template = await anyio.to_thread.run_sync(load_saved, store, request.name, request.version)
        from toolreel.replayer import refuse_given_secrets

        inputs = dict(request.inputs)
        refuse_given_secrets(template, inputs)  # never passed through the LLM: read from their sources
        engine = await self.engine_ready()
        await self.on_demand.prepare(store, template, lambda name, version: load_saved(store, name, version))
        deadline = time.time() + request.deadline if request.deadline is not None else None
        return await engine.run_template(
            template,
            inputs,
            wait=request.wait,
            progress=progress,
            deadline=deadline,
            execution_id=request.execution_id,
        )

    async def wait(self, execution_id: str) -> Execution:
        """The execution once it finished or paused (bound it with a timeout: a queued run no process
        drives waits as long as that lasts)."""
        return await (await self.engine_ready()).wait(execution_id)

    async def cancel(self, execution_id: str) -> Execution:
        return await (await self.engine_ready()).cancel(execution_id)

    async def resume(
        self, execution_id: str, response: str | None = None, progress: ProgressFn | None = None
    ) -> Execution:
        """Continue a paused (`response`: yes/no, or the asked fields as JSON text) or interrupted run."""
        return await (await self.engine_ready()).resume(execution_id, response, progress=progress)

    async def retry(self, request: RetryRun, progress: ProgressFn | None = None) -> Execution:
        engine = await self.engine_ready()
        return await engine.retry(
            request.execution_id, from_step=request.from_step, inputs=dict(request.inputs), progress=progress
        )

    async def get(self, execution_id: str) -> Execution:
        """The execution as the store has it now (NotFoundError for an unknown id)."""
        return await (await self.engine_ready()).get(execution_id)

    async def signal(
        self, execution_id: str, name: str, data: JSON = None, progress: ProgressFn | None = None
    ) -> Execution:
        """Deliver signal `name` to the step that waits for it and drive the execution on (`Engine.signal`)."""
        return await (await self.engine_ready()).signal(execution_id, name, data, progress=progress)

    async def resume_in_background(self, execution_id: str, response: str | None) -> None:
        """Resume a paused run without waiting for it (an answer through tasks/update): its outcome is read
        from the store later, so a failure to resume is logged."""
        engine, tg = await self.engine_ready(), self._tg
        assert tg is not None, "the engine runs in the service's task group"
        tg.start_soon(_resume_quietly, engine, execution_id, response)


async def _resume_quietly(engine: Engine, execution_id: str, response: str | None) -> None:
    try:
        await engine.resume(execution_id, response)
    except (ExecutionError, StoreError) as exc:
        logger.warning("resuming %s in the background failed: %s", execution_id, exc)
