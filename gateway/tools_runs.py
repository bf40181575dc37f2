"""Auto mode from MCP: `toolreel__run_template`, cancel/resume/retry/signal, and calling `reel__<name>`.

The gateway owns one replayer `Engine` over its own upstreams; on start it resumes the
executions a previous process left running (SPEC §8). An `approve` step asks the client
that started the run, in its own era (gateway.questions), or pauses when that client cannot be asked.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import mcp_types as types
from mcp.shared.exceptions import MCPError

from toolreel.core.caller import ModelAnswer
from toolreel.core.errors import ExecutionError, NotFoundError, StoreError
from toolreel.core.model import Execution, ExecutionStatus
from toolreel.core.view import outcome_code
from toolreel.gateway import questions, tasks
from toolreel.gateway.hook import LocalCall
from toolreel.gateway.links import ClientLink
from toolreel.gateway.management import Extension, GatewayHook, ManagementTool, tool_result
from toolreel.gateway.on_demand import OnDemand
from toolreel.recorder import EXECUTION_META

if TYPE_CHECKING:
    from toolreel.core.store import Store
    from toolreel.core.template import Template
    from toolreel.replayer import Engine

__all__ = ["RunTools", "load_saved"]

logger = logging.getLogger("toolreel.gateway")

REEL_PREFIX = "reel__"
RECOVER_EVERY = 5.0  # seconds between looks for executions a dead process left running
ENGINE_WAIT = 30.0  # seconds a run waits for the engine of a gateway that is still starting
APPROVAL_KEY = "approval"  # the one input request of a paused run served as a task
TASK_POLL_MS = 500  # how often a client polling a run as a task is told to look


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


class _Runs:
    def __init__(self, hook: GatewayHook, max_concurrency: int) -> None:
        self.hook = hook
        self.max_concurrency = max_concurrency
        self.engine: Engine | None = None
        self._tg: anyio.abc.TaskGroup | None = None  # runs resumed by tasks/update go on here
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

    async def _engine(self) -> Engine:
        await self.hook.ready_store()  # a store opened lazily: the engine starts right after it
        with anyio.move_on_after(ENGINE_WAIT):
            await self._up.wait()
        if self.engine is None:
            raise ExecutionError("auto mode is not running in this gateway yet; try again in a moment")
        return self.engine

    async def run_template(self, arguments: dict[str, Any], ctx: Any, link: ClientLink) -> dict[str, Any]:
        name = _required(arguments, "name")
        version = arguments.get("version")
        template = await anyio.to_thread.run_sync(load_saved, await self.hook.ready_store(), name, version)
        inputs = arguments.get("inputs") or {}
        if not isinstance(inputs, dict):
            raise ExecutionError("'inputs' must be an object of input name -> value")
        seconds = arguments.get("deadline")
        if seconds is not None and (not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds <= 0):
            raise ExecutionError("'deadline' is a positive number of seconds the run may take")
        deadline = time.time() + float(seconds) if seconds is not None else None
        as_task = tasks.declared(ctx) if ctx is not None else False
        wait = bool(arguments.get("wait", True)) and not as_task
        chosen = arguments.get("execution_id")
        if chosen is not None and not isinstance(chosen, str):
            raise ExecutionError("'execution_id' is a string: the id the run gets (the same id twice runs once)")
        execution = await self._start(template, inputs, ctx, link, wait=wait, deadline=deadline, execution_id=chosen)
        return _created(execution) if as_task else tool_result(_summary(execution))

    async def _start(
        self,
        template: Template,
        inputs: dict[str, Any],
        ctx: Any,
        link: ClientLink,
        *,
        wait: bool,
        deadline: float | None = None,
        execution_id: str | None = None,
    ) -> Execution:
        from toolreel.replayer import refuse_given_secrets

        refuse_given_secrets(template, inputs)  # never passed through the LLM: read from their sources
        progress = _progress_fn(ctx)
        engine = await self._engine()
        store = await self.hook.ready_store()
        await self.on_demand.prepare(store, template, lambda name, version: load_saved(store, name, version))
        return await engine.run_template(
            template, inputs, wait=wait, progress=progress, deadline=deadline, execution_id=execution_id
        )

    async def cancel(self, arguments: dict[str, Any], ctx: Any, link: ClientLink) -> dict[str, Any]:
        execution = await (await self._engine()).cancel(_required(arguments, "id"))
        return tool_result(_summary(execution))

    async def resume(self, arguments: dict[str, Any], ctx: Any, link: ClientLink) -> dict[str, Any]:
        execution = await (await self._engine()).resume(
            _required(arguments, "id"), _response_text(arguments.get("response")), progress=_progress_fn(ctx)
        )
        return tool_result(_summary(execution))

    async def retry(self, arguments: dict[str, Any], ctx: Any, link: ClientLink) -> dict[str, Any]:
        inputs = arguments.get("inputs") or {}
        from_step = arguments.get("from_step")
        if not isinstance(inputs, dict):
            raise ExecutionError("'inputs' must be an object of the input names to change -> new values")
        if from_step is not None and not isinstance(from_step, str):
            raise ExecutionError("'from_step' is the name of the step to run again from (a string)")
        engine = await self._engine()
        execution = await engine.retry(
            _required(arguments, "id"), from_step=from_step, inputs=inputs, progress=_progress_fn(ctx)
        )
        return tool_result(_summary(execution))

    async def signal(self, arguments: dict[str, Any], ctx: Any, link: ClientLink) -> dict[str, Any]:
        engine = await self._engine()
        execution = await engine.signal(
            _required(arguments, "id"), _required(arguments, "name"), arguments.get("data"), progress=_progress_fn(ctx)
        )
        return tool_result(_summary(execution))

    async def call_reel(
        self, name: str, arguments: dict[str, Any], ctx: Any, link: ClientLink
    ) -> dict[str, Any] | None:
        if not name.startswith(REEL_PREFIX):
            return None
        template_name = name[len(REEL_PREFIX) :]
        template = await anyio.to_thread.run_sync(load_saved, await self.hook.ready_store(), template_name, None)
        as_task = tasks.declared(ctx) if ctx is not None else False  # a client of the Tasks extension polls it
        execution = await self._start(template, arguments, ctx, link, wait=not as_task)
        return _created(execution) if as_task else _reel_result(execution)

    # the runs as tasks (gateway.tasks.ExecutionTasks) ----------------------------------------
    async def task(self, execution_id: str) -> dict[str, Any]:
        try:
            execution = await (await self._engine()).get(execution_id)
        except NotFoundError:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"tasks/get: no run {execution_id!r} in toolreel's store; use the taskId its call answered",
            ) from None
        return _task_wire(execution)

    async def answer(self, execution_id: str, responses: Mapping[str, Any]) -> None:
        execution = await (await self._engine()).get(execution_id)
        answer = responses.get(APPROVAL_KEY)
        if execution.status is not ExecutionStatus.PAUSED or not isinstance(answer, Mapping):
            return  # nothing asked, or not this: the task stays as it is (tasks/get says so)
        response = _response_text(answer.get("content")) if answer.get("action") == "accept" else "no"
        if response is None or (answer.get("action") == "accept" and not isinstance(execution.prompt, dict)):
            response = "yes"
        engine, tg = await self._engine(), self._tg
        assert tg is not None, "the engine runs in the service's task group"
        tg.start_soon(_resume_quietly, engine, execution_id, response)

    async def cancel_task(self, execution_id: str) -> None:
        execution = await (await self._engine()).get(execution_id)
        if not execution.status.finished:
            await (await self._engine()).cancel(execution_id)


def _reel_result(execution: Execution) -> dict[str, Any]:
    """A `reel__` call's answer once its run ended (or paused)."""
    if execution.status is ExecutionStatus.SUCCEEDED:
        result = tool_result(execution.output)
    else:
        result = tool_result(_summary(execution))
        result["isError"] = execution.status is not ExecutionStatus.PAUSED
    result["_meta"] = {EXECUTION_META: execution.id}  # as a recorded call's result says where it went
    return result


