"""`subscriptions/listen` of the stateless era: the SDK's handler, plus the upstream subscriptions
for the resources a stream asks to hear about."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import ListenHandler

if TYPE_CHECKING:
    from toolreel.gateway.front import Front

__all__ = ["Listen"]


class Listen:
    """`subscriptions/listen` (stateless era): the SDK's handler, plus the upstream
    subscriptions for the resources the stream asks to hear about."""

    def __init__(self, front: Front) -> None:
        self.front = front
        self.inner = ListenHandler(front.bus)

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        uris = list(params.notifications.resource_subscriptions or ())
        subscribed: list[str] = []
        try:
            for uri in uris:
                await self.front.subscribe_upstream(uri)
                subscribed.append(uri)
            return await self.inner(ctx, params)
        finally:
            with anyio.CancelScope(shield=True):
                for uri in subscribed:
                    await self.front.unsubscribe_upstream(uri)
