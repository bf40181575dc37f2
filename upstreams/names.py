"""Listed names: tool `t` of server `s` is `s__t`, at most 64 characters of `[A-Za-z0-9_-]`.

A name that is too long or has other characters is mapped deterministically: illegal
characters become `_`, and a changed name gets a short hash of the original (server, name)
so it is stable across restarts and never depends on which other servers exist.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from toolreel.core.names import SEPARATOR, split_prefixed

__all__ = ["MAX_NAME", "SEPARATOR", "NameMapping", "listed_name", "split_prefixed"]

MAX_NAME = 64
_LEGAL = re.compile(r"[A-Za-z0-9_-]+")
_ILLEGAL = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True, slots=True)
class NameMapping:
    listed: str
    server: str
    name: str  # the upstream's own name


def listed_name(server: str, name: str, *, prefix: bool = True) -> str:
    wanted = f"{server}{SEPARATOR}{name}" if prefix else name  # core.names.prefixed_name, then checked
    if len(wanted) <= MAX_NAME and _LEGAL.fullmatch(wanted):
        return wanted
    digest = hashlib.sha256(f"{server}\0{name}".encode()).hexdigest()[:8]
    cleaned = _ILLEGAL.sub("_", wanted)[: MAX_NAME - len(digest) - 1]
    return f"{cleaned}_{digest}"
