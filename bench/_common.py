"""Shared parts of the benchmarks: the servers under test, stdio client sessions, timing statistics, /proc readings.

Every figure is measured by this one client process with the mcp 2.x `ClientSession` (legacy `initialize()`)
over `stdio_client`. Targets are measured in alternating order, round after round, so that drift on a small
machine touches them all alike; a figure is the median over rounds.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, TypeVar

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parents[1]
FASTMCP_PYTHON = REPO / ".tools" / "fastmcp-venv" / "bin" / "python"
FASTMCP_PROXY = REPO / "bench" / "_fastmcp_proxy.py"
RELAY = REPO / "bench" / "_relay.py"
IN_FLIGHT = 8

T = TypeVar("T")


# --- what to run ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Command:
    """A stdio MCP server to spawn: argv, extra environment, working directory."""

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None

    def params(self) -> StdioServerParameters:
        argv = _launch(list(self.argv))
        return StdioServerParameters(command=argv[0], args=argv[1:], env=dict(self.env) or None, cwd=self.cwd)


@dataclass(frozen=True, slots=True)
class Workload:
    """One tool call repeated: which server, which tool, which arguments."""

    label: str
    source: str  # the server, as named in the issue
    server: Command
    tool: str
    arguments: Mapping[str, Any]


def toolreel_bin() -> str:
    """The `toolreel` console script of the venv running the bench, else the one on PATH."""
    beside = Path(sys.executable).with_name("toolreel")
    if beside.exists():
        return str(beside)
    found = shutil.which("toolreel")
    if found is None:
        raise SystemExit("bench: the `toolreel` console script is not installed (pip install -e '.[dev]')")
    return found


def _launch(argv: list[str]) -> list[str]:
    """`argv`, through this process's zygote when it has one (a smoke run's: `smoke_fork`)."""
    launched: list[str] = _zygote().launch_command(argv)
    return launched


def _zygote() -> Any:
    """fixtures._zygote (the repository root is not on sys.path when a bench runs as a script)."""
    if str(REPO) not in sys.path:
        sys.path.append(str(REPO))
    import fixtures._zygote

    return fixtures._zygote


def smoke_fork() -> None:
    """In the suite's smoke runs (`fixtures._zygote.SMOKE_FORK`, set by tests/product/test_bench_smoke.py), which
    check only that a benchmark still runs to its end, the programs it starts are forked from a warm interpreter
    of its own, as the tests' are, and no figure is read. A measuring run never sets it: its programs start as a
    user's would."""
    zygote = _zygote()
    if os.environ.get(zygote.SMOKE_FORK) and not zygote.configured():
        zygote.configure(Path(tempfile.mkdtemp(prefix="toolreel-zygote-")))
        atexit.register(zygote.stop)


def _fixture_servers() -> Any:
    """fixtures.servers (the repository root is not on sys.path when a bench runs as a script)."""
    if str(REPO) not in sys.path:
        sys.path.append(str(REPO))
    import fixtures.servers

    return fixtures.servers


def npm_server(name: str, *args: str) -> Command:
    """An npm reference server (`everything`, `filesystem`, `memory`) run with node directly (no npx start-up)."""
    servers = _fixture_servers()
    try:
        argv: list[str] = servers.npm_server_command(name)
    except servers.ServerNotInstalled as exc:
        raise SystemExit(f"bench: {exc}") from None
    return Command((*argv, *args))


def pypi_server(name: str, *args: str) -> Command:
    """`python -m mcp_server_<name>` from this venv (`time`, `git`)."""
    servers = _fixture_servers()
    try:
        argv: list[str] = servers.pypi_server_command(name)
    except servers.ServerNotInstalled as exc:
        raise SystemExit(f"bench: {exc}") from None
    return Command((*argv, *args))


def everything() -> Command:
    return npm_server("everything", "stdio")


def time_server() -> Command:
    return pypi_server("time")


ECHO = Workload("echo", "server-everything", everything(), "echo", {"message": "hello"})
GET_TIME = Workload(
    "get_current_time", "mcp-server-time", time_server(), "get_current_time", {"timezone": "Europe/Paris"}
)


def via_toolreel(server: Command, *flags: str) -> Command:
    """`toolreel serve FLAGS -- SERVER` (wrap mode)."""
    return Command((toolreel_bin(), "serve", *flags, "--", *server.argv), server.env, server.cwd)


def via_fastmcp(server: Command) -> Command:
    """FastMCP 4.1's proxy in front of one stdio server, run in its own venv (.ci/fastmcp-setup.sh)."""
    return Command((str(FASTMCP_PYTHON), str(FASTMCP_PROXY), *server.argv), server.env, server.cwd)


def via_relay(server: Command) -> Command:
    """A byte relay in front of one stdio server: the cost of the extra process alone (bench/_relay.py)."""
    return Command((sys.executable, str(RELAY), *server.argv), server.env, server.cwd)


def fastmcp_missing() -> str | None:
    """Why FastMCP cannot run here, or None."""
    if not FASTMCP_PYTHON.exists():
        return f"{FASTMCP_PYTHON} missing; run .ci/fastmcp-setup.sh"
    return None


# --- client sessions --------------------------------------------------------------------------------------------


@asynccontextmanager
async def connect(command: Command, errlog: TextIO, **session_options: Any) -> AsyncIterator[ClientSession]:
    """Spawn `command` and yield an initialized legacy-handshake session."""
    async with (
        stdio_client(command.params(), errlog=errlog) as (read, write),
        ClientSession(read, write, **session_options) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, work: Workload) -> None:
    result = await session.call_tool(work.tool, dict(work.arguments))
    if result.is_error:
        raise RuntimeError(f"{work.tool} returned an error: {result.content}")


