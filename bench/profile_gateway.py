"""Where the gateway's CPU per call goes: `toolreel serve --no-record` under cProfile, with a steady stream of calls.

A lean raw JSON-RPC client (bench/record_lean.py's) makes server-everything `echo` calls through a gateway
(`bench/_profiled_gateway.py`: `toolreel` with cProfile switched by signals), one at a time (`--in-flight 1`,
the sequential path, default) or N at a time; after 2,000 warm-up calls, cProfile runs during the measured
calls alone (no start-up, no warm-up). The tables list, per forwarded call,
the functions with the most time of their own (`tottime`: C functions such as `json.loads` or a pipe
write count as their own), and the toolreel functions with the most time including what they call
(`cumtime`). Functions called less than once per two calls are left out.

cProfile slows every Python call down, so a call costs several times its real CPU under it: the shares,
not the microseconds, are the figure. (py-spy, sampling, saw the event loop's C code, idle pool threads
and pipe writes rather than the Python functions here, so it is not used.)
Run: .venv/bin/python bench/profile_gateway.py [--calls N] [--in-flight N] [--top N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pstats
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import ECHO, table
from record_lean import CALL, LeanClient

PROFILED = Path(__file__).with_name("_profiled_gateway.py")
WARM = 2000


def label(func: tuple[str, int, str]) -> str:
    path, _, name = func
    if path == "~":  # a built-in: `<built-in method ...>` / `<method 'write' of ...>`
        return name
    parts = Path(path).with_suffix("").parts
    return f"{'.'.join(parts[-2:])}.{name}"


def ours(func: tuple[str, int, str]) -> bool:
    return "/toolreel/" in func[0]


def area(func: tuple[str, int, str]) -> str:
    """Where a function's own time is counted: a toolreel module, a library, or the built-ins it calls."""
    path, _, name = func
    if path == "~":
        return "orjson" if "orjson" in name else "built-ins (C: dict, isinstance, bytes, ...)"
    if "/toolreel/" in path:
        return "toolreel." + ".".join(Path(path.split("/toolreel/", 1)[1]).with_suffix("").parts)
    for library in ("anyio", "json", "asyncio", "mcp", "pydantic", "contextlib"):
        if f"/{library}/" in path or path.endswith(f"/{library}.py"):
            return library
    return Path(path).stem


def summarize(path: Path, calls: int, top: int) -> str:
    stats: Any = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]  # {func: (cc, nc, tt, ct, callers)}
    busy = {f: v for f, v in stats.items() if v[1] >= calls / 2}
    total = sum(v[2] for v in stats.values())
    per_call = 1e6 / calls

    def row(func: tuple[str, int, str], ncalls: int, seconds: float) -> list[str]:
        return [label(func), f"{ncalls / calls:.1f}", f"{seconds * per_call:.1f}", f"{seconds / total:.1%}"]

    areas: dict[str, float] = {}
    for func, values in stats.items():
        areas[area(func)] = areas.get(area(func), 0.0) + values[2]
    by_area = sorted(areas.items(), key=lambda item: -item[1])[:top]
    area_rows = [[name, f"{seconds * per_call:.1f}", f"{seconds / total:.1%}"] for name, seconds in by_area]
    own = sorted(busy.items(), key=lambda item: -item[1][2])[:top]
    cumulative = sorted(((f, v) for f, v in busy.items() if ours(f)), key=lambda item: -item[1][3])[:top]
    header = ["function", "calls per call", "µs per call", "share"]
    return "\n\n".join(
        [
            f"profiled CPU: {total * per_call:.0f} µs per forwarded call (under cProfile)",
            "own time by module\n" + table(["module", "µs per call", "share"], area_rows),
            "own time (tottime)\n" + table(header, [row(f, v[1], v[2]) for f, v in own]),
            "toolreel functions, including what they call (cumtime)\n"
            + table(header, [row(f, v[1], v[3]) for f, v in cumulative]),
        ]
    )


async def drive(args: argparse.Namespace, out: Path, log: Any) -> int:
    argv = (sys.executable, str(PROFILED), str(out), "serve", "--no-record", "--", *ECHO.server.argv)
    client = await LeanClient.start(argv, log)

    async def stream(count: int) -> int:
        made = 0
        while made < count:
            await asyncio.gather(*(client.request("tools/call", CALL) for _ in range(args.in_flight)))
            made += args.in_flight
        return made

    try:
        await stream(WARM)
        client.process.send_signal(signal.SIGUSR1)
        await client.request("tools/call", CALL)  # the signal is handled before this call is read
        made = await stream(args.calls)
        client.process.send_signal(signal.SIGUSR2)
        await client.request("tools/call", CALL)  # and the profile written before this one is answered
    finally:
        await client.close()
    return made + 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000, help="profiled calls (default 5000)")
    parser.add_argument("--in-flight", type=int, default=1, help="calls outstanding at once (default 1)")
    parser.add_argument("--top", type=int, default=30, help="rows per table")
    args = parser.parse_args(argv)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"bench/profile_gateway.py: echo through toolreel serve --no-record, {args.in_flight} in flight, load {load}")
    log_path = Path(tempfile.gettempdir()) / f"toolreel-bench-profile-{os.getpid()}.log"
    with tempfile.TemporaryDirectory(prefix="toolreel-bench-") as tmp, log_path.open("w") as log:
        out = Path(tmp) / "gateway.prof"
        start = time.perf_counter()
        calls = asyncio.run(drive(args, out, log))
        print(f"{calls} calls in {time.perf_counter() - start:.1f} s\n")
        print(summarize(out, calls, args.top))
    print(f"\n(gateway stderr: {log_path})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
