"""Where a sequential call's CPU goes: client, gateway and server, direct and through toolreel, in one run.

For one workload (`get_current_time` by default, `--echo` for server-everything `echo`): R rounds, each in
fresh processes and alternating which target goes first; per target, the p50 of sequential calls and the CPU
each process spends per call (user + system), as medians over rounds. A diagnostic with no bar: it shows what
the gateway's process costs the others (the client and the server), beside its own CPU, and (for
`get_current_time`) what the server spends when spoken to in the stateless era instead of the client's own.
Run: .venv/bin/python bench/cpu_split.py [--echo] [--calls N] [--rounds R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import anyio
from _common import (
    ECHO,
    GET_TIME,
    Command,
    Workload,
    child_pids,
    connect,
    descendants,
    process_cpu,
    sequential,
    table,
    toolreel_bin,
    via_toolreel,
    write_json,
)

WARM = 300
PROCESSES = ("client", "gateway", "server")


async def one_round(command: Command, work: Workload, calls: int, errlog: TextIO, *, gateway: bool) -> dict[str, float]:
    """p50 (µs) and the CPU per call (µs) of the client and of every process it started: with `gateway`,
    the client's own child is the gateway and everything under it the server."""
    async with connect(command, errlog) as session:
        await sequential(session, work, WARM)
        children = child_pids(os.getpid()) if gateway else set()
        pids = list(descendants(os.getpid()))
        before = {pid: process_cpu(pid) for pid in pids}
        mine = time.process_time()
        samples = await sequential(session, work, calls)
        figures = {"p50": statistics.median(samples) * 1e6, "client": (time.process_time() - mine) / calls * 1e6}
        for pid in pids:
            name = "gateway" if pid in children else "server"
            figures[name] = figures.get(name, 0.0) + (process_cpu(pid) - before[pid]) / calls * 1e6
    return figures


def stateless(work: Workload, tmp: Path) -> Command:
    """toolreel with its upstream forced into the 2026-07-28 era (`"protocol": "modern"`), as over
    HTTP or behind a 2026-07-28 client: what a stateless request per call costs the server."""
    server = work.server
    entry: dict[str, object] = {"command": server.argv[0], "args": list(server.argv[1:]), "protocol": "modern"}
    if server.env:
        entry["env"] = dict(server.env)
    config = write_json(tmp / "stateless.json", {"mcpServers": {"s": entry}})
    return Command(
        (toolreel_bin(), "serve", "--no-record", "--no-prefix", "--config", str(config)), server.env, server.cwd
    )


async def measure(args: argparse.Namespace, errlog: TextIO, tmp: Path) -> None:
    work = ECHO if args.echo else GET_TIME
    targets = {"direct": work.server, "toolreel": via_toolreel(work.server, "--no-record")}
    if not args.echo:  # server-everything speaks the handshake era only
        targets["toolreel, stateless upstream"] = stateless(work, tmp)
    print(f"{work.source} {work.tool}: {args.rounds} rounds x {args.calls} sequential calls, {os.cpu_count()} CPUs")
    rounds: dict[str, list[dict[str, float]]] = {label: [] for label in targets}
    for index in range(args.rounds):
        order = list(targets) if index % 2 == 0 else list(reversed(targets))
        for label in order:
            figures = await one_round(targets[label], work, args.calls, errlog, gateway=label != "direct")
            rounds[label].append(figures)
    rows = []
    for label, samples in rounds.items():
        median = {key: statistics.median(f.get(key, 0.0) for f in samples) for key in ("p50", *PROCESSES)}
        total = sum(median[key] for key in PROCESSES)
        rows.append([label, f"{median['p50']:.0f}", *(f"{median[key]:.0f}" for key in PROCESSES), f"{total:.0f}"])
    print(table(["target", "p50 µs", "client µs/call", "gateway µs/call", "server µs/call", "all µs/call"], rows))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--echo", action="store_true", help="server-everything echo instead of get_current_time")
    parser.add_argument("--calls", type=int, default=1000, help="sequential calls per target per round")
    parser.add_argument("--rounds", type=int, default=6, help="rounds, each in fresh processes")
    args = parser.parse_args(argv)
    with open(os.devnull, "w") as errlog, tempfile.TemporaryDirectory(prefix="toolreel-bench-") as tmp:
        anyio.run(measure, args, errlog, Path(tmp))


if __name__ == "__main__":
    main()
