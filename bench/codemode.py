"""Code Mode: what one script saves a client against calling tools one by one, and what a call costs inside it.

A task of N files (N = 5, 20, 100): list a folder, read its N text files of ~1 KB each through the
published filesystem server, count their words, report the total and the three longest. One by one, the
client sends N + 1 `tools/call` requests and reads the listing and every file into its context; as a
script, it sends one `toolreel__run_script` and reads the answer alone. Tokens are counted with the
o200k_base encoding (`bpe-openai`, a package that ships its token tables) over the JSON the client sends
(name and arguments) and the text content it gets back.

Per-call overhead: server-everything `echo` called M times directly through the gateway (sequential, the
client's `tools/call` latency), against M calls from inside one script (the run's wall time over M, the
script's fixed start-up measured by a script of no call and taken out). Also the sandbox alone: the
QuickJS machine answering M calls instantly, with no gateway at all.

Run: .venv/bin/python bench/codemode.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bpe_openai
from _common import REPO, Bars, Command, connect, npm_server, table, toolreel_bin
from mcp import ClientSession

RUN = "toolreel__run_script"
SIZES = (5, 20, 100)
TOKEN_BAR = 0.90  # fewer tokens at N = 20
OVERHEAD_BAR_MS = 0.5

TASK = """
const listing = await tools.fs.list_directory({path: input.dir});
const names = listing.content.split("\\n").filter((l) => l.startsWith("[FILE] ")).map((l) => l.slice(7));
const sizes = [];
for (const name of names) {
  const {content} = await tools.fs.read_text_file({path: input.dir + "/" + name});
  sizes.push({name, words: content.split(/\\s+/).filter(Boolean).length});
}
sizes.sort((a, b) => b.words - a.words);
return {total: sizes.reduce((s, f) => s + f.words, 0), longest: sizes.slice(0, 3).map((f) => f.name)};
"""

ECHOES = """
for (let i = 0; i < input.n; i++) await tools.everything.echo({message: "hello"});
return input.n;
"""

WORDS = ("lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed", "do", "tempor")


def _files(root: Path, count: int) -> list[str]:
    names = []
    for i in range(count):
        words = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(140 + i % 23)]
        name = f"note-{i:03d}.txt"
        (root / name).write_text(f"Note {i}\n" + " ".join(words) + "\n", encoding="utf-8")
        names.append(name)
    return names


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


class Tokens:
    def __init__(self) -> None:
        self.encoding = bpe_openai.get_encoding("o200k_base")

    def count(self, text: str) -> int:
        return len(self.encoding.encode(text))

    def call(self, name: str, arguments: dict[str, Any], result: Any) -> int:
        sent = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
        return self.count(sent) + self.count(_text(result))


async def _one_by_one(session: ClientSession, tokens: Tokens, root: Path, names: list[str]) -> tuple[int, float]:
    started = time.perf_counter()
    listing = await session.call_tool("fs__list_directory", {"path": str(root)})
    spent = tokens.call("fs__list_directory", {"path": str(root)}, listing)
    for name in names:
        arguments = {"path": str(root / name)}
        result = await session.call_tool("fs__read_text_file", arguments)
        spent += tokens.call("fs__read_text_file", arguments, result)
    return spent, time.perf_counter() - started


async def _scripted(session: ClientSession, tokens: Tokens, root: Path, names: list[str]) -> tuple[int, float]:
    arguments = {"code": TASK, "input": {"dir": str(root)}}
    started = time.perf_counter()
    result = await session.call_tool(RUN, arguments)
    elapsed = time.perf_counter() - started
    if result.is_error:
        raise RuntimeError(f"the script failed: {_text(result)}")
    # what a client keeps of the answer: the result (logs and step names come with it)
    return tokens.call(RUN, arguments, result), elapsed


async def _tokens(session: ClientSession, root: Path, bars: Bars) -> None:
    tokens = Tokens()
    rows = []
    await _timed_script(session, 0)  # the store opens on the first run: not part of the figures
    for n in SIZES:
        folder = root / f"n{n}"
        folder.mkdir()
        names = _files(folder, n)
        direct, direct_s = await _one_by_one(session, tokens, folder, names)
        script, script_s = await _scripted(session, tokens, folder, names)
        saved = 1 - script / direct
        rows.append(
            [str(n), f"{direct:,}", f"{script:,}", f"{saved:.1%}", f"{direct_s * 1e3:.0f}", f"{script_s * 1e3:.0f}"]
        )
        if n == 20:
            bars.check("tokens at N = 20", saved >= TOKEN_BAR, f"{saved:.1%} fewer (bar {TOKEN_BAR:.0%})")
    header = ["N files", "tokens one by one", "tokens script", "fewer", "wall ms one by one", "wall ms script"]
    print(table(header, rows))


async def _overhead(session: ClientSession, calls: int, bars: Bars) -> None:
    for _ in range(200):  # warm up node's JIT and the gateway
        await session.call_tool("everything__echo", {"message": "hello"})
    direct = []
    for _ in range(calls):
        started = time.perf_counter()
        await session.call_tool("everything__echo", {"message": "hello"})
        direct.append(time.perf_counter() - started)
    empty, full = [], []
    for _ in range(5):
        empty.append(await _timed_script(session, 0))
        full.append(await _timed_script(session, calls))
    per_call = (statistics.median(full) - statistics.median(empty)) / calls
    direct_mean = statistics.fmean(direct)
    overhead = per_call - direct_mean
    sandbox = _sandbox_alone(calls)
    print(
        table(
            ["echo, per call", "ms"],
            [
                ["direct through the gateway (mean)", f"{direct_mean * 1e3:.3f}"],
                ["direct through the gateway (p50)", f"{statistics.median(direct) * 1e3:.3f}"],
                [f"inside a script ({calls} calls, start-up taken out)", f"{per_call * 1e3:.3f}"],
                ["overhead inside the script (against the mean)", f"{overhead * 1e3:+.3f}"],
                [
                    "overhead inside the script (against the p50)",
                    f"{(per_call - statistics.median(direct)) * 1e3:+.3f}",
                ],
                ["the sandbox alone (instant answers)", f"{sandbox * 1e3:.3f}"],
            ],
        )
    )
    bars.check(
        "per-call overhead inside the sandbox",
        overhead * 1e3 <= OVERHEAD_BAR_MS,
        f"{overhead * 1e3:+.3f} ms over a direct gateway call (bar {OVERHEAD_BAR_MS} ms)",
    )


async def _timed_script(session: ClientSession, n: int) -> float:
    started = time.perf_counter()
    result = await session.call_tool(RUN, {"code": ECHOES, "input": {"n": n}, "max_calls": max(n, 1)})
    elapsed = time.perf_counter() - started
    if result.is_error:
        raise RuntimeError(f"the echo script failed: {_text(result)}")
    return elapsed


def _sandbox_alone(calls: int) -> float:
    from toolreel.core.script_sandbox import Answer, Finished, ScriptLimits, ScriptMachine

    machine = ScriptMachine(ECHOES, {"n": calls}, ScriptLimits())
    started = time.perf_counter()
    out = machine.start(30)
    while not isinstance(out, Finished):
        out = machine.advance([Answer(r.id, True, {"echo": "hello"}) for r in out], 30)
    return (time.perf_counter() - started) / calls


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls for the overhead figure")
    parser.add_argument("--calls", type=int, default=None, help="echo calls for the overhead figure (default 1000)")
    options = parser.parse_args()
    calls = options.calls or (200 if options.quick else 1000)
    bars = Bars()
    with tempfile.TemporaryDirectory(prefix="toolreel-bench-codemode-") as tmp:
        root = Path(tmp) / "files"
        root.mkdir()
        config = Path(tmp) / "gw.json"
        fs = npm_server("filesystem", str(root))
        everything = npm_server("everything", "stdio")
        servers = {"fs": {"command": fs.argv[0], "args": list(fs.argv[1:])},
                   "everything": {"command": everything.argv[0], "args": list(everything.argv[1:])}}  # fmt: skip
        config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
        gateway = Command(
            (toolreel_bin(), "serve", "--config", str(config)), {"TOOLREEL_DB": f"sqlite:///{tmp}/store.db"}, str(REPO)
        )
        with (Path(tempfile.gettempdir()) / "toolreel-bench-codemode.log").open("w") as errlog:
            async with connect(gateway, errlog) as session:
                print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
                await _tokens(session, root, bars)
                print()
                await _overhead(session, calls, bars)
    print()
    print(bars.report())
    return 1 if bars.failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
