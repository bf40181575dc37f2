"""Which connection to a server a client's request takes, decided from eras and declared capabilities.

A server of both eras is spoken to in the stateless era (2026-07-28): its questions come back on the
call's own response, so they reach exactly the client that made the call. A handshake-era client
(2025-11-25 and older) that can be asked questions (it declared sampling, elicitation or roots) would,
talking to that server directly, be spoken to in the handshake era, where the server *pushes* its
questions mid-call. Through the stateless era a server that can only push them has no way to ask,
and how it reports that is its own business (an error, a text result, silence): nothing in a
failure's wording can be trusted to say so. Such a client's calls therefore go to the server's
handshake-era connection from the start, where the server asks exactly as it would directly.

Every other client stays on the stateless connection, which is faithful for it: a stateless-era
client gets the server's `InputRequiredResult`s as they are, and a client that cannot be asked
anything loses nothing there (each request tells the server what its own client declared).

A handshake-era connection tells the server its client's capabilities once, at `initialize`, and many
clients share a gateway. So each handshake-era connection is told exactly what the clients whose calls
take it declared: the server's own connection what the gateway's first client declared, and a client
that declared otherwise (a capable one after a capability-less probe, or the reverse) takes a
connection of the server told what it declared. Clients that declared alike share one.
"""

from __future__ import annotations

import mcp_types as types

from toolreel.gateway.links import ClientLink
from toolreel.upstreams.upstream import Upstream

__all__ = ["can_be_asked", "takes_handshake_connection"]


def can_be_asked(capabilities: types.ClientCapabilities | None) -> bool:
    """Whether a client declared a capability a server may put a question to (sampling, elicitation, roots)."""
    if capabilities is None:
        return False
    return any(c is not None for c in (capabilities.sampling, capabilities.elicitation, capabilities.roots))


def takes_handshake_connection(link: ClientLink, upstream: Upstream, *, lone_client: bool = False) -> bool:
    """Whether `link`'s requests to `upstream` go to a handshake-era connection of their own (Hub.handshake_twin):
    to a server spoken to in the stateless era that speaks both (`protocol: auto`), a handshake-era client that
    can be asked questions; to a server spoken to in the handshake era, a client that declared other capabilities
    than the connection was told (never for the one client of a stdio gateway, whose capabilities it was told)."""
    if upstream.modern:
        return not link.modern and upstream.config.protocol == "auto" and can_be_asked(link.capabilities)
    return not lone_client and link.told_key() != upstream.told_key
