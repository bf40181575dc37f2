"""Upstream process groups end with the gateway, however the gateway ends.

Each stdio upstream runs in its own process group. One small shell per gateway process, in its own
session (a signal to the gateway's group does not reach it), is told each group as it starts and as it
is stopped. The kernel closes its stdin pipe when the gateway ends, SIGKILL included; the shell then
sends SIGTERM to every group still listed and SIGKILL to what is left after a grace. `setpriv
--pdeathsig` reaches only the direct child; this reaches what the server started in the background.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading

__all__ = ["forget", "keep"]

# POSIX sh (dash starts in about a millisecond; a Python keeper took 10 ms of CPU). Input lines are
# `+PGID` and `-PGID`; end of input means the gateway is gone. The wait after SIGTERM only ends early.
_SCRIPT = r"""
set -f
groups=' '
while read -r line; do
  case $line in
    +*) groups="$groups${line#?} " ;;
    -*) pg=${line#?}
        case $groups in *" $pg "*) groups="${groups%% $pg *} ${groups#* $pg }" ;; esac ;;
  esac
done
[ "$groups" = ' ' ] && exit 0
for pg in $groups; do kill -TERM -"$pg"; done 2>/dev/null
n=0
while [ $n -lt 40 ]; do
  left=
  for pg in $groups; do kill -0 -"$pg" 2>/dev/null && left=1; done
  [ -z "$left" ] && exit 0
  sleep 0.05
  n=$((n + 1))
done
for pg in $groups; do kill -KILL -"$pg"; done 2>/dev/null
"""

_lock = threading.Lock()
_groups: set[int] = set()
_shell: subprocess.Popen[bytes] | None = None
_owner = 0  # the process that started the shell: a forked child needs its own


def keep(pgid: int) -> None:
    """End process group `pgid` if this process ends before `forget(pgid)`."""
    with _lock:
        _groups.add(pgid)
        _tell(f"+{pgid}\n")


def forget(pgid: int) -> None:
    """The group has been stopped: its number may be reused, so it must not be signalled any more."""
    with _lock:
        if pgid in _groups:
            _groups.discard(pgid)
            _tell(f"-{pgid}\n")


def _tell(line: str) -> None:
    shell = _shell if _owner == os.getpid() else None
    if shell is not None and shell.poll() is None and shell.stdin is not None:
        try:
            shell.stdin.write(line.encode())
            shell.stdin.flush()
            return
        except OSError:
            pass  # the keeper was killed: a new one is told every group below
    _start()


def _start() -> None:
    global _shell, _owner
    sh = shutil.which("sh")
    if sh is None or os.environ.get("TOOLREEL_NO_PDEATHSIG"):
        return
    _shell = subprocess.Popen(
        [sh, "-c", _SCRIPT],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,  # stdout and stderr stay the gateway's alone
        stderr=subprocess.DEVNULL,
        cwd="/",
        start_new_session=True,
    )
    _owner = os.getpid()
    assert _shell.stdin is not None
    _shell.stdin.write("".join(f"+{pgid}\n" for pgid in _groups).encode())
    _shell.stdin.flush()