async def sequential(session: ClientSession, work: Workload, count: int) -> list[float]:
    """Latency of `count` calls one after another, in seconds."""
    samples: list[float] = []
    clock = time.perf_counter
    for _ in range(count):
        start = clock()
        await call(session, work)
        samples.append(clock() - start)
    return samples


BURST = 25  # sequential calls per target per turn of `interleaved`


async def interleaved(
    sessions: Mapping[str, ClientSession], work: Workload, shift: int, count: int
) -> dict[str, list[float]]:
    """`count` sequential calls per target, in bursts of BURST taking turns (in rotating order). Blocks of
    hundreds of calls per target saw the machine drift between them (two identical targets 14% apart); bursts
    this short see the same machine, and are long enough that a burst's calls run on warm caches."""
    samples: dict[str, list[float]] = {label: [] for label in sessions}
    labels = list(sessions)
    clock = time.perf_counter
    for turn, first in enumerate(range(0, count, BURST)):
        for label in rotated(labels, shift + turn):
            session, out = sessions[label], samples[label]
            for _ in range(min(BURST, count - first)):
                start = clock()
                await call(session, work)
                out.append(clock() - start)
    return samples


async def concurrent(session: ClientSession, work: Workload, count: int, in_flight: int = IN_FLIGHT) -> float:
    """Calls per second for `count` calls with `in_flight` outstanding at any time."""
    remaining = count

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await call(session, work)

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(in_flight):
            tg.start_soon(worker)
    return count / (time.perf_counter() - start)


async def warm_up(session: ClientSession, work: Workload, count: int) -> None:
    await sequential(session, work, count)
    await concurrent(session, work, count)


# --- statistics -------------------------------------------------------------------------------------------------


def percentile(samples: Sequence[float], q: float) -> float:
    """Nearest-rank percentile, q in [0, 100]."""
    ordered = sorted(samples)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered)) - 1))
    return ordered[rank]


@dataclass(frozen=True, slots=True)
class Latency:
    p50: float
    p90: float
    p99: float

    @classmethod
    def of(cls, samples: Sequence[float]) -> Latency:
        return cls(percentile(samples, 50), percentile(samples, 90), percentile(samples, 99))


def median_latency(rounds: Sequence[Latency]) -> Latency:
    return Latency(
        statistics.median(r.p50 for r in rounds),
        statistics.median(r.p90 for r in rounds),
        statistics.median(r.p99 for r in rounds),
    )


def plan_line(warm: int, rounds: int, per_round: int, in_flight_calls: int | None = None, pooled: bool = False) -> str:
    summary = "figures over every round's calls pooled" if pooled else "medians over rounds"
    return (
        f"{rounds} rounds, each in fresh processes; per target and round: {warm} sequential + {warm} concurrent "
        f"warm-up calls, {per_round} sequential calls (targets taking turns in bursts of {BURST}) and "
        f"{per_round if in_flight_calls is None else in_flight_calls} at {IN_FLIGHT} in flight; {summary}"
    )


def p50_rounds(figures: Mapping[str, Sequence[Latency]]) -> str:
    """The p50 of every round, per target: how much the machine moved during the run."""
    lines = [f"  p50 per round, {label}: {' '.join(ms(r.p50) for r in rounds)}" for label, rounds in figures.items()]
    return "\n".join(lines)


def rotated(items: Sequence[T], shift: int) -> list[T]:
    """`items` starting at index `shift` (mod len): each round starts with the next target."""
    if not items:
        return []
    shift %= len(items)
    return [*items[shift:], *items[:shift]]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f}"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    line = "  ".join(f"{{:{'<' if i == 0 else '>'}{w}}}" for i, w in enumerate(widths))
    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line.format(*header), rule, *(line.format(*row) for row in rows)])


@dataclass
class Bars:
    """Pass/fail of each bar, printed at the end; `failed` decides the exit code."""

    results: list[tuple[str, bool, str]] = field(default_factory=list)

    def check(self, name: str, ok: bool, detail: str) -> None:
        self.results.append((name, ok, detail))

    @property
    def failed(self) -> bool:
        return any(not ok for _, ok, _ in self.results)

    def report(self) -> str:
        lines = [f"  [{'PASS' if ok else 'FAIL'}] {name}: {detail}" for name, ok, detail in self.results]
        return "\n".join(["bars:", *lines])


def failure(exc: BaseException) -> str:
    """The innermost causes of a failure (task groups wrap them in ExceptionGroups), one line."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(failure(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


# --- processes --------------------------------------------------------------------------------------------------


def child_pids(parent: int) -> set[int]:
    """Live processes whose parent is `parent` (scans /proc)."""
    found: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # exited while we looked
            continue
        # The command name may hold spaces and parentheses: the fields after the last ')' are fixed.
        if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
            found.add(int(entry.name))
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of one process (/proc/PID/stat), 0.0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_cpu_ns(pid: int) -> float:
    """CPU seconds of one process's threads so far, to the nanosecond (/proc/PID/task/*/schedstat: time on a
    CPU, user and system), where `process_cpu` counts 10 ms clock ticks: for blocks of tens of milliseconds.
    Falls back to `process_cpu` where there is no schedstat."""
    total, found = 0, False
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            total += int(stat.read_text().split()[0])
        except (OSError, ValueError, IndexError):  # a thread that just ended
            continue
        found = True
    return total / 1e9 if found else process_cpu(pid)


def vm_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"/proc/{pid}/status has no VmRSS line")


def descendants(pid: int) -> Iterator[int]:
    for child in child_pids(pid):
        yield child
        yield from descendants(child)


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value, indent=2))
    return path


smoke_fork()  # a no-op outside the suite's smoke runs
