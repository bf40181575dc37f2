"""Memory that clients who went away held is given back to the system, not only to the allocator.

glibc keeps freed heap memory for reuse: once 2,000 idle sessions were released, the gateway's resident
size stayed at its peak although nothing used it. After such a release, a collection (their objects hold
cycles) and `malloc_trim(0)` return it; elsewhere (musl, macOS) only the collection runs.

`malloc_trim` only gives back whole free pages, and glibc gives every thread that contends for the heap an
arena of its own (up to 8 per core): sessions served while the store's writer and anyio's worker threads ran
left their fragments spread over several arenas, and resident memory stayed 5-20% above its level before them.
The gateway runs one event loop and a few helper threads, so it keeps two arenas (`limit_arenas`), unless
`MALLOC_ARENA_MAX` says otherwise.

Python's own allocator (pymalloc) keeps small objects in 1 MiB arenas and returns an arena only when every
object in it is gone: after 2,000 sessions, a handful of long-lived objects allocated meanwhile (a cache
entry, a timer) held 13-18 arenas, and resident memory stayed 9-16% above its level before them, although
the objects still alive had grown by 54 KB (tracemalloc). With the system allocator (`PYTHONMALLOC=malloc`)
a free page is a free page, and `malloc_trim` returns it: 0.9% above, and the call path as fast (measured side
by side, bench/README.md). The allocator is chosen when the interpreter starts, so `toolreel serve` starts
itself again with it (`use_system_allocator`), unless the environment chose one or the process was forked
already warm, where starting again would cost more than it saves.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import os
import sys
from collections.abc import Callable

__all__ = ["give_back", "limit_arenas", "use_system_allocator"]

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


_STARTED_AGAIN = "TOOLREEL_SYSTEM_ALLOCATOR"
_WARM_MODULE = "mcp"  # imported already: this process was forked from a warm interpreter


def use_system_allocator() -> None:
    """Start this process again, the same pid and arguments, with `PYTHONMALLOC=malloc`, where glibc's
    `malloc_trim` gives the freed pages back (see the module's docstring). Returns at once when the environment
    sets PYTHONMALLOC, when the process was forked warm, or when this is the process started again, which takes
    both variables out of its environment so that the servers it starts keep their own."""
    if os.environ.pop(_STARTED_AGAIN, None) is not None:
        os.environ.pop("PYTHONMALLOC", None)
        return
    if "PYTHONMALLOC" in os.environ or _WARM_MODULE in sys.modules or not sys.executable:
        return
    if _glibc("malloc_trim") is None:
        return
    env = {**os.environ, "PYTHONMALLOC": "malloc", _STARTED_AGAIN: "1"}
    try:
        os.execve(sys.executable, sys.orig_argv, env)
    except OSError:  # pragma: no cover - an interpreter that cannot be run again: keep pymalloc
        return
