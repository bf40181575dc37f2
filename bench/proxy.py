"""Gateway overhead: direct vs `toolreel serve --no-record` vs FastMCP's proxy, over stdio, in one run.

For server-everything `echo` and mcp-server-time `get_current_time`: sequential latency (p50/p90/p99) and
throughput at 8 in flight, each round in fresh processes; a byte relay (bench/_relay.py) shows what the extra
process alone costs on this machine; then gateway RSS with 5 idle upstreams and ready time against the slowest upstream.
Prints everything, then the bars; exits 1 if a bar is missed. `--quick` for a short run, `--smoke` for a tiny one.
`--baseline BIN` adds a second gateway, another build's `toolreel` script (`toolreel (baseline)`), measured side by
side: a change's before and after in one run (in the 5-upstream part too). `--only echo|get_current_time` measures
that workload alone (no 5-upstream part); `--only ready` the 5-upstream part alone.
Run: .venv/bin/python bench/proxy.py [--quick | --smoke] [--baseline PATH/bin/toolreel] [--only WORKLOAD|ready]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
from _common import (
    ECHO,
    FASTMCP_PYTHON,
    GET_TIME,
    IN_FLIGHT,
    Bars,
    Command,
    Latency,
    Workload,
    child_pids,
    concurrent,
    connect,
    descendants,
    failure,
    fastmcp_missing,
    interleaved,
    median_latency,
    ms,
    npm_server,
    p50_rounds,
    plan_line,
    pypi_server,
    rotated,
    table,
    toolreel_bin,
    via_fastmcp,
    via_relay,
    via_toolreel,
    vm_rss_mb,
    warm_up,
    write_json,
)
from mcp import ClientSession
from mcp import types as mt

# The bars.
P50_BARS = {"echo": 1.3, "get_current_time": 1.3}
THROUGHPUT_BAR = 0.9
RSS_BAR_MB = 80.0
READY_BAR_S = 0.25
CALL_TIMEOUT = 60.0
UPSTREAMS = ("everything", "filesystem", "memory", "time", "git")
READY = "ready"  # --only ready: the 5-upstream part alone


@dataclass(frozen=True, slots=True)
class Plan:
    calls: int  # sequential calls per target and workload, and as many at 8 in flight, split over rounds
    rounds: int
    warm: int
    ready_rounds: int
    baseline: str | None = None  # another build's `toolreel`, measured beside this one
    only: str | None = None  # one workload's label (then no 5-upstream part), or READY: the 5-upstream part alone

    @property
    def per_round(self) -> int:
        return max(1, self.calls // self.rounds)


@dataclass
class Figures:
    """One target's results: one Latency and one throughput per round."""

    latency: list[Latency] = field(default_factory=list)
    throughput: list[float] = field(default_factory=list)

    @property
    def p50(self) -> float:
        return median_latency(self.latency).p50

    @property
    def calls_per_s(self) -> float:
        return statistics.median(self.throughput)


# --- latency and throughput -------------------------------------------------------------------------------------


def targets(work: Workload, baseline: str | None) -> tuple[dict[str, Command], dict[str, str]]:
    """The commands to measure, and why a target is left out."""
    commands = {
        "direct": work.server,
        "byte relay": via_relay(work.server),
        "toolreel": via_toolreel(work.server, "--no-record"),
    }
    if baseline is not None:
        mine = via_toolreel(work.server, "--no-record")
        commands["toolreel (baseline)"] = Command((baseline, *mine.argv[1:]), mine.env, mine.cwd)
    skipped: dict[str, str] = {}
    if (reason := fastmcp_missing()) is None:
        commands["fastmcp"] = via_fastmcp(work.server)
    else:
        skipped["fastmcp"] = reason
    return commands, skipped


async def open_sessions(
    stack: contextlib.AsyncExitStack, commands: dict[str, Command], log: TextIO, skipped: dict[str, str], r: int
) -> dict[str, ClientSession]:
    sessions: dict[str, ClientSession] = {}
    for label in rotated(list(commands), r):
        if label in skipped:
            continue
        try:
            sessions[label] = await stack.enter_async_context(
                connect(commands[label], log, read_timeout_seconds=CALL_TIMEOUT)
            )
        except Exception as exc:  # FastMCP is optional: a reference, not the subject; the others must start
            if label != "fastmcp":
                raise
            skipped[label] = f"failed to start: {exc!r}"
    return {label: sessions[label] for label in commands if label in sessions}


