"""Upstream lifecycle (SPEC §2): failures stay with their server, crashes restart with backoff, and no
child process outlives the gateway however it ends (SIGTERM, SIGINT, stdin closed, SIGKILL).

Child pids come from /proc/<gateway>/task/*/children; every wait is a bounded poll.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import mcp_types as types
import pytest

from tests.gw import OpenedStreams as Streams
from tests.gw import (
    Probe,
    alive,
    call,
    client_for,
    cmdline,
    descendants,
    fixture_entry,
    gateway_env,
    line_transport,
    spawn_gateway,
    status,
    stdio_gateway,
    text_of,
    wait_until,
    write_config,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _fixture_children(pid: int) -> list[int]:
    return [kid for kid in descendants(pid) if "fixtures." in cmdline(kid)]


async def test_upstream_that_exits_at_start_leaves_the_others_serving(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "c.json", {"feat": fixture_entry("features"), "broken": fixture_entry("crash_at_start")}
    )
    async with stdio_gateway(["--config", str(config)], gateway_env(f"sqlite:///{tmp_path / 's.db'}")) as gw:
        names = {t.name for t in (await gw.client.list_tools()).tools}
        echoed = await call(gw, "feat__echo", {"text": "alive"})
        broken_call = await call(gw, "broken__anything", {})
        report = await status(gw)
    assert "feat__echo" in names and not any(n.startswith("broken__") for n in names)
    assert text_of(echoed) == "alive"
    assert broken_call.is_error and "broken" in text_of(broken_call)
    upstreams = {u["name"]: u for u in report["upstreams"]}
    assert upstreams["feat"]["state"] == "ready"
    broken = upstreams["broken"]
    assert broken["state"] in ("failed", "starting")
    assert "cannot start: missing FOO" in (broken["last_error"] or "") + (broken.get("stderr_tail") or "")


async def test_silent_upstream_does_not_hold_the_others_hostage(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.json", {"feat": fixture_entry("features"), "mute": fixture_entry("silent")})
    with anyio.fail_after(10):  # the upstream start timeout is 30 s: readiness must not wait for it
        async with stdio_gateway(["--config", str(config)], gateway_env(f"sqlite:///{tmp_path / 's.db'}")) as gw:
            echoed = await call(gw, "feat__echo", {"text": "not blocked"})
            report = await status(gw)
    assert text_of(echoed) == "not blocked"
    assert {u["name"]: u["state"] for u in report["upstreams"]}["mute"] == "starting"


@pytest.mark.real_exec  # reads the process tree
async def test_crash_mid_session_is_a_tool_error_then_the_server_comes_back(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.json", {"feat": fixture_entry("features"), "ids": fixture_entry("ids")})
    probe = Probe()
    async with stdio_gateway(
        ["--config", str(config)], gateway_env(f"sqlite:///{tmp_path / 's.db'}"), probe=probe
    ) as gw:
        assert gw.gateway is not None
        assert "feat__crash" in {t.name for t in (await gw.client.list_tools()).tools}  # as hosts do first
        before = {pid for pid in _fixture_children(gw.gateway.pid) if "fixtures.features" in cmdline(pid)}
        crashed = await call(gw, "feat__crash", {})
        assert crashed.is_error, text_of(crashed)
        assert "feat" in text_of(crashed)
        # the other server is not affected
        assert not (await call(gw, "ids__note", {"text": "still here"})).is_error

        def changes() -> int:
            return len(probe.of_type(types.ToolListChangedNotification))

        await probe.wait_for(lambda: changes() >= 1, 15, "tools/list_changed after the crash")

        async def back() -> bool:
            return "feat__echo" in {t.name for t in (await gw.client.list_tools()).tools}

        await wait_until(back, 20, "feat's tools to come back after the restart")
        await probe.wait_for(lambda: changes() >= 2, 15, "tools/list_changed when the tools came back")
        assert text_of(await call(gw, "feat__echo", {"text": "restarted"})) == "restarted"
        report = await status(gw)
        after = {pid for pid in _fixture_children(gw.gateway.pid) if "fixtures.features" in cmdline(pid)}
    feat = {u["name"]: u for u in report["upstreams"]}["feat"]
    assert feat["state"] == "ready" and feat["restarts"] >= 1
    assert before and after and not before & after  # a new process, the old one is gone
    assert not any(alive(pid) for pid in before)


@pytest.mark.real_exec  # reads the process tree
@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "stdin closed", "SIGKILL"])
async def test_no_orphans_however_the_gateway_ends(tmp_path: Path, how: str) -> None:
    config = write_config(tmp_path / "c.json", {"feat": fixture_entry("features"), "ids": fixture_entry("ids")})
    gateway = await spawn_gateway(["--config", str(config)], gateway_env(f"sqlite:///{tmp_path / 's.db'}"))
    try:
        async with (
            line_transport(gateway.process) as streams,
            client_for(Streams(streams), "legacy", Probe()) as client,
        ):
            assert not (await client.call_tool("feat__echo", {"text": "up"})).is_error
            assert not (await client.call_tool("ids__note", {"text": "up"})).is_error
            children = gateway.descendants()
            fixtures = _fixture_children(gateway.pid)
            assert len(fixtures) == 2, [cmdline(pid) for pid in children]
            if how == "stdin closed":
                assert gateway.process.stdin is not None
                await gateway.process.stdin.aclose()
            else:
                os.kill(gateway.pid, getattr(signal, how))
            with anyio.fail_after(15):
                code = await gateway.process.wait()
        await wait_until(
            lambda: not any(alive(pid) for pid in children),
            15,
            f"the gateway's children to end after {how}: "
            + ", ".join(f"{pid} {cmdline(pid)}" for pid in children if alive(pid)),
        )
        if how != "SIGKILL":
            assert "Traceback" not in gateway.stderr(), gateway.stderr()[-3000:]
            assert code in (0, 1, 128 + getattr(signal, how, 0), -getattr(signal, how, 0)), code
    finally:
        with anyio.CancelScope(shield=True):
            if gateway.process.returncode is None:
                gateway.process.kill()
                await gateway.wait_exit(10)
            gateway.reap_leftovers()
