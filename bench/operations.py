"""Operating costs: tool filters and tracing on the call path, hot reload, queued runs through workers.

1. Gateway p50 and calls/s (`serve --no-record --config`, server-everything `echo`): a plain config, the same
   with `tools`/`excludeTools`/`toolsOverride`/`confirm` on other tools, and with tracing on (console exporter
   to /dev/null); the OpenTelemetry SDK is installed in every case. Then the in-process cost of one traced call
   with the SDK's in-memory exporter.
2. Hot reload: 100 saves that restart one server while a stream of calls goes to another: time from save
   to `tools/list_changed`, and failed calls.
3. Queued runs per second through 1, 2 and 4 `toolreel worker`s on one PostgreSQL (runs of one `echo` step).
4. Several gateways, one store: a stateless-era (2026-07-28) client's recorded calls (features `echo`) to one
   `serve --http` on PostgreSQL, to the same behind a round-robin balancer, and to two behind it (one recording
   shared between them): p50 of sequential calls and calls/s at 8 in flight.
Run: .venv/bin/python bench/operations.py [--quick | --smoke]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
from _common import (
    ECHO,
    IN_FLIGHT,
    REPO,
    Command,
    Latency,
    Workload,
    concurrent,
    connect,
    interleaved,
    median_latency,
    ms,
    table,
    toolreel_bin,
    warm_up,
)
from mcp import ClientSession
from mcp import types as mt

sys.path.insert(0, str(REPO))


def _config(path: Path, servers: Mapping[str, Any]) -> Path:
    path.write_text(json.dumps({"mcpServers": dict(servers)}), encoding="utf-8")
    return path


def _everything(**extra: Any) -> dict[str, Any]:
    argv = ECHO.server.argv
    return {"command": argv[0], "args": list(argv[1:]), **extra}


FILTERS = {
    "tools": ["echo", "get-*", "trigger-*"],
    "excludeTools": ["get-env"],
    "toolsOverride": {"get-sum": {"name": "sum", "description": "Adds."}},
    "confirm": ["trigger-*"],
}


# --- 1. the call path --------------------------------------------------------------------------------------------


async def call_path(tmp: Path, rounds: int, per_round: int) -> None:
    targets = {
        "plain": (_config(tmp / "plain.json", {"everything": _everything()}), {}),
        "filters": (_config(tmp / "filters.json", {"everything": _everything(**FILTERS)}), {}),
        "traced": (_config(tmp / "traced.json", {"everything": _everything()}), {"OTEL_TRACES_EXPORTER": "console"}),
    }
    work = Workload("echo", "server-everything", ECHO.server, "everything__echo", ECHO.arguments)
    figures: dict[str, list[Latency]] = {label: [] for label in targets}
    rates: dict[str, list[float]] = {label: [] for label in targets}
    for round_ in range(rounds):
        async with _sessions(targets) as sessions:
            for session in sessions.values():
                await warm_up(session, work, 100)
            samples = await interleaved(sessions, work, round_, per_round)
            for label, session in sessions.items():
                figures[label].append(Latency.of(samples[label]))
                rates[label].append(await concurrent(session, work, per_round))
    rows = []
    for label in targets:
        latency = median_latency(figures[label])
        rows.append([label, ms(latency.p50), ms(latency.p90), f"{statistics.median(rates[label]):.0f}"])
    print(f"call path: {rounds} rounds x {per_round} sequential calls (interleaved) + {per_round} at {IN_FLIGHT}")
    print(table(["target", "p50 ms", "p90 ms", "calls/s"], rows))
    print(f"in-process, one traced call with the in-memory exporter: {traced_call_cost():.1f} us")


class _sessions:
    """One gateway per target, each with a connected session (stderr to /dev/null: the console spans)."""

    def __init__(self, targets: Mapping[str, tuple[Path, Mapping[str, str]]]) -> None:
        self.targets = targets
        self.stack: Any = None

    async def __aenter__(self) -> dict[str, ClientSession]:
        import contextlib

        self.stack = contextlib.AsyncExitStack()
        devnull = self.stack.enter_context(open(os.devnull, "w"))  # noqa: SIM115, ASYNC230 - /dev/null never blocks
        sessions = {}
        for label, (config, env) in self.targets.items():
            command = Command(
                (toolreel_bin(), "serve", "--no-record", "--config", str(config)), {**os.environ, **env}, str(REPO)
            )
            sessions[label] = await self.stack.enter_async_context(connect(command, devnull))
        return sessions

    async def __aexit__(self, *exc: object) -> None:
        await self.stack.__aexit__(*exc)


def traced_call_cost(count: int = 20_000) -> float:
    """Microseconds per forwarded call for what tracing adds (span, inject, result) with the in-memory exporter."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from toolreel.core import tracing

    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use(provider, set_global=False)
    attributes = {"mcp.method.name": "tools/call", "gen_ai.tool.name": "everything__echo", "toolreel.server": "x"}
    result = {"content": [], "_meta": {"toolreel/step": "echo_1", "toolreel/execution": "e"}}
    start = time.perf_counter()
    for _ in range(count):
        with tracing.span("tools/call everything__echo", attributes, kind="server", meta={}) as current:
            tracing.inject({})
            tracing.record_result(current, result)
    took = time.perf_counter() - start
    tracing.disable()
    exporter.clear()
    return took / count * 1e6


