"""Retry and chosen ids as a user meets them: `toolreel run` / `executions retry` on the published
mcp-server-git (a commit is the side effect that must not be repeated), and the management tools
`toolreel__retry_execution` / `execution_id` through a gateway."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fixtures._zygote import launch_command
from fixtures.servers import REPO_ROOT
from tests.callers import fixture_env
from tests.gw import call, fixture_entry, gateway_env, pypi_command, stdio_gateway, write_config
from toolreel.core.model import TemplateDraft
from toolreel.core.store import open_store

pytestmark = pytest.mark.slow

COMMIT_THEN_SHOW: dict[str, Any] = {
    "name": "commit-then-show",
    "inputs": {"repo": {"type": "string"}, "rev": {"type": "string"}},
    "steps": [
        {"name": "stage", "tool": "git__git_add", "input": {"repo_path": "@input.repo", "files": ["README.md"]}},
        {
            "name": "commit",
            "tool": "git__git_commit",
            "input": {"repo_path": "@input.repo", "message": "update"},
            "depends_on": ["stage"],
        },
        {
            "name": "show",
            "tool": "git__git_show",
            "input": {"repo_path": "@input.repo", "revision": "@input.rev"},
            "depends_on": ["commit"],
        },
    ],
    "output": "@show",
}


def git(repo: Path, *args: str) -> str:
    identity = ["-c", "user.name=T", "-c", "user.email=t@example.com"]
    done = subprocess.run(["git", *identity, *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def commits(repo: Path) -> int:
    return int(git(repo, "rev-list", "--count", "HEAD"))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("hello\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "first commit")
    (path / "README.md").write_text("hello again\n")
    return path


def toolreel(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        launch_command([sys.executable, "-m", "toolreel", *args]),
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_run_failing_after_a_commit_is_retried_without_committing_again(tmp_path: Path, repo: Path) -> None:
    command = pypi_command("git")
    config = write_config(tmp_path / "mcp.json", {"git": {"command": command[0], "args": command[1:]}})
    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(db)
    store.save_template(TemplateDraft(COMMIT_THEN_SHOW["name"], COMMIT_THEN_SHOW))
    store.close()
    env = {**os.environ, "TOOLREEL_DB": db, "TOOLREEL_CONFIG": str(config), "PYTHONPATH": str(REPO_ROOT)}

    first = toolreel(env, "run", "commit-then-show", "-i", f"repo={repo}", "-i", "rev=no-such-rev", "--json")
    assert first.returncode == 1, first.stderr
    failed = json.loads(first.stdout)
    assert failed["status"] == "failed" and "show" in failed["error"]
    assert commits(repo) == 2

    again = toolreel(env, "executions", "retry", failed["execution_id"], "-i", "rev=HEAD", "--json")
    assert again.returncode == 0, again.stderr
    done = json.loads(again.stdout)
    assert done["execution_id"] == failed["execution_id"] and done["attempt"] == 2
    assert done["status"] == "succeeded" and "update" in done["output"]
    assert commits(repo) == 2  # the commit made before the failure was not made again
    steps = {step["name"]: step for step in done["steps"]}
    assert steps["commit"]["attempt"] == 1 and steps["show"]["attempt"] == 3

    shown = toolreel(env, "executions", "show", failed["execution_id"])
    assert "attempt 2" in shown.stdout and "(attempt 3)" in shown.stdout, shown.stdout
    refused = toolreel(env, "executions", "retry", failed["execution_id"])
    assert refused.returncode == 2 and "only a failed or cancelled execution is retried" in refused.stderr


def test_run_with_a_chosen_id_twice_runs_once(tmp_path: Path, repo: Path) -> None:
    command = pypi_command("git")
    config = write_config(tmp_path / "mcp.json", {"git": {"command": command[0], "args": command[1:]}})
    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(db)
    store.save_template(TemplateDraft(COMMIT_THEN_SHOW["name"], COMMIT_THEN_SHOW))
    store.close()
    env = {**os.environ, "TOOLREEL_DB": db, "TOOLREEL_CONFIG": str(config), "PYTHONPATH": str(REPO_ROOT)}
    args = ("run", "commit-then-show", "-i", f"repo={repo}", "-i", "rev=HEAD", "--id", "deploy-7", "--json")
    first, second = toolreel(env, *args), toolreel(env, *args)
    assert first.returncode == 0 and second.returncode == 0, (first.stderr, second.stderr)
    assert json.loads(first.stdout)["execution_id"] == json.loads(second.stdout)["execution_id"] == "deploy-7"
    assert commits(repo) == 2


CHAIN: dict[str, Any] = {
    "name": "chain",
    "inputs": {"a": {"type": "string"}},
    "steps": [
        {"name": "side", "tool": "features__counter", "input": {"key": "side"}},
        {"name": "later", "tool": "features__add", "input": {"a": "@input.a", "b": 1}, "depends_on": ["side"]},
    ],
    "output": "@later.sum",
}


@pytest.mark.anyio
async def test_retry_and_chosen_ids_through_the_management_tools(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(db)
    store.save_template(TemplateDraft("chain", CHAIN))
    store.close()
    config = write_config(tmp_path / "mcp.json", {"features": fixture_entry("features", env=fixture_env(tmp_path))})
    counts = tmp_path / "counts.json"
    async with stdio_gateway(["--config", str(config)], gateway_env(db)) as gw:
        start = {"name": "chain", "inputs": {"a": "x"}, "execution_id": "job-1"}
        failed = (await call(gw, "toolreel__run_template", start)).structured_content or {}
        assert failed["status"] == "failed" and failed["execution_id"] == "job-1"
        assert failed["error_code"] == "execution_failed"
        again = (await call(gw, "toolreel__run_template", start)).structured_content or {}
        assert again == failed  # the same start twice: the first run, not a second one
        assert json.loads(counts.read_text()) == {"side": 1}

        retried = await call(gw, "toolreel__retry_execution", {"id": "job-1", "inputs": {"a": "2"}})
        assert (retried.structured_content or {}) == {"execution_id": "job-1", "status": "succeeded", "output": 3.0}
        assert json.loads(counts.read_text()) == {"side": 1}
        shown = (await call(gw, "toolreel__get_execution", {"id": "job-1"})).structured_content or {}
        assert shown["attempt"] == 2
        refused = await call(gw, "toolreel__retry_execution", {"id": "job-1"})
        assert refused.is_error and "only a failed or cancelled execution" in refused.content[0].text
        assert (refused.structured_content or {})["error"]["code"] == "execution_refused"
