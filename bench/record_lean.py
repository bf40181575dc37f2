"""What recording costs the gateway itself: `bench/record.py` with a lean client.

The `mcp` SDK's `ClientSession` spends about 130 µs of CPU per call, so on 2 cores it is the
bottleneck and hides part of the gateway's cost. Here the client is a few lines of raw
JSON-RPC over the pipe (handshake, then `tools/call` with 8 in flight, responses matched by
id), so the gateway is the bottleneck: throughput on/off and the gateway's CPU per call show
what recording adds to it. Informational (no bars). Same targets as bench/record.py:
`toolreel serve --no-record` (twice: the second shows the run's noise) and recording on SQLite.
Run: .venv/bin/python bench/record_lean.py [--rounds N] [--calls N]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import ECHO, IN_FLIGHT, REPO, process_cpu, rotated, table, via_toolreel

CALL = {"name": ECHO.tool, "arguments": dict(ECHO.arguments)}


class LeanClient:
    """Raw JSON-RPC over a spawned gateway's stdio: as little client CPU as a call can take."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, argv: tuple[str, ...], log: Any) -> LeanClient:
        process = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=log, limit=1 << 24
        )
        client = cls(process)
        info = {"name": "bench-lean", "version": "1"}
        await client.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info})
        client._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return client

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            message = json.loads(line)
            future = self._waiting.pop(message.get("id"), None)
            if future is not None:
                future.set_result(message)

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id = next(self._ids)
        future = self._waiting[request_id] = asyncio.get_running_loop().create_future()
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        response: dict[str, Any] = await asyncio.wait_for(future, 60)
        if "result" not in response or response["result"].get("isError"):
            raise RuntimeError(f"the call failed: {str(response)[:300]}")
        return response

    async def throughput(self, count: int) -> float:
        remaining = count

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                await self.request("tools/call", CALL)

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))
        return count / (time.perf_counter() - start)

    async def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        await asyncio.wait_for(self.process.wait(), 30)
        self._reader.cancel()


async def measure(rounds: int, calls: int, warm: int, tmp: Path, log: Any) -> dict[str, list[tuple[float, float]]]:
    targets = {
        "recording off": via_toolreel(ECHO.server, "--no-record"),
        "recording on": via_toolreel(ECHO.server, "--db", f"sqlite:///{tmp / 'lean.db'}"),
        "off again (noise)": via_toolreel(ECHO.server, "--no-record"),
    }
    clients = {label: await LeanClient.start(command.argv, log) for label, command in targets.items()}
    figures: dict[str, list[tuple[float, float]]] = {label: [] for label in clients}
    try:
        for client in clients.values():
            await client.throughput(warm)
        for r in range(rounds):
            for label in rotated(list(clients), r):
                client = clients[label]
                before = process_cpu(client.process.pid)
                rate = await client.throughput(calls)
                figures[label].append((rate, (process_cpu(client.process.pid) - before) / calls))
    finally:
        for client in clients.values():
            await client.close()
    return figures


def report(figures: dict[str, list[tuple[float, float]]]) -> str:
    off_rate = statistics.median(rate for rate, _ in figures["recording off"])
    off_cpu = statistics.median(cpu for _, cpu in figures["recording off"])
    rows = []
    for label, samples in figures.items():
        rate = statistics.median(r for r, _ in samples)
        cpu = statistics.median(c for _, c in samples)
        rows.append(
            [label, f"{rate:.0f}", f"{rate / off_rate:.3f}x", f"{cpu * 1e6:.0f} us", f"{(cpu - off_cpu) * 1e6:+.0f} us"]
        )
    header = ["toolreel serve", f"calls/s @{IN_FLIGHT}", "calls/s/off", "gateway CPU/call", "vs off"]
    return table(header, rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    parser.add_argument("--calls", type=int, default=10000, help="calls per target per round (default 10000)")
    parser.add_argument("--warm", type=int, default=3000, help="warm-up calls per target (default 3000)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"bench/record_lean.py: raw JSON-RPC client over stdio; {os.cpu_count()} cores, load {load}")
    print(
        f"{args.rounds} rounds of {args.calls} calls at {IN_FLIGHT} in flight per target, "
        f"after {args.warm} warm-up; medians"
    )
    log_path = Path(tempfile.gettempdir()) / f"toolreel-bench-lean-{os.getpid()}.log"
    with tempfile.TemporaryDirectory(prefix="toolreel-bench-") as name, log_path.open("w") as log:
        figures = asyncio.run(measure(args.rounds, args.calls, args.warm, Path(name), log))
    print("\nserver-everything echo through toolreel (wrap mode), lean client\n" + report(figures))
    print(f"\n(server and gateway stderr: {log_path}; repository: {REPO})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
