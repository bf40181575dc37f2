"""Recording through gateways of their own: the HTTP front as a process (large request bodies, stateless
clients told apart), and one client each in-process for `--annotate`, `--no-record`, a ten-megabyte output,
and a process whose store cannot be written (what it says on its stderr)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.gw import (
    HttpGateway,
    call,
    fixture_entry,
    gateway_env,
    http_gateway,
    status,
    stdio_gateway,
    text_of,
    wait_until,
    write_config,
)
from tests.inproc import gateway_in_process
from tests.stored import step_meta, stored_steps
from toolreel.core.store import open_store

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("recording_gateways")]


@pytest.fixture(scope="module")
async def http_gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[HttpGateway]:
    """`toolreel serve --http` over `features`, for what only the HTTP front shows."""
    tmp = tmp_path_factory.mktemp("recording-http")
    config = write_config(tmp / "client.json", {"feat": fixture_entry("features")})
    async with http_gateway(["--config", str(config)], gateway_env(f"sqlite:///{tmp / 'store.db'}")) as gateway:
        yield gateway


# --- the HTTP front ----------------------------------------------------------------------------------------------


async def test_http_front_accepts_large_arguments(http_gw: HttpGateway) -> None:
    text = "z" * (6 * 1024 * 1024)  # stdio takes lines up to 256 MiB; HTTP should not refuse at 4 MiB
    async with http_gw.connect(max_event=64 * 1024 * 1024) as s:
        with anyio.fail_after(60):
            result = await call(s, "feat__echo", {"text": text})
    assert text_of(result) == text


async def test_stateless_clients_are_grouped_per_client(http_gw: HttpGateway) -> None:
    """One stateless client's calls are one recording; another client process with the same name is
    another recording (SPEC §3: two client processes never share an execution)."""
    async with http_gw.connect(mode="auto", client_name="agent-a") as a1:
        first = await call(a1, "feat__echo", {"text": "a1"})
        second = await call(a1, "feat__echo", {"text": "a1 again"})
        version = a1.client.protocol_version
    async with http_gw.connect(mode="auto", client_name="agent-a") as a2:
        same_name = await call(a2, "feat__echo", {"text": "a2"})
    async with http_gw.connect(mode="auto", client_name="agent-b") as b:
        other = await call(b, "feat__echo", {"text": "b"})
    assert version == "2026-07-28"
    assert step_meta(first)[1] == step_meta(second)[1]
    assert len({step_meta(first)[1], step_meta(same_name)[1], step_meta(other)[1]}) == 3
    assert [step_meta(r)[0] for r in (first, second, same_name, other)] == ["echo_1", "echo_2", "echo_1", "echo_1"]


# --- one client each (--annotate, --no-record, a broken store) -----------------------------------------------------


@pytest.fixture
def feat_only(tmp_path: Path) -> tuple[dict[str, Any], str]:
    """`features` alone, and a store of the test's own."""
    return {"feat": fixture_entry("features")}, f"sqlite:///{tmp_path / 'store.db'}"


async def test_annotate_appends_a_text_item_naming_the_step(feat_only: tuple[dict[str, Any], str]) -> None:
    servers, db = feat_only
    async with gateway_in_process(servers, db=db, annotate=True) as s:
        first = await call(s, "feat__add", {"a": 1, "b": 1})
        second = await call(s, "feat__echo", {"text": "{{@add_1.sum}}"})
        instructions = s.client.instructions or ""
    assert [c.type for c in first.content] == ["text", "text"]
    assert "add_1" in first.content[-1].text
    assert first.structured_content == {"sum": 2.0, "operands": {"a": 1.0, "b": 1.0}}
    assert first.content[0].text != first.content[-1].text
    assert "echo_1" in second.content[-1].text and second.content[0].text == "2.0"
    assert step_meta(first)[1] == step_meta(second)[1]  # one client connection, one execution
    assert "@" in instructions


async def test_ten_megabyte_output_is_recorded_and_resolvable(feat_only: tuple[dict[str, Any], str]) -> None:
    servers, db = feat_only
    blob = "x" * (10 * 1024 * 1024)
    async with gateway_in_process(servers, db=db) as s:
        with anyio.fail_after(60):
            big = await call(s, "feat__echo", {"text": json.dumps({"blob": blob, "tag": "big-one"})})
            tag = await call(s, "feat__echo", {"text": "@echo_1.tag"})
            whole = await call(s, "feat__echo", {"text": "@echo_1.blob"})
    assert not big.is_error and len(text_of(big)) > 10 * 1024 * 1024
    assert text_of(tag) == "big-one"
    assert text_of(whole) == blob
    store = open_store(db)
    try:
        execution = step_meta(big)[1]
        await wait_until(lambda: len(stored_steps(store, execution)) >= 3, 30, "the three steps to be stored")
        steps = store.get_steps(execution)
    finally:
        store.close()
    assert len(steps[0].output["blob"]) == len(blob)
    assert steps[2].resolved_input == {"text": blob}


async def test_a_store_that_cannot_be_written_is_reported_and_calls_still_complete(tmp_path: Path) -> None:
    """A process: what is checked is what the gateway writes on its stderr."""
    config = write_config(tmp_path / "client.json", {"feat": fixture_entry("features")})
    broken = "sqlite:////proc/no-such-dir/toolreel.db"  # cannot be created, not even by root
    reported: list[str] = []
    async with stdio_gateway(["--config", str(config)], gateway_env(broken)) as s:

        async def reports() -> bool:
            result = await call(s, "feat__echo", {"text": "still works"})
            assert not result.is_error and text_of(result) == "still works"
            error = (result.meta or {}).get("toolreel/error")
            if error:
                reported.append(error)
            return bool(reported)

        await wait_until(reports, 20, "a result that reports the store error")
        assert s.gateway is not None
        stderr = s.gateway.stderr()
    assert "/proc/no-such-dir" in reported[0]
    assert "/proc/no-such-dir" in stderr


async def test_no_record_forwards_without_steps(feat_only: tuple[dict[str, Any], str]) -> None:
    servers, db = feat_only
    async with gateway_in_process(servers, db=db, record=False) as s:
        result = await call(s, "feat__echo", {"text": "@@literal"})
        report = await status(s)
    assert "toolreel/step" not in (result.meta or {})
    assert report["steps"] == []
