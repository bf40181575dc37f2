"""Memory that clients who went away held is given back to the system, not only to the allocator.

glibc keeps freed heap memory for reuse: once 2,000 idle sessions were released, the gateway's resident
size stayed at its peak although nothing used it. After such a release, a collection (their objects hold
cycles) and `malloc_trim(0)` return it; elsewhere (musl, macOS) only the collection runs.
"""

from __future__ import annotations

import ctypes
import functools
import gc
from collections.abc import Callable

__all__ = ["give_back"]


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    # found at the first release, not at import; the process's own symbols include libc's
    # (`ctypes.util.find_library` would run ldconfig in a subprocess)
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    return trim


def give_back() -> None:
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
