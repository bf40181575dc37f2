"""Task status notifications (SEP-2663 `notifications/tasks`) through the gateway, over HTTP, raw JSON-RPC (the SDK's
client has no tasks surface).

A 2026-07-28 client that declared the Tasks extension opens a `subscriptions/listen` stream naming task handles:
a server's task (`fixtures.tasks`'s `slow_compute`, under the gateway's `<server>:<id>` handle) and a run of a
template (`reel__triage`, an `execution/<id>` handle). The acknowledgement lists the handles the gateway knows
(an unknown one is left out); every state of each task reaches the client as `notifications/tasks` carrying what
`tasks/get` answers, under the gateway's handle, up to its end: the server's task completes with its result, the
run asks its question (`input_required`), is answered with `tasks/update`, and completes. A client that did not
declare the extension is refused (-32021).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

import anyio
import httpx
import pytest

from tests.callers import fixture_env
from tests.gateway.test_approve_data import TRIAGE
from tests.gw import fixture_entry, gateway_env, http_gateway, write_config
from tests.replayer.test_run_tasks import TASKS, VERSION, listed, rpc
from toolreel.core.model import TemplateDraft
from toolreel.core.store import open_store

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TERMINAL: Final = ("completed", "failed", "cancelled")


def _listen_request(notifications: dict[str, Any], *, tasks: bool = True) -> tuple[dict[str, Any], dict[str, str]]:
    caps: dict[str, Any] = {"extensions": {TASKS: {}}} if tasks else {}
    meta = {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "task notes test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": caps,
    }
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "subscriptions/listen",
        "params": {"notifications": notifications, "_meta": meta},
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "Mcp-Protocol-Version": VERSION,
        "Mcp-Method": "subscriptions/listen",
    }
    return body, headers


async def _messages(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """The JSON-RPC messages of an SSE response, one per `data:` line."""
    async for line in response.aiter_lines():
        if line.startswith("data:") and line[5:].strip():
            yield json.loads(line[5:])


async def test_task_states_reach_a_listening_client_until_each_task_ends(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(db)
    store.save_template(TemplateDraft("triage", TRIAGE))
    store.close()
    servers = {"features": fixture_entry("features", env=fixture_env(tmp_path)), "jobs": fixture_entry("tasks")}
    config = write_config(tmp_path / "toolreel.json", servers)
    async with (
        http_gateway(["--config", str(config), "--no-ui"], gateway_env(db)) as gateway,
        httpx.AsyncClient(timeout=60) as http,
    ):
        url = gateway.url
        for tool in ("features__add", "jobs__slow_compute"):
            await listed(http, url, tool)
        job = (await rpc(http, url, "tools/call", {"name": "jobs__slow_compute", "arguments": {"seconds": 2}}))[
            "taskId"
        ]
        run = (await rpc(http, url, "tools/call", {"name": "reel__triage", "arguments": {}}))["taskId"]
        assert job.startswith("jobs:") and run.startswith("execution/"), (job, run)

        body, headers = _listen_request({"taskIds": [job, run, "jobs:no-such-task"], "toolsListChanged": True})
        seen: dict[str, list[dict[str, Any]]] = {job: [], run: []}
        with anyio.fail_after(90):
            async with http.stream("POST", url, json=body, headers=headers) as response:
                messages = _messages(response)
                ack = await anext(messages)
                assert ack["method"] == "notifications/subscriptions/acknowledged", ack
                assert ack["params"]["notifications"]["taskIds"] == [job, run]
                assert ack["params"]["notifications"]["toolsListChanged"] is True
                async for message in messages:
                    assert message.get("method") == "notifications/tasks", message
                    task = message["params"]
                    assert task["_meta"]["io.modelcontextprotocol/subscriptionId"] == 7
                    seen[task["taskId"]].append(task)
                    if task["taskId"] == run and task["status"] == "input_required":
                        [key] = task["inputRequests"]
                        answer = {key: {"action": "accept", "content": {"label": "feature", "points": 5}}}
                        await rpc(http, url, "tasks/update", {"taskId": run, "inputResponses": answer})
                    if all(states and states[-1]["status"] in TERMINAL for states in seen.values()):
                        break

    job_states, run_states = seen[job], seen[run]
    assert job_states[-1]["status"] == "completed" and "computed" in json.dumps(job_states[-1]["result"])
    assert [s["status"] for s in run_states][-2:] == ["input_required", "completed"], run_states
    assert json.loads(run_states[-1]["result"]["content"][0]["text"])["said"] == "feature/5"
    for states in (job_states, run_states):  # each a state the task was in, once
        texts = [json.dumps({k: v for k, v in s.items() if k != "_meta"}, sort_keys=True) for s in states]
        assert len(texts) == len(set(texts))


async def test_a_client_that_did_not_declare_the_extension_cannot_listen_for_tasks(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    config = write_config(tmp_path / "toolreel.json", {"jobs": fixture_entry("tasks")})
    async with (
        http_gateway(["--config", str(config), "--no-ui"], gateway_env(db)) as gateway,
        httpx.AsyncClient(timeout=60) as http,
    ):
        body, headers = _listen_request({"taskIds": ["jobs:1"]}, tasks=False)
        with anyio.fail_after(60):
            async with http.stream("POST", gateway.url, json=body, headers=headers) as response:
                answer = (
                    await anext(_messages(response))
                    if "event-stream" in response.headers.get("content-type", "")
                    else json.loads(await response.aread())
                )
        assert answer["error"]["code"] == -32021, answer
        assert answer["error"]["data"]["requiredCapabilities"] == {"extensions": {TASKS: {}}}
