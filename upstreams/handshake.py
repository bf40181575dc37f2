"""Which era a connection to a server speaks, and what the server said of itself: `greet`.

The stateless era where the server speaks it: what it asks during a call comes back on that
call's own response, so it reaches exactly the client that made the call (the handshake era's
pushed requests say nothing of the call that caused them). The handshake for servers that know
no other (the npm ones), with `protocol: legacy`, and for the one handshake-era client of a stdio
gateway (`handshake_first`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY
from mcp_types.version import LATEST_MODERN_VERSION

from toolreel import __version__
from toolreel.upstreams.config import ServerConfig

__all__ = ["EraHistory", "Greeting", "HandshakeRefused", "greet", "refused_handshake"]


class HandshakeRefused(Exception):
    """This connection cannot go on in the era it began: it is connected to again at once, in the other era.
    A dual-era server keeps a connection in the era of its first message, so after a refused `initialize`
    the next connection starts stateless, and after a `server/discover` probe left unanswered on a pipe (a
    server still starting reads it later and keeps that era) the next one starts with the handshake."""


def refused_handshake(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):  # raised through the transport's task group
        return all(refused_handshake(e) for e in exc.exceptions)
    return isinstance(exc, HandshakeRefused)


@dataclass
class EraHistory:
    """What earlier connections to one server learned of its eras; it outlives each connection."""

    handshake_refused: bool = False  # its `initialize` was refused: a server of the stateless era only
    probe_unanswered: bool = False  # a stdio server too slow for the probe: the handshake comes first


@dataclass(frozen=True)
class Greeting:
    """What a server said of itself when a connection began, and what every request to it then carries."""

    protocol_version: str
    capabilities: types.ServerCapabilities
    instructions: str | None
    server_info: types.Implementation | None
    headers: dict[str, str]  # on every HTTP request: the protocol version
    envelope: dict[str, Any] | None = None  # the stateless era's: the _meta every request carries


async def greet(
    session: ClientSession,
    config: ServerConfig,
    capabilities: types.ClientCapabilities,
    history: EraHistory,
    *,
    handshake_first: bool,
) -> Greeting:
    """Begin the connection in the era that fits; `HandshakeRefused` when it must begin again in the other."""
    if config.protocol == "legacy":
        return await _initialize(session, config)
    if config.protocol == "auto" and (handshake_first or history.probe_unanswered) and not history.handshake_refused:
        try:
            return await _initialize(session, config)
        except MCPError as exc:  # a server of the stateless era only
            history.handshake_refused = True
            raise HandshakeRefused from exc
    try:
        found = await session.discover()
    except MCPError as exc:
        if config.protocol != "auto":
            raise
        unanswered = exc.error.code == types.REQUEST_TIMEOUT and config.url is None
        if unanswered and not history.handshake_refused:
            history.probe_unanswered = True
            raise HandshakeRefused from exc
        return await _initialize(session, config)
    version = session.protocol_version or LATEST_MODERN_VERSION
    envelope = {
        PROTOCOL_VERSION_META_KEY: version,
        CLIENT_INFO_META_KEY: {"name": "toolreel", "version": __version__},
        CLIENT_CAPABILITIES_META_KEY: capabilities.model_dump(by_alias=True, mode="json", exclude_none=True),
    }
    return Greeting(
        version, found.capabilities, found.instructions, session.server_info, _headers(config, version), envelope
    )


async def _initialize(session: ClientSession, config: ServerConfig) -> Greeting:
    result = await session.initialize()
    version = result.protocol_version
    return Greeting(version, result.capabilities, result.instructions, result.server_info, _headers(config, version))


def _headers(config: ServerConfig, version: str) -> dict[str, str]:
    return {MCP_PROTOCOL_VERSION_HEADER: version} if config.url else {}
