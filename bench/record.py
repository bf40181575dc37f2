"""Recording overhead: `toolreel serve` recording vs `--no-record` on server-everything `echo`, and store writes.

One run, every round in fresh processes: sequential p50 (targets taking turns in bursts of 25 calls) and
throughput at 8 in flight (blocks per target taking turns, each after the same quiet), each pooled over the
rounds (the p50 of all of a target's calls; its calls over its blocks' time), ratios on/off (bars: p50 <=
1.05x, throughput >= 0.95x), the gateway process's CPU per call and the CPU its recorder process
(`recorder.drain`, which builds and writes the rows at the lowest priority once a burst is over) spent; before
each throughput block the bench waits until the recording gateway has stored every call so far (`unsaved` in
toolreel__status), so no deferred write lands in another target's block. Then `Store.put_step` of a typical
recorded step on SQLite (bar: p50 <= 0.2 ms) and on a throwaway PostgreSQL cluster (tests/pg.py) when its
binaries are installed, and what the recording journal's append costs a call (informational). Exits 1 if a
bar is missed.
Run: .venv/bin/python bench/record.py [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import anyio
from _common import (
    ECHO,
    IN_FLIGHT,
    REPO,
    Bars,
    Command,
    Latency,
    child_pids,
    cmdline,
    concurrent,
    connect,
    descendants,
    failure,
    interleaved,
    median_latency,
    ms,
    p50_rounds,
    plan_line,
    process_cpu,
    process_cpu_ns,
    rotated,
    table,
    via_toolreel,
    warm_up,
)
from mcp import ClientSession

from toolreel.core.model import (
    Execution,
    ExecutionMode,
    ExecutionQuery,
    ExecutionStatus,
    StepKind,
    StepRecord,
    StepStatus,
    new_id,
    now,
)
from toolreel.core.store import SQLStore, open_store

P50_BAR = 1.05
THROUGHPUT_BAR = 0.95
STORE_P50_BAR_MS = 0.2
CALL_TIMEOUT = 60.0
BATCH = 32
SUB_BLOCKS = 6  # blocks at 8 in flight per target and round
# Seconds without calls before every block at 8 in flight. A block that starts after the machine idled is
# slower: after 0.3 s of quiet, 13% fewer calls/s and 10 us more gateway CPU per call than straight after
# another block, and 50 unmeasured calls first did not take it away. The recording gateway's recorder
# writes in the quiet after each of its blocks (about 0.3 s), so the blocks after them started colder than
# the rest; now every block starts after the same quiet, longer than that write.
QUIET = 0.4
LATE = 0.05  # a quiet longer than QUIET by this much is counted (the table's footer says how many)
CONTROL = "off again (noise)"


@dataclass(frozen=True, slots=True)
class Plan:
    calls: int  # sequential calls per target, split over rounds
    rounds: int
    warm: int
    writes: int  # put_step calls per store
    in_flight_calls: int  # calls at 8 in flight per target and round, in SUB_BLOCKS blocks taking turns

    @property
    def per_round(self) -> int:
        return max(1, self.calls // self.rounds)


@dataclass
class Figures:
    latency: list[Latency] = field(default_factory=list)  # per round: how far the machine moved
    samples: list[float] = field(default_factory=list)  # every measured sequential call of every round
    throughput: list[float] = field(default_factory=list)  # calls/s of each round's block (all of one size)
    calls: int = 0
    gateway_cpu: float = 0.0  # seconds of the gateway process's CPU over the measured calls
    measured: int = 0
    recorder_cpu: float = 0.0  # seconds of CPU of the gateway's recorder process (recording on), whole run
    late: int = 0  # blocks at 8 in flight whose quiet ran past QUIET: the recorder was still writing

    # Pooled over rounds: the p50 of all the target's calls, and its calls over its blocks' time.
    # Of the estimators tried on the same runs, these spread least between the two identical
    # recording-off targets (README); the median of per-round figures spread about twice as much.
    @property
    def summary(self) -> Latency:
        return Latency.of(self.samples)

    @property
    def calls_per_s(self) -> float:
        # all the blocks' calls over all their time: with blocks of one size, the harmonic mean
        return statistics.harmonic_mean(self.throughput)


# --- through the gateway ----------------------------------------------------------------------------------------


async def measure_gateway(plan: Plan, db_url: str, log_path: Path) -> dict[str, Figures]:
    # A second, identical recording-off gateway shows in the same run how far two equal targets drift apart.
    # Every round starts all three in fresh processes (as pyperf runs each sample in a fresh worker): a
    # process keeps its CPU placement and memory layout for life, and two identical long-lived gateways
    # measured up to 14% apart, more than the effect measured here.
    commands = {
        "recording off": via_toolreel(ECHO.server, "--no-record"),
        "recording on": via_toolreel(ECHO.server, "--db", db_url),
        CONTROL: via_toolreel(ECHO.server, "--no-record"),
    }
    figures = {label: Figures() for label in commands}
    with log_path.open("w") as log:
        for r in range(plan.rounds):
            await measure_round(commands, figures, plan, r, log)
    return figures


async def measure_round(
    commands: dict[str, Command], figures: dict[str, Figures], plan: Plan, r: int, log: TextIO
) -> None:
    async with contextlib.AsyncExitStack() as stack:
        sessions: dict[str, ClientSession] = {}
        pids: dict[str, int] = {}
        for label in rotated(list(commands), r):
            before = child_pids(os.getpid())
            sessions[label] = await stack.enter_async_context(
                connect(commands[label], log, read_timeout_seconds=CALL_TIMEOUT)
            )
            (pids[label],) = child_pids(os.getpid()) - before
        for label, session in sessions.items():
            await warm_up(session, ECHO, plan.warm)
            figures[label].calls += 2 * plan.warm
        recording = sessions["recording on"]
        await recordings_saved(recording)
        cpu_before = {label: process_cpu_ns(pid) for label, pid in pids.items()}
        latencies = await interleaved(sessions, ECHO, r, plan.per_round)
        for label, pid in pids.items():
            figures[label].gateway_cpu += process_cpu_ns(pid) - cpu_before[label]
        for label in commands:
            fig = figures[label]
            fig.latency.append(Latency.of(latencies[label]))
            fig.samples.extend(latencies[label])
            fig.measured += plan.per_round + plan.in_flight_calls
            fig.calls += plan.per_round + plan.in_flight_calls
        elapsed = await in_flight_blocks(sessions, pids, figures, plan, r)
        for label, seconds in elapsed.items():
            figures[label].throughput.append(plan.in_flight_calls / seconds)
        for label, pid in pids.items():
            figures[label].recorder_cpu += sum(process_cpu(child) for child in recorders(pid))


async def in_flight_blocks(
    sessions: dict[str, ClientSession], pids: dict[str, int], figures: dict[str, Figures], plan: Plan, r: int
) -> dict[str, float]:
    """A round's calls at 8 in flight: SUB_BLOCKS blocks per target, the targets taking turns (rotating which
    goes first), as the sequential calls take turns in bursts. One block per target and round let the machine
    drift between targets: two identical ones measured 0.89-1.03x apart. Every block starts after the same
    QUIET seconds without calls (see QUIET). Returns each target's seconds."""
    elapsed = dict.fromkeys(sessions, 0.0)
    block = plan.in_flight_calls // SUB_BLOCKS
    clock = time.perf_counter
    ended = clock()
    for turn in range(SUB_BLOCKS):
        for label in rotated(list(sessions), r + turn):
            await anyio.sleep(max(0.0, ended + QUIET - clock()))
            # The recorder writes once a burst is over: that work is not left to land in the next block
            # (it is done within QUIET: this check then takes one status call).
            await recordings_saved(sessions["recording on"])
            if clock() - ended > QUIET + LATE:
                figures[label].late += 1
            # That check woke the recording gateway just before the block; every target is woken so.
            await sessions[label].call_tool("toolreel__status", {})
            cpu, start = process_cpu_ns(pids[label]), clock()
            await concurrent(sessions[label], ECHO, block)
            ended = clock()
            elapsed[label] += ended - start
            figures[label].gateway_cpu += process_cpu_ns(pids[label]) - cpu
    return elapsed