async def measure(work: Workload, plan: Plan, log: TextIO) -> tuple[dict[str, Figures], dict[str, str]]:
    """Every round starts every target afresh (as pyperf runs each sample in a fresh worker): a process keeps
    its CPU placement and memory layout for life, and two identical long-lived gateways measured up to 14%
    apart. Sequential calls take turns in short bursts; throughput is a block per target."""
    commands, skipped = targets(work, plan.baseline)
    figures = {label: Figures() for label in commands}
    for r in range(plan.rounds):
        async with contextlib.AsyncExitStack() as stack:
            sessions = await open_sessions(stack, commands, log, skipped, r)
            for session in sessions.values():
                await warm_up(session, work, plan.warm)
            latencies = await interleaved(sessions, work, r, plan.per_round)
            for label in rotated(list(sessions), r):
                figures[label].latency.append(Latency.of(latencies[label]))
                figures[label].throughput.append(await concurrent(sessions[label], work, plan.per_round))
    return {label: fig for label, fig in figures.items() if label not in skipped}, skipped


def workload_table(work: Workload, figures: dict[str, Figures], skipped: dict[str, str]) -> str:
    base = figures["direct"]
    rows = []
    for label, fig in figures.items():
        lat = median_latency(fig.latency)
        rows.append(
            [
                label,
                ms(lat.p50),
                ms(lat.p90),
                ms(lat.p99),
                f"{fig.calls_per_s:.0f}",
                f"{fig.p50 / base.p50:.2f}x",
                f"{fig.calls_per_s / base.calls_per_s:.2f}x",
            ]
        )
    header = ["target", "p50 ms", "p90 ms", "p99 ms", f"calls/s @{IN_FLIGHT}", "p50/direct", "calls/s/direct"]
    lines = [f"{work.source} {work.tool} {dict(work.arguments)}", table(header, rows)]
    lines.append(p50_rounds({label: fig.latency for label, fig in figures.items()}))
    if "byte relay" in figures:
        relay = figures["byte relay"]
        lines.append(f"  toolreel / byte relay: p50 {figures['toolreel'].p50 / relay.p50:.2f}x")
    if "toolreel (baseline)" in figures:
        mine, before = figures["toolreel"], figures["toolreel (baseline)"]
        lines.append(
            f"  toolreel / baseline: p50 {mine.p50 / before.p50:.2f}x, "
            f"calls/s {mine.calls_per_s / before.calls_per_s:.2f}x"
        )
    lines += [f"{label}: unavailable ({reason})" for label, reason in skipped.items()]
    return "\n".join(lines)


def check_workload(bars: Bars, work: Workload, figures: dict[str, Figures]) -> None:
    direct, gateway = figures["direct"], figures["toolreel"]
    p50_ratio = gateway.p50 / direct.p50
    bar = P50_BARS[work.label]
    bars.check(f"p50 {work.label} toolreel/direct <= {bar}", p50_ratio <= bar, f"{p50_ratio:.2f}x")
    tput_ratio = gateway.calls_per_s / direct.calls_per_s
    bars.check(
        f"calls/s {work.label} @{IN_FLIGHT} toolreel/direct >= {THROUGHPUT_BAR}",
        tput_ratio >= THROUGHPUT_BAR,
        f"{tput_ratio:.2f}x",
    )


# --- 5 idle upstreams: RSS and ready time -----------------------------------------------------------------------


def upstream_commands(tmp: Path) -> dict[str, Command]:
    files = tmp / "files"
    files.mkdir()
    (files / "hello.txt").write_text("hello\n")
    repo = tmp / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return {
        "everything": npm_server("everything", "stdio"),
        "filesystem": npm_server("filesystem", str(files)),
        "memory": Command(npm_server("memory").argv, {"MEMORY_FILE_PATH": str(tmp / "memory.jsonl")}),
        "time": pypi_server("time"),
        "git": pypi_server("git", "--repository", str(repo)),
    }


def config_file(tmp: Path, upstreams: dict[str, Command]) -> Path:
    servers: dict[str, Any] = {}
    for name, command in upstreams.items():
        entry: dict[str, Any] = {"command": command.argv[0], "args": list(command.argv[1:])}
        if command.env:
            entry["env"] = dict(command.env)
        servers[name] = entry
    return write_json(tmp / "five.json", {"mcpServers": servers})