# --- 2. hot reload ----------------------------------------------------------------------------------------------


async def hot_reload(tmp: Path, saves: int) -> None:
    fixture = {"command": sys.executable, "args": ["-m", "fixtures.features"], "cwd": str(REPO)}
    path = tmp / "reload.json"

    restarts = 5

    def save(generation: int) -> None:
        """The first `saves` change `moving`'s filters (its tools re-read), the last few its env (a restart)."""
        env = {"GENERATION": str(max(0, generation - saves))}
        excluded = ["add"] if generation % 2 and generation <= saves else []
        servers = {"steady": fixture, "moving": {**fixture, "env": env, "excludeTools": excluded}}
        temporary = path.with_name("reload.json.tmp")
        temporary.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
        os.replace(temporary, path)

    save(0)
    heard = 0  # tools/list_changed so far: two per save (the server stopped, then back with its tools)
    bump = anyio.Event()

    async def on_message(message: Any) -> None:
        nonlocal heard, bump
        if isinstance(message, mt.ToolListChangedNotification):
            heard += 1
            bump.set()
            bump = anyio.Event()

    async def until(count: int) -> None:
        with anyio.fail_after(30):
            while heard < count:
                await bump.wait()

    env = {**os.environ, "PYTHONPATH": str(REPO), "TOOLREEL_DB": f"sqlite:///{tmp / 'reload.db'}"}
    command = Command((toolreel_bin(), "serve", "--no-record", "--config", str(path)), env, str(REPO))
    delays: list[float] = []
    ready: list[float] = []
    calls = failures = 0
    with open(os.devnull, "w") as devnull:  # noqa: ASYNC230 - /dev/null never blocks
        async with connect(command, devnull, message_handler=on_message) as session:
            await session.list_tools()
            done = anyio.Event()

            async def stream() -> None:
                nonlocal calls, failures
                while not done.is_set():
                    result = await session.call_tool("steady__echo", {"text": "x"})
                    calls += 1
                    failures += bool(result.is_error)

            async with anyio.create_task_group() as tg:
                tg.start_soon(stream)
                for generation in range(1, saves + restarts + 1):
                    start = time.perf_counter()
                    save(generation)
                    await until(2 * generation - 1)
                    delays.append(time.perf_counter() - start)
                    await until(2 * generation)
                    ready.append(time.perf_counter() - start)
                done.set()
    filters, restart = delays[:saves], delays[saves:]
    print(
        f"hot reload: {saves} saves changing one server's tool filters, then {restarts} restarting it; "
        f"save -> list_changed p50 {ms(_p(filters, 50))} ms, p90 {ms(_p(filters, 90))} ms (filters), "
        f"p50 {ms(_p(restart, 50))} ms (restart); save -> tools listed again p50 {ms(_p(ready[:saves], 50))} ms "
        f"(filters), {ms(_p(ready[saves:], 50))} ms (restart); {calls} calls to the other server meanwhile, "
        f"{failures} failed"
    )


def _p(samples: list[float], q: int) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, len(ordered) * q // 100)]


# --- 3. queued runs ---------------------------------------------------------------------------------------------


async def queued_runs(tmp: Path, runs: int, worker_counts: tuple[int, ...]) -> None:
    from tests.pg import postgres_cluster
    from toolreel.core.model import TemplateDraft
    from toolreel.core.store import open_store
    from toolreel.core.template_io import stored_template
    from toolreel.replayer import Engine

    command = [sys.executable, "-m", "fixtures.features"]
    config = _config(tmp / "workers.json", {"features": {"command": command[0], "args": command[1:], "cwd": str(REPO)}})
    definition = {"name": "noop", "steps": [{"name": "say", "tool": "features__echo", "input": {"text": "x"}}]}
    rows = []
    with postgres_cluster() as cluster:
        for workers in worker_counts:
            url = cluster.create_database()
            with open_store(url) as store:
                store.save_template(TemplateDraft("noop", definition))
                template = stored_template(store.get_template("noop"))
                async with Engine(store, _NoCalls()) as engine:
                    ids = [await engine.enqueue(template, {}) for _ in range(runs)]
                took = await _drain(url, config, workers, store, ids)
            rows.append([str(workers), f"{runs / took:.1f}", f"{took:.2f}"])
    print(f"queued runs: {runs} one-step runs (features echo) on one PostgreSQL; from the first step to the last run")
    print(table(["workers", "runs/s", "seconds"], rows))


