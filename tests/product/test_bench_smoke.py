"""Every benchmark script runs to its end at a tiny size, so none rots between measuring days: each is a
process of its own (temporary stores and free ports, as the benchmarks make them), and only its finishing
is checked here (exit 0, or 1 for a bar missed at a size too small to meet it, never a traceback). The
figures are bench/README.md's, at the benchmarks' own sizes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from fixtures._zygote import SMOKE_FORK, launch_command
from tests.browser import needs_chromium
from tests.gw import REPO

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

# script -> arguments for a tiny run; a script added to bench/ without an entry here fails the last test
_BROWSER: Final = frozenset({"ui.py"})  # benchmarks that drive the web view in Chromium
SMOKE: Final = {
    "codemode.py": ["--quick", "--calls", "10"],
    "cpu_split.py": ["--calls", "5", "--rounds", "1"],
    "crash.py": ["--smoke"],
    "engine.py": ["--code"],
    "eras.py": ["--smoke"],
    "hostile.py": ["--calls", "20", "--rounds", "1"],
    "loops.py": [],
    "operations.py": ["--smoke"],
    "parallel.py": ["--calls", "2"],
    "profile_gateway.py": ["--calls", "20", "--top", "3"],
    "proxy.py": ["--smoke"],
    "ready_cpu.py": ["--rounds", "1"],
    "tasks.py": ["--quick"],
    "record.py": ["--smoke"],
    "record_lean.py": ["--calls", "10", "--rounds", "1", "--warm", "10"],
    "search.py": ["--smoke"],
    "startup.py": ["--runs", "1", "--executions", "20"],
    "suite.py": ["--workers", "0", "--top", "3", "--", "tests/gateway/test_names.py", "-m", "not slow"],
    "templatize.py": ["--quick"],
    "ui.py": ["--steps", "20", "--renders", "1", "--pages", "10", "--seconds", "0.5"],
    "worlds.py": ["--set", "worlds", "--only", "zones-standup-clocks"],
}
HELPERS: Final = {
    "_common.py",
    "_fastmcp_proxy.py",
    "_profiled_gateway.py",
    "_relay.py",
    "_transforms_corpus.py",
    "_world_replay.py",
}  # imported, not run
BENCH: Final = Path(REPO) / "bench"


@pytest.mark.parametrize("script", sorted(SMOKE))
def test_the_benchmark_runs_at_a_tiny_size(script: str) -> None:
    if not (BENCH / script).exists():
        pytest.skip(f"bench/{script} is not in this checkout")
    if script in _BROWSER:
        needs_chromium()  # skipped without Chromium, as the web view's own tests are (failed where CI requires it)
    done = subprocess.run(
        launch_command([sys.executable, str(BENCH / script), *SMOKE[script]]),
        cwd=REPO,
        env={**os.environ, SMOKE_FORK: "1"},  # what it starts is forked from a warm interpreter of its own
        capture_output=True,
        text=True,
        timeout=840,
        check=False,
    )
    output = done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr, output
    assert done.returncode in (0, 1), output
    assert done.stdout.strip(), "the benchmark printed nothing"


def test_every_benchmark_script_has_a_smoke_run() -> None:
    scripts = {path.name for path in BENCH.glob("*.py")} - HELPERS
    assert scripts <= set(SMOKE), f"give each of {sorted(scripts - set(SMOKE))} a tiny run in SMOKE"