async def direct_ready(upstreams: dict[str, Command], log: TextIO) -> float:
    """Seconds until the slowest of the upstreams, all spawned at once, has answered initialize + tools/list."""
    ready: dict[str, float] = {}
    all_ready = anyio.Event()

    async def one(name: str, command: Command, start: float) -> None:
        async with connect(command, log, read_timeout_seconds=CALL_TIMEOUT) as session:
            await session.list_tools()
            ready[name] = time.perf_counter() - start
            if len(ready) == len(upstreams):
                all_ready.set()
            await all_ready.wait()  # no shutdown while the others still start

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for name, command in upstreams.items():
            tg.start_soon(one, name, command, start)
    return max(ready.values())


@dataclass(frozen=True, slots=True)
class GatewayProbe:
    initialize_s: float  # spawn to initialize answered
    ready_s: float  # spawn to a tools/list listing every upstream
    rss_mb: float
    upstream_rss_mb: float
    upstream_processes: int


async def gateway_ready(command: Command, servers: Sequence[str], log: TextIO, settle: float) -> GatewayProbe:
    """Spawn the gateway; time initialize + a tools/list that lists every server; then read its VmRSS."""
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            changed.set()

    before = child_pids(os.getpid())
    start = time.perf_counter()
    async with connect(command, log, read_timeout_seconds=CALL_TIMEOUT, message_handler=on_message) as session:
        initialized = time.perf_counter() - start
        with anyio.fail_after(CALL_TIMEOUT):
            while True:
                changed = anyio.Event()
                listed = await session.list_tools()
                if set(servers) <= {tool.name.split("__")[0] for tool in listed.tools}:
                    break
                with anyio.move_on_after(0.05):  # list_changed normally wakes us; re-list anyway if it is missed
                    await changed.wait()
        ready = time.perf_counter() - start
        await anyio.sleep(settle)  # idle: let start-up garbage settle before reading RSS
        (pid,) = child_pids(os.getpid()) - before
        upstream = list(descendants(pid))
        upstream_rss = sum(vm_rss_mb(p) for p in upstream)
        return GatewayProbe(initialized, ready, vm_rss_mb(pid), upstream_rss, len(upstream))


@dataclass
class FiveUpstreams:
    direct: list[float] = field(default_factory=list)
    no_record: list[GatewayProbe] = field(default_factory=list)
    record: list[GatewayProbe] = field(default_factory=list)
    baseline: list[GatewayProbe] = field(default_factory=list)  # --baseline's build, --no-record


async def measure_five(plan: Plan, log: TextIO, settle: float) -> FiveUpstreams:
    result = FiveUpstreams()
    with tempfile.TemporaryDirectory(prefix="toolreel-bench-") as name:
        tmp = Path(name)
        upstreams = upstream_commands(tmp)
        config = config_file(tmp, upstreams)
        gateway = toolreel_bin()
        no_record = Command((gateway, "serve", "--no-record", "--config", str(config)))
        record = Command((gateway, "serve", "--db", f"sqlite:///{tmp / 'rec.db'}", "--config", str(config)))
        steps: list[Callable[[], Any]] = [
            lambda: _append(result.direct, direct_ready(upstreams, log)),
            lambda: _append(result.no_record, gateway_ready(no_record, UPSTREAMS, log, settle)),
            lambda: _append(result.record, gateway_ready(record, UPSTREAMS, log, settle)),
        ]
        if plan.baseline:
            baseline = Command((plan.baseline, "serve", "--no-record", "--config", str(config)))
            steps.append(lambda: _append(result.baseline, gateway_ready(baseline, UPSTREAMS, log, settle)))
        for r in range(plan.ready_rounds):
            for step in rotated(steps, r):
                await step()
    return result


async def _append(into: list[Any], pending: Any) -> None:
    into.append(await pending)


def five_report(five: FiveUpstreams) -> tuple[str, float, float]:
    """The printed section, the ready overhead (s) and gateway RSS (MB) with recording off."""
    direct = statistics.median(five.direct)
    lines = [f"5 idle stdio upstreams ({', '.join(UPSTREAMS)}), median of {len(five.direct)} round(s)"]
    lines.append(f"  slowest upstream ready, all 5 spawned at once directly: {direct:.3f} s")
    figures: dict[str, tuple[float, float]] = {}
    labelled = [("--no-record", five.no_record), ("recording on (SQLite)", five.record)]
    for label, probes in [*labelled, *([("(baseline) --no-record", five.baseline)] if five.baseline else [])]:
        ready = statistics.median(p.ready_s for p in probes)
        initialized = statistics.median(p.initialize_s for p in probes)
        rss = statistics.median(p.rss_mb for p in probes)
        children = statistics.median(p.upstream_rss_mb for p in probes)
        count = probes[0].upstream_processes
        figures[label] = (ready - direct, rss)
        lines.append(
            f"  toolreel serve {label}: initialize answered {initialized:.3f} s, all tools listed {ready:.3f} s "
            f"(+{ready - direct:.3f} s over the slowest upstream); gateway VmRSS {rss:.1f} MB "
            f"(upstreams are separate processes, not counted: {count} using {children:.0f} MB)"
        )
    overhead, rss = figures["--no-record"]
    return "\n".join(lines), overhead, rss