_TASK_STATUS: dict[ExecutionStatus, str] = {
    ExecutionStatus.PENDING: "working",
    ExecutionStatus.RUNNING: "working",
    ExecutionStatus.PAUSED: "input_required",
    ExecutionStatus.SUCCEEDED: "completed",
    ExecutionStatus.FAILED: "completed",  # the run ran and failed: a tool's error (isError), as SEP-2663 says
    ExecutionStatus.CANCELLED: "cancelled",
}


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _task_envelope(execution: Execution) -> dict[str, Any]:
    return {
        "taskId": tasks.EXECUTION_HANDLE + execution.id,
        "status": _TASK_STATUS.get(execution.status, "working"),
        "createdAt": _iso(execution.created_at),
        "lastUpdatedAt": _iso(execution.updated_at),
        "ttlMs": None,  # kept as long as the store keeps executions (retention)
        "pollIntervalMs": TASK_POLL_MS,
    }


def _created(execution: Execution) -> dict[str, Any]:
    """A run started for a client of the Tasks extension: its `CreateTaskResult`, the run's id as the handle."""
    return {"resultType": "task", **_task_envelope(execution)}


def _task_wire(execution: Execution) -> dict[str, Any]:
    """A run as `tasks/get` tells it: its result once finished, its approval as an input request while paused."""
    out = {"resultType": "complete", **_task_envelope(execution)}
    if execution.status is ExecutionStatus.PAUSED:
        out["inputRequests"] = {APPROVAL_KEY: _approval_request(execution.prompt)}
    elif execution.status.finished and execution.status is not ExecutionStatus.CANCELLED:
        out["result"] = _reel_result(execution)
    return out