class _NoCalls:
    def server_of(self, name: str) -> str | None:
        return None

    async def call_tool(self, call: object) -> dict[str, Any]:
        raise RuntimeError("queuing calls nothing")


async def _drain(url: str, config: Path, count: int, store: Any, ids: list[str]) -> float:
    env = {**os.environ, "TOOLREEL_DB": url, "PYTHONPATH": str(REPO)}
    argv = [toolreel_bin(), "worker", "--config", str(config), "--poll", "0.05", "--capacity", "32"]
    processes = [
        await anyio.open_process(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(count)
    ]
    try:
        with anyio.fail_after(600):
            # another process's progress shows only in the store: looked at every 0.2 s
            while not all(e.status.finished for e in (store.get_execution(i) for i in ids)):  # noqa: ASYNC110
                await anyio.sleep(0.2)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            await process.wait()
    first = min(s.started_at or 0 for i in ids for s in store.get_steps(i))
    last = max(store.get_execution(i).updated_at for i in ids)
    return float(last - first)


async def balanced(tmp: Path, count: int) -> None:
    from tests.pg import postgres_cluster

    rows = []
    with postgres_cluster() as cluster:
        for label, gateways, balancer in (
            ("1 gateway", 1, False),
            ("1 behind the balancer", 1, True),
            ("2 behind the balancer", 2, True),
        ):
            p50, rate = await _balanced_calls(tmp, cluster.create_database(), gateways, balancer, count)
            rows.append([label, ms(p50), f"{rate:.0f}"])
    print(f"several gateways, one PostgreSQL store: {count} sequential calls, then {count} at 8 in flight (one client)")
    print(table(["target", "p50", "calls/s"], rows))


async def _balanced_calls(tmp: Path, url: str, gateways: int, balancer: bool, count: int) -> tuple[float, float]:
    import contextlib

    from tests.balancer import round_robin
    from tests.gw import Probe, client_for, fixture_entry, gateway_env, http_gateway, http_transport, write_config

    config = write_config(tmp / "balanced.json", {"feat": fixture_entry("features")})
    async with contextlib.AsyncExitStack() as stack:
        ports = [
            (await stack.enter_async_context(http_gateway(["--config", str(config)], gateway_env(url)))).port
            for _ in range(gateways)
        ]
        base = f"http://127.0.0.1:{ports[0]}"
        if balancer:
            base, _ = await stack.enter_async_context(round_robin([f"http://127.0.0.1:{port}" for port in ports]))
        client = await stack.enter_async_context(client_for(http_transport(f"{base}/mcp"), "auto", Probe()))
        for _ in range(20):
            await client.call_tool("feat__echo", {"text": "warm"})
        samples = []
        for index in range(count):
            started = time.perf_counter()
            await client.call_tool("feat__echo", {"text": f"{index}"})
            samples.append(time.perf_counter() - started)
        started = time.perf_counter()
        limit = anyio.Semaphore(8)

        async def one(index: int) -> None:
            async with limit:
                await client.call_tool("feat__echo", {"text": f"{index}"})

        async with anyio.create_task_group() as tg:
            for index in range(count):
                tg.start_soon(one, index)
        return statistics.median(samples), count / (time.perf_counter() - started)


# (rounds, calls per round), hot-reload saves, queued runs, balanced calls: the measuring size, --quick, and
# --smoke (only that every section still runs: the suite's smoke run, tests/product/test_bench_smoke.py)
SIZES: dict[str, tuple[tuple[int, int], int, int, int]] = {
    "full": ((4, 1000), 100, 200, 1000),
    "quick": ((2, 500), 20, 100, 200),
    "smoke": ((1, 20), 3, 10, 20),
}
# How many `toolreel worker`s drain the queued runs: each is a process with its own upstream; one and two
# are enough to show that the section still runs.
WORKER_COUNTS: dict[str, tuple[int, ...]] = {"full": (1, 2, 4), "quick": (1, 2, 4), "smoke": (1, 2)}


async def main(size: str) -> None:
    (rounds, per_round), saves, runs, calls = SIZES[size]
    with tempfile.TemporaryDirectory() as tmp:
        await call_path(Path(tmp), rounds, per_round)
        await hot_reload(Path(tmp), saves)
        await queued_runs(Path(tmp), runs, WORKER_COUNTS[size])
        await balanced(Path(tmp), calls)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: that every section still runs")
    parser.add_argument("--balanced", action="store_true", help="only section 4 (several gateways, one store)")
    arguments = parser.parse_args()
    chosen = "smoke" if arguments.smoke else "quick" if arguments.quick else "full"
    if arguments.balanced:
        with tempfile.TemporaryDirectory() as directory:
            anyio.run(balanced, Path(directory), SIZES[chosen][3])
    else:
        anyio.run(main, chosen)
