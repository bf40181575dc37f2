"""The Tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`) through the gateway.

An upstream's task passes through: the `CreateTaskResult` a `tools/call` answers reaches the client with its
`taskId` turned into a handle of the gateway's (`<server>:<taskId>`), and `tasks/get`, `tasks/update` and
`tasks/cancel` on that handle go to that server with the server's own id, carrying what the client said of
itself (`_meta`, so the server sees the client's own declaration of the extension) and, over HTTP, the
`Mcp-Name: <taskId>` routing header. Two servers that number their tasks alike never collide, and a task
handle names the server it lives on, so no table of tasks is kept. A server that makes no tasks never
answers a `CreateTaskResult`, so for its tools nothing changes. The gateway's own tasks are runs of
templates, under `execution/<id>` handles (`ExecutionTasks`, served by gateway.tools_runs from the store).

Status notifications (`notifications/tasks`) are served by gateway.task_notes on a `subscriptions/listen` stream
that names task handles, from `read_task` (what `tasks/get` answers on a handle).

What the gateway decides itself, before any server sees the request: a client that did not declare the
extension (for its session, or for this request under `_meta`) is refused with -32021; a handle that names
no server of the gateway is -32602 (an unknown task); an `Mcp-Name` header that disagrees with
`params.taskId` is -32020.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Protocol

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from pydantic import BaseModel, ConfigDict

from toolreel.gateway.links import capabilities_of, client_envelope
from toolreel.upstreams.hub import Hub

__all__ = [
    "EXECUTION_HANDLE",
    "TASKS_EXTENSION",
    "TASK_METHODS",
    "ExecutionTasks",
    "check_routing_header",
    "declared",
    "install",
    "missing_extension",
    "outward",
    "read_task",
]

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
TASK_METHODS: Final = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
_SEPARATOR: Final = ":"  # never in a server's name (upstreams.config.SERVER_NAME_RE)
EXECUTION_HANDLE: Final = "execution/"  # + an execution's id: the gateway's own tasks ("/" is in no server's name)


class ExecutionTasks(Protocol):
    """The gateway's own tasks: runs of templates (`reel__*`, `toolreel__run_template`), kept in the store."""

    async def task(self, execution_id: str) -> dict[str, Any]:
        """The run as a `tasks/get` answer (its `taskId` the handle); -32602 for an unknown id."""
        ...

    async def answer(self, execution_id: str, responses: Mapping[str, Any]) -> None:
        """A paused run's approval answered (`tasks/update`); it goes on in the background."""
        ...

    async def cancel_task(self, execution_id: str) -> None: ...


class TaskParams(BaseModel):
    """`tasks/get`, `tasks/update`, `tasks/cancel`: a `taskId`, and whatever else the method carries."""

    model_config = ConfigDict(extra="allow")
    taskId: str


def declared(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the client declared the extension: for its session (handshake era) or in this request's `_meta`."""
    caps = capabilities_of(ctx)
    return bool(caps is not None and caps.extensions and TASKS_EXTENSION in caps.extensions)


def check_routing_header(ctx: ServerRequestContext[Any, Any]) -> None:
    """Over HTTP, a tasks method's `Mcp-Name` header, when sent, must name the body's `taskId` (SEP-2243)."""
    headers = getattr(ctx.request, "headers", None)
    sent = headers.get(MCP_NAME_HEADER) if headers is not None else None
    if sent is not None and decode_header_value(sent) != (ctx.params or {}).get("taskId"):
        raise MCPError(
            code=types.HEADER_MISMATCH,
            message=f"{ctx.method}: the Mcp-Name header does not match params.taskId; send the task's id in both",
        )


def outward(server: str, result: dict[str, Any]) -> dict[str, Any]:
    """A server's task envelope (`CreateTaskResult`, `tasks/get`'s task) as the client sees it: the gateway's handle."""
    task_id = result.get("taskId")
    if not isinstance(task_id, str):
        return result
    return {**result, "taskId": f"{server}{_SEPARATOR}{task_id}"}


def missing_extension(method: str) -> MCPError:
    return MCPError(
        code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
        message=f"{method} needs the {TASKS_EXTENSION} extension: declare it in the client's capabilities",
        data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )


def _unknown(method: str, handle: str) -> MCPError:
    return MCPError(
        code=types.INVALID_PARAMS,
        message=f"{method}: toolreel knows no task {handle!r}; use the taskId a tools/call of this gateway answered",
    )


def install(server: Server[Any], hub: Hub, executions: Callable[[], ExecutionTasks | None]) -> None:
    """Declare the extension and serve `tasks/get`, `tasks/update` and `tasks/cancel`: on a server's handle they
    pass to that server; on `execution/<id>` they are the runs of templates (`executions`, None until the store
    is open). Declared whatever the servers are, like Skills: which of them make tasks can change with a config
    reload or a restart, and a client should not see the gateway's capabilities flicker."""
    server.extensions[TASKS_EXTENSION] = {}

    async def relay(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
        method = ctx.method
        if not declared(ctx):
            raise missing_extension(method)
        return await _handle(hub, executions, ctx, method, params)

    for method in sorted(TASK_METHODS):
        server.add_request_handler(method, TaskParams, relay)


async def _handle(
    hub: Hub,
    executions: Callable[[], ExecutionTasks | None],
    ctx: ServerRequestContext[Any, Any],
    method: str,
    params: TaskParams,
) -> dict[str, Any]:
    """`method` on a task handle: the gateway's own run (`execution/<id>`), or the server the handle names."""
    if params.taskId.startswith(EXECUTION_HANDLE):
        return await _own(method, params, executions())
    name, separator, task_id = params.taskId.partition(_SEPARATOR)
    upstream = hub.upstreams.get(name) if separator else None
    if upstream is None or not task_id:
        raise _unknown(method, params.taskId)
    forwarded: dict[str, Any] = {k: v for k, v in _wire(params).items() if k != "_meta"}
    forwarded["taskId"] = task_id
    result = await upstream.request(method, forwarded, envelope=client_envelope(ctx))
    return outward(name, result)


def read_task(
    hub: Hub, executions: Callable[[], ExecutionTasks | None]
) -> Callable[[ServerRequestContext[Any, Any], str], Awaitable[dict[str, Any]]]:
    """`tasks/get` on a handle, for whoever serves the client without its asking (status notifications)."""

    async def read(ctx: ServerRequestContext[Any, Any], handle: str) -> dict[str, Any]:
        return await _handle(hub, executions, ctx, "tasks/get", TaskParams(taskId=handle))

    return read


async def _own(method: str, params: TaskParams, executions: ExecutionTasks | None) -> dict[str, Any]:
    execution_id = params.taskId.removeprefix(EXECUTION_HANDLE)
    if executions is None or not execution_id:
        raise _unknown(method, params.taskId)
    if method == "tasks/get":
        return await executions.task(execution_id)
    if method == "tasks/update":
        responses = (params.model_extra or {}).get("inputResponses") or {}
        if not isinstance(responses, Mapping):
            raise MCPError(code=types.INVALID_PARAMS, message="tasks/update: 'inputResponses' must be an object")
        await executions.answer(execution_id, responses)
    else:
        await executions.cancel_task(execution_id)
    return {}


def _wire(params: TaskParams) -> Mapping[str, Any]:
    return params.model_dump(by_alias=True, exclude_none=True)
