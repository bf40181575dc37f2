"""What era-faithful routing costs a call: the gateway over HTTP in front of a server of both eras.

`toolreel serve --http --no-record -- python -m fixtures.features` (a server of both eras, spoken to in the
stateless era) and the same server directly over HTTP; sequential `echo` calls from three kinds of client:
- a 2026-07-28 client: its calls pass through on the stateless connection (the routing rule answers "no" at
  once: one predicate per call);
- a 2025-11-25 client that declared nothing a server could ask: the stateless connection;
- a 2025-11-25 client that declared sampling, elicitation and roots: the server's handshake-era connection
  (`gateway/era.py`), where the server could push its questions to it as it would directly.
Clients take turns in bursts (one round each, several rounds), so a slow spell of the shared machine hits all.
Prints p50/p90 per client, the difference the routing makes for handshake-era clients, and the predicate's
own cost. Run: .venv/bin/python bench/eras.py [--quick]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import time
import timeit
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, NoReturn

import anyio
import mcp_types as types
from _common import REPO, ms, percentile, table, toolreel_bin
from mcp import Client

sys.path.insert(0, str(REPO))
from fixtures.servers import fixture_command, http_fixture

KINDS = ("2026-07-28", "2025-11-25, asks nothing", "2025-11-25, can be asked")


async def _no_answer(*args: Any, **kwargs: Any) -> NoReturn:  # never called: echo asks nothing
    raise RuntimeError("echo asked a question")


def client(url: str, kind: str) -> Client:
    askable = kind.endswith("can be asked")
    return Client(
        url,
        mode="auto" if kind == KINDS[0] else "legacy",
        cache=None,
        sampling_callback=_no_answer if askable else None,
        elicitation_callback=_no_answer if askable else None,
        list_roots_callback=_no_answer if askable else None,
        client_info=types.Implementation(name=f"bench {kind}", version="1"),
    )


@asynccontextmanager
async def gateway() -> AsyncIterator[str]:
    """The gateway wrapping the features fixture over HTTP; yields its URL once it answers."""
    port = free_port()
    command = [toolreel_bin(), "serve", "--http", f"127.0.0.1:{port}", "--no-record", "--no-ui"]
    process = await anyio.open_process(
        [*command, "--", *fixture_command("features")],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    async with process:
        url = f"http://127.0.0.1:{port}/mcp"
        with anyio.fail_after(30):
            while True:
                try:
                    async with client(url, KINDS[0]) as probe:
                        await probe.list_tools()
                    break
                except Exception:  # not up yet: the gateway has no announcement to wait on
                    await anyio.sleep(0.1)
        try:
            yield url
        finally:
            process.terminate()
            await process.wait()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def burst(url: str, kind: str, calls: int, warm: int) -> list[float]:
    samples = []
    async with client(url, kind) as session:
        for index in range(warm + calls):
            start = time.perf_counter()
            await session.call_tool("echo", {"text": "hello"})
            if index >= warm:
                samples.append(time.perf_counter() - start)
    return samples


async def measure(targets: dict[str, str], calls: int, rounds: int, warm: int) -> dict[tuple[str, str], list[float]]:
    samples: dict[tuple[str, str], list[float]] = {}
    for round_ in range(rounds):
        order = [(target, kind) for target in targets for kind in KINDS]
        for target, kind in order[round_ % len(order) :] + order[: round_ % len(order)]:
            samples.setdefault((target, kind), []).extend(await burst(targets[target], kind, calls, warm))
    return samples


def predicate_costs() -> dict[str, float]:
    """Seconds per call of the routing rule itself: for a 2026-07-28 client of a server spoken to in the stateless
    era (it answers at its second test), and for a 2025-11-25 client of a server spoken to in the handshake era
    (the capabilities it declared are compared with what the server's connection was told: a cached key)."""
    import types as pytypes

    import mcp_types as types

    from toolreel.gateway.era import takes_handshake_connection
    from toolreel.gateway.links import ClientLink
    from toolreel.upstreams.upstream import capabilities_key

    modern = ClientLink(key="bench", protocol_version="2026-07-28")
    stateless: Any = pytypes.SimpleNamespace(modern=True)  # the rule reads no more of it for such a client
    caps = types.ClientCapabilities(sampling=types.SamplingCapability(), elicitation=types.ElicitationCapability())
    legacy = ClientLink(key="bench", protocol_version="2025-11-25", capabilities=caps)
    told: Any = pytypes.SimpleNamespace(modern=False, told_key=capabilities_key(caps))  # the rule reads these two
    timers: dict[str, Callable[[], Any]] = {
        "2026-07-28 client, stateless-era server": lambda: takes_handshake_connection(modern, stateless),
        "2025-11-25 client, handshake-era server": lambda: takes_handshake_connection(legacy, told),
    }
    return {what: min(timeit.repeat(timer, number=100_000, repeat=5)) / 100_000 for what, timer in timers.items()}


async def run(calls: int, rounds: int, warm: int) -> None:
    async with http_fixture("features") as direct, gateway() as through:
        samples = await measure({"direct": direct, "toolreel": through}, calls, rounds, warm)
    rows = []
    for (target, kind), values in samples.items():
        rows.append([target, kind, str(len(values)), ms(statistics.median(values)), ms(percentile(values, 90))])
    print(table(["target", "client", "calls", "p50", "p90"], rows))
    p50 = {key: statistics.median(values) for key, values in samples.items()}
    added = p50["toolreel", KINDS[2]] - p50["toolreel", KINDS[1]]
    print(f"\nhandshake-era client that can be asked vs one that cannot, through toolreel: {added * 1000:+.3f} ms p50")
    for kind in KINDS:
        print(f"gateway overhead, {kind}: {(p50['toolreel', kind] - p50['direct', kind]) * 1000:+.3f} ms p50")
    for what, seconds in predicate_costs().items():
        print(f"routing rule per call ({what}): {seconds * 1e9:.0f} ns")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a short run")
    parser.add_argument("--smoke", action="store_true", help="10 calls, 2 warm-up, 1 round: only that it runs")
    args = parser.parse_args()
    calls, rounds, warm = (10, 1, 2) if args.smoke else (100, 2, 20) if args.quick else (400, 6, 50)
    anyio.run(run, calls, rounds, warm)


if __name__ == "__main__":
    main()
