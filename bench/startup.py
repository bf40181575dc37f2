"""How soon a `toolreel` command answers: `.venv/bin/python bench/startup.py [--runs N] [--executions N]`.

Runs `toolreel --version`, `toolreel --help` and `toolreel executions list` (on a SQLite store of 10,000
executions, filled once in a temporary folder) N times each and keeps the best run of each: the bars are
judged on the command's CPU time (user + system), since on a shared 2-core machine its wall time swings
with other work (printed too). Then `python -X importtime` of each command: the modules that cost most.
Prints a table, the import offenders and the bars as [PASS]/[FAIL] lines; exits 1 if a bar is missed.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from _common import REPO, Bars, table, toolreel_bin

sys.path.insert(0, str(REPO))
from toolreel.core.model import Execution, ExecutionMode, ExecutionStatus
from toolreel.core.store import open_store

BARS = {"--version": 0.15, "--help": 0.15, "executions list": 0.5}  # seconds of CPU, best run
OFFENDERS = 8  # modules listed per command


@dataclass(frozen=True)
class Run:
    wall: float
    cpu: float


def timed(argv: Sequence[str], env: dict[str, str]) -> Run:
    """One run of `argv`: its wall time and the CPU time it (and its children) used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(wall, cpu)


def fill(url: str, count: int) -> None:
    """`count` finished recordings, one second apart (what a long-used store holds)."""
    statuses = (ExecutionStatus.SUCCEEDED, ExecutionStatus.FAILED, ExecutionStatus.CANCELLED)
    now = time.time() - count
    with open_store(url) as store:
        for n in range(count):
            at = now + n
            store.create_execution(
                Execution(
                    id=f"e{n:06d}",
                    mode=ExecutionMode.RECORD,
                    status=statuses[n % len(statuses)],
                    created_at=at,
                    updated_at=at,
                )
            )


def offenders(argv: Sequence[str], env: dict[str, str]) -> list[tuple[str, int, int]]:
    """(module, self µs, cumulative µs) of the top-level imports that cost most, from `-X importtime`."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "from toolreel.gateway.launch import main; main()", *argv],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    rows: list[tuple[str, int, int]] = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line or "[us]" in line:
            continue
        self_us, cumulative_us, name = (part.strip() for part in line.removeprefix("import time:").split("|"))
        rows.append((name, int(self_us), int(cumulative_us)))
    return sorted(rows, key=lambda row: -row[2])[:OFFENDERS]


def measure(args: argparse.Namespace, folder: Path) -> Bars:
    url = f"sqlite:///{folder / 'bench.db'}"
    started = time.perf_counter()
    fill(url, args.executions)
    print(f"store: {args.executions:,} executions in {time.perf_counter() - started:.1f} s; {os.cpu_count()} CPUs")
    env = {**os.environ, "TOOLREEL_DB": url}
    commands = {"--version": ["--version"], "--help": ["--help"], "executions list": ["executions", "list"]}
    bars, rows = Bars(), []
    for label, argv in commands.items():
        runs = [timed([toolreel_bin(), *argv], env) for _ in range(args.runs)]
        best = min(runs, key=lambda run: run.cpu)
        fastest = min(run.wall for run in runs)
        rows.append([f"toolreel {label}", f"{best.cpu * 1000:.0f}", f"{fastest * 1000:.0f}"])
        bars.check(f"toolreel {label}", best.cpu <= BARS[label], f"{best.cpu:.3f} s CPU (bar {BARS[label]} s)")
    print(table(["command", "best CPU ms", "best wall ms"], rows))
    for label, argv in commands.items():
        print(f"\n-X importtime, toolreel {label}: the costliest imports (cumulative ms, self ms)")
        for name, self_us, cumulative_us in offenders(argv, env):
            print(f"  {cumulative_us / 1000:7.1f} {self_us / 1000:7.1f}  {name}")
    return bars


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs per command; the best is kept")
    parser.add_argument("--executions", type=int, default=10_000, help="executions in the listed store")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="toolreel-bench-startup-") as tmp:
        bars = measure(args, Path(tmp))
    print()
    print(bars.report())
    sys.exit(1 if bars.failed else 0)


if __name__ == "__main__":
    main()