# --- main -------------------------------------------------------------------------------------------------------


def header(plan: Plan) -> str:
    fastmcp = "not installed"
    if FASTMCP_PYTHON.exists():
        found = sorted(FASTMCP_PYTHON.parents[1].glob("lib/python*/site-packages/fastmcp-*.dist-info"))
        fastmcp = found[-1].name.removeprefix("fastmcp-").removesuffix(".dist-info") if found else "?"
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False).stdout.strip()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"bench/proxy.py: mcp {importlib.metadata.version('mcp')} client over stdio, python {sys.version.split()[0]}, "
        f"node {node}, fastmcp {fastmcp}; {os.cpu_count()} cores, load {load}\n"
        + plan_line(plan.warm, plan.rounds, plan.per_round)
    )


async def run(plan: Plan, settle: float) -> int:
    print(header(plan), flush=True)
    bars = Bars()
    log_path = Path(tempfile.gettempdir()) / f"toolreel-bench-proxy-{os.getpid()}.log"
    with log_path.open("w") as log:
        for work in (ECHO, GET_TIME):
            if plan.only in (None, work.label):
                await run_workload(bars, work, plan, log)
        if plan.only in (None, READY):
            await run_five(bars, plan, log, settle)
    print(f"\n(server and gateway stderr: {log_path})")
    print(bars.report())
    return 1 if bars.failed else 0


async def run_workload(bars: Bars, work: Workload, plan: Plan, log: TextIO) -> None:
    try:
        figures, skipped = await measure(work, plan, log)
    except Exception as exc:  # report, fail the bars, and go on with the next section
        print(f"\n{work.source} {work.tool}: failed ({failure(exc)})", flush=True)
        bars.check(f"{work.label} measured", False, failure(exc))
        return
    print("\n" + workload_table(work, figures, skipped), flush=True)
    check_workload(bars, work, figures)


async def run_five(bars: Bars, plan: Plan, log: TextIO, settle: float) -> None:
    try:
        five = await measure_five(plan, log, settle)
    except Exception as exc:  # report, fail the bars, and finish the report
        print(f"\n5 idle stdio upstreams: failed ({failure(exc)})", flush=True)
        bars.check("5 idle upstreams measured", False, failure(exc))
        return
    text, overhead, rss = five_report(five)
    print("\n" + text)
    bars.check(f"gateway RSS, 5 idle upstreams, --no-record <= {RSS_BAR_MB:.0f} MB", rss <= RSS_BAR_MB, f"{rss:.1f} MB")
    bars.check(f"ready after the slowest upstream <= {READY_BAR_S} s", overhead <= READY_BAR_S, f"+{overhead:.3f} s")


def parse(argv: list[str]) -> tuple[Plan, float]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a short run (fewer calls and rounds)")
    parser.add_argument("--calls", type=int, help="sequential calls per target, split over rounds (default 4000)")
    parser.add_argument("--rounds", type=int, help="rounds, each in fresh processes (default 8)")
    parser.add_argument("--smoke", action="store_true", help="10 calls, 2 warm-up, 1 round: only that it runs")
    parser.add_argument("--baseline", help="another build's toolreel script, measured beside this one")
    parser.add_argument(
        "--only", choices=[ECHO.label, GET_TIME.label, READY], help="this workload alone, or the 5-upstream part"
    )
    args = parser.parse_args(argv)
    extra = {"baseline": args.baseline, "only": args.only}
    if args.smoke:
        plan = Plan(calls=args.calls or 10, rounds=args.rounds or 1, warm=2, ready_rounds=1, **extra)
    elif args.quick:
        plan = Plan(calls=args.calls or 400, rounds=args.rounds or 2, warm=100, ready_rounds=1, **extra)
    else:
        plan = Plan(calls=args.calls or 4000, rounds=args.rounds or 8, warm=500, ready_rounds=3, **extra)
    return plan, (0.2 if args.quick or args.smoke else 1.0)


def main(argv: list[str] | None = None) -> int:
    plan, settle = parse(sys.argv[1:] if argv is None else argv)
    return anyio.run(run, plan, settle)


if __name__ == "__main__":
    sys.exit(main())
