"""A wrapped server's background children end with it: the gateway stops the server's whole process group
however it is stopped (a shell that starts a helper and then execs the server is the usual case)."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import anyio
import anyio.abc
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.gw import (
    PYTHON,
    REPO,
    Probe,
    alive,
    client_for,
    cmdline,
    descendants,
    gateway_env,
    line_transport,
    spawn_gateway,
    wait_until,
)
from tests.gw import OpenedStreams as Streams

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.real_exec]  # what a fresh process does


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


async def test_a_wrapped_servers_background_child_ends_when_the_gateway_is_sigkilled(tmp_path: Path) -> None:
    marker = f"toolreel-bg-{os.getpid()}-sigkill"
    script = f"exec -a {marker} sleep 300 & exec {PYTHON} -m fixtures.features"
    env = gateway_env(f"sqlite:///{tmp_path / 's.db'}")
    # recording off: no recorder process, whose own end on a busy machine is another test's matter
    gateway = await spawn_gateway(["--no-record", "--", "bash", "-c", script], env, cwd=REPO)
    try:
        async with (
            line_transport(gateway.process) as streams,
            client_for(Streams(streams), "legacy", Probe()) as client,
        ):
            assert not (await client.call_tool("echo", {"text": "up"})).is_error
            children = gateway.descendants()  # the server, its helper and the gateway's keeper
            assert any(cmdline(pid).startswith(marker) for pid in children), [cmdline(pid) for pid in children]
            os.kill(gateway.pid, signal.SIGKILL)
            with anyio.fail_after(15):
                await gateway.process.wait()
        await wait_until(
            lambda: not any(alive(pid) for pid in children),
            15,
            "every process of the upstream to end after SIGKILL: "
            + ", ".join(f"{pid} {cmdline(pid)}" for pid in children if alive(pid)),
        )
    finally:
        with anyio.CancelScope(shield=True):
            if gateway.process.returncode is None:
                gateway.process.kill()
                await gateway.wait_exit(10)
            gateway.reap_leftovers()


# A process that keeps three groups (forgetting one), says which, and after each line on stdin keeps
# one more; it is then SIGKILLed, as a gateway can be.
_KEEPING = """
import subprocess, sys
from toolreel.upstreams import keeper

def group():
    return subprocess.Popen(["sleep", "300"], start_new_session=True).pid

kept, forgotten = group(), group()
keeper.keep(kept)
keeper.keep(forgotten)
keeper.forget(forgotten)
print(kept, forgotten, flush=True)
for _ in sys.stdin:
    late = group()
    keeper.keep(late)
    print(late, flush=True)
"""


async def _start_keeping() -> tuple[anyio.abc.Process, BufferedByteReceiveStream, list[int]]:
    process = await anyio.open_process([PYTHON, "-c", _KEEPING], cwd=REPO)
    assert process.stdout is not None
    lines = BufferedByteReceiveStream(process.stdout)
    return process, lines, await _pids(lines)


async def _pids(lines: BufferedByteReceiveStream) -> list[int]:
    with anyio.fail_after(15):
        return [int(pid) for pid in (await lines.receive_until(b"\n", 1000)).split()]


def _kill_quietly(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _keeper_of(pid: int, groups: list[int]) -> int:
    (shell,) = [kid for kid in descendants(pid) if kid not in groups and alive(kid)]
    return shell


async def test_the_groups_kept_end_when_their_keeping_process_is_sigkilled_and_forgotten_ones_do_not() -> None:
    process, _, (kept, forgotten) = await _start_keeping()
    try:
        shell = _keeper_of(process.pid, [kept, forgotten])
        process.kill()
        await wait_until(lambda: not alive(kept), 15, "the kept group to end")
        await wait_until(lambda: not alive(shell), 15, "the keeper to finish")  # it has signalled all it will
        assert alive(forgotten), "a forgotten group (its number may be reused) was signalled"
    finally:
        with anyio.CancelScope(shield=True):
            process.kill()
            await process.aclose()
        _kill_quietly([kept, forgotten])


async def test_a_killed_keeper_is_replaced_and_the_new_one_ends_every_kept_group() -> None:
    process, lines, (kept, forgotten) = await _start_keeping()
    late: list[int] = []
    try:
        first = _keeper_of(process.pid, [kept, forgotten])
        os.kill(first, signal.SIGKILL)
        await wait_until(lambda: not alive(first), 15, "the first keeper to end")
        assert process.stdin is not None
        await process.stdin.send(b"one more\n")
        late += await _pids(lines)
        assert alive(kept)  # the first keeper's end was not the keeping process's end
        process.kill()
        await wait_until(lambda: not alive(kept) and not alive(late[0]), 15, "every kept group to end")
    finally:
        with anyio.CancelScope(shield=True):
            process.kill()
            await process.aclose()
        _kill_quietly([kept, forgotten, *late])
