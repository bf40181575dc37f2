"""The client side of the gateway: one `ClientLink` per client connection, and the small
rules of talking to clients (which `_meta` is per hop, era-specific result fields, how a
client is recognised, notifications to a client that may be gone).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, LOG_LEVEL_META_KEY
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from toolreel.gateway.exchange import Exchange
from toolreel.upstreams.upstream import capabilities_key

if TYPE_CHECKING:
    from toolreel.upstreams.upstream import AskFn, Upstream

__all__ = [
    "CLIENT_HEADER",
    "HOP_META",
    "IDLE_GROUP_SECONDS",
    "Call",
    "ClientLink",
    "ProgressOrder",
    "capabilities_of",
    "client_envelope",
    "era_result",
    "link_key",
    "owner_of",
    "require_capability",
    "send_quietly",
    "span_attributes",
    "stateless_group",
]

logger = logging.getLogger("toolreel.front")

# Per-hop _meta: the progress token is the gateway's own upstream, the envelope keys of the
# stateless era describe the client's connection to the gateway, not the gateway's to the server.
HOP_META = frozenset(
    {
        "progressToken",
        "io.modelcontextprotocol/protocolVersion",
        "io.modelcontextprotocol/clientInfo",
        "io.modelcontextprotocol/clientCapabilities",
        "io.modelcontextprotocol/logLevel",
    }
)


# A stateless client's calls are one recording until it has been idle this long (SPEC §3).
IDLE_ENV = "TOOLREEL_SESSION_IDLE"


def _idle_seconds() -> float:
    """Seconds a client may stay silent before its HTTP session (or stateless group) is closed and what it
    held is released (`TOOLREEL_SESSION_IDLE`, default 30 minutes)."""
    raw = os.environ.get(IDLE_ENV, "").strip()
    try:
        seconds = float(raw) if raw else 30 * 60.0
    except ValueError:
        return 30 * 60.0
    return seconds if 0 < seconds < float("inf") else 30 * 60.0


IDLE_GROUP_SECONDS = _idle_seconds()
_GROUP_PREFIX = "client:"

# Set by the HTTP guard, never by the client: which stateless client sent the request (serve._ClientIds).
CLIENT_HEADER = b"x-toolreel-client"


@dataclass(eq=False)
class ClientLink:
    """One client connection (stdio), HTTP session, or stateless client group."""

    key: str
    session: ServerSession | None = None
    capabilities: types.ClientCapabilities | None = None
    protocol_version: str | None = None
    client_info: dict[str, Any] | None = None
    subscriptions: set[str] = field(default_factory=set)
    log_level: str | None = None  # set by logging/setLevel
    last_active: float = field(default_factory=time.monotonic)
    state: dict[str, Any] = field(default_factory=dict)  # per-client state of the layers above (recording)
    _declared: tuple[types.ClientCapabilities | None, dict[str, Any]] | None = field(default=None, repr=False)
    _told: tuple[types.ClientCapabilities | None, str] | None = field(default=None, repr=False)

    @property
    def modern(self) -> bool:
        return self.protocol_version in MODERN_PROTOCOL_VERSIONS

    def told_key(self) -> str:
        """`capabilities_key` of what the client declared (made once: the handshake-era routing asks on every call)."""
        if self._told is None or self._told[0] is not self.capabilities:
            self._told = (self.capabilities, capabilities_key(self.capabilities))
        return self._told[1]

    def declared(self) -> dict[str, Any]:
        """The client's capabilities as the stateless era's `_meta` carries them (made once: every call sends them)."""
        if self._declared is None or self._declared[0] is not self.capabilities:
            dumped = (
                self.capabilities.model_dump(by_alias=True, mode="json", exclude_none=True) if self.capabilities else {}
            )
            self._declared = (self.capabilities, dumped)
        return self._declared[1]

    @property
    def owner(self) -> str:
        """Who the client's recordings belong to: a digest of its credentials, "" without any."""
        return owner_of(self.key)

    def may_see(self, session: str | None) -> bool:
        """Whether this client may read a stored execution (`Execution.session`): recordings only by the
        credentials that made them; runs of templates (no session) by any client of the gateway."""
        return session is None or owner_of(session) == self.owner


class ProgressOrder:
    """Progress notifications are delivered by tasks of their own: the result must wait for
    the ones already under way, or the last progress could reach the client after it."""

    def __init__(self, report: Any) -> None:
        self.report = report
        self.running = 0
        self.idle = anyio.Event()
        self.idle.set()

    async def __call__(self, value: float, total: float | None, message: str | None) -> None:
        self.running += 1
        if self.running == 1:
            self.idle = anyio.Event()
        try:
            await self.report(value, total, message)
        finally:
            self.running -= 1
            if self.running == 0:
                self.idle.set()

    async def drain(self) -> None:
        await anyio.lowlevel.checkpoint()  # a delivery spawned with the result starts first
        with anyio.move_on_after(2):
            await self.idle.wait()


