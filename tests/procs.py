"""What the tests read of processes in /proc: a process's descendants, whether it runs, its command line."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Sequence
from pathlib import Path

from fixtures._zygote import program_of

__all__ = ["alive", "cmdline", "descendants", "kill_quietly", "program_pid"]


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid`, from /proc/<pid>/task/*/children (a zygote launcher's program included)."""
    found: list[int] = []
    todo = [pid]
    while todo:
        current = todo.pop()
        program = program_of(current)  # a zygote launcher's program is forked elsewhere: it counts as its child
        for kid in [*_children(current), *([program] if program else [])]:
            if kid not in found:
                found.append(kid)
                todo.append(kid)
    return found


def program_pid(pid: int) -> int:
    """The pid the program started as `pid` runs under: its own, or, for a zygote launcher, its program's."""
    return program_of(pid) or pid


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError, ValueError):
            kids += [int(k) for k in children.read_text().split()]
    return kids


def alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def kill_quietly(pids: Sequence[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
