"""Task status notifications (SEP-2663 `notifications/tasks`) on a `subscriptions/listen` stream.

A client that declared the Tasks extension names task handles under `notifications.taskIds` of its listen request;
the acknowledgement lists the handles the gateway knows, and each change of such a task's state is sent as a
`notifications/tasks` carrying the whole task, exactly what `tasks/get` answers on that handle at that moment
(gateway.tasks.read_task), until the task ends (completed, failed, cancelled). One rule for every task, the
gateway's own runs (`reel__*`, `toolreel__run_template`: kept in the store, advanced by any gateway or worker on
it) and the servers' tasks (whatever a server sends on its own streams never names the gateway's handles): the
gateway reads the task at the interval the task asks to be polled at (`pollIntervalMs`, at least MIN_POLL), and
sends what changed. The stream carries the kinds the SDK's handler serves as well (list changes, resource
updates, from the same bus), so a client needs one stream.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, Literal

import anyio
import anyio.abc
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import SUBSCRIPTION_ID_META_KEY, InMemorySubscriptionBus, ServerEvent
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import event_matches, event_to_notification
from pydantic import ConfigDict

from toolreel.gateway import tasks

__all__ = ["TASK_NOTIFICATION", "TaskStatusNotification", "listen_with_tasks", "task_ids"]

logger = logging.getLogger("toolreel.tasks")

TASK_NOTIFICATION: Final = "notifications/tasks"
TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})
MIN_POLL: Final = 0.25  # seconds: a task that asks to be polled more often is still read at most this often
DEFAULT_POLL: Final = 1.0
BACKLOG: Final = 1024  # notifications waiting for a slow reader before its stream is ended (as the SDK's handler)

ReadTask = Callable[[ServerRequestContext[Any, Any], str], Awaitable[dict[str, Any]]]


class TaskStatusParams(types.NotificationParams):
    """A `DetailedTask`: whatever `tasks/get` answers, kept as it is."""

    model_config = ConfigDict(extra="allow")


class TaskStatusNotification(types.Notification[TaskStatusParams, Literal["notifications/tasks"]]):
    method: Literal["notifications/tasks"] = "notifications/tasks"
    params: TaskStatusParams


def task_ids(params: types.SubscriptionsListenRequestParams) -> list[str] | None:
    """The handles a listen request names (`notifications.taskIds`), or None when it names none."""
    raw = (params.notifications.model_extra or {}).get("taskIds")
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(handle, str) for handle in raw):
        raise MCPError(code=types.INVALID_PARAMS, message="subscriptions/listen: 'taskIds' must be a list of strings")
    return list(dict.fromkeys(raw))


async def listen_with_tasks(
    ctx: ServerRequestContext[Any, Any],
    params: types.SubscriptionsListenRequestParams,
    handles: Sequence[str],
    bus: InMemorySubscriptionBus,
    read: ReadTask,
) -> types.SubscriptionsListenResult:
    """Serve one listen stream that names tasks: the acknowledgement, then the bus's events and the tasks' states."""
    if not tasks.declared(ctx):
        raise tasks.missing_extension("subscriptions/listen with taskIds")
    subscription_id = ctx.request_id
    if subscription_id is None:
        raise MCPError(code=types.INVALID_REQUEST, message="subscriptions/listen requires a request id")
    meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
    known = {handle: task for handle in handles if (task := await _read(ctx, read, handle)) is not None}
    wanted = params.notifications
    chosen = {
        "toolsListChanged": wanted.tools_list_changed,
        "promptsListChanged": wanted.prompts_list_changed,
        "resourcesListChanged": wanted.resources_list_changed,
        "resourceSubscriptions": list(wanted.resource_subscriptions or ()),
        "taskIds": list(known),
    }
    honored = types.SubscriptionFilter.model_validate({k: v for k, v in chosen.items() if v or k == "taskIds"})
    uris = frozenset(honored.resource_subscriptions or ())
    send, receive = anyio.create_memory_object_stream[Any](BACKLOG)

    def deliver(event: ServerEvent) -> None:
        if event_matches(honored, uris, event):
            try:
                send.send_nowait(event_to_notification(event, meta))
            except (anyio.WouldBlock, anyio.ClosedResourceError):
                send.close()  # a reader that stopped reading: the stream ends, the client listens again

    unsubscribe = bus.subscribe(deliver)
    try:
        ack = types.SubscriptionsAcknowledgedNotificationParams(notifications=honored, _meta=meta)
        await ctx.session.send_notification(
            types.SubscriptionsAcknowledgedNotification(params=ack), related_request_id=subscription_id
        )
        async with anyio.create_task_group() as tg:
            for handle, first in known.items():
                tg.start_soon(_watch, ctx, read, handle, first, send.clone(), meta)
            async with receive:
                async for notification in receive:
                    await ctx.session.send_notification(notification, related_request_id=subscription_id)
            tg.cancel_scope.cancel()
    finally:
        unsubscribe()
        send.close()
    return types.SubscriptionsListenResult(_meta=meta)


async def _read(ctx: ServerRequestContext[Any, Any], read: ReadTask, handle: str) -> dict[str, Any] | None:
    try:
        return await read(ctx, handle)
    except MCPError as exc:  # an unknown handle, or a server that no longer has it: nothing to send of it
        logger.info("task %s: no status notifications (%s)", handle, exc.error.message)
        return None


async def _watch(
    ctx: ServerRequestContext[Any, Any],
    read: ReadTask,
    handle: str,
    first: dict[str, Any],
    send: anyio.abc.ObjectSendStream[Any],
    meta: dict[str, Any],
) -> None:
    """Send the task's state, then each state that differs, until it ends (or cannot be read any more)."""
    async with send:
        task: dict[str, Any] | None = first
        sent: str | None = None
        while task is not None:
            state = {k: v for k, v in task.items() if k not in ("resultType", "_meta")}
            text = json.dumps(state, sort_keys=True, default=str)
            if text != sent:
                sent = text
                params = TaskStatusParams.model_validate({**state, "_meta": meta})
                try:
                    await send.send(TaskStatusNotification(params=params))
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return
            if state.get("status") in TERMINAL:
                return
            poll = state.get("pollIntervalMs")
            await anyio.sleep(max(MIN_POLL, poll / 1000 if isinstance(poll, int | float) else DEFAULT_POLL))
            task = await _read(ctx, read, handle)