@dataclass(eq=False)
class Call:
    """A forwarded tools/call in flight: whom to ask when its server asks something, and how it
    is sent (one value, made once per call, for each connection it may be sent on)."""

    ctx: ServerRequestContext[Any, Any] | None
    link: ClientLink
    exchange: Exchange | None
    tracker: ProgressOrder | None = None  # the client's progress, delivered in order
    envelope: dict[str, Any] | None = None  # what a stateless-era server is told of the caller
    ask: AskFn | None = None  # who answers a stateless-era server's questions
    asking: int = 0  # questions of its server it waits on an answer to now
    asked: int = 0  # questions of its server it was given so far

    def for_handshake_twin(self) -> Call:
        """The same call sent on a server's handshake-era connection, which pushes its questions itself."""
        return dataclasses.replace(self, envelope=None, ask=None)

    @property
    def channel(self) -> ServerRequestContext[Any, Any] | None:
        """The client request the call's logs go to: with an exchange, the retry waiting now."""
        return self.exchange.ctx if self.exchange is not None else self.ctx


async def send_quietly(session: ServerSession, notification: Any, related: Any = None) -> None:
    """Notifications to a client that went away are dropped: the client is gone, not the gateway."""
    try:
        if isinstance(notification, types.LoggingMessageNotification):
            params = notification.params
            await session.send_log_message(params.level, params.data, params.logger, related_request_id=related)
        else:
            await session.send_notification(notification, related_request_id=related)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, MCPError) as exc:
        logger.debug("notification dropped: %s", exc)


def client_envelope(ctx: ServerRequestContext[Any, Any] | None) -> dict[str, Any]:
    """What a stateless-era caller says of itself, passed on so the upstream answers it as it is."""
    meta: Mapping[str, Any] = (ctx.meta if ctx is not None else None) or {}
    keys = (CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, LOG_LEVEL_META_KEY)
    return {key: meta[key] for key in keys if key in meta}


def era_result(ctx: ServerRequestContext[Any, Any], result: dict[str, Any]) -> dict[str, Any]:
    """Results of the stateless era must say they are complete; handler dicts are not typed models."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and "resultType" not in result:
        return {**result, "resultType": "complete"}
    return result


def require_capability(link: ClientLink, method: str) -> None:
    caps = link.capabilities
    have = {
        "sampling/createMessage": caps is not None and caps.sampling is not None,
        "elicitation/create": caps is not None and caps.elicitation is not None,
        "roots/list": caps is not None and caps.roots is not None,
    }[method]
    if not have:
        raise MCPError(
            code=types.INVALID_REQUEST, message=f"the client connected to toolreel does not support {method}"
        )


def capabilities_of(ctx: ServerRequestContext[Any, Any]) -> types.ClientCapabilities | None:
    client_params = ctx.session.client_params
    if client_params is not None:
        return client_params.capabilities
    raw = (ctx.meta or {}).get(CLIENT_CAPABILITIES_META_KEY)
    return types.ClientCapabilities.model_validate(raw) if isinstance(raw, dict) else None


def stateless_group(key: str) -> bool:
    """Whether a link key groups a stateless-era client's calls (no protocol session to pin it)."""
    return key.startswith(_GROUP_PREFIX) or (key[16:17] == "/" and key.startswith(_GROUP_PREFIX, 17))


def owner_of(key: str | None) -> str:
    """The credential digest a link key (and so a recording's `session`) starts with, "" if none."""
    if not key or "/" not in key:
        return ""
    return key.partition("/")[0]


def link_key(ctx: ServerRequestContext[Any, Any]) -> str:
    """The client a request comes from; with credentials (`Authorization`), prefixed by their digest
    (`<digest>/http:<session>`), which the recording keeps as the execution's owner."""
    request = ctx.request
    headers = getattr(request, "headers", None)
    if headers is None:
        return "stdio"
    credentials = headers.get("authorization")
    key = _client_key(ctx, headers)
    return f"{hashlib.sha256(credentials.encode()).hexdigest()[:16]}/{key}" if credentials else key


def _client_key(ctx: ServerRequestContext[Any, Any], headers: Mapping[str, str]) -> str:
    session_id = headers.get("mcp-session-id")
    # Only a handshake-era request has had its session id checked (an unknown one is refused with 404);
    # a stateless request is not routed by it, so the id it carries proves nothing and is ignored.
    version = headers.get("mcp-protocol-version")
    if session_id and (version is None or version in HANDSHAKE_PROTOCOL_VERSIONS):
        return f"http:{session_id}"
    # Stateless era: group by who the client is: the id the guard gave it, its client info, its credentials.
    info = (ctx.meta or {}).get(CLIENT_INFO_META_KEY)
    client = headers.get(CLIENT_HEADER.decode(), "")
    fingerprint = f"{client}|{info}|{headers.get('authorization', '')}"
    return _GROUP_PREFIX + hashlib.sha256(fingerprint.encode()).hexdigest()[:16]


def span_attributes(link: ClientLink, listed: str, upstream: Upstream) -> dict[str, Any]:
    """A forwarded call's span attributes (MCP semantic conventions, plus the server it went to)."""
    session = link.key.removeprefix("http:") if link.key.startswith("http:") else None
    return {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": listed,
        "gen_ai.operation.name": "execute_tool",
        "mcp.session.id": session,
        "mcp.protocol.version": link.protocol_version,
        "network.transport": "pipe" if link.key == "stdio" else "tcp",
        "toolreel.server": upstream.name,
        "toolreel.client": link.key,
    }
