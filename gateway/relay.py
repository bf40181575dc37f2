"""Upstream -> client: where a server's requests, notifications and list changes go (`ClientRelay`).

The hub hands the gateway what its servers send unasked (`ClientRouter`): a question (sampling,
elicitation, roots) goes to the client whose call it belongs to, a notification to the clients that
should hear it, a list change to every client. `Front` keeps the calls in flight here, by connection.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import anyio.abc
import mcp_types as types
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)

from toolreel.gateway.links import Call, ClientLink, require_capability, send_quietly
from toolreel.upstreams.hub import ClientRouter, Hub
from toolreel.upstreams.upstream import Upstream

__all__ = ["ClientRelay", "caller_among"]

logger = logging.getLogger("toolreel.front")

_SERVER_REQUESTS: dict[str, tuple[Any, Any]] = {
    "sampling/createMessage": (types.CreateMessageRequest, types.CreateMessageResult),
    "elicitation/create": (types.ElicitRequest, types.ElicitResult),
    "roots/list": (types.ListRootsRequest, types.ListRootsResult),
}


class ClientRelay(ClientRouter):
    """The hub's router to the gateway's clients: `links` are `Front`'s, `inflight` the tools/calls it has
    forwarded, by connection (a server's handshake-era twin has its own), and `tg` its task group."""

    def __init__(self, hub: Hub, links: dict[str, ClientLink], bus: InMemorySubscriptionBus) -> None:
        self.hub = hub
        self.links = links
        self.bus = bus
        self.inflight: dict[Upstream, list[Call]] = {}
        self.tg: anyio.abc.TaskGroup | None = None

    async def to_client(self, upstream: Upstream, method: str, params: dict[str, Any]) -> dict[str, Any]:
        call = self._caller_of(upstream)
        if call is None:
            link = self._latest_link()
            if link is None or link.session is None:
                raise MCPError(code=types.INVALID_REQUEST, message=f"no client is connected to answer {method}")
            return await self.ask_client(link, link.session, None, method, params)
        call.asking += 1
        call.asked += 1
        try:
            if call.exchange is not None:
                require_capability(call.link, method)
                return await call.exchange.ask(method, params)
            session = call.ctx.session if call.ctx is not None else call.link.session
            if session is None:
                raise MCPError(code=types.INVALID_REQUEST, message=f"no client is connected to answer {method}")
            related = call.ctx.request_id if call.ctx is not None else None
            return await self.ask_client(call.link, session, related, method, params)
        finally:
            call.asking -= 1

    def _caller_of(self, upstream: Upstream) -> Call | None:
        return caller_among(self.inflight.get(upstream) or [])

    async def ask_client(
        self, link: ClientLink, session: ServerSession, related: Any, method: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        request_type, result_type = _SERVER_REQUESTS[method]
        require_capability(link, method)
        request = request_type.model_validate({"method": method, "params": params})
        metadata = ServerMessageMetadata(related_request_id=related) if related is not None else None
        try:
            result = await session.send_request(request, result_type, metadata=metadata)
        except NoBackChannelError:
            raise MCPError(
                code=types.INVALID_REQUEST,
                message=f"the client's protocol version has no server-initiated requests; cannot forward {method}",
            ) from None
        dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped

    def _latest_link(self) -> ClientLink | None:
        return max(self.links.values(), key=lambda link: link.last_active, default=None)

    async def notify_clients(self, upstream: Upstream, method: str, params: dict[str, Any] | None) -> None:
        try:
            notification = types.server_notification_adapter.validate_python({"method": method, "params": params})
        except ValueError:  # an upstream's malformed notification is dropped, not fatal
            logger.warning("server %s sent a malformed %s; dropped", upstream.name, method)
            return
        if method == "notifications/resources/updated" and params is not None:
            uri = self.hub.listed_uri(upstream, params.get("uri", ""))
            if uri != params.get("uri"):  # a namespaced app or skill (upstreams.uris)
                notification = types.server_notification_adapter.validate_python(
                    {"method": method, "params": {**params, "uri": uri}}
                )
            await self.bus.publish(ResourceUpdated(uri=uri))
            for link in [link for link in self.links.values() if uri in link.subscriptions and not link.modern]:
                if link.session is not None:
                    await send_quietly(link.session, notification)
            return
        call = self._caller_of(upstream)
        channel = call.channel if call is not None else None
        if channel is not None:
            # on the call's own channel: its response stream over HTTP, the only one a
            # stateless-era client has (and there only when it opted in to logs)
            await send_quietly(channel.session, notification, related=channel.request_id)
            return
        for link in [call.link] if call is not None else list(self.links.values()):
            if link.session is not None and not link.modern:
                await send_quietly(link.session, notification)

    def lists_changed(self, kinds: frozenset[str]) -> None:
        if self.tg is not None:
            self.tg.start_soon(self._announce, kinds)

    async def _announce(self, kinds: frozenset[str]) -> None:
        events: dict[str, ServerEvent] = {
            "tools": ToolsListChanged(),
            "resources": ResourcesListChanged(),
            "prompts": PromptsListChanged(),
        }
        notifications = {
            "tools": types.ToolListChangedNotification(),
            "resources": types.ResourceListChangedNotification(),
            "prompts": types.PromptListChangedNotification(),
        }
        for kind in sorted(kinds):
            await self.bus.publish(events[kind])
            for link in list(self.links.values()):
                if link.session is not None and not link.modern:
                    await send_quietly(link.session, notifications[kind])


def caller_among(inflight: Sequence[Call]) -> Call | None:
    """The call a server-to-client request belongs to, among a connection's calls in flight (oldest first). The
    handshake era's wire does not say (on stdio nothing links the two), so it goes to the oldest call that has
    not asked yet; then to the oldest not waiting on an answer now. Exact with one caller at a time, and for
    handlers that ask once, before anything else, in the order the calls were forwarded: a call whose question
    was answered while it finishes is not the one a later question comes from."""
    for call in inflight:
        if call.asked == 0:
            return call
    for call in inflight:
        if call.asking == 0:
            return call
    return inflight[0] if inflight else None
