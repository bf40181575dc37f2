"""`toolreel run` and `executions resume / cancel` as a user runs them: real processes, the features server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fixtures._zygote import launch_command
from fixtures.servers import REPO_ROOT, fixture_command
from tests.callers import fixture_env
from toolreel.core.model import ExecutionStatus, TemplateDraft
from toolreel.core.store import open_store

pytestmark = pytest.mark.slow

TEMPLATES: list[dict[str, Any]] = [
    {
        "name": "sum",
        "inputs": {"a": {"type": "number"}, "b": {"type": "number"}, "tags": {"type": "array", "default": []}},
        "steps": [{"name": "add", "tool": "features__add", "input": {"a": "@input.a", "b": "@input.b"}}],
        "output": {"sum": "@add.sum", "tags": "@input.tags"},
    },
    {
        "name": "ask",
        "steps": [
            {"name": "confirm", "approve": "Count it?"},
            {"name": "count", "tool": "features__counter", "input": {"key": "asked"}, "depends_on": ["confirm"]},
        ],
        "output": "@count.count",
    },
    {"name": "broken", "steps": [{"name": "boom", "tool": "features__fail", "input": {"message": "it broke"}}]},
]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    command, *args = fixture_command("features")
    server = {"command": command, "args": args, "cwd": str(REPO_ROOT), "env": fixture_env(tmp_path)}
    (tmp_path / "config.json").write_text(json.dumps({"mcpServers": {"features": server}}))
    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(db)
    for template in TEMPLATES:
        store.save_template(TemplateDraft(template["name"], template))
    store.close()
    return {
        **os.environ,
        "TOOLREEL_DB": db,
        "TOOLREEL_CONFIG": str(tmp_path / "config.json"),
        "PYTHONPATH": str(REPO_ROOT),
    }


def replayer(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        launch_command([sys.executable, "-m", "toolreel.replayer", *args]),
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_run_prints_the_output_and_exits_0(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "inputs.yaml").write_text("b: 2.5\n")
    done = replayer(
        env, "run", "sum", "-i", "a=4", "-i", 'tags=["x"]', "--inputs", str(tmp_path / "inputs.yaml"), "--json"
    )
    assert done.returncode == 0, done.stderr
    view = json.loads(done.stdout)
    assert view["status"] == "succeeded" and view["output"] == {"sum": 6.5, "tags": ["x"]}
    assert [(s["name"], s["status"]) for s in view["steps"]] == [("add", "succeeded")]


def test_a_paused_run_exits_3_and_resumes_from_another_process(env: dict[str, str], tmp_path: Path) -> None:
    paused = replayer(env, "run", "ask")
    assert paused.returncode == 3, paused.stderr
    assert "paused: Count it?" in paused.stderr
    execution_id = paused.stderr.split("execution ")[-1].split()[0]
    done = replayer(env, "executions", "resume", execution_id, "--response", "yes", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == 1
    assert json.loads((tmp_path / "counts.json").read_text()) == {"asked": 1}
    again = replayer(env, "executions", "resume", execution_id)
    assert again.returncode == 1 and "already succeeded" in again.stderr


def test_a_failed_run_exits_1_naming_the_step(env: dict[str, str]) -> None:
    done = replayer(env, "run", "broken")
    assert done.returncode == 1
    assert "step boom failed: tool features__fail returned an error: it broke" in done.stderr


def test_usage_errors_exit_2_with_one_line(env: dict[str, str]) -> None:
    unknown = replayer(env, "run", "sum", "-i", "a=1", "-i", "c=2")
    assert unknown.returncode == 2
    assert unknown.stderr.strip().splitlines() == [
        "toolreel: template 'sum': unknown input(s) c (declared: a, b, tags); missing required input(s) b"
        " [execution_refused]"
    ]
    typed = replayer(env, "run", "sum", "-i", "a=four", "-i", "b=1")
    assert typed.returncode == 2 and "-i a: expected a number" in typed.stderr
    missing = replayer(env, "run", "nope")
    assert missing.returncode == 2 and "no template named 'nope'" in missing.stderr
    assert missing.stderr.rstrip().endswith("[not_found]")


def test_cancel_a_paused_execution(env: dict[str, str]) -> None:
    paused = replayer(env, "run", "ask", "--json")
    assert paused.returncode == 3
    execution_id = json.loads(paused.stdout)["execution_id"]
    done = replayer(env, "executions", "cancel", execution_id, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == ExecutionStatus.CANCELLED
    again = replayer(env, "executions", "cancel", execution_id)
    assert again.returncode == 1 and "already cancelled" in again.stderr
