"""A wrapped server's background children end with it: the gateway stops the server's whole process group
however it is stopped (a shell that starts a helper and then execs the server is the usual case)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest

from tests.gw import (
    PYTHON,
    REPO,
    Probe,
    alive,
    client_for,
    cmdline,
    gateway_env,
    line_transport,
    spawn_gateway,
    wait_until,
)
from tests.gw import OpenedStreams as Streams

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "SIGHUP", "stdin closed"])
async def test_a_wrapped_servers_background_child_ends_with_the_gateway(tmp_path: Path, how: str) -> None:
    marker = f"toolreel-bg-{os.getpid()}-{how.replace(' ', '-')}"
    script = f"exec -a {marker} sleep 3600 & exec {PYTHON} -m fixtures.features"
    env = gateway_env(f"sqlite:///{tmp_path / 's.db'}")
    gateway = await spawn_gateway(["--", "bash", "-c", script], env, cwd=REPO)
    try:
        async with (
            line_transport(gateway.process) as streams,
            client_for(Streams(streams), "legacy", Probe()) as client,
        ):
            assert not (await client.call_tool("echo", {"text": "up"})).is_error
            helpers = [pid for pid in gateway.descendants() if cmdline(pid).startswith(marker)]
            assert helpers, [cmdline(pid) for pid in gateway.descendants()]
            if how == "stdin closed":
                assert gateway.process.stdin is not None
                await gateway.process.stdin.aclose()
            else:
                os.kill(gateway.pid, getattr(signal, how))
            with anyio.fail_after(15):
                await gateway.process.wait()
        await wait_until(lambda: not any(alive(pid) for pid in helpers), 15, f"the background helper to end ({how})")
    finally:
        with anyio.CancelScope(shield=True):
            if gateway.process.returncode is None:
                gateway.process.kill()
                await gateway.wait_exit(10)
            gateway.reap_leftovers()
