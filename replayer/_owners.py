"""Who holds a claim, and whether it is gone: a claim's owner is `host:pid:token` (SPEC §9 Leases).

An owner that ran on this host and whose process no longer exists cannot renew its lease: its
claim is taken over at once instead of waiting for the lease to lapse. An owner elsewhere, or
whose process id is alive (even reused by another program), is waited for: waiting is the safe side.
"""

from __future__ import annotations

import os
import socket

__all__ = ["gone_here"]


def gone_here(owner: str | None) -> bool:
    """True when `owner` ran on this host and its process is gone."""
    if not owner:
        return False
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid() or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return _zombie(pid)


def _zombie(pid: int) -> bool:
    """A process that has exited and is waiting for its parent to read its status (Linux)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rpartition(b")")[2].split()[0] == b"Z"
    except (OSError, IndexError):
        return False
