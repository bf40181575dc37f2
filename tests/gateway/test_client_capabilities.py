"""What a server is told of its client through the gateway is what the calling client declared, whichever client
came first.

A gateway's connection to a server is opened once, and the handshake era tells the server the client's
capabilities once, at `initialize`. Several clients share an HTTP gateway: a first one that declared nothing (a
health probe, a listing script) must not make the server believe a later one that declared sampling cannot be
asked. `fixtures.asking`'s `test_missing_capability` refuses (-32021) unless its connection's client declared
sampling: through the gateway each client gets what it gets directly, in both orders, for a server of the
handshake era only (`protocol: legacy`) and for one of both eras (`protocol: auto`, where a handshake-era client
that can be asked takes the server's handshake-era connection: gateway.era).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Final

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests import inproc
from tests.gw import Connected, fixture_entry, text_of
from tests.inproc import InProcessGateway, gateway_with_clients

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.filterwarnings(inproc.SDK_LOG_DEPRECATION),
    pytest.mark.xdist_group("client_capabilities"),
]

PROCEEDS: Final = "Client declared sampling capability; proceeding."
REFUSED: Final = "This tool requires the client 'sampling' capability"
PROTOCOLS: Final = ("legacy", "auto")


@pytest.fixture(params=PROTOCOLS)
async def gateway(request: pytest.FixtureRequest) -> AsyncIterator[InProcessGateway]:
    servers = {"ask": {**fixture_entry("asking"), "protocol": request.param}}
    async with gateway_with_clients(servers, record=False) as gw:
        yield gw


async def _missing_capability(client: Connected) -> str:
    """What the tool answers: its text, or the message of its refusal (a JSON-RPC error, directly too)."""
    try:
        result = await client.client.call_tool("ask__test_missing_capability", {})
    except MCPError as refused:
        assert refused.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY, refused
        return refused.error.message
    return text_of(result)


async def _tool_names(client: Connected) -> set[str]:
    return {tool.name for tool in (await client.client.list_tools()).tools}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_capable_client_after_a_capability_less_one_is_told_as_it_declared(
    gateway: InProcessGateway, mode: str
) -> None:
    async with gateway.connect(answers=False) as first:
        assert "ask__test_missing_capability" in await _tool_names(first)
        assert REFUSED in await _missing_capability(first)
        async with gateway.connect(mode=mode) as second:
            assert await _missing_capability(second) == PROCEEDS
            sampled = text_of(await second.client.call_tool("ask__test_sampling", {"prompt": "hello"}))
            assert sampled == "LLM response: sampled: hello" or second.modern, sampled
        # and the first is still told what it declared: nothing
        assert REFUSED in await _missing_capability(first)


async def test_a_capability_less_client_after_a_capable_one_is_refused_as_directly(gateway: InProcessGateway) -> None:
    async with gateway.connect() as first:
        assert await _missing_capability(first) == PROCEEDS
        async with gateway.connect(answers=False) as second:
            assert REFUSED in await _missing_capability(second)


async def test_clients_that_declared_alike_share_one_connection(gateway: InProcessGateway) -> None:
    hub = gateway.front.hub
    async with gateway.connect(answers=False) as probe, gateway.connect() as a, gateway.connect() as b:
        await _missing_capability(probe)
        for client in (a, b):
            assert await _missing_capability(client) == PROCEEDS
        connections: list[Any] = hub.connections_of("ask")
        assert len(connections) == 2, connections  # the server's own, and one for the clients that declared sampling
