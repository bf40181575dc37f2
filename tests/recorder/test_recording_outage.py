"""A store outage never ends the gateway, nor a `toolreel run`: calls go on, recording backs up,
`toolreel__status` and `_meta["toolreel/error"]` say so, and everything is written once the store is
back; a run waits the outage out. Real PostgreSQL, a private cluster stopped and started under them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import pg
from tests.gw import (
    Connected,
    call,
    fixture_entry,
    gateway_env,
    status,
    stdio_gateway,
    text_of,
    unsaved,
    wait_until,
    write_config,
)
from toolreel.core.store import open_store

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.postgres]


@pytest.fixture
def private_cluster() -> Iterator[pg.PgCluster]:
    """A cluster of this test's own: stopping it must not touch the session's. Commits are
    synchronous, as on a real server: a row committed before the stop is there after it."""
    try:
        with pg.postgres_cluster() as cluster:
            with cluster.admin() as conn:
                conn.execute("ALTER SYSTEM SET synchronous_commit = on")
                conn.execute("SELECT pg_reload_conf()")
            yield cluster
    except pg.PgUnavailable as exc:
        pg.require_or_skip(str(exc))


async def _echo(s: Connected, text: str) -> Any:
    result = await call(s, "feat__echo", {"text": text})
    assert text_of(result) == text
    return result


async def test_a_postgresql_outage_degrades_recording_and_loses_nothing(
    private_cluster: pg.PgCluster, tmp_path: Path
) -> None:
    url = private_cluster.create_database()
    config = write_config(tmp_path / "client.json", {"feat": fixture_entry("features")})
    async with stdio_gateway(["--config", str(config)], gateway_env(url)) as s:
        assert s.gateway is not None
        first = await _echo(s, "before 1")
        execution = (first.meta or {})["toolreel/execution"]
        await _echo(s, "before 2")
        await wait_until(lambda: _unsaved(s, 0), 30, "the first calls saved")

        private_cluster.stop()
        during = [await _echo(s, f"during {n}") for n in range(1, 11)]  # every call is answered

        async def told() -> bool:  # the recorder process reports the failing write; results and status carry it
            result = await _echo(s, "during more")
            during.append(result)
            now = await status(s)
            return "toolreel/error" in (result.meta or {}) and now["recording_error"] is not None

        await wait_until(told, 30, "results and toolreel__status to say recording fails")
        assert (await status(s))["unsaved"] >= len(during)
        gateway = s.gateway
        # the periodic template refresh and the look for runs to resume meet the outage: the gateway lives on
        await wait_until(lambda: "template list cannot be refreshed" in gateway.stderr(), 30, "a template refresh")
        assert gateway.process.returncode is None

        private_cluster.start()
        await wait_until(lambda: _unsaved(s, 0), 60, "everything written once the store is back")
        view = await call(s, "toolreel__get_execution", {"id": execution})
        assert not view.is_error, text_of(view)
        assert isinstance(view.structured_content, dict)
        names = [step["name"] for step in view.structured_content["steps"]]
        assert names == [f"echo_{n}" for n in range(1, 3 + len(during))]
        after = await _echo(s, "after")
        assert "toolreel/error" not in (after.meta or {})
    assert await gateway.wait_exit(10) == 0
    with open_store(url) as store:
        assert len(store.get_steps(execution)) == 3 + len(during)


async def _unsaved(s: Connected, expected: int) -> bool:
    return await unsaved(s) == expected


async def test_toolreel_run_rides_out_a_short_store_outage(private_cluster: pg.PgCluster, tmp_path: Path) -> None:
    from tests.callers import saved
    from tests.replayer.test_replayer_durability import chain, counts, finished_steps, only_execution, replayer_process
    from tests.replayer.test_replayer_durability import write_config as replayer_config
    from toolreel.core.model import ExecutionStatus

    url = private_cluster.create_database()
    store = open_store(url)
    saved(store, chain("through-outage", 3, 0.5))
    args = ["run", "through-outage", "--json", "--db", url, "--config", str(replayer_config(tmp_path))]
    with replayer_process(tmp_path, "run", *args) as runner:
        await wait_until(
            lambda: (e := only_execution(store)) is not None and "c1" in finished_steps(store, e.id), 60, "c1"
        )
        private_cluster.stop()
        err = tmp_path / "run.err"
        await wait_until(lambda: "retrying for up to" in err.read_text(), 30, "the run to wait for the store")
        private_cluster.start()
        await wait_until(lambda: runner.poll() is not None, 60, "the run to finish")
    assert runner.returncode == 0, err.read_text()
    execution = only_execution(store)
    assert execution is not None and execution.status == ExecutionStatus.SUCCEEDED
    assert counts(tmp_path) == {"c1": 1, "c2": 1, "c3": 1}
    store.close()