async def recordings_saved(session: ClientSession) -> None:
    """Wait until the recording gateway has every call so far in the store (`unsaved` in toolreel__status)."""
    with anyio.fail_after(30):
        while True:
            status = await session.call_tool("toolreel__status", {})
            if not (status.structured_content or {}).get("unsaved"):
                return
            await anyio.sleep(0.05)


def recorders(gateway: int) -> list[int]:
    return [child for child in descendants(gateway) if "toolreel.recorder.drain" in cmdline(child)]


def recorded_steps(db_url: str) -> int:
    """Steps the recording gateway stored (read after it exited, so its writer has flushed)."""
    with open_store(db_url) as store:
        executions, _ = store.list_executions(ExecutionQuery(limit=100))
        return sum(len(store.get_steps(e.id)) for e in executions)


def gateway_table(figures: dict[str, Figures]) -> str:
    off = figures["recording off"]
    rows = []
    for label, fig in figures.items():
        lat = fig.summary
        rows.append(
            [
                label,
                ms(lat.p50),
                ms(lat.p90),
                ms(lat.p99),
                f"{fig.calls_per_s:.0f}",
                f"{lat.p50 / off.summary.p50:.3f}x",
                f"{fig.calls_per_s / off.calls_per_s:.3f}x",
                f"{fig.gateway_cpu / max(1, fig.measured) * 1e6:.0f} us",
            ]
        )
    header = [
        "toolreel serve",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        f"calls/s @{IN_FLIGHT}",
        "p50/off",
        "calls/s/off",
        "gateway CPU/call",
    ]
    rounds = p50_rounds({label: fig.latency for label, fig in figures.items()})
    rounds += "".join(
        f"\n  calls/s per round, {label}: {' '.join(f'{rate:.0f}' for rate in fig.throughput)}"
        for label, fig in figures.items()
    )
    rounds += "\n" + medians_line(figures)
    on = figures["recording on"]
    drain = (
        f"  the recording gateways' recorder processes (lowest priority from their first write, writing after "
        f"each burst): {on.recorder_cpu:.2f} s CPU in all for {on.calls} calls, their starts (imports, store "
        f"open: about 0.4 s each) included"
    )
    late = sum(fig.late for fig in figures.values())
    blocks = SUB_BLOCKS * len(on.throughput) * len(figures)
    quiet = (
        f"  every block at {IN_FLIGHT} in flight started after {QUIET:g} s without calls; in {late} of {blocks} the "
        f"recorder was still writing then and the quiet ran longer"
    )
    return f"server-everything echo through toolreel (wrap mode)\n{table(header, rows)}\n{rounds}\n{drain}\n{quiet}"


