"""The gateway's own CPU until it is ready: `.venv/bin/python bench/ready_cpu.py [--rounds N] [--baseline BIN]`.

Spawns `toolreel serve --no-record` over one `mcp-server-time` upstream, sends `initialize` and `tools/list`
as raw JSON-RPC lines, and reads the gateway process's own user + system time (`/proc/<pid>/stat`, its
children not counted) once the listing is answered. That CPU is what the gateway takes from starting servers
on a busy machine (bench/README.md, "The ready time is CPU"). `--baseline` measures another build's `toolreel`
script in alternation with this one: a change's before and after in one run. Prints minima and medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from _common import pypi_server, toolreel_bin, write_json

TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Probe:
    cpu: float  # seconds of the gateway's own CPU when its first tools/list was answered
    wall: float


def _send(stdin: IO[str], message: dict[str, Any]) -> None:
    stdin.write(json.dumps(message) + "\n")
    stdin.flush()


def _answer(stdout: IO[str]) -> dict[str, Any]:
    while True:
        message: dict[str, Any] = json.loads(stdout.readline())
        if "id" in message:
            return message


def probe(toolreel: str, config: Path) -> Probe:
    start = time.perf_counter()
    argv = [toolreel, "serve", "--no-record", "--config", str(config)]
    with subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    ) as gw:
        assert gw.stdin is not None and gw.stdout is not None
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
        _send(gw.stdin, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        _answer(gw.stdout)
        _send(gw.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(gw.stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        listed = _answer(gw.stdout)
        wall = time.perf_counter() - start
        fields = Path(f"/proc/{gw.pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime
        gw.stdin.close()
        gw.wait(timeout=30)
    if not listed.get("result", {}).get("tools"):
        raise SystemExit(f"bench: {toolreel} listed no tools: {listed}")
    return Probe(cpu, wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6, help="gateway starts per build")
    parser.add_argument("--baseline", help="another build's toolreel script, measured in alternation")
    args = parser.parse_args()
    builds = {"this": toolreel_bin(), **({"baseline": args.baseline} if args.baseline else {})}
    load = os.getloadavg()[0]
    probes: dict[str, list[Probe]] = {label: [] for label in builds}
    with tempfile.TemporaryDirectory(prefix="toolreel-bench-ready-") as tmp:
        server = pypi_server("time")
        entry = {"command": server.argv[0], "args": list(server.argv[1:])}
        config = write_json(Path(tmp) / "time.json", {"mcpServers": {"time": entry}})
        for _ in range(args.rounds):
            for label, toolreel in builds.items():
                probes[label].append(probe(toolreel, config))
    print(f"gateway CPU until its first tools/list, {args.rounds} rounds; load {load:.1f} -> {os.getloadavg()[0]:.1f}")
    for label, runs in probes.items():
        cpu, wall = [p.cpu for p in runs], [p.wall for p in runs]
        print(
            f"  {label}: CPU min {min(cpu):.3f} s, median {statistics.median(cpu):.3f} s; "
            f"wall min {min(wall):.3f} s, median {statistics.median(wall):.3f} s  ({builds[label]})"
        )


if __name__ == "__main__":
    main()
