"""Resource subscriptions: the upstream subscriptions clients share (one per URI while any client wants it),
and `subscriptions/listen` of the stateless era (the SDK's handler, plus the upstream subscriptions for
the resources a stream asks to hear about; a stream that names tasks is served by gateway.task_notes)."""

from __future__ import annotations

import collections
import contextlib
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPError

from toolreel.core.errors import UpstreamError
from toolreel.gateway.task_notes import ReadTask, listen_with_tasks, task_ids

if TYPE_CHECKING:
    from toolreel.upstreams.hub import Hub

__all__ = ["Listen", "UpstreamSubscriptions"]


class UpstreamSubscriptions:
    """Upstream resource subscriptions, shared: one per URI while any client (or listening stream) wants it."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self._subscribers: collections.Counter[str] = collections.Counter()

    async def subscribe(self, uri: str) -> None:
        self._subscribers[uri] += 1
        if self._subscribers[uri] == 1:
            try:
                upstream, own = self.hub.resource_route(uri)
                await upstream.subscribe(own)
            except UpstreamError as exc:
                self._subscribers[uri] -= 1
                raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from None
            except MCPError:
                self._subscribers[uri] -= 1
                raise

    async def unsubscribe(self, uri: str) -> None:
        self._subscribers[uri] -= 1
        if self._subscribers[uri] <= 0:
            del self._subscribers[uri]
            with contextlib.suppress(UpstreamError, MCPError):
                upstream, own = self.hub.resource_route(uri)
                await upstream.unsubscribe(own)


class Listen:
    """`subscriptions/listen` (stateless era): the SDK's handler, plus the upstream
    subscriptions for the resources the stream asks to hear about."""

    def __init__(self, bus: InMemorySubscriptionBus, upstream: UpstreamSubscriptions, read_task: ReadTask) -> None:
        self.upstream = upstream
        self.bus = bus
        self.read_task = read_task
        self.inner = ListenHandler(bus)

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        uris = list(params.notifications.resource_subscriptions or ())
        handles = task_ids(params)
        subscribed: list[str] = []
        try:
            for uri in uris:
                await self.upstream.subscribe(uri)
                subscribed.append(uri)
            if handles is not None:
                return await listen_with_tasks(ctx, params, handles, self.bus, self.read_task)
            return await self.inner(ctx, params)
        finally:
            with anyio.CancelScope(shield=True):
                for uri in subscribed:
                    await self.upstream.unsubscribe(uri)