def medians_line(figures: dict[str, Figures]) -> str:
    """The same ratios from the medians of per-round figures (the estimator this bench used before)."""
    off = figures["recording off"]
    p50_off, rate_off = median_latency(off.latency).p50, statistics.median(off.throughput)
    ratios = [
        f"{label} {median_latency(fig.latency).p50 / p50_off:.3f}x p50, "
        f"{statistics.median(fig.throughput) / rate_off:.3f}x calls/s"
        for label, fig in figures.items()
        if fig is not off
    ]
    return f"  from medians of per-round figures instead, over recording off: {'; '.join(ratios)}"


# --- store writes -----------------------------------------------------------------------------------------------


def typical_step(execution_id: str, seq: int) -> StepRecord:
    """What the recorder writes for one `echo` call: input, resolved input, the wire result, the output."""
    started = now()
    text = "Echo: hello"
    return StepRecord(
        execution_id=execution_id,
        name=f"echo_{seq}",
        seq=seq,
        kind=StepKind.TOOL,
        status=StepStatus.SUCCEEDED,
        server="server-everything",
        tool="echo",
        input={"message": "hello"},
        resolved_input={"message": "hello"},
        result={"content": [{"type": "text", "text": text}], "isError": False},
        output=text,
        started_at=started,
        ended_at=started + 0.0004,
    )


