"""One recording across gateways (SPEC §3, §9): a stateless-era client whose calls a round-robin load balancer
spreads over two `toolreel serve --http` instances sharing one PostgreSQL store records one execution, its step
names count on whichever instance takes the call, and its refs resolve there."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from tests.balancer import RoundRobin, round_robin
from tests.gw import (
    Connected,
    Probe,
    call,
    client_for,
    fixture_entry,
    gateway_env,
    http_gateway,
    http_transport,
    text_of,
    write_config,
)
from tests.pg import PgCluster
from toolreel.core.model import StepRecord
from toolreel.core.store import open_store

pytestmark = [pytest.mark.anyio, pytest.mark.postgres, pytest.mark.slow]


@contextlib.asynccontextmanager
async def _balanced(tmp_path: Path, db_url: str) -> AsyncIterator[tuple[Connected, RoundRobin]]:
    """Two gateways on one database behind a round-robin balancer, and a stateless-era client of it."""
    env = gateway_env(db_url)
    config = write_config(tmp_path / "client.json", {"feat": fixture_entry("features")})
    async with (
        http_gateway(["--config", str(config)], env) as one,
        http_gateway(["--config", str(config)], env) as two,
        round_robin([f"http://127.0.0.1:{one.port}", f"http://127.0.0.1:{two.port}"]) as (url, balancer),
    ):
        probe = Probe()
        async with client_for(http_transport(f"{url}/mcp"), "auto", probe) as client:
            connected = Connected(client, probe)
            assert connected.modern, client.protocol_version
            yield connected, balancer


def _stored(db_url: str, execution: str) -> list[StepRecord]:
    with open_store(db_url) as store:
        return store.get_steps(execution)


def _step(result: object) -> tuple[str, str]:
    meta = getattr(result, "meta", None) or {}
    return str(meta["toolreel/step"]), str(meta["toolreel/execution"])


async def test_calls_alternating_between_gateways_are_one_recording_whose_refs_resolve_on_either(
    tmp_path: Path, pg_cluster: PgCluster
) -> None:
    db_url = pg_cluster.create_database()
    async with _balanced(tmp_path, db_url) as (client, balancer):
        with anyio.fail_after(120):
            first = await call(client, "feat__echo", {"text": "a"})
            steps = [_step(first)]
            for index in range(2, 8):  # each call passes the previous step's output on, by ref
                result = await call(client, "feat__echo", {"text": f"{{{{@echo_{index - 1}}}}}{index}"})
                assert not result.is_error, text_of(result)
                steps.append(_step(result))
            assert text_of(result) == "a234567"
            assert [name for name, _ in steps] == [f"echo_{n}" for n in range(1, 8)]
            assert len({execution for _, execution in steps}) == 1
            assert min(balancer.served.values()) >= 4 and len(balancer.served) == 2  # both gateways took calls

            # a step set by hand on one gateway is passed on from the other
            preset = await call(client, "toolreel__set_step_result", {"output": {"v": 42}})
            assert (preset.structured_content or {}) == {"step": "preset_1", "execution_id": steps[0][1]}
            for _ in range(2):
                echoed = await call(client, "feat__echo", {"text": "{{@preset_1.v}}"})
                assert text_of(echoed) == "42", text_of(echoed)

            execution = steps[0][1]
            seen = await call(client, "toolreel__get_execution", {"id": execution})
            stored = (seen.structured_content or {})["steps"]
            names = [*(f"echo_{n}" for n in range(1, 8)), "preset_1", "echo_8", "echo_9"]
            assert [(s["name"], s["status"]) for s in stored] == [(name, "succeeded") for name in names]
            assert [s.seq for s in _stored(db_url, execution)] == list(range(1, 11))


async def test_calls_in_flight_on_both_gateways_get_distinct_names(tmp_path: Path, pg_cluster: PgCluster) -> None:
    db_url = pg_cluster.create_database()
    async with _balanced(tmp_path, db_url) as (client, balancer):
        first = await call(client, "feat__echo", {"text": "start"})
        _, execution = _step(first)
        names: list[str] = []

        async def one(index: int) -> None:
            result = await call(client, "feat__echo", {"text": f"{{{{@echo_1}}}} {index}"})
            assert not result.is_error, text_of(result)
            name, where = _step(result)
            assert where == execution
            names.append(name)

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for index in range(12):
                    tg.start_soon(one, index)
        assert sorted(names) == sorted(f"echo_{n}" for n in range(2, 14))
        assert len(balancer.served) == 2
        seen = await call(client, "toolreel__get_execution", {"id": execution})
        stored = (seen.structured_content or {})["steps"]
        assert sorted(s["name"] for s in stored) == sorted(f"echo_{n}" for n in range(1, 14))
        assert {s["status"] for s in stored} == {"succeeded"}
        assert sorted(s.seq for s in _stored(db_url, execution)) == list(range(1, 14))
