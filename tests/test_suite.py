"""The suite's own rules: a test not marked slow starts no process (tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_a_test_not_marked_slow_may_not_start_a_process() -> None:
    with pytest.raises(RuntimeError, match="not marked slow"):
        subprocess.run([sys.executable, "-c", "pass"], check=True)


@pytest.mark.slow
def test_a_slow_test_may() -> None:
    assert subprocess.run([sys.executable, "-c", "pass"], check=True).returncode == 0