@dataclass(frozen=True, slots=True)
class StoreFigures:
    put_step: Latency
    batched_per_step: float  # seconds per step when written BATCH at a time with put_steps


def time_store(store: SQLStore, writes: int, warm: int) -> StoreFigures:
    execution = Execution(
        id=new_id(),
        mode=ExecutionMode.RECORD,
        status=ExecutionStatus.RECORDING,
        created_at=now(),
        updated_at=now(),
        session="bench",
    )
    store.create_execution(execution)
    steps = [typical_step(execution.id, seq) for seq in range(1, warm + 2 * writes + 1)]
    for step in steps[:warm]:
        store.put_step(step)
    samples: list[float] = []
    clock = time.perf_counter
    for step in steps[warm : warm + writes]:
        start = clock()
        store.put_step(step)
        samples.append(clock() - start)
    batched = steps[warm + writes :]
    start = clock()
    for i in range(0, len(batched), BATCH):
        store.put_steps(batched[i : i + BATCH])
    per_step = (clock() - start) / max(1, len(batched))
    return StoreFigures(Latency.of(samples), per_step)


def store_line(name: str, fig: StoreFigures) -> str:
    lat = fig.put_step
    return (
        f"  {name}: put_step p50 {ms(lat.p50)} ms, p90 {ms(lat.p90)} ms, p99 {ms(lat.p99)} ms; "
        f"put_steps in batches of {BATCH}: {ms(fig.batched_per_step)} ms per step"
    )


@contextlib.contextmanager
def postgres_url() -> Iterator[str]:
    """A fresh database on a throwaway cluster; raises RuntimeError saying why there is none."""
    sys.path.insert(0, str(REPO))
    try:
        from tests.pg import PgUnavailable, postgres_cluster
    except ImportError as exc:
        raise RuntimeError(f"tests/pg.py cannot be imported ({exc}); install the dev extra") from None
    finally:
        sys.path.remove(str(REPO))
    try:
        with postgres_cluster() as cluster:
            yield cluster.create_database("bench")
    except PgUnavailable as exc:
        raise RuntimeError(str(exc)) from None


def measure_stores(plan: Plan, tmp: Path, out: Callable[[str], None]) -> StoreFigures:
    """Print both stores' figures; return SQLite's (the bar)."""
    out(f"\nStore writes of a typical recorded step ({plan.writes} put_step calls after {plan.warm} warm-up)")
    with open_store(f"sqlite:///{tmp / 'store.db'}") as store:
        sqlite = time_store(store, plan.writes, plan.warm)
    out(store_line(f"SQLite (WAL, synchronous=NORMAL, file in {tempfile.gettempdir()})", sqlite))
    try:
        with postgres_url() as url, open_store(url) as store:
            postgres = time_store(store, plan.writes, plan.warm)
        out(store_line("PostgreSQL (throwaway cluster on 127.0.0.1, fsync and synchronous_commit off)", postgres))
    except RuntimeError as exc:
        out(f"  PostgreSQL: skipped ({exc})")
    return sqlite


def measure_journal(plan: Plan, tmp: Path, out: Callable[[str], None]) -> Latency:
    """What the call path pays for the recording journal: one `Spool.append` of a typical `echo` entry
    (a writev(2) to the gateway's journal file, no fsync), timed one by one."""
    from toolreel.recorder._journal import pack
    from toolreel.recorder._spool import Spool

    step = typical_step(new_id(), 1)
    entry = (
        "step", step.execution_id, step.name, 1, step.server, step.tool, step.input,
        step.resolved_input, step.result, None, step.started_at, step.ended_at,
    )  # fmt: skip
    packed = pack(entry)
    spool = Spool([tmp / "journal"], ["a-secret"])
    count = plan.writes * 5
    samples: list[float] = []
    clock = time.perf_counter
    for i in range(plan.warm + count):
        start = clock()
        spool.append(packed)
        if i >= plan.warm:
            samples.append(clock() - start)
    spool.close(plan.warm + count)
    lat = Latency.of(samples)
    out(
        f"\nRecording journal: append of a typical entry ({len(packed)} bytes packed), {count} after {plan.warm} "
        f"warm-up: p50 {lat.p50 * 1e6:.1f} us, p90 {lat.p90 * 1e6:.1f} us, p99 {lat.p99 * 1e6:.1f} us"
    )
    return lat


