"""Several gateways, one PostgreSQL store (SPEC §9): what one instance saves or starts, the other sees.

Two real `toolreel serve --http` processes share a throwaway PostgreSQL database: a template saved
through one is a `reel__` tool of the other (announced with list_changed); a replay started on one is
watched and cancelled from the other.
"""

from __future__ import annotations

from pathlib import Path

import mcp_types as types
import pytest

from tests.gw import call, fixture_entry, gateway_env, http_gateway, text_of, wait_until, write_config
from tests.pg import PgCluster

pytestmark = [pytest.mark.anyio, pytest.mark.postgres, pytest.mark.slow]


async def test_templates_and_runs_of_one_instance_are_seen_and_cancelled_on_the_other(
    tmp_path: Path, pg_cluster: PgCluster
) -> None:
    env = gateway_env(pg_cluster.create_database())
    config = write_config(tmp_path / "client.json", {"feat": fixture_entry("features")})
    async with (
        http_gateway(["--config", str(config)], env) as one,
        http_gateway(["--config", str(config)], env) as two,
        one.connect() as a,
        two.connect() as b,
    ):
        nap = await call(a, "feat__slow", {"seconds": 0.1})
        assert not nap.is_error, text_of(nap)
        saved = await call(a, "toolreel__save_template", {"name": "nap", "inputs": {"seconds": 0.1}})
        assert not saved.is_error and (saved.structured_content or {}).get("saved") is True, text_of(saved)

        async def listed_on_two() -> bool:
            return "reel__nap" in {t.name for t in (await b.client.list_tools()).tools}

        await wait_until(listed_on_two, 30, "reel__nap on the other gateway")
        await b.probe.wait_for(
            lambda: bool(b.probe.of_type(types.ToolListChangedNotification)), 30, "list_changed on the other gateway"
        )

        started = await call(a, "toolreel__run_template", {"name": "nap", "inputs": {"seconds": 60}, "wait": False})
        assert not started.is_error, text_of(started)
        execution_id = (started.structured_content or {})["execution_id"]

        async def running_on_two() -> bool:
            seen = await call(b, "toolreel__get_execution", {"id": execution_id})
            return (seen.structured_content or {}).get("status") == "running"

        await wait_until(running_on_two, 30, "the run seen running from the other gateway")
        await call(b, "toolreel__cancel_execution", {"id": execution_id})

        async def cancelled() -> bool:
            seen = await call(a, "toolreel__get_execution", {"id": execution_id})
            return (seen.structured_content or {}).get("status") == "cancelled"

        await wait_until(cancelled, 30, "the run cancelled from the other gateway")
