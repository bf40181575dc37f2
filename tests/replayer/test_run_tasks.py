"""Runs of templates as tasks (SEP-2663): a client that declared the Tasks extension gets a `CreateTaskResult` from
`reel__<name>` whose handle is the run's execution id; it polls the run with `tasks/get`, answers its approval
with `tasks/update`, cancels it with `tasks/cancel`, and any gateway on the same store serves the same handle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import anyio
import httpx
import pytest

from tests.callers import fixture_env
from tests.gateway.test_approve_data import FORM, TRIAGE
from tests.gw import fixture_entry, gateway_env, http_gateway, wait_until, write_config
from toolreel.core.model import TemplateDraft
from toolreel.core.store import open_store

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

VERSION: Final = "2026-07-28"
TASKS: Final = "io.modelcontextprotocol/tasks"


async def rpc(http: httpx.AsyncClient, url: str, method: str, params: dict[str, Any], *, tasks: bool = True) -> Any:
    """One stateless-era request, raw: the SDK's client has no tasks surface."""
    caps: dict[str, Any] = {"extensions": {TASKS: {}}} if tasks else {}
    meta = {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "tasks test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": caps,
    }
    headers = {"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": VERSION, "Mcp-Method": method}
    name = params.get("name", params.get("taskId"))
    if isinstance(name, str):
        headers["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    response = await http.post(url, json=body, headers=headers)
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:") and '"id"' in line)
    message = json.loads(text)
    assert "error" not in message, message
    return message["result"]


async def until(http: httpx.AsyncClient, url: str, task_id: str, status: str) -> dict[str, Any]:
    """`tasks/get` at the interval the task asks for, until it has `status`."""
    with anyio.fail_after(60):
        while True:
            task: dict[str, Any] = await rpc(http, url, "tasks/get", {"taskId": task_id})
            if task["status"] == status:
                return task
            assert task["status"] in ("working", "input_required"), task
            await anyio.sleep(task.get("pollIntervalMs", 200) / 1000)


async def listed(http: httpx.AsyncClient, url: str, tool: str) -> None:
    """Until the gateway lists `tool` (its server has started): `tools/list` says so, nothing else does."""

    async def lists() -> bool:
        return tool in {t["name"] for t in (await rpc(http, url, "tools/list", {}))["tools"]}

    await wait_until(lists, timeout=60, what=f"{tool} in tools/list")


async def test_a_run_is_a_task_polled_answered_and_cancelled_from_any_gateway(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(db)
    store.save_template(TemplateDraft("triage", TRIAGE))
    store.close()
    config = write_config(
        tmp_path / "toolreel.json", {"features": fixture_entry("features", env=fixture_env(tmp_path))}
    )
    args = ["--config", str(config), "--no-ui"]
    async with (
        http_gateway(args, gateway_env(db)) as first,
        http_gateway(args, gateway_env(db)) as second,
        httpx.AsyncClient(timeout=60) as http,
    ):
        for gateway in (first, second):
            await listed(http, gateway.url, "features__add")
        made = await rpc(http, first.url, "tools/call", {"name": "reel__triage", "arguments": {}})
        assert made["resultType"] == "task" and made["taskId"].startswith("execution/"), made
        assert "result" not in made and "requestState" not in made

        asking = await until(http, second.url, made["taskId"], "input_required")  # the other gateway, same store
        [(key, request)] = asking["inputRequests"].items()
        assert request["method"] == "elicitation/create"
        assert request["params"]["requestedSchema"] == FORM
        answer = {key: {"action": "accept", "content": {"label": "feature", "points": 5}}}
        ack = await rpc(http, second.url, "tasks/update", {"taskId": made["taskId"], "inputResponses": answer})
        assert ack["resultType"] == "complete" and "taskId" not in ack
        done = await until(http, first.url, made["taskId"], "completed")
        assert json.loads(done["result"]["content"][0]["text"]) == {
            "said": "feature/5",
            "answer": {"label": "feature", "points": 5},
        }

        other = await rpc(http, first.url, "tools/call", {"name": "reel__triage", "arguments": {}})
        await until(http, first.url, other["taskId"], "input_required")
        ack = await rpc(http, second.url, "tasks/cancel", {"taskId": other["taskId"]})
        assert ack["resultType"] == "complete"
        cancelled = await until(http, first.url, other["taskId"], "cancelled")
        assert "result" not in cancelled

        plain = await rpc(http, first.url, "tools/call", {"name": "reel__triage", "arguments": {}}, tasks=False)
        assert plain["resultType"] == "complete" and "taskId" not in plain  # no extension: the run in the call