# --- main -------------------------------------------------------------------------------------------------------


def run(plan: Plan) -> int:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"bench/record.py: mcp {importlib.metadata.version('mcp')} client over stdio; {os.cpu_count()} cores, "
        f"load {load}\n{plan_line(plan.warm, plan.rounds, plan.per_round, plan.in_flight_calls, pooled=True)}\n"
        f"every round starts the three gateways afresh and warms each up first; the calls at {IN_FLIGHT} in flight "
        f"run in {SUB_BLOCKS} blocks per target, the targets taking turns",
        flush=True,
    )
    bars = Bars()
    log_path = Path(tempfile.gettempdir()) / f"toolreel-bench-record-{os.getpid()}.log"
    with tempfile.TemporaryDirectory(prefix="toolreel-bench-") as name:
        tmp = Path(name)
        run_gateway(bars, plan, f"sqlite:///{tmp / 'recorded.db'}", log_path)
        sqlite = measure_stores(plan, tmp, print).put_step.p50 * 1000
        measure_journal(plan, tmp, print)
    bars.check(f"SQLite put_step p50 <= {STORE_P50_BAR_MS} ms", sqlite <= STORE_P50_BAR_MS, f"{sqlite:.3f} ms")
    print(f"\n(server and gateway stderr: {log_path})")
    print(bars.report())
    return 1 if bars.failed else 0


def run_gateway(bars: Bars, plan: Plan, db_url: str, log_path: Path) -> None:
    try:
        figures = anyio.run(measure_gateway, plan, db_url, log_path)
    except Exception as exc:  # report, fail the bars, and go on with the store figures
        print(f"\nthrough toolreel: failed ({failure(exc)})", flush=True)
        bars.check("recording on/off measured", False, failure(exc))
        return
    print("\n" + gateway_table(figures), flush=True)
    stored, made = recorded_steps(db_url), figures["recording on"].calls
    print(f"steps stored by the recording gateway: {stored} of {made} calls")
    check(bars, figures, stored == made)


def check(bars: Bars, figures: dict[str, Figures], all_stored: bool) -> None:
    on, off = figures["recording on"], figures["recording off"]
    p50 = on.summary.p50 / off.summary.p50
    bars.check(f"p50 recording on/off <= {P50_BAR}", p50 <= P50_BAR, f"{p50:.3f}x")
    tput = on.calls_per_s / off.calls_per_s
    bars.check(f"calls/s @{IN_FLIGHT} recording on/off >= {THROUGHPUT_BAR}", tput >= THROUGHPUT_BAR, f"{tput:.3f}x")
    bars.check("every call through the recording gateway stored (sanity)", all_stored, "see the line above")


def parse(argv: list[str]) -> Plan:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a short run (fewer calls and rounds)")
    parser.add_argument("--calls", type=int, help="sequential calls per target, split over rounds (default 8000)")
    parser.add_argument("--rounds", type=int, help="rounds, each in fresh processes (default 16)")
    parser.add_argument("--smoke", action="store_true", help="10 calls, 2 warm-up, 1 round: only that it runs")
    args = parser.parse_args(argv)
    if args.smoke:
        return Plan(calls=args.calls or 10, rounds=args.rounds or 1, warm=2, writes=20, in_flight_calls=12)
    if args.quick:
        return Plan(calls=args.calls or 400, rounds=args.rounds or 2, warm=100, writes=300, in_flight_calls=300)
    return Plan(calls=args.calls or 8000, rounds=args.rounds or 16, warm=1000, writes=2000, in_flight_calls=1500)


def main(argv: list[str] | None = None) -> int:
    return run(parse(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
