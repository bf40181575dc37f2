"""The gateway's allocator settings (gateway/_trim.py): the system allocator and two arenas, unless the
environment chose, on glibc."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

from tests.gw import fixture_entry, gateway_env, http_gateway, wait_until, write_config
from toolreel.gateway import _trim


def _is_glibc() -> bool:
    return hasattr(ctypes.CDLL(None), "mallopt")


def test_the_environment_s_arena_limit_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert _trim.limit_arenas() is False


def test_arenas_are_limited_on_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    if not _is_glibc():
        pytest.skip("mallopt is glibc's")
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert _trim.limit_arenas() is True


def test_giving_back_memory_runs_anywhere() -> None:
    _trim.give_back()  # a collection everywhere; malloc_trim where glibc has it
    assert (_trim._glibc("malloc_trim") is not None) == _is_glibc()


def _environment(pid: int) -> dict[str, str]:
    """What a process was started with (`/proc/PID/environ`: the block given to its last exec)."""
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(entry.decode(errors="replace").partition("=")[::2] for entry in raw.split(b"\0") if entry)


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.real_exec  # a fresh `toolreel serve`, which starts itself again on the system allocator
async def test_serve_runs_on_the_system_allocator_and_its_servers_do_not(tmp_path: Path) -> None:
    if not _is_glibc():
        pytest.skip("the system allocator gives memory back with glibc's malloc_trim")
    config = write_config(tmp_path / "mcp.json", {"feat": fixture_entry("features")})
    async with http_gateway(["--config", str(config)], gateway_env(f"sqlite:///{tmp_path / 'store.db'}")) as gw:
        await wait_until(lambda: bool(gw.gateway.descendants()), 60, "the gateway to start its server")
        assert _environment(gw.gateway.pid).get("PYTHONMALLOC") == "malloc"
        started = {pid: _environment(pid) for pid in gw.gateway.descendants()}  # the server, the recorder process
        assert [pid for pid, env in started.items() if "PYTHONMALLOC" in env] == [], "each chooses its own"


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.real_exec
async def test_an_allocator_the_environment_chose_is_kept(tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {"feat": fixture_entry("features")})
    env = gateway_env(f"sqlite:///{tmp_path / 'store.db'}", PYTHONMALLOC="pymalloc")
    async with http_gateway(["--config", str(config)], env) as gw:
        await wait_until(lambda: bool(gw.gateway.descendants()), 60, "the gateway to start its server")
        assert _environment(gw.gateway.pid).get("PYTHONMALLOC") == "pymalloc"
