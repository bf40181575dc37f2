"""Memory that clients who went away held is given back to the system, not only to the allocator.

glibc keeps freed heap memory for reuse: once 2,000 idle sessions were released, the gateway's resident
size stayed at its peak although nothing used it. After such a release, a collection (their objects hold
cycles) and `malloc_trim(0)` return it; elsewhere (musl, macOS) only the collection runs.

`malloc_trim` only gives back whole free pages, and glibc gives every thread that contends for the heap an
arena of its own (up to 8 per core): sessions served while the store's writer and anyio's worker threads ran
left their fragments spread over several arenas, and resident memory stayed 5-20% above its level before them.
The gateway runs one event loop and a few helper threads, so it keeps two arenas (`limit_arenas`), unless
`MALLOC_ARENA_MAX` says otherwise.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import os
from collections.abc import Callable

__all__ = ["give_back", "limit_arenas"]

_M_ARENA_MAX = -8  # mallopt's parameter number, from glibc's malloc.h
ARENAS = 2


@functools.cache
def _glibc(name: str) -> Callable[..., int] | None:
    """A glibc function of this process, or None elsewhere (musl, macOS). Found at first use, not at import:
    the process's own symbols include libc's (`ctypes.util.find_library` would run ldconfig in a subprocess)."""
    try:
        function: Callable[..., int] = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
    return function


def limit_arenas() -> bool:
    """Keep the allocator to ARENAS arenas for threads started from now on (glibc only; a no-op when the
    environment sets MALLOC_ARENA_MAX, which glibc applied at start). True when the limit was set."""
    mallopt = _glibc("mallopt")
    if mallopt is None or "MALLOC_ARENA_MAX" in os.environ:
        return False
    return bool(mallopt(_M_ARENA_MAX, ARENAS))


def give_back() -> None:
    gc.collect()
    trim = _glibc("malloc_trim")
    if trim is not None:
        trim(0)
