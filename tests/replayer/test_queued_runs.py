"""Queued runs (SPEC §8, §9): `run --detach` stores a pending execution; workers sharing one PostgreSQL store
claim and drive each exactly once; a worker killed mid-run loses nothing; `executions show --follow` watches.

Every worker is a real `toolreel worker` process with its own `features` fixture server, whose counter file
is the worker's own (the config expands `${env:COUNTER_FILE}`): summed over the files, each run's counters
say how many times its steps really ran, and each file says which worker ran them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from fixtures._zygote import launch_command
from fixtures.servers import REPO_ROOT, fixture_command
from tests.gw import TOOLREEL, wait_until
from tests.pg import PgCluster
from toolreel.core.caller import ToolCall
from toolreel.core.model import ExecutionStatus, TemplateDraft
from toolreel.core.store import Store, open_store
from toolreel.core.template_io import stored_template
from toolreel.replayer import Engine

# Worker processes start, claim and take over on the machine's own schedule: each test bounds its waits
# itself (up to 360 s on a machine busy with other work), so the suite's 120 s default would cut them short.
pytestmark = [pytest.mark.anyio, pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(420)]

TEMPLATE: dict[str, Any] = {
    "name": "queued",
    "inputs": {"key": {"type": "string"}, "pause": {"type": "number", "default": 0}},
    "steps": [
        {"name": "first", "tool": "features__counter", "input": {"key": "@input.key"}},
        {"name": "nap", "tool": "features__slow", "input": {"seconds": "@input.pause"}, "depends_on": ["first"]},
        {"name": "after", "tool": "features__counter", "input": {"key": "{{@input.key}}-after"}, "depends_on": ["nap"]},
    ],
    "output": "@after.count",
}


class _NoCalls:
    """Queuing calls nothing: the workers do."""

    def server_of(self, name: str) -> str | None:
        return None

    async def call_tool(self, call: ToolCall) -> dict[str, Any]:
        raise AssertionError(f"nothing is called when queuing, not {call.name}")


def _setup(tmp_path: Path, pg_cluster: PgCluster) -> tuple[str, Path]:
    url = pg_cluster.create_database()
    command, *args = fixture_command("features")
    server = {
        "command": command,
        "args": args,
        "cwd": str(REPO_ROOT),
        "env": {"FIXTURE_COUNTER_FILE": "${env:COUNTER_FILE}"},
    }
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"mcpServers": {"features": server}}), encoding="utf-8")
    with open_store(url) as store:
        store.save_template(TemplateDraft("queued", TEMPLATE))
    return url, config


async def _enqueue(store: Store, keys: list[str], pause: float) -> list[str]:
    template = stored_template(store.get_template("queued"))
    async with Engine(store, _NoCalls()) as engine:
        return [await engine.enqueue(template, {"key": key, "pause": pause}) for key in keys]


@asynccontextmanager
async def _workers(
    count: int, url: str, config: Path, tmp_path: Path, *, lease: float
) -> AsyncIterator[list[anyio.abc.Process]]:
    processes = []
    try:
        for index in range(count):
            env = {**os.environ, "TOOLREEL_DB": url, "COUNTER_FILE": str(tmp_path / f"counts-{index}.json")}
            args = ["worker", "--config", str(config), "--capacity", "8", "--poll", "0.1"]
            args += ["--lease-seconds", f"{lease:g}"]
            with (tmp_path / f"worker-{index}.err").open("wb") as err:  # the child keeps its own descriptor
                processes.append(
                    await anyio.open_process(
                        launch_command([str(TOOLREEL), *args]), env=env, stdout=subprocess.DEVNULL, stderr=err
                    )
                )
        yield processes
    finally:
        for process in processes:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
        with anyio.CancelScope(shield=True), anyio.move_on_after(30):
            for process in processes:
                await process.wait()


async def _all_ready(tmp_path: Path, count: int) -> None:
    """Each worker says `ready` on stderr once its engine and upstreams are up."""

    def ready() -> bool:
        return all(b": ready" in (tmp_path / f"worker-{i}.err").read_bytes() for i in range(count))

    await wait_until(ready, 120, f"{count} workers to be ready")


def _counts(tmp_path: Path, index: int) -> dict[str, int]:
    path = tmp_path / f"counts-{index}.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _first_steps_finished(store: Store, ids: list[str]) -> int:
    return sum(1 for i in ids for step in store.get_steps(i) if step.name == "first" and step.status.finished)


def _finished(store: Store, ids: list[str]) -> bool:
    return all(store.get_execution(i).status.finished for i in ids)


async def test_four_workers_drive_two_hundred_queued_runs_each_exactly_once(
    tmp_path: Path, pg_cluster: PgCluster
) -> None:
    url, config = _setup(tmp_path, pg_cluster)
    keys = [f"k{i:03d}" for i in range(200)]
    with open_store(url) as store:
        # A lease long enough that a live worker renews it however busy the machine: a claim whose lease
        # lapses is taken over and its call in flight re-run (SPEC §8), which is not what this test is about.
        async with _workers(4, url, config, tmp_path, lease=60):
            # queued once every worker polls: a worker still starting must not find the queue already drained
            await _all_ready(tmp_path, 4)
            ids = await _enqueue(store, keys, 0)
            await wait_until(lambda: _finished(store, ids), 300, "200 queued runs to finish")
        assert {store.get_execution(i).status for i in ids} == {ExecutionStatus.SUCCEEDED}
        attempts = {s.attempt for i in ids for s in store.get_steps(i, all_attempts=True)}
    per_worker = [_counts(tmp_path, index) for index in range(4)]
    total: Counter[str] = Counter()
    for counts in per_worker:
        total.update(counts)
    assert total == Counter({**{k: 1 for k in keys}, **{f"{k}-after": 1 for k in keys}})  # each step ran once
    assert attempts == {1}
    assert all(len(counts) >= 10 for counts in per_worker), [len(c) for c in per_worker]  # spread over all four


async def test_a_worker_killed_mid_run_loses_nothing(tmp_path: Path, pg_cluster: PgCluster) -> None:
    url, config = _setup(tmp_path, pg_cluster)
    keys = [f"r{i:02d}" for i in range(16)]
    with open_store(url) as store:
        # The killed worker's claims are taken over at once (its process is gone from this host), whatever
        # the lease; a short one would also let them lapse.
        async with _workers(2, url, config, tmp_path, lease=2) as processes:
            # queued once both poll, so both take runs; each run naps long enough (5 s) that a busy machine
            # still sees the killed worker's runs in flight when it notices they started
            await _all_ready(tmp_path, 2)
            ids = await _enqueue(store, keys, 5)
            doomed: list[int] = []

            # on a busy machine a side effect can come well before its step's result is committed: wait
            # for both, so that there is a finished step to not re-run and a run in flight to take over
            def started_and_committed() -> bool:
                started = [index for index in (0, 1) if len(_counts(tmp_path, index)) >= 2]
                doomed[:] = started[:1]
                return bool(started) and _first_steps_finished(store, ids) >= 1

            await wait_until(started_and_committed, 120, "a worker to start runs and commit a step")
            killed = processes[doomed[0]]
            killed.send_signal(signal.SIGKILL)  # no shutdown: its claims must lapse and be taken over
            await killed.wait()
            # what was finished when it died: never run again. (A call in flight then is re-run, per SPEC §8.)
            done_then = {
                (key, step.name)
                for key, execution_id in zip(keys, ids, strict=True)
                for step in store.get_steps(execution_id)
                if step.status.finished
            }
            await wait_until(lambda: _finished(store, ids), 240, "every run to finish on the survivor")
        assert {store.get_execution(i).status for i in ids} == {ExecutionStatus.SUCCEEDED}
    first, second = _counts(tmp_path, doomed[0]), _counts(tmp_path, 1 - doomed[0])
    total = Counter(first) + Counter(second)
    assert set(total) == set(keys) | {f"{k}-after" for k in keys}
    counted = [k for k in keys if (k, "first") in done_then]
    assert counted
    for key in counted:
        assert total[key] == 1, (key, total)  # finished before the kill: not re-run by the survivor
    assert all(total[f"{k}-after"] == 1 for k in keys if (k, "after") in done_then)
    taken_over = [k for k in keys if k in first and f"{k}-after" in second]
    assert taken_over, (first, second)  # started on the killed worker, finished on the other


async def test_detach_queues_and_follow_watches_it_to_the_end(tmp_path: Path, pg_cluster: PgCluster) -> None:
    url, config = _setup(tmp_path, pg_cluster)
    env = {**os.environ, "TOOLREEL_DB": url}
    with anyio.fail_after(120):
        queued = await anyio.run_process(
            launch_command([str(TOOLREEL), "run", "queued", "-i", "key=solo", "--detach"]), env=env
        )
    execution_id = queued.stdout.decode().strip()
    assert f"toolreel executions show {execution_id} --follow" in queued.stderr.decode()
    with open_store(url) as store:
        assert store.get_execution(execution_id).status is ExecutionStatus.PENDING
    follow = await anyio.open_process(
        launch_command([str(TOOLREEL), "executions", "show", execution_id, "--follow"]),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert follow.stderr is not None
    stderr = BufferedByteReceiveStream(follow.stderr)
    seen: list[str] = []
    with anyio.fail_after(120):  # follow has seen the execution wait before a worker may take it
        while [execution_id, "pending"] not in (line.split() for line in seen):
            seen.append((await stderr.receive_until(b"\n", 65536)).decode())
    async with _workers(1, url, config, tmp_path, lease=60):
        with anyio.fail_after(120):
            code = await follow.wait()
    rest: list[bytes] = []
    with anyio.fail_after(30), contextlib.suppress(anyio.EndOfStream):
        while True:
            rest.append(await stderr.receive(65536))
    watched = "\n".join([*seen, b"".join(rest).decode()])
    assert code == 0, watched
    lines = [line.split() for line in watched.splitlines()]
    assert [execution_id, "pending"] in lines and [execution_id, "succeeded"] in lines
    assert ["after", "succeeded"] in lines and ["first", "succeeded"] in lines
    with anyio.fail_after(120):
        refused = await anyio.run_process(
            launch_command([str(TOOLREEL), "run", "queued", "-i", "key=x", "--detach", "--secret", "key=env:HOME"]),
            env=env,
            check=False,
        )
    assert refused.returncode == 2 and "--secret cannot travel to the worker" in refused.stderr.decode()
