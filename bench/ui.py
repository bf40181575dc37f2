"""Web view benchmark: time to first render of a 1,000-step execution page, and what the live
stream costs the server per connected page.

    python bench/ui.py [--steps 1000] [--renders 5] [--pages 10,50] [--seconds 4]

`toolreel ui` runs as a real process over a SQLite store holding one recording of `--steps` steps
(each passing the previous one's output on as a ref). Render: Debian's Chromium (Playwright) opens
`/ui/executions/<id>` afresh `--renders` times; the figure is the page's own mark, `performance.now()`
when the graph, the timeline and the header are in the DOM (from the start of navigation: HTML,
scripts, the JSON, layout and drawing). Bar: the median <= 1 s. Live stream: the server's CPU (utime
+ stime from /proc) over `--seconds` with no page, then with N event streams open on one execution
(shared looks) and on N different executions; per page = (CPU with N - CPU with none) / N.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.browser import chromium
from tests.ui_data import thousand_step_recording, web_view

BAR_SECONDS = 1.0
TICKS = os.sysconf("SC_CLK_TCK")


async def render_times(base: str, execution_id: str, renders: int) -> tuple[list[float], list[float]]:
    """(first render, of which until the JSON was in hand) per fresh page load, in seconds."""
    times, fetched = [], []
    async with chromium() as browser:
        for _ in range(renders):
            page = await browser.new_page(viewport={"width": 1400, "height": 900})
            await page.goto(f"{base}/ui/executions/{execution_id}")
            body = page.locator("body[data-rendered]")
            await body.wait_for(state="attached", timeout=60_000)
            times.append(float(await body.get_attribute("data-rendered") or "nan") / 1000)
            fetched.append(float(await body.get_attribute("data-fetched") or "nan") / 1000)
            await page.close()
    return times, fetched


def server_pid(port: int) -> int:
    """The `toolreel ui` process listening on `port` (found through /proc/net/tcp and fd links)."""
    inode = None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == port and fields[3] == "0A":
            inode = fields[9]
    assert inode is not None, f"nothing listens on {port}"
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                    return int(pid)
        except OSError:
            continue
    raise AssertionError("no process owns the listening socket")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


async def stream_cost(base: str, pid: int, topics: list[str], seconds: float) -> float:
    """The server's CPU seconds per second while `topics` streams are open (one per topic)."""
    events = 0
    async with httpx.AsyncClient(timeout=None) as http, anyio.create_task_group() as tg:

        async def listen(topic: str) -> None:
            nonlocal events
            async with http.stream("GET", f"{base}/ui/api/events", params={"topic": topic}) as response:
                async for line in response.aiter_lines():
                    events += line.startswith("event:")

        for topic in topics:
            tg.start_soon(listen, topic)
        await anyio.sleep(1.0)  # every stream open and past its first look
        before = cpu_seconds(pid)
        await anyio.sleep(seconds)
        used = cpu_seconds(pid) - before
        tg.cancel_scope.cancel()
    return used / seconds


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--renders", type=int, default=5)
    parser.add_argument("--pages", default="10,50")
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = f"sqlite:///{folder}/bench.db"
        started = time.perf_counter()
        big = thousand_step_recording(db, args.steps)
        small = [thousand_step_recording(db, 20) for _ in range(max(int(n) for n in args.pages.split(",")))]
        print(f"store: {args.steps}-step recording + {len(small)} small ones in {time.perf_counter() - started:.1f} s")
        print(f"load average: {os.getloadavg()[0]:.2f}")
        async with web_view(db) as base:
            async with httpx.AsyncClient() as http:
                t0 = time.perf_counter()
                page = await http.get(f"{base}/ui/api/executions/{big}")
                api_ms = (time.perf_counter() - t0) * 1000
            print(f"execution JSON: {len(page.content) / 1024:.0f} KiB in {api_ms:.0f} ms (first fetch)")
            times, fetched = await render_times(base, big, args.renders)
            median = statistics.median(times)
            listed = ", ".join(f"{t * 1000:.0f}" for t in times)
            print(f"first render of a {args.steps}-step execution: median {median * 1000:.0f} ms ({listed} ms)")
            print(f"  of which until the JSON was parsed: median {statistics.median(fetched) * 1000:.0f} ms")
            pid = server_pid(int(base.rsplit(":", 1)[1]))
            idle = await stream_cost(base, pid, [], args.seconds)
            print(f"server CPU with no page: {idle * 1000:.1f} ms/s")
            for n in (int(x) for x in args.pages.split(",")):
                same = await stream_cost(base, pid, [f"execution:{big}"] * n, args.seconds)
                apart = await stream_cost(base, pid, [f"execution:{e}" for e in small[:n]], args.seconds)
                print(
                    f"{n} pages: one execution {same * 1000:.1f} ms/s ({(same - idle) / n * 1000:.2f} ms/s per page); "
                    f"{n} executions {apart * 1000:.1f} ms/s ({(apart - idle) / n * 1000:.2f} ms/s per page)"
                )
    ok = median <= BAR_SECONDS
    print(f"[{'PASS' if ok else 'FAIL'}] first render of a {args.steps}-step execution <= {BAR_SECONDS:g} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(anyio.run(main))
