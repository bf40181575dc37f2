"""The suite's own rules: a test not marked slow starts no process (tests/conftest.py), and `xdist_group` keeps
a file's tests on one xdist worker (what the files sharing a module-scoped server or gateway rely on)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests import conftest


def test_a_test_not_marked_slow_may_not_start_a_process() -> None:
    with pytest.raises(RuntimeError, match="not marked slow"):
        subprocess.run([sys.executable, "-c", "pass"], check=True)


@pytest.mark.slow
def test_a_slow_test_may() -> None:
    assert subprocess.run([sys.executable, "-c", "pass"], check=True).returncode == 0


_GROUPED = """
import os
import pytest

pytestmark = pytest.mark.xdist_group("{group}")


@pytest.mark.parametrize("n", range(6))
def test_where(n: int) -> None:
    with open("{log}", "a") as log:
        log.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
"""


@pytest.mark.slow
def test_loadgroup_runs_a_group_on_one_worker(tmp_path: Path) -> None:
    # pytest 9.2 silently broke this (xdist's group suffix on the node id no longer takes): the tests of a
    # group then spread over the workers and each worker starts the file's shared servers again.
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    for group in ("one", "two"):
        source = _GROUPED.format(group=group, log=tmp_path / f"{group}.log")
        (tmp_path / f"test_{group}.py").write_text(source, encoding="utf-8")
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    for group in ("one", "two"):
        workers = (tmp_path / f"{group}.log").read_text(encoding="utf-8").split()
        assert len(workers) == 6 and len(set(workers)) == 1, (group, workers)


def test_the_run_takes_grouped_files_first_then_process_tests_then_in_process_ones(
    request: pytest.FixtureRequest,
) -> None:
    # scripts/test hands units to workers in this order (`--no-loadscope-reorder`): the long ones first.
    ranks = [conftest.run_order(item) for item in request.session.items]
    assert ranks == sorted(ranks), "tests/conftest.py's pytest_collection_modifyitems did not order this run"
