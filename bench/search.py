"""Tool search on a big catalog: what `--tools search` saves in the first `tools/list`, and whether it finds.

The catalog is the five published servers installed here (server-everything, -filesystem, -memory,
mcp-server-time, mcp-server-git) plus the repository's fixture servers that take it past 100 tools.
Two figures, each with a bar from the spec:
- tokens (cl100k, the JSON of the `tools` array) of the first `tools/list` through `toolreel serve`,
  with `--tools all` and with `--tools search`: search must list at most 10% of the full list;
- recall@5 of `toolreel__search_tools` on 50 natural-language needs written from the servers' docs
  (`bench/search_needs.json`): the expected tool among the first five hits, at least 0.9; also on the two
  held-out sets (`held_out`, `held_out_2`), never tuned on, and on needs for the gateway's own tools that
  search mode does not list (`own`).

    .venv/bin/python bench/search.py [--json OUT] [--show-misses] [--smoke]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fixtures import servers  # noqa: E402
from toolreel.gateway.search import count_tokens  # noqa: E402

NEEDS = REPO / "bench" / "search_needs.json"
FIXTURES = ("features", "conformance_server", "ids", "desk")  # past 100 tools together with the published five
TOKEN_BAR = 0.10
RECALL_BAR = 0.9
K = 5
SMOKE_NEEDS = 3  # --smoke: the first few needs of each set, only that every step still runs


def catalog_config(work: Path) -> dict[str, Any]:
    """The `mcpServers` of the bench: published servers first, then fixture servers."""
    shared = work / "shared"
    shared.mkdir()
    (shared / "notes.txt").write_text("hello\n")
    repo = work / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    python = sys.executable
    entries: dict[str, Any] = {
        "everything": {
            "command": servers.npm_server_command("everything")[0],
            "args": servers.npm_server_command("everything")[1:],
        },
        "fs": {
            "command": servers.npm_server_command("filesystem")[0],
            "args": [*servers.npm_server_command("filesystem")[1:], str(shared)],
        },
        "memory": {
            "command": servers.npm_server_command("memory")[0],
            "args": servers.npm_server_command("memory")[1:],
            "env": {"MEMORY_FILE_PATH": str(work / "memory.jsonl")},
        },
        "time": {"command": python, "args": ["-m", "mcp_server_time"]},
        "git": {"command": python, "args": ["-m", "mcp_server_git", "--repository", str(repo)]},
    }
    for module in FIXTURES:
        entries[module.replace("_", "-")] = {"command": python, "args": ["-m", f"fixtures.{module}"], "cwd": str(REPO)}
    return {"mcpServers": entries}


@contextlib.asynccontextmanager
async def gateway(config: Path, work: Path, mode: str) -> AsyncIterator[ClientSession]:
    toolreel = str(Path(sys.executable).parent / "toolreel")
    env = {"PYTHONPATH": str(REPO), "TOOLREEL_DB": f"sqlite:///{work / f'{mode}.db'}"}
    params = StdioServerParameters(command=toolreel, args=["serve", "--config", str(config), "--tools", mode], env=env)
    with (work / f"{mode}.stderr").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await _until_ready(session)
            yield session


async def _until_ready(session: ClientSession) -> None:
    """Every server up before the listing is measured (a loaded machine starts them late)."""
    with anyio.fail_after(120):
        while True:
            status = (await session.call_tool("toolreel__status", {})).structured_content or {}
            if all(u["state"] == "ready" for u in status.get("upstreams", [])):
                return
            await anyio.sleep(0.1)


def _tools_json(listed: Any) -> list[dict[str, Any]]:
    return [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in listed.tools]


async def first_listing(config: Path, work: Path, mode: str) -> list[dict[str, Any]]:
    async with gateway(config, work, mode) as session:
        return _tools_json(await session.list_tools())


async def recall(session: ClientSession, needs: list[Mapping[str, Any]]) -> tuple[float, list[dict[str, Any]], float]:
    """recall@K of the search over the needs; the misses; the median search time (ms)."""
    misses: list[dict[str, Any]] = []
    found, times = 0, []
    for need in needs:
        started = time.perf_counter()
        result = await session.call_tool("toolreel__search_tools", {"query": need["need"], "limit": K})
        times.append((time.perf_counter() - started) * 1000)
        hits = [t["name"] for t in (result.structured_content or {}).get("tools", [])]
        expected = set(need["tools"])
        if expected & set(hits[:K]):
            found += 1
        else:
            misses.append({"need": need["need"], "expected": sorted(expected), "got": hits})
    times.sort()
    return found / len(needs), misses, times[len(times) // 2]


async def main(out: Path | None, show_misses: bool, smoke: bool) -> int:
    data = json.loads(NEEDS.read_text())
    sets = [data[name][: SMOKE_NEEDS if smoke else None] for name in ("needs", "held_out", "held_out_2", "own")]
    needs, held_out, fresh, own = sets
    with tempfile.TemporaryDirectory(prefix="toolreel-search-") as tmp:
        work = Path(tmp)
        config = work / "config.json"
        config.write_text(json.dumps(catalog_config(work)))
        full = await first_listing(config, work, "all")
        # One search-mode gateway: its first listing is taken before any search, then every set of needs.
        async with gateway(config, work, "search") as session:
            searched = _tools_json(await session.list_tools())
            score, misses, search_ms = await recall(session, needs)
            held_score, held_misses, _ = await recall(session, held_out)
            fresh_score, fresh_misses, _ = await recall(session, fresh)
            own_score, own_misses, _ = await recall(session, own)
    upstream = [t for t in full if not t["name"].startswith(("toolreel__", "reel__"))]
    servers_used = sorted({t["name"].split("__")[0] for t in upstream})
    full_tokens, search_tokens = count_tokens(full), count_tokens(searched)
    ratio = search_tokens / full_tokens
    figures = {
        "servers": servers_used,
        "upstream_tools": len(upstream),
        "listed_tools_all": len(full),
        "listed_tools_search": len(searched),
        "tokens_all": full_tokens,
        "tokens_search": search_tokens,
        "tokens_ratio": round(ratio, 4),
        "needs": len(needs),
        "recall_at_5": round(score, 3),
        "held_out": len(held_out),
        "recall_at_5_held_out": round(held_score, 3),
        "held_out_2": len(fresh),
        "recall_at_5_held_out_2": round(fresh_score, 3),
        "own": len(own),
        "recall_at_5_own": round(own_score, 3),
        "search_ms_p50": round(search_ms, 2),
        "misses": misses,
        "misses_held_out": held_misses,
        "misses_held_out_2": fresh_misses,
        "misses_own": own_misses,
    }
    print(f"catalog: {len(upstream)} upstream tools from {len(servers_used)} servers ({', '.join(servers_used)})")
    print(
        f"first tools/list: --tools all {full_tokens} tokens ({len(full)} tools); "
        f"--tools search {search_tokens} tokens ({len(searched)} tools): {ratio:.1%} (bar <= {TOKEN_BAR:.0%})"
    )
    print(f"recall@{K} on {len(needs)} needs: {score:.2f} (bar >= {RECALL_BAR}); search p50 {search_ms:.1f} ms")
    print(f"recall@{K} on {len(held_out)} held-out needs (never tuned on): {held_score:.2f}")
    print(f"recall@{K} on {len(fresh)} fresh held-out needs (held_out_2, never tuned on): {fresh_score:.2f}")
    print(f"recall@{K} on {len(own)} needs for the gateway's own unlisted tools: {own_score:.2f}")
    if show_misses:
        for miss in misses + held_misses + fresh_misses + own_misses:
            print(f"  miss: {miss['need']!r}: expected {miss['expected']}, got {miss['got']}")
    if out is not None:
        await anyio.Path(out).write_text(json.dumps(figures, indent=2))
    return 0 if ratio <= TOKEN_BAR and score >= RECALL_BAR else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--show-misses", action="store_true")
    parser.add_argument("--smoke", action="store_true", help=f"the first {SMOKE_NEEDS} needs of each set: that it runs")
    ns = parser.parse_args()
    sys.exit(anyio.run(main, ns.json, ns.show_misses, ns.smoke))
