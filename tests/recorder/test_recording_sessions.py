"""Per-session recording state is released when an HTTP session closes: a gateway that serves many
short sessions holds only the open ones (real `toolreel serve --http`, the SDK client, which ends its
session with a DELETE)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gw import call, fixture_entry, gateway_env, http_gateway, status, text_of, write_config

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_closed_http_sessions_release_their_recording_state(tmp_path: Path) -> None:
    config = write_config(tmp_path / "client.json", {"feat": fixture_entry("features")})
    async with http_gateway(["--config", str(config)], gateway_env(f"sqlite:///{tmp_path / 's.db'}")) as gw:
        executions = set()
        for n in range(12):
            async with gw.connect() as s:
                result = await call(s, "feat__echo", {"text": f"session {n}"})
                assert text_of(result) == f"session {n}"
                executions.add((result.meta or {})["toolreel/execution"])
        assert len(executions) == 12  # one recording per session
        async with gw.connect() as s:
            await call(s, "feat__echo", {"text": "the open one"})
            assert (await status(s))["open_sessions"] == 1  # the twelve closed sessions are gone
