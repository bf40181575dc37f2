"""Schedules (SPEC §15): cron ticks in an explicit time zone, each started exactly once by whichever of the
workers sharing a store gets there first, missed ticks caught up once, every run an execution naming its
schedule; a worker killed mid-run loses nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import anyio
import pytest
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from fixtures._zygote import launch_command
from fixtures.servers import REPO_ROOT, fixture_command
from tests.gw import TOOLREEL, wait_until
from tests.pg import PgCluster
from toolreel.core.caller import ToolCall
from toolreel.core.errors import NotFoundError, ScheduleError
from toolreel.core.model import Execution, ExecutionMode, ExecutionQuery, ExecutionStatus, TemplateDraft
from toolreel.core.schedule import Schedule, check_cron, due_tick, next_tick
from toolreel.core.store import Store, open_store
from toolreel.gateway.cli import app
from toolreel.replayer import Engine
from toolreel.replayer._scheduler import Scheduler

pytestmark = pytest.mark.anyio

TEMPLATE: dict[str, Any] = {
    "name": "nightly",
    "inputs": {"key": {"type": "string"}, "pause": {"type": "number", "default": 0}},
    "steps": [
        {"name": "first", "tool": "features__counter", "input": {"key": "@input.key"}},
        {"name": "nap", "tool": "features__slow", "input": {"seconds": "@input.pause"}, "depends_on": ["first"]},
        {"name": "after", "tool": "features__counter", "input": {"key": "{{@input.key}}-after"}, "depends_on": ["nap"]},
    ],
    "output": "@after.count",
}


def _at(text: str, tz: str = "UTC") -> float:
    return datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(tz)).timestamp()


def _schedule(cron: str, last_tick: float, tz: str = "UTC") -> Schedule:
    return Schedule("s1", "nightly", cron, tz, {"key": "k"}, created_at=last_tick, last_tick=last_tick)


# ------------------------------------------------------------------ the tick rule


def test_a_tick_is_due_once_its_time_came_and_only_the_latest_missed_one() -> None:
    nightly = _schedule("0 3 * * *", _at("2026-11-20 12:00"))
    assert due_tick(nightly, _at("2026-11-21 02:59:59")) is None
    assert due_tick(nightly, _at("2026-11-21 03:00")) == _at("2026-11-21 03:00")
    # three nights missed (no worker ran): one run, the latest tick's; the others are skipped
    assert due_tick(nightly, _at("2026-11-24 09:00")) == _at("2026-11-24 03:00")
    assert due_tick(nightly.replace(last_tick=_at("2026-11-24 03:00")), _at("2026-11-24 09:00")) is None
    assert due_tick(nightly.replace(paused=True), _at("2026-11-24 09:00")) is None


def test_the_time_zone_is_the_schedules_own_across_a_daylight_saving_change() -> None:
    paris = _schedule("0 3 * * *", _at("2026-10-24 12:00", "Europe/Paris"), tz="Europe/Paris")
    # 03:00 in Paris is 01:00 UTC in summer time and 02:00 UTC after the change of 25 October
    assert next_tick(paris, paris.last_tick) == _at("2026-10-25 02:00")
    assert next_tick(paris, _at("2026-10-25 02:00")) == _at("2026-10-26 02:00")
    assert paris.as_dict()["next"] == "2026-10-25T03:00:00+01:00"


def test_bad_expressions_and_zones_are_refused_with_what_to_write() -> None:
    assert check_cron("  0  3 * * * ", "Europe/Paris") == "0 3 * * *"
    assert check_cron("*/5 * * * * *", "UTC") == "*/5 * * * * *"
    with pytest.raises(ScheduleError, match=r"'0 3 \* \*' is not valid .*5 fields"):
        check_cron("0 3 * *", "UTC")
    with pytest.raises(ScheduleError, match=r"unknown time zone 'Mars/Base'.*IANA"):
        check_cron("0 3 * * *", "Mars/Base")


# ------------------------------------------------------------------ store, scheduler and command line


class _NoCalls:
    """Starting a scheduled run calls nothing: the workers that drive it do."""

    def server_of(self, name: str) -> str | None:
        return None

    async def call_tool(self, call: ToolCall) -> dict[str, Any]:
        raise AssertionError(f"nothing is called when a tick starts, not {call.name}")


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _scheduled(store: Store, schedule_id: str) -> list[Execution]:
    page, _ = store.list_executions(ExecutionQuery(template="nightly", limit=500))
    return sorted((e for e in page if e.schedule == schedule_id), key=lambda e: e.id)


def _add(store: Store, cron: str, now: float, inputs: dict[str, Any] | None = None) -> Schedule:
    schedule = Schedule(f"s{int(now)}", "nightly", cron, "UTC", inputs or {"key": "k"}, now, now)
    store.add_schedule(schedule)
    return schedule


@pytest.mark.postgres
@pytest.mark.slow  # PostgreSQL is a server process
async def test_three_schedulers_on_postgres_start_each_of_sixty_ticks_exactly_once(pg_cluster: PgCluster) -> None:
    """A minute of a schedule that ticks every second, on a test clock: at each second the three race for the
    tick (each with its own connections); exactly one run per tick comes out, whoever wins."""
    url = pg_cluster.create_database()
    start = _at("2026-11-26 10:00")
    clock = _Clock(start)
    stores = [open_store(url) for _ in range(3)]
    try:
        stores[0].save_template(TemplateDraft("nightly", TEMPLATE))
        schedule = _add(stores[0], "* * * * * *", start)
        wins: list[list[str]] = [[], [], []]
        async with (
            Engine(stores[0], _NoCalls()) as a,
            Engine(stores[1], _NoCalls()) as b,
            Engine(stores[2], _NoCalls()) as c,
        ):
            schedulers = [Scheduler(engine, clock=clock) for engine in (a, b, c)]
            for second in range(1, 61):
                clock.now = start + second + 0.25
                async with anyio.create_task_group() as tg:
                    for index, scheduler in enumerate(schedulers):
                        tg.start_soon(_race, scheduler, wins[index])
        runs = _scheduled(stores[0], schedule.id)
    finally:
        for store in stores:
            store.close()
    assert sorted(r.id for r in runs) == sorted(f"{schedule.id}.{int(start) + s}" for s in range(1, 61))
    assert sorted(i for won in wins for i in won) == sorted(r.id for r in runs)  # each started by one of them
    assert {r.status for r in runs} == {ExecutionStatus.PENDING} and {r.inputs["key"] for r in runs} == {"k"}


async def _race(scheduler: Scheduler, won: list[str]) -> None:
    won.extend(await scheduler.start_due())


async def test_a_tick_whose_run_cannot_start_is_a_failed_execution_of_its_schedule(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path / 's.db'}") as store:
        store.save_template(TemplateDraft("nightly", TEMPLATE))
        start = _at("2026-11-26 10:00")
        schedule = _add(store, "*/10 * * * *", start, {"key": "k", "unknown": 1})
        clock = _Clock(start + 3600)  # six ticks missed: one run
        async with Engine(store, _NoCalls()) as engine:
            assert len(await Scheduler(engine, clock=clock).start_due()) == 1
            assert await Scheduler(engine, clock=clock).start_due() == []
        (run,) = _scheduled(store, schedule.id)
        assert run.id == f"{schedule.id}.{int(start) + 3600}" and run.status is ExecutionStatus.FAILED
        assert run.error is not None and run.error.startswith(f"schedule {schedule.id}: ") and "unknown" in run.error
    db = f"sqlite:///{tmp_path / 's.db'}"
    listed = CliRunner().invoke(app, ["executions", "list", "--json", "--db", db])
    assert [(e["execution_id"], e["schedule"]) for e in json.loads(listed.stdout)["executions"]] == [
        (run.id, schedule.id)
    ]
    shown = CliRunner().invoke(app, ["executions", "show", run.id, "--json", "--db", db])
    assert json.loads(shown.stdout)["schedule"] == schedule.id


def test_a_version_3_store_gets_schedules_and_keeps_its_executions(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    with open_store(url) as store:
        store.save_template(TemplateDraft("nightly", TEMPLATE))
        store.create_execution(Execution("old1", ExecutionMode.AUTO, ExecutionStatus.SUCCEEDED, 1.0, 2.0))
    engine = create_engine(url)
    with engine.begin() as conn:  # back to what version 3 wrote
        conn.execute(text("DROP TABLE schedules"))
        conn.execute(text("ALTER TABLE executions DROP COLUMN schedule"))
        conn.execute(text("UPDATE meta SET value = '3' WHERE key = 'schema_version'"))
    engine.dispose()
    with open_store(url) as store:
        assert store.get_execution("old1").schedule is None
        _add(store, "0 3 * * *", 10.0)
        assert [s.cron for s in store.list_schedules()] == ["0 3 * * *"]


def test_the_schedule_commands_add_list_pause_resume_and_remove(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 's.db'}"
    with open_store(db) as store:
        store.save_template(TemplateDraft("nightly", TEMPLATE))
    runner = CliRunner()
    added = runner.invoke(app, ["schedule", "add", "nightly", "--cron", "0 3 * * *", "--tz", "Europe/Paris",
                                "-i", "key=k", "-i", "pause=2", "--json", "--db", db])  # fmt: skip
    assert added.exit_code == 0, added.output
    shown = json.loads(added.stdout)
    assert shown["inputs"] == {"key": "k", "pause": 2} and shown["tz"] == "Europe/Paris"
    assert shown["next"].endswith(("T03:00:00+01:00", "T03:00:00+02:00"))
    listed = runner.invoke(app, ["schedule", "list", "--json", "--db", db])
    assert [s["id"] for s in json.loads(listed.stdout)] == [shown["id"]]
    assert runner.invoke(app, ["schedule", "pause", shown["id"], "--db", db]).exit_code == 0
    with open_store(db) as store:
        assert store.get_schedule(shown["id"]).paused and store.list_schedules(active_only=True) == []
    assert runner.invoke(app, ["schedule", "resume", shown["id"], "--db", db]).exit_code == 0
    with open_store(db) as store:
        assert not store.get_schedule(shown["id"]).paused
    assert runner.invoke(app, ["schedule", "remove", shown["id"], "--db", db]).exit_code == 0
    with open_store(db) as store, pytest.raises(NotFoundError, match="toolreel schedule list"):
        store.get_schedule(shown["id"])


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--cron", "0 3 * *", "-i", "key=k"], "is not valid"),
        (["--cron", "0 3 * * *", "--tz", "Nowhere/City", "-i", "key=k"], "unknown time zone"),
        (["--cron", "0 3 * * *", "-i", "key=k", "-i", "nope=1"], "nope"),
        (["--cron", "0 3 * * *"], "key"),  # a required input missing
    ],
)
def test_a_bad_schedule_is_refused_and_nothing_is_stored(tmp_path: Path, args: list[str], said: str) -> None:
    db = f"sqlite:///{tmp_path / 's.db'}"
    with open_store(db) as store:
        store.save_template(TemplateDraft("nightly", TEMPLATE))
    refused = CliRunner().invoke(app, ["schedule", "add", "nightly", *args, "--db", db])
    assert refused.exit_code == 2 and said in refused.stderr, refused.output
    with open_store(db) as store:
        assert store.list_schedules() == []


# ------------------------------------------------------------------ real workers on PostgreSQL


def _setup(tmp_path: Path, url: str) -> Path:
    command, *args = fixture_command("features")
    server = {"command": command, "args": args, "cwd": str(REPO_ROOT),
              "env": {"FIXTURE_COUNTER_FILE": "${env:COUNTER_FILE}"}}  # fmt: skip
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"mcpServers": {"features": server}}), encoding="utf-8")
    with open_store(url) as store:
        store.save_template(TemplateDraft("nightly", TEMPLATE))
    return config


def _counts(tmp_path: Path) -> dict[str, int]:
    total: dict[str, int] = {}
    for path in tmp_path.glob("counts-*.json"):
        for key, count in json.loads(path.read_text() or "{}").items():
            total[key] = total.get(key, 0) + count
    return total


def _owner(tmp_path: Path, index: int) -> str | None:
    for line in (tmp_path / f"worker-{index}.err").read_text(errors="replace").splitlines():
        if line.startswith("toolreel worker ") and line.endswith(": ready"):
            return line.removeprefix("toolreel worker ").removesuffix(": ready")
    return None


def _napping_on(store: Store, schedule_id: str, owner: str) -> Callable[[], bool]:
    """A run of the schedule driven by `owner` whose first step is committed and whose nap is under way."""

    def napping() -> bool:
        for run in _scheduled(store, schedule_id):
            if run.claimed_by == owner and run.status is ExecutionStatus.RUNNING:
                steps = {s.name: s.status for s in store.get_steps(run.id)}
                if steps.get("first") and steps["first"].finished and "after" not in steps:
                    return True
        return False

    return napping


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_three_workers_run_a_per_second_schedule_once_per_tick_and_a_killed_one_loses_nothing(
    tmp_path: Path, pg_cluster: PgCluster
) -> None:
    url = pg_cluster.create_database()
    config = _setup(tmp_path, url)
    with open_store(url) as store:
        processes = []
        try:
            for index in range(3):
                env = {**os.environ, "TOOLREEL_DB": url, "COUNTER_FILE": str(tmp_path / f"counts-{index}.json")}
                args = ["worker", "--config", str(config), "--poll", "0.1", "--lease-seconds", "2", "--grace", "1"]
                with (tmp_path / f"worker-{index}.err").open("wb") as err:
                    processes.append(
                        await anyio.open_process(
                            launch_command([str(TOOLREEL), *args]), env=env, stdout=subprocess.DEVNULL, stderr=err
                        )
                    )
            await wait_until(lambda: all(_owner(tmp_path, i) for i in range(3)), 120, "three workers to be ready")
            now = time.time()
            schedule = Schedule("every1s", "nightly", "* * * * * *", "UTC", {"key": "k", "pause": 1.0}, now, now)
            store.add_schedule(schedule)
            doomed = _owner(tmp_path, 0)
            assert doomed is not None
            await wait_until(_napping_on(store, schedule.id, doomed), 120, "the first worker to be mid-run")
            processes[0].send_signal(signal.SIGKILL)
            await processes[0].wait()
            # its runs not finished then: a call of theirs in flight at the kill may run again (SPEC §8)
            at_risk = [r.id for r in _scheduled(store, schedule.id) if r.claimed_by == doomed and not r.status.finished]
            await wait_until(lambda: len(_scheduled(store, schedule.id)) >= 4, 120, "four ticks started")
            store.pause_schedule(schedule.id, paused=True, now=0)
            runs = _scheduled(store, schedule.id)
            await wait_until(lambda: all(store.get_execution(r.id).status.finished for r in runs), 120, "every run")
            runs = [store.get_execution(r.id) for r in runs]
        finally:
            for process in processes:
                if process.returncode is None:
                    process.send_signal(signal.SIGTERM)
            with anyio.CancelScope(shield=True), anyio.move_on_after(30):
                for process in processes:
                    await process.wait()
    ticks = [int(r.id.rpartition(".")[2]) for r in runs]
    assert len(set(ticks)) == len(runs) and all(t > int(now) for t in ticks)  # one run per tick, none before
    assert {r.status for r in runs} == {ExecutionStatus.SUCCEEDED}, [(r.id, r.error) for r in runs]
    assert any(r.fence >= 2 for r in runs)  # the killed worker's run was claimed again and finished elsewhere
    counts = _counts(tmp_path)
    assert set(counts) == {"k", "k-after"}
    for key in counts:  # every run's steps ran, and none twice but a call the kill cut short
        assert len(runs) <= counts[key] <= len(runs) + len(at_risk), (counts, len(runs), at_risk)
