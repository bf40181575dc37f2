"""Retention (SPEC §9): `toolreel executions prune` and `--retain` on `serve` and `worker`.

Every test runs on a real store, SQLite and PostgreSQL: what is deleted, what is never deleted, that a
SQLite file shrinks back, that PostgreSQL's batches skip rows another transaction holds, and that the
commands and the long-running processes prune as a user would see it.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest

from fixtures._zygote import launch_command
from tests.gw import TOOLREEL, fixture_entry, gateway_env, status, stdio_gateway, wait_until, write_config
from tests.store_helpers import execution, step
from toolreel.core.errors import NotFoundError
from toolreel.core.model import ExecutionMode, ExecutionQuery, ExecutionStatus, TemplateDraft
from toolreel.core.retention import parse_age
from toolreel.core.store import Store, check_statuses, open_store

DAY = 86400.0
OLD = time.time() - 40 * DAY
NEW = time.time() - 60.0
PAYLOAD = "x" * 20_000  # per step: enough pages for the file to shrink visibly


def _fill(store: Store) -> None:
    """Old and new executions of every status, with what must survive named after why."""
    S = ExecutionStatus
    rows: list[tuple[str, float, ExecutionStatus, dict[str, Any]]] = [
        ("old_ok", OLD, S.SUCCEEDED, {}),
        ("old_failed", OLD, S.FAILED, {}),
        ("old_cancelled", OLD, S.CANCELLED, {}),
        ("old_recording", OLD, S.RECORDING, {"mode": ExecutionMode.RECORD}),
        ("new_ok", NEW, S.SUCCEEDED, {}),
        ("keep_running", OLD, S.RUNNING, {}),
        ("keep_paused", OLD, S.PAUSED, {}),
        ("keep_pending", OLD, S.PENDING, {}),
        ("keep_recording_active", OLD, S.RECORDING, {"mode": ExecutionMode.RECORD}),
        ("keep_template_source", OLD, S.RECORDING, {"mode": ExecutionMode.RECORD}),
        ("keep_child_of_running", OLD, S.SUCCEEDED, {"parent_id": "keep_running", "depth": 1}),
    ]
    for name, at, state, fields in rows:
        made = execution(name, at, status=state)
        store.create_execution(made.replace(**fields))
        steps = [step(f"s{i}", i, execution_id=name, output=PAYLOAD, started_at=at, ended_at=at) for i in (1, 2, 3)]
        store.put_steps(steps)
    store.put_step(step("late", 4, execution_id="keep_recording_active", started_at=NEW, ended_at=NEW))
    store.save_template(TemplateDraft("tpl", {"name": "tpl", "steps": []}, source_executions=["keep_template_source"]))


def _ids(store: Store) -> set[str]:
    return {e.id for e in store.list_executions(ExecutionQuery(limit=100))[0]}


def test_ages_and_statuses_are_checked() -> None:
    assert [parse_age(v) for v in ("30d", "12h", "90m", "2w", "45s", "10")] == [
        30 * DAY,
        12 * 3600,
        90 * 60,
        14 * DAY,
        45,
        10,
    ]
    for bad in ("", "30 days", "-1d", "0d"):
        with pytest.raises(ValueError, match="expected an age like 30d"):
            parse_age(bad)
    assert check_statuses(["failed"]) == (ExecutionStatus.FAILED,)
    for live in ("running", "paused", "pending"):
        with pytest.raises(ValueError, match=f"{live} executions are never pruned"):
            check_statuses([live])


def test_prune_deletes_only_finished_old_executions_and_keeps_templates(store_url: str) -> None:
    with open_store(store_url) as store:
        _fill(store)
        before = time.time() - 30 * DAY
        dry = store.prune_executions(before=before, dry_run=True)
        assert (dry.executions, dry.steps, dry.dry_run) == (4, 12, True)
        assert len(_ids(store)) == 11  # a dry run deletes nothing
        only_failed = store.prune_executions(before=before, statuses=[ExecutionStatus.FAILED])
        assert (only_failed.executions, only_failed.steps) == (1, 3)
        report = store.prune_executions(before=before)
        assert (report.executions, report.steps) == (3, 9)
        assert _ids(store) == {
            "new_ok",
            "keep_running",
            "keep_paused",
            "keep_pending",
            "keep_recording_active",
            "keep_template_source",
            "keep_child_of_running",
        }
        with pytest.raises(NotFoundError):
            store.get_steps("old_ok")
        assert len(store.get_steps("keep_running")) == 3
        assert list(store.get_template("tpl").source_executions) == ["keep_template_source"]


def test_sqlite_file_shrinks_back(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with open_store(f"sqlite:///{path}") as store:
        for index in range(60):
            store.create_execution(execution(f"e{index}", OLD, status=ExecutionStatus.SUCCEEDED))
            store.put_steps([step(f"s{i}", i, execution_id=f"e{index}", output=PAYLOAD) for i in (1, 2, 3)])
        store.create_execution(execution("young", NEW, status=ExecutionStatus.SUCCEEDED))
        grown = path.stat().st_size
        with sqlite3.connect(path) as raw:  # a new file is made for incremental vacuum
            assert raw.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
        report = store.prune_executions(before=time.time() - DAY)
        assert report.executions == 60
        assert report.freed_bytes is not None and report.freed_bytes > 60 * 3 * 20_000 * 0.8
        assert path.stat().st_size < grown / 4
        assert _ids(store) == {"young"}


def test_a_sqlite_file_made_without_incremental_vacuum_is_converted(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with open_store(f"sqlite:///{path}") as store:
        store.create_execution(execution("e", OLD, status=ExecutionStatus.SUCCEEDED))
    with sqlite3.connect(path) as raw:  # as files made before retention existed
        raw.execute("PRAGMA auto_vacuum=NONE")
        raw.execute("VACUUM")
        assert raw.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    with open_store(f"sqlite:///{path}") as store:
        store.prune_executions(before=time.time())
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA auto_vacuum").fetchone()[0] == 2


@pytest.mark.slow
@pytest.mark.postgres
def test_postgres_prunes_in_batches_and_skips_rows_another_transaction_holds(pg_cluster: object) -> None:
    from tests.pg import PgCluster

    assert isinstance(pg_cluster, PgCluster)
    url = pg_cluster.create_database()
    with open_store(url) as store:
        for index in range(1_201):
            store.create_execution(execution(f"e{index:05d}", OLD, status=ExecutionStatus.SUCCEEDED))
        store.put_steps([step("s1", 1, execution_id=f"e{i:05d}") for i in range(0, 1_201, 3)])
        raw_url = url.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(raw_url) as held:
            # a claim or a step write in flight holds this row: the prune must neither wait nor take it
            held.execute("SELECT id FROM executions WHERE id = 'e00000' FOR UPDATE")
            started = time.monotonic()
            report = store.prune_executions(before=time.time() - DAY)
            took = time.monotonic() - started
            store.create_execution(execution("during", NEW, status=ExecutionStatus.RUNNING))  # writes go on
        assert (report.executions, report.steps) == (1_200, 400)
        assert took < 20 and report.freed_bytes is None
        assert _ids(store) == {"e00000", "during"}
        assert store.prune_executions(before=time.time() - DAY).executions == 1  # once released


def _cli(*args: str, db: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TOOLREEL_DB": db}
    return subprocess.run(launch_command([str(TOOLREEL), *args]), capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.slow
def test_prune_command_counts_deletes_and_refuses_live_statuses(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(db) as store:
        _fill(store)
    dry = _cli("executions", "prune", "--older-than", "30d", "--dry-run", "--json", db=db)
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout) == {"executions": 4, "steps": 12, "dry_run": True, "freed_bytes": None}
    done = _cli("executions", "prune", "--older-than", "30d", "--status", "succeeded", db=db)
    assert done.returncode == 0 and done.stdout.startswith("deleted 1 executions and 3 steps"), done
    refused = _cli("executions", "prune", "--older-than", "30d", "--status", "running", db=db)
    assert refused.returncode == 2 and "running executions are never pruned" in refused.stderr
    bad = _cli("executions", "prune", "--older-than", "soon", db=db)
    assert bad.returncode == 2 and "expected an age like 30d" in bad.stderr
    with open_store(db) as store:
        assert "old_ok" not in _ids(store) and "old_failed" in _ids(store)


@pytest.mark.slow
@pytest.mark.anyio
async def test_worker_with_retain_prunes_on_its_own(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(db) as store:
        _fill(store)
    env = gateway_env(db)
    process = await anyio.open_process(
        launch_command([str(TOOLREEL), "worker", "--retain", "30d"]),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        with open_store(db) as store:
            await wait_until(lambda: "old_ok" not in _ids(store), 60, "the worker's first prune")
            assert {"keep_running", "keep_paused", "new_ok"} <= _ids(store)
            assert "old_failed" not in _ids(store)
    finally:
        process.send_signal(signal.SIGTERM)
        with anyio.fail_after(30):
            await process.wait()


@pytest.mark.slow
@pytest.mark.anyio
async def test_serve_with_retain_prunes_on_its_own(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(db) as store:
        _fill(store)
    config = write_config(tmp_path / "client.json", {"feat": fixture_entry("features")})
    async with stdio_gateway(["--config", str(config), "--retain", "30d"], gateway_env(db)) as s:
        await status(s)
        with open_store(db) as store:
            await wait_until(lambda: "old_ok" not in _ids(store), 60, "the gateway's first prune")
            assert "keep_template_source" in _ids(store)


@pytest.mark.slow
def test_bad_retain_is_a_usage_error(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    for command in (["worker", "--retain", "forever"], ["serve", "--retain", "forever", "--", "true"]):
        done = _cli(*command, db=db)
        assert done.returncode == 2 and "--retain" in done.stderr and "expected an age" in done.stderr, done
