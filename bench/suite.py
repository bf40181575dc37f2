"""Where the test suite's time goes: `.venv/bin/python bench/suite.py [--workers N] [--top N] [-- PYTEST ARGS]`.

Runs pytest (by default the whole suite on 2 xdist workers with `--dist loadgroup`, as `scripts/test`) with
`TOOLREEL_TEST_TIMES` set, so that tests/conftest.py logs every test phase, then sums the log: per file and per
`xdist_group`, the wall time, the CPU time of the test process and of the processes it started (reaped ones:
servers and gateways a test stops), and how many processes it started. On a shared machine wall times swing
with other work; CPU time and process starts hardly do, so compare files by those. `--from DIR` sums an
earlier run's log instead of running pytest.

Also printed: each worker's busy time, and the longest unit `loadgroup` cannot split (a group, else a test)
against the busy time / workers: a unit far longer than that holds a worker while the others finish.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from _common import REPO, table


@dataclass
class Sums:
    tests: int = 0
    wall: float = 0.0
    cpu: float = 0.0
    children_cpu: float = 0.0
    starts: int = 0

    def add(self, line: dict[str, object], *, counted: bool) -> None:
        self.tests += counted
        self.wall += float(str(line["wall"]))
        self.cpu += float(str(line["cpu"]))
        self.children_cpu += float(str(line["children_cpu"]))
        self.starts += int(str(line["starts"]))

    def row(self, name: str) -> list[str]:
        total = self.cpu + self.children_cpu
        cells = [f"{self.wall:.1f}", f"{self.cpu:.1f}", f"{self.children_cpu:.1f}", f"{total:.1f}"]
        return [name, str(self.tests), *cells, str(self.starts)]


HEADER = ["", "tests", "wall s", "cpu s", "children cpu s", "all cpu s", "processes"]


def read(folder: Path) -> list[dict[str, object]]:
    lines: list[dict[str, object]] = []
    for path in sorted(folder.glob("*.jsonl")):
        lines.extend(json.loads(text) for text in path.read_text(encoding="utf-8").splitlines() if text)
    return lines


def summed(lines: Iterable[dict[str, object]], key: str) -> dict[str, Sums]:
    sums: dict[str, Sums] = defaultdict(Sums)
    for line in lines:
        sums[str(line[key])].add(line, counted=line["phase"] == "call")
    return sums


def ranked(sums: dict[str, Sums], top: int, by: str) -> list[list[str]]:
    order = sorted(
        sums.items(), key=lambda kv: -(getattr(kv[1], by) if by != "all" else kv[1].cpu + kv[1].children_cpu)
    )
    return [s.row(name) for name, s in order[:top]]


def report(lines: list[dict[str, object]], top: int, elapsed: float | None) -> str:
    for line in lines:
        line["file"] = str(line["test"]).split("::")[0]
        line["unit"] = line["group"] or line["test"]  # what loadgroup hands a worker whole
    files, tests, workers = summed(lines, "file"), summed(lines, "test"), summed(lines, "worker")
    units = summed(lines, "unit")
    busy = sum(s.wall for s in workers.values())
    longest_name, longest = max(units.items(), key=lambda kv: kv[1].wall)
    everything = Sums()
    for line in lines:
        everything.add(line, counted=line["phase"] == "call")
    out = [
        f"{everything.tests} tests; {len(workers)} worker(s); "
        + (f"run took {elapsed:.0f} s; " if elapsed is not None else "")
        + f"load average now {os.getloadavg()[0]:.1f}",
        table(HEADER, [everything.row("all")]),
        "",
        f"files by CPU (test process + the processes it started), top {top}:",
        table(HEADER, ranked(files, top, "all")),
        "",
        f"files by wall time, top {top}:",
        table(HEADER, ranked(files, top, "wall")),
        "",
        f"tests by wall time, top {top}:",
        table(HEADER, ranked(tests, top, "wall")),
        "",
        "workers:",
        table(HEADER, ranked(workers, len(workers), "wall")),
        "",
        f"longest unit a worker takes whole: {longest_name} ({longest.wall:.0f} s wall), against "
        f"{busy / max(1, len(workers)):.0f} s busy per worker",
    ]
    failed = sorted({f"{line['test']} ({line['phase']})" for line in lines if line.get("outcome") == "failed"})
    out += ["", f"failed: {len(failed)}", *failed]
    return "\n".join(out)


def run(pytest_args: Sequence[str], workers: int, folder: Path) -> float:
    env = {**os.environ, "TOOLREEL_TEST_TIMES": str(folder)}
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    if workers > 0:
        argv += ["-n", str(workers), "--dist", "loadgroup", "--no-loadscope-reorder"]  # as scripts/test
    began = time.perf_counter()
    subprocess.run([*argv, *pytest_args], cwd=REPO, env=env, check=False)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2, help="xdist workers (0: no xdist); default 2")
    parser.add_argument("--top", type=int, default=25, help="rows per table")
    parser.add_argument("--from", dest="source", type=Path, help="sum this TOOLREEL_TEST_TIMES folder, run nothing")
    parser.add_argument("--keep", type=Path, help="write the run's log here (default: a temporary folder)")
    parser.add_argument("pytest_args", nargs="*", help="after `--`: what pytest runs (default: the whole suite)")
    args = parser.parse_args()
    if args.source is not None:
        print(report(read(args.source), args.top, None))
        return
    with tempfile.TemporaryDirectory(prefix="toolreel-suite-") as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        elapsed = run(args.pytest_args, args.workers, folder)
        lines = read(folder)
        if not lines:
            sys.exit(f"no test ran (log: {folder})")
        print(report(lines, args.top, elapsed))


if __name__ == "__main__":
    main()
