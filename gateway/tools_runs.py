"""Auto mode from MCP: `toolreel__run_template`, cancel/resume/retry/signal, and calling `reel__<name>`; each
tool parses its arguments into a typed request of `gateway.runs.Runs` and answers with the run's summary. For a
client of the Tasks extension, `reel__*` and `run_template` answer as tasks, served over `Runs` (`RunTasks`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from toolreel.core.errors import ExecutionError, NotFoundError
from toolreel.core.model import Execution, ExecutionStatus
from toolreel.core.view import outcome_code
from toolreel.gateway import tasks
from toolreel.gateway.hook import LocalCall
from toolreel.gateway.links import ClientLink
from toolreel.gateway.management import Extension, GatewayHook, ManagementTool, tool_result
from toolreel.gateway.runs import RetryRun, Runs, StartRun, load_saved
from toolreel.recorder import EXECUTION_META

__all__ = ["RunTools", "load_saved"]

REEL_PREFIX = "reel__"
APPROVAL_KEY = "approval"  # the one input request of a paused run served as a task
TASK_POLL_MS = 500  # how often a client polling a run as a task is told to look


class _Handlers:
    """The MCP tools of auto mode: arguments in, the tool's answer out, over `Runs`."""

    def __init__(self, runs: Runs) -> None:
        self.runs = runs

    async def run_template(self, arguments: dict[str, Any], ctx: Any, link: ClientLink) -> dict[str, Any]:
        name = _required(arguments, "name")
        inputs = arguments.get("inputs") or {}
        if not isinstance(inputs, dict):
            raise ExecutionError("'inputs' must be an object of input name -> value")
        seconds = arguments.get("deadline")
        if seconds is not None and (not isinstance(seconds, int | float) or isinstance(seconds, bool)):
            raise ExecutionError("'deadline' is a positive number of seconds the run may take")
        as_task = tasks.declared(ctx) if ctx is not None else False  # a client of the Tasks extension polls it
        chosen = arguments.get("execution_id")
        if chosen is not None and not isinstance(chosen, str):
            raise ExecutionError("'execution_id' is a string: the id the run gets (the same id twice runs once)")
        request = StartRun(
            name,
            inputs,
            version=arguments.get("version"),
            wait=bool(arguments.get("wait", True)) and not as_task,
            deadline=float(seconds) if seconds is not None else None,
            execution_id=chosen,
        )
        execution = await self.runs.start(request, _progress_fn(ctx))
        return _created(execution) if as_task else tool_result(_summary(execution))

    async def cancel(self, arguments: dict[str, Any], ctx: Any, link: ClientLink) -> dict[str, Any]:
        return tool_result(_summary(await self.runs.cancel(_required(arguments, "id"))))

    async def resume(self, arguments: dict[str, Any], ctx: Any, link: ClientLink) -> dict[str, Any]:
        response = _response_text(arguments.get("response"))
        execution = await self.runs.resume(_required(arguments, "id"), response, _progress_fn(ctx))
        return tool_result(_summary(execution))

    async def retry(self, arguments: dict[str, Any], ctx: Any, link: ClientLink) -> dict[str, Any]:
        inputs = arguments.get("inputs") or {}
        from_step = arguments.get("from_step")
        if not isinstance(inputs, dict):
            raise ExecutionError("'inputs' must be an object of the input names to change -> new values")
        if from_step is not None and not isinstance(from_step, str):
            raise ExecutionError("'from_step' is the name of the step to run again from (a string)")
        request = RetryRun(_required(arguments, "id"), from_step=from_step, inputs=inputs)
        return tool_result(_summary(await self.runs.retry(request, _progress_fn(ctx))))

    async def signal(self, arguments: dict[str, Any], ctx: Any, link: ClientLink) -> dict[str, Any]:
        execution = await self.runs.signal(
            _required(arguments, "id"), _required(arguments, "name"), arguments.get("data"), _progress_fn(ctx)
        )
        return tool_result(_summary(execution))

    async def call_reel(self, name: str, arguments: dict[str, Any], ctx: Any) -> dict[str, Any] | None:
        if not name.startswith(REEL_PREFIX):
            return None
        as_task = tasks.declared(ctx) if ctx is not None else False  # a client of the Tasks extension polls it
        request = StartRun(name[len(REEL_PREFIX) :], arguments, wait=not as_task)
        execution = await self.runs.start(request, _progress_fn(ctx))
        return _created(execution) if as_task else _reel_result(execution)


class RunTasks:
    """The runs as tasks (`gateway.tasks.ExecutionTasks`) over `Runs`: the MCP wire of a run's state."""

    def __init__(self, runs: Runs) -> None:
        self.runs = runs

    async def task(self, execution_id: str) -> dict[str, Any]:
        try:
            execution = await self.runs.get(execution_id)
        except NotFoundError:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"tasks/get: no run {execution_id!r} in toolreel's store; use the taskId its call answered",
            ) from None
        return _task_wire(execution)

    async def answer(self, execution_id: str, responses: Mapping[str, Any]) -> None:
        execution = await self.runs.get(execution_id)
        answer = responses.get(APPROVAL_KEY)
        if execution.status is not ExecutionStatus.PAUSED or not isinstance(answer, Mapping):
            return  # nothing asked, or not this: the task stays as it is (tasks/get says so)
        response = _response_text(answer.get("content")) if answer.get("action") == "accept" else "no"
        if response is None or (answer.get("action") == "accept" and not isinstance(execution.prompt, dict)):
            response = "yes"
        await self.runs.resume_in_background(execution_id, response)

    async def cancel_task(self, execution_id: str) -> None:
        execution = await self.runs.get(execution_id)
        if not execution.status.finished:
            await self.runs.cancel(execution_id)


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
        self.runs = Runs(hook, max_concurrency)
        self.handlers = _Handlers(self.runs)
        self.tasks = RunTasks(self.runs)

    def service(self) -> contextlib.AbstractAsyncContextManager[None]:
        return self.runs.service()

    def execution_tasks(self) -> Any:
        return self.tasks

    async def call(self, call: LocalCall) -> dict[str, Any] | None:
        return await self.handlers.call_reel(call.name, call.arguments, call.ctx)

    def tools(self) -> tuple[ManagementTool, ...]:
        runs = self.handlers
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
