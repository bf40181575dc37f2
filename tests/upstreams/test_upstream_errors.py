"""An upstream's own JSON-RPC error stays that server's error, end to end; only a real transport loss is
"closed the connection" and `transient`.

The fixture `features` answers `refuse` with the error it is asked for (-32000, JSON-RPC's generic server
error, whose code the SDK also uses for a closed connection; -32602; an application code), over stdio and
over HTTP. The agent gets a tool error with the code and message (and `_meta["toolreel/server_error"]`), the
store keeps it as the step's result, the server is not restarted, and the replayer's retry class is
`tool_error`, never `transient`. The `crash` tool is the real loss that keeps the old answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.gw import fixture_entry, fixture_http_server, text_of, wait_until
from tests.inproc import gateway_with_clients
from toolreel.core.caller import ToolCall
from toolreel.core.errors import NotFoundError, UpstreamError
from toolreel.core.store import Store, open_store
from toolreel.replayer._policy import attempt_failure_kind
from toolreel.upstreams.config import parse_config
from toolreel.upstreams.hub import open_upstreams
from toolreel.upstreams.upstream import SERVER_ERROR_META

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ERRORS = [
    (-32000, "quota exceeded for this account", None),
    (-32602, "argument 'path' must be absolute", {"field": "path"}),
    (4711, "the ledger is closed for the day", {"retry": "tomorrow"}),
]


@dataclass
class Setup:
    servers: dict[str, Any]
    db: str


@pytest.fixture(params=["stdio", "http"])
async def setup(request: pytest.FixtureRequest, tmp_path: Any) -> AsyncIterator[Setup]:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    if request.param == "stdio":
        yield Setup({"feat": fixture_entry("features")}, db)
        return
    async with fixture_http_server("features") as url:
        yield Setup({"feat": {"url": url}}, db)


def _stored_steps(store: Store, execution: str, count: int) -> list[Any]:
    try:
        steps = store.get_steps(execution)
    except NotFoundError:
        return []
    return steps if len(steps) >= count else []


async def test_a_servers_error_answer_reaches_the_agent_and_the_store_as_its_own(setup: Setup) -> None:
    async with gateway_with_clients(setup.servers, db=setup.db) as gateway, gateway.connect() as connected:
        upstream = gateway.front.hub.upstreams["feat"]
        await wait_until(lambda: upstream.state.value == "ready", 60, "the fixture server to start")
        execution = ""
        for code, message, data in ERRORS:
            arguments: dict[str, Any] = {"code": code, "message": message}
            if data is not None:
                arguments["data"] = data
            result = await connected.client.call_tool("feat__refuse", arguments)
            text = text_of(result)
            assert result.is_error, text
            assert f"error {code}: {message}" in text and "closed the connection" not in text, text
            meta = result.meta or {}
            expected = {"server": "feat", "code": code, "message": message, **({"data": data} if data else {})}
            assert meta[SERVER_ERROR_META] == expected
            execution = meta["toolreel/execution"]
        assert upstream.restarts == 0 and upstream.state.value == "ready"
        # the server still answers on the same connection
        assert text_of(await connected.client.call_tool("feat__echo", {"text": "still here"})) == "still here"
        store = open_store(setup.db)
        try:
            await wait_until(lambda: bool(_stored_steps(store, execution, 4)), 15, "4 stored steps")
            steps = store.get_steps(execution)
        finally:
            store.close()
    refused = [s for s in steps if s.tool == "refuse"]
    assert len(refused) == 3
    for step, (code, message, _) in zip(refused, ERRORS, strict=True):
        assert step.status.value == "failed", step
        stored = step.result or {}
        assert f"error {code}: {message}" in str(stored.get("content")), stored
        assert "cancelled" not in str(step.error or ""), step.error


async def test_retry_classes_tell_a_refusal_from_a_lost_connection(setup: Setup) -> None:
    config = parse_config({"mcpServers": setup.servers})
    async with open_upstreams(config) as hub:
        for code, message, _ in ERRORS:
            result = await hub.call_tool(ToolCall("feat__refuse", {"code": code, "message": message}))
            assert result["isError"] and f"error {code}: {message}" in text_of_dict(result)
            assert attempt_failure_kind(None, is_error=True) == "tool_error"
        assert hub.upstreams["feat"].restarts == 0
        if "url" in setup.servers["feat"]:
            return  # an HTTP fixture that exits takes its URL along; the loss below is the stdio pipe's
        with pytest.raises(UpstreamError) as lost:
            await hub.call_tool(ToolCall("feat__crash", {}))
        assert "closed the connection" in str(lost.value) and lost.value.transient
        assert attempt_failure_kind(lost.value, is_error=False) == "transient"


def text_of_dict(result: dict[str, Any]) -> str:
    return " ".join(str(item.get("text", "")) for item in result.get("content") or [])
