"""What passing a task through the gateway costs: the Tasks extension (SEP-2663) directly and through toolreel.

`python -m fixtures.tasks --http` directly, and `toolreel serve --http --no-record --no-ui -- python -m
fixtures.tasks` (the fixture over stdio behind the gateway). A 2026-07-28 client that declares the extension,
raw JSON-RPC over HTTP (the SDK's client has no tasks surface): `tools/call slow_compute {"seconds": 0}`
(a task is made) then `tasks/get` on it until it is completed. Targets take turns in bursts. Prints p50/p90 ms
of each request kind per target. Run: .venv/bin/python bench/tasks.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
from _common import REPO, ms, percentile, table, toolreel_bin

sys.path.insert(0, str(REPO))
from fixtures.servers import fixture_command, http_fixture
from tests.conformance import free_port

VERSION = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "bench tasks", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
}


async def rpc(http: httpx.AsyncClient, url: str, method: str, params: dict[str, Any], name: str | None) -> Any:
    headers = {
        "Accept": "application/json, text/event-stream",
        "Mcp-Protocol-Version": VERSION,
        "Mcp-Method": method,
    }
    if name is not None:
        headers["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}
    response = await http.post(url, json=body, headers=headers)
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:") and '"id"' in line)
    message = json.loads(text)
    if "error" in message:
        raise RuntimeError(f"{method}: {message['error']}")
    return message["result"]


async def one_task(http: httpx.AsyncClient, url: str, create: list[float], get: list[float]) -> None:
    started = time.perf_counter()
    made = await rpc(http, url, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}}, "slow_compute")
    create.append(time.perf_counter() - started)
    assert made["resultType"] == "task", made
    while True:
        started = time.perf_counter()
        task = await rpc(http, url, "tasks/get", {"taskId": made["taskId"]}, made["taskId"])
        get.append(time.perf_counter() - started)
        if task["status"] == "completed":
            return


@asynccontextmanager
async def gateway() -> AsyncIterator[str]:
    port = free_port()
    command = [toolreel_bin(), "serve", "--http", f"127.0.0.1:{port}", "--no-record", "--no-ui"]
    process = await anyio.open_process(
        [*command, "--", *fixture_command("tasks")],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    async with process:
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx.AsyncClient(timeout=30) as http:
            with anyio.fail_after(30):
                while True:
                    try:
                        await rpc(http, url, "tools/call", {"name": "greet", "arguments": {"name": "x"}}, "greet")
                        break
                    except (httpx.HTTPError, RuntimeError):  # not up yet: no announcement to wait on
                        await anyio.sleep(0.1)
        try:
            yield url
        finally:
            process.terminate()
            await process.wait()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few rounds, for a smoke run")
    args = parser.parse_args()
    rounds, per_round = (2, 20) if args.quick else (6, 100)
    figures: dict[str, tuple[list[float], list[float]]] = {"direct": ([], []), "toolreel": ([], [])}
    async with http_fixture("tasks") as direct, gateway() as through, httpx.AsyncClient(timeout=30) as http:
        urls = {"direct": direct, "toolreel": through}
        for url in urls.values():  # warm-up
            for _ in range(10):
                await one_task(http, url, [], [])
        for _ in range(rounds):
            for target, url in urls.items():
                create, get = figures[target]
                for _ in range(per_round):
                    await one_task(http, url, create, get)
    print(f"bench/tasks.py: {rounds} rounds x {per_round} tasks per target, taking turns; ms")
    rows = []
    for target, (create, get) in figures.items():
        for kind, samples in (("tools/call -> task", create), ("tasks/get", get)):
            rows.append([target, kind, ms(percentile(samples, 50)), ms(percentile(samples, 90)), str(len(samples))])
    print(table(["target", "request", "p50", "p90", "n"], rows))


if __name__ == "__main__":
    anyio.run(main)
