"""Faults under recording: is any answered call lost, does the gateway exit 0, is a finished step re-run?

Each fault runs against a real `toolreel serve` (the `features` fixture server, 8 calls in flight over stdio),
then the store is opened again (which writes the journals a dead gateway left) and every step name the
client was told must be in it:
- kill -9 of the gateway under a stream of calls;
- SIGHUP to its process group (a closing terminal; the gateway must exit 0) and SIGKILL to the group;
- PostgreSQL restarted under recording (a throwaway cluster, tests/pg.py; skipped without its binaries);
- a full disk freed again (a 16 MB tmpfs; needs root to mount, skipped otherwise);
- HTTP sessions opened and closed: the gateway's RSS after them against after a warm-up;
- kill -9 of `toolreel run` and `executions resume` right after it: finished steps re-run.
Bars: answered calls lost 0, gateway exits 0, finished steps re-run 0, memory within 10% of its start.
Run: .venv/bin/python bench/crash.py [--full] (default: a few repetitions, about a minute)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from _common import REPO, Bars, failure, table, vm_rss_mb

sys.path.insert(0, str(REPO))
import toolreel.recorder  # noqa: F401 - as in every toolreel command: opening a store writes dead gateways' journals
from tests import pg
from tests.gw import (
    TOOLREEL,
    Connected,
    GatewayProcess,
    OpenedStreams,
    Probe,
    alive,
    call,
    client_for,
    fixture_entry,
    gateway_env,
    http_gateway,
    line_transport,
    status,
    unsaved,
    wait_until,
    write_config,
)
from toolreel.core.store import open_store

IN_FLIGHT = 8


@dataclass
class Fault:
    name: str
    runs: int = 0
    answered: int = 0
    lost: int = 0
    exits: list[int | None] = field(default_factory=list)  # the gateway's exit codes where it must exit 0
    note: str = ""

    def row(self) -> list[str]:
        codes = ", ".join(sorted({str(c) for c in self.exits})) if self.exits else "-"
        return [self.name, str(self.runs), f"{self.answered:,}", str(self.lost), codes, self.note]


@dataclass(frozen=True, slots=True)
class Plan:
    kills: int
    group: int
    pg_restarts: int
    sessions: int
    resumes: int


# --- a gateway in its own process group, and a stream of calls ----------------------------------------------


@contextlib.asynccontextmanager
async def grouped_gateway(config: Path, db: str) -> AsyncIterator[Connected]:
    errors = tempfile.TemporaryFile()  # noqa: SIM115 - owned by the GatewayProcess
    process = await anyio.open_process(
        [str(TOOLREEL), "serve", "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errors,
        env=gateway_env(db),
        cwd=str(REPO),
        start_new_session=True,
    )
    gateway = GatewayProcess(process, errors)
    try:
        async with line_transport(process) as streams, client_for(OpenedStreams(streams), "legacy", Probe()) as client:
            yield Connected(client, Probe(), gateway)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        with anyio.CancelScope(shield=True):
            await gateway.wait_exit(10)


async def stream(s: Connected, answered: dict[str, str], until: Callable[[], bool]) -> None:
    """Calls IN_FLIGHT at a time until `until()`; step name -> execution for every answered call.
    A call cut off by the fault is simply not answered."""

    async def caller(worker: int) -> None:
        n = 0
        with contextlib.suppress(Exception):
            while not until():
                n += 1
                result = await call(s, "feat__echo", {"text": f"w{worker} n{n}"})
                meta = result.meta or {}
                answered[meta["toolreel/step"]] = meta["toolreel/execution"]

    async with anyio.create_task_group() as tg:
        for worker in range(IN_FLIGHT):
            tg.start_soon(caller, worker)


def lost(db: str, answered: dict[str, str]) -> int:
    with open_store(db) as store:  # the opening writes the journals of a dead gateway
        stored = {(s.execution_id, s.name) for e in set(answered.values()) for s in store.get_steps(e)}
    return sum(1 for name, execution in answered.items() if (execution, name) not in stored)


async def drains_gone(gateway: GatewayProcess) -> None:
    """The recorder process of a killed gateway writes what it holds and exits; wait for it."""
    kids = list(gateway.children_seen)
    await wait_until(lambda: not any(alive(pid) for pid in kids), 30, "the recorder process to exit")


async def _saved(s: Connected) -> bool:
    return await unsaved(s) == 0


def _fill(path: Path) -> None:
    with contextlib.suppress(OSError), path.open("wb") as out:
        while True:
            out.write(b"\0" * 65536)
            out.flush()


# --- the faults -----------------------------------------------------------------------------------------------


async def kill_under_stream(fault: Fault, tmp: Path, config: Path, signum: int, *, group: bool, at: int) -> None:
    db = f"sqlite:///{tmp / f'{fault.name[:4]}-{fault.runs}.db'}"
    answered: dict[str, str] = {}
    async with grouped_gateway(config, db) as s:
        assert s.gateway is not None
        gateway = s.gateway
        async with anyio.create_task_group() as tg:
            tg.start_soon(stream, s, answered, lambda: gateway.process.returncode is not None)
            await wait_until(lambda: len(answered) >= at, 60, f"{at} answered calls")
            gateway.descendants()
            if group:
                os.killpg(gateway.pid, signum)
            else:
                os.kill(gateway.pid, signum)
            code = await gateway.wait_exit(30)
            tg.cancel_scope.cancel()
    if signum == signal.SIGHUP:
        fault.exits.append(code)
    await drains_gone(gateway)
    fault.runs += 1
    fault.answered += len(answered)
    fault.lost += lost(db, answered)


async def pg_restart(fault: Fault, tmp: Path, config: Path, cluster: pg.PgCluster) -> None:
    url = cluster.create_database()
    answered: dict[str, str] = {}
    async with grouped_gateway(config, url) as s:
        assert s.gateway is not None
        gateway = s.gateway
        done = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(stream, s, answered, done.is_set)
            await wait_until(lambda: len(answered) >= 300, 60, "300 answered calls")
            await anyio.to_thread.run_sync(cluster.stop)  # immediate: as a crash of the database server
            await anyio.to_thread.run_sync(cluster.start)
            target = len(answered) + 300
            await wait_until(
                lambda: len(answered) >= target or gateway.process.returncode is not None, 60, "calls after the restart"
            )
            done.set()
        await wait_until(lambda: _saved(s), 60, "everything saved")
        assert gateway.process.stdin is not None
        await gateway.process.stdin.aclose()
        fault.exits.append(await gateway.wait_exit(30))
    fault.runs += 1
    fault.answered += len(answered)
    fault.lost += lost(url, answered)


async def full_disk(fault: Fault, tmp: Path, config: Path) -> None:
    mount = tmp / "disk"
    mount.mkdir(exist_ok=True)
    mounted = await anyio.run_process(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], check=False)
    if mounted.returncode != 0:
        fault.note = f"skipped: cannot mount a tmpfs ({mounted.stderr.decode().strip()[:60]})"
        return
    try:
        db = f"sqlite:///{mount / 's.db'}"
        answered: dict[str, str] = {}
        async with grouped_gateway(config, db) as s:
            assert s.gateway is not None
            for n in range(3):
                meta = (await call(s, "feat__echo", {"text": f"first {n}"})).meta or {}
                answered[meta["toolreel/step"]] = meta["toolreel/execution"]
            filler = mount / "filler"
            await anyio.to_thread.run_sync(_fill, filler)
            for n in range(200):
                meta = (await call(s, "feat__echo", {"text": f"full {n} " + "y" * 5000})).meta or {}
                answered[meta["toolreel/step"]] = meta["toolreel/execution"]
            unsaved = (await status(s))["unsaved"]
            filler.unlink()
            started = time.monotonic()
            await wait_until(lambda: _saved(s), 60, "everything saved once space is freed")
            fault.note = f"unsaved while full: {unsaved}; all written {time.monotonic() - started:.1f} s after freeing"
            assert s.gateway.process.stdin is not None
            await s.gateway.process.stdin.aclose()
            fault.exits.append(await s.gateway.wait_exit(30))
        fault.runs += 1
        fault.answered += len(answered)
        fault.lost += lost(db, answered)
    finally:
        await anyio.run_process(["umount", "-l", str(mount)], check=False)


async def http_sessions(fault: Fault, tmp: Path, config: Path, count: int) -> float:
    """RSS after `count` sessions (each one recorded call, then closed) over RSS after a warm-up."""
    async with http_gateway(["--config", str(config)], gateway_env(f"sqlite:///{tmp / 'http.db'}")) as gw:

        async def sessions(n: int) -> None:
            for i in range(n):
                async with gw.connect() as s:
                    await call(s, "feat__echo", {"text": f"session {i}"})
                    fault.answered += 1

        await sessions(max(50, count // 20))
        before = vm_rss_mb(gw.gateway.pid)
        started = time.monotonic()
        await sessions(count)
        after = vm_rss_mb(gw.gateway.pid)
        async with gw.connect() as s:
            held = (await status(s))["open_sessions"]
    fault.runs += count
    fault.note = (
        f"RSS {before:.1f} -> {after:.1f} MB ({after / before:.3f}x) over {count:,} sessions "
        f"in {time.monotonic() - started:.0f} s; recording sessions held after: {held}"
    )
    return after / before


async def resume_after_kill(fault: Fault, tmp: Path, plan: Plan) -> int:
    """`toolreel run` of a 3-link chain killed after its first link, resumed at once: re-runs of finished steps."""
    rerun = 0
    for i in range(plan.resumes):
        folder = tmp / f"resume{i}"
        folder.mkdir()
        rerun += await _one_resume(fault, folder)
    fault.note = f"finished steps re-run: {rerun}"
    return rerun


async def _one_resume(fault: Fault, folder: Path) -> int:
    from tests.callers import saved
    from tests.replayer.test_replayer_durability import chain, counts, finished_steps, only_execution
    from tests.replayer.test_replayer_durability import write_config as replayer_config

    db = f"sqlite:///{folder / 's.db'}"
    store = open_store(db)
    saved(store, chain("crashy", 3, 0.3))
    common = ["--db", db, "--config", str(replayer_config(folder))]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    runner = await anyio.open_process(
        [sys.executable, "-m", "toolreel.replayer", "run", "crashy", "--json", "--lease-seconds", "60", *common],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    found: list[str] = []

    def first_link_done() -> bool:
        execution = only_execution(store)
        found[:] = [execution.id] if execution is not None else []
        return execution is not None and "c1" in finished_steps(store, execution.id)

    await wait_until(first_link_done, 60, "the first link")
    done = set(finished_steps(store, found[0]))
    runner.kill()
    await runner.wait()
    argv = [sys.executable, "-m", "toolreel.replayer", "executions", "resume", found[0], "--json", *common]
    resumed = await anyio.run_process(argv, cwd=REPO, env=env, check=False)
    fault.exits.append(resumed.returncode)
    fault.runs += 1
    seen = counts(folder)
    store.close()
    return sum(seen.get(name, 0) - 1 for name in done if name.startswith("c"))


# --- main ---------------------------------------------------------------------------------------------------------


async def measure(plan: Plan, tmp: Path, bars: Bars) -> list[Fault]:
    config = write_config(tmp / "client.json", {"feat": fixture_entry("features")})
    faults: list[Fault] = []

    async def attempt(fault: Fault, body: Callable[[], Any]) -> None:
        faults.append(fault)
        try:
            await body()
        except Exception as exc:  # one fault's failure is reported and the others still run
            traceback.print_exc()
            fault.note = f"failed: {failure(exc)}"[:200]
            bars.check(f"{fault.name} ran", False, fault.note)
        print(f"  {fault.name}: {fault.runs} runs, {fault.lost} lost {fault.note}", flush=True)

    kill = Fault("kill -9 gateway")
    await attempt(kill, lambda: _repeat(plan.kills, lambda i: kill_under_stream(
        kill, tmp, config, signal.SIGKILL, group=False, at=150 + 97 * i)))  # fmt: skip
    hup = Fault("SIGHUP group")
    await attempt(hup, lambda: _repeat(plan.group, lambda i: kill_under_stream(
        hup, tmp, config, signal.SIGHUP, group=True, at=150 + 97 * i)))  # fmt: skip
    group = Fault("SIGKILL group")
    await attempt(group, lambda: _repeat(plan.group, lambda i: kill_under_stream(
        group, tmp, config, signal.SIGKILL, group=True, at=150 + 97 * i)))  # fmt: skip
    restart = Fault("PostgreSQL restart")
    try:
        with pg.postgres_cluster() as cluster:
            with cluster.admin() as conn:  # commits durable, as on a real server (tests/pg.py turns that off)
                conn.execute("ALTER SYSTEM SET synchronous_commit = on")
                conn.execute("SELECT pg_reload_conf()")
            await attempt(
                restart, lambda: _repeat(plan.pg_restarts, lambda i: pg_restart(restart, tmp, config, cluster))
            )
    except pg.PgUnavailable as exc:
        restart.note = f"skipped: {exc}"[:120]
        faults.append(restart)
    disk = Fault("full disk freed")
    await attempt(disk, lambda: full_disk(disk, tmp, config))
    sessions = Fault("HTTP sessions")
    ratio: list[float] = []

    async def http() -> None:
        ratio.append(await http_sessions(sessions, tmp, config, plan.sessions))

    await attempt(sessions, http)
    if ratio:
        bars.check("memory after the sessions within 10% of its start", ratio[0] <= 1.10, f"{ratio[0]:.3f}x")
    resume = Fault("kill -9 run, resume")
    reruns: list[int] = []

    async def resumes() -> None:
        reruns.append(await resume_after_kill(resume, tmp, plan))

    await attempt(resume, resumes)
    if reruns:
        bars.check("finished steps re-run", reruns[0] == 0, str(reruns[0]))
    return faults


async def _repeat(times: int, body: Callable[[int], Any]) -> None:
    for i in range(times):
        await body(i)


def parse(argv: list[str]) -> Plan:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="the issue's counts: 20 kills, 10 of each group "
                        "signal and restart, 10,000 sessions, 10 resumes (about 15 minutes)")  # fmt: skip
    parser.add_argument("--sessions", type=int, help="HTTP sessions to open and close (default 500; --full 10,000)")
    parser.add_argument("--smoke", action="store_true", help="one of each fault, 20 sessions: that it still runs")
    args = parser.parse_args(argv)
    if args.smoke:
        return Plan(kills=1, group=1, pg_restarts=1, sessions=args.sessions or 20, resumes=1)
    if args.full:
        return Plan(kills=20, group=10, pg_restarts=10, sessions=args.sessions or 10_000, resumes=10)
    return Plan(kills=3, group=2, pg_restarts=2, sessions=args.sessions or 500, resumes=2)


def main(argv: list[str] | None = None) -> int:
    plan = parse(sys.argv[1:] if argv is None else argv)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"bench/crash.py: {os.cpu_count()} cores, load {load}; {plan}", flush=True)
    bars = Bars()
    with tempfile.TemporaryDirectory(prefix="toolreel-crash-") as name:
        faults = anyio.run(measure, plan, Path(name), bars)
    header = ["fault", "runs", "answered calls", "lost", "gateway exit", "notes"]
    print("\n" + table(header, [fault.row() for fault in faults]))
    lost_total = sum(f.lost for f in faults)
    bars.check("answered calls lost", lost_total == 0, str(lost_total))
    codes = [c for f in faults for c in f.exits]
    bars.check("gateway (and resume) exits 0", all(c == 0 for c in codes), ", ".join(map(str, codes)) or "-")
    print(bars.report())
    return 1 if bars.failed else 0


if __name__ == "__main__":
    sys.exit(main())