def _approval_request(prompt: Any) -> dict[str, Any]:
    """A paused run's approval as an `elicitation/create` form: yes/no (accept/decline), or the data it asks."""
    if isinstance(prompt, dict) and isinstance(prompt.get("schema"), dict):
        message, schema = str(prompt.get("message", "")), prompt["schema"]
    else:
        message, schema = str(prompt), {"type": "object", "properties": {}}
    return {"method": "elicitation/create", "params": {"mode": "form", "message": message, "requestedSchema": schema}}


async def _resume_quietly(engine: Engine, execution_id: str, response: str) -> None:
    """Resume a run answered through tasks/update; its outcome is read through tasks/get, so a failure is logged."""
    try:
        await engine.resume(execution_id, response)
    except (ExecutionError, StoreError) as exc:
        logger.warning("resuming %s after tasks/update failed: %s", execution_id, exc)


def _response_text(response: Any) -> str | None:
    """An answer as the engine takes it: yes/no text, or the fields of a data approval as JSON text."""
    if response is None or isinstance(response, str):
        return response
    return json.dumps(response)


def _progress_fn(ctx: Any) -> Any:
    if ctx is None:
        return None
    meta = (ctx.params or {}).get("_meta") or {}
    return ctx.session.report_progress if meta.get("progressToken") is not None else None


def _summary(execution: Execution) -> dict[str, Any]:
    out: dict[str, Any] = {"execution_id": execution.id, "status": execution.status.value}
    if execution.status is ExecutionStatus.SUCCEEDED:
        out["output"] = execution.output
    elif execution.status is ExecutionStatus.PAUSED:
        out["prompt"] = execution.prompt
    if execution.error:
        out["error"] = execution.error
        out["error_code"] = outcome_code(execution)
    return out


def _required(arguments: dict[str, Any], key: str) -> str:
    value = arguments.get(key)
    if not isinstance(value, str) or not value:
        raise ExecutionError(f"'{key}' is required (a non-empty string)")
    return value


class RunTools(Extension):
    """Running, cancelling and resuming templates, and calling them as `reel__<name>` tools."""

    def __init__(self, hook: GatewayHook, max_concurrency: int = 16) -> None:
        self.runs = _Runs(hook, max_concurrency)

    def service(self) -> contextlib.AbstractAsyncContextManager[None]:
        return self.runs.service()

    def execution_tasks(self) -> Any:
        return self.runs

    async def call(self, call: LocalCall) -> dict[str, Any] | None:
        return await self.runs.call_reel(call.name, call.arguments, call.ctx, call.link)

    def tools(self) -> tuple[ManagementTool, ...]:
        runs = self.runs
        obj = {"type": "object"}
        return (
            ManagementTool(
                "toolreel__run_template",
                "Run a saved template in auto mode (no LLM): returns {execution_id, status, output | error | prompt}. "
                "Sends progress per step when the call carries a progress token.",
                {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "inputs": {**obj, "description": "Input name -> value."},
                        "version": {"type": "integer", "minimum": 1},
                        "wait": {"type": "boolean", "description": "Wait for the end (default true)."},
                        "deadline": {"type": "number", "description": "Seconds the run may take; past them it fails."},
                        "execution_id": {
                            "type": "string",
                            "description": "The id the run gets; a run that has it already is returned, not started.",
                        },
                    },
                    "required": ["name"],
                },
                runs.run_template,
            ),
            ManagementTool(
                "toolreel__cancel_execution",
                "Cancel an execution: no new step starts, in-flight calls are cancelled.",
                {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
                runs.cancel,
            ),
            ManagementTool(
                "toolreel__resume_execution",
                "Continue a paused (answer its approval with response yes/no, or with an object of the fields its "
                "prompt's schema asks for; one paused for a sign-in takes no response, once signed in) or "
                "interrupted execution.",
                {
                    "type": "object",
                    "properties": {"id": {"type": "string"}, "response": {"type": ["string", "object"]}},
                    "required": ["id"],
                },
                runs.resume,
            ),
            ManagementTool(
                "toolreel__retry_execution",
                "Try a failed or cancelled execution again under its id: succeeded steps keep their outputs, the "
                "failed step (or from_step) and everything downstream run again; inputs changes some inputs first.",
                {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "from_step": {"type": "string"},
                        "inputs": {**obj, "description": "Input name -> new value."},
                    },
                    "required": ["id"],
                },
                runs.retry,
            ),
            ManagementTool(
                "toolreel__signal_execution",
                "Send a signal to the step of an execution that waits for it (`wait: {signal: NAME}`); its data is "
                "that step's output (checked against the step's schema). The execution is then driven on.",
                {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "name": {"type": "string", "description": "The signal's name."},
                        "data": {"description": "Any JSON value: the waiting step's output."},
                    },
                    "required": ["id", "name"],
                },
                runs.signal,
            ),
        )
