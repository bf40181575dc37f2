"""The gateway's allocator settings (gateway/_trim.py): two arenas unless the environment chose, on glibc."""

from __future__ import annotations

import ctypes

import pytest

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
