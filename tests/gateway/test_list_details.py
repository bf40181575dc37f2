"""The 2026-07-28 details of a listing a gateway must keep, checked through an in-process gateway.

- `tools/list` is deterministic: every listing, from any client and either era, gives the same tools in the same
  order (the config's servers in order, each server's tools in the server's own order).
- List results carry the caching attributes of the stateless era (`ttlMs`, `cacheScope`): immediately stale and
  private, since the gateway's listing changes whenever a template is saved, by any process on the store, and
  depends on who is asking; a handshake-era client gets no such fields.
- A tool's `x-mcp-header` parameters are listed as the server wrote them, and a call to an HTTP server whose tool
  declares one carries the `Mcp-Param-*` header the server checks against the body (SEP-2243).
- A JSON Schema 2020-12 input schema (`$schema`, `$defs`, `$anchor`, `$ref`, `allOf`/`anyOf`, `if`/`then`/`else`)
  is listed exactly as the server lists it: never dereferenced, never rewritten.

Upstreams: `fixtures.asking` over streamable HTTP (its `test_x_mcp_header` and its 2020-12 tool) and
`fixtures.features` over stdio.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Final

import mcp_types as types
import pytest
from pydantic import BaseModel, ConfigDict

from fixtures.asking import SCHEMA_2020_12
from fixtures.servers import http_fixture
from tests import inproc
from tests.gw import Connected, direct_fixture, fixture_entry, text_of, wait_until
from tests.inproc import InProcessGateway, gateway_with_clients
from toolreel.upstreams.upstream import UpstreamState

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.filterwarnings(inproc.SDK_LOG_DEPRECATION),
    pytest.mark.xdist_group("list_details"),
]

LISTS: Final[dict[str, types.ClientRequest]] = {
    "tools/list": types.ListToolsRequest(),
    "prompts/list": types.ListPromptsRequest(),
    "resources/list": types.ListResourcesRequest(),
    "resources/templates/list": types.ListResourceTemplatesRequest(),
}


class _AsSent(BaseModel):
    """A result with every field kept as sent (as extras)."""

    model_config = ConfigDict(extra="allow")


@pytest.fixture(scope="module")
async def asking_url() -> AsyncIterator[str]:
    async with http_fixture("asking") as url:
        yield url


@pytest.fixture(scope="module")
async def gateway(asking_url: str) -> AsyncIterator[InProcessGateway]:
    servers = {"ask": {"url": asking_url}, "feat": fixture_entry("features")}
    async with gateway_with_clients(servers, record=False) as gw:
        hub = gw.front.hub
        # Servers start when the first client says what it can do; on a busy machine one may be listed late.
        async with gw.connect():
            await wait_until(lambda: all(u.state is UpstreamState.READY for u in hub.upstreams.values()), 90, "servers")
        yield gw


async def _raw(client: Connected, method: str) -> dict[str, Any]:
    """A list result as the gateway sent it. A handshake-era session's client drops fields of a later revision
    before anyone sees them, so its request goes through the session's dispatcher, where nothing is dropped."""
    session = client.client.session
    if client.modern:
        return dict((await session.send_request(LISTS[method], _AsSent)).model_extra or {})
    wire: dict[str, Any] = await session._dispatcher.send_raw_request(method, None, {})  # the wire, before the SDK
    return wire


async def _names(client: Connected) -> list[str]:
    return [tool.name for tool in (await client.client.list_tools()).tools]


async def test_tools_list_order_is_the_same_for_every_listing_and_follows_config_then_server(
    gateway: InProcessGateway,
) -> None:
    async with gateway.connect() as legacy, gateway.connect(mode="auto") as modern:
        first = await _names(legacy)
        assert first == await _names(legacy) == await _names(modern)
        servers = [name.partition("__")[0] for name in first if "__" in name and not name.startswith(("reel", "tool"))]
        assert servers == sorted(servers, key=["ask", "feat"].index)  # the config's order, never interleaved
        async with direct_fixture("features") as direct:
            own = [tool.name for tool in (await direct.client.list_tools()).tools]
        assert [name.removeprefix("feat__") for name in first if name.startswith("feat__")] == own


async def test_list_results_say_they_are_stale_at_once_and_private_to_a_stateless_era_client(
    gateway: InProcessGateway,
) -> None:
    async with gateway.connect(mode="auto") as modern, gateway.connect() as legacy:
        assert modern.modern and not legacy.modern
        for method in LISTS:
            result = await _raw(modern, method)
            assert (result.get("ttlMs"), result.get("cacheScope")) == (0, "private"), (method, result)
            old = await _raw(legacy, method)
            assert "ttlMs" not in old and "cacheScope" not in old, (method, old)


async def test_x_mcp_header_parameters_are_listed_as_written_and_their_header_reaches_an_http_server(
    gateway: InProcessGateway,
) -> None:
    async with gateway.connect(mode="auto") as client:
        tools = {tool.name: tool for tool in (await client.client.list_tools()).tools}
        region = tools["ask__test_x_mcp_header"].input_schema["properties"]["region"]
        assert region["x-mcp-header"] == "Region"
        result = await client.client.call_tool("ask__test_x_mcp_header", {"region": "eu-west-1"})
        assert not result.is_error and text_of(result) == "region=eu-west-1", text_of(result)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_json_schema_2020_12_input_schema_is_listed_exactly_as_the_server_lists_it(
    gateway: InProcessGateway, mode: str
) -> None:
    async with gateway.connect(mode=mode) as client, direct_fixture("asking", mode=mode) as direct:
        [tool] = [
            t for t in (await _raw(client, "tools/list"))["tools"] if t["name"] == "ask__json_schema_2020_12_tool"
        ]
        [own] = [t for t in (await _raw(direct, "tools/list"))["tools"] if t["name"] == "json_schema_2020_12_tool"]
        assert tool["inputSchema"] == own["inputSchema"] == SCHEMA_2020_12  # `$ref` and `$defs` kept, not resolved
        # key order too (the SDK's server orders them differently by era: the gateway keeps what it gets)
        assert list(tool["inputSchema"]) == list(own["inputSchema"])
        assert isinstance(types.Tool.model_validate(tool), types.Tool)
