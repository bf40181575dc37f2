"""The floor for any process between a client and a stdio server: bytes copied both ways, nothing else.

Usage: python bench/_relay.py COMMAND [ARGS...]
Two threads with blocking reads and writes; no parsing, no event loop. bench/proxy.py measures it beside
toolreel, so the cost of the extra process hop on this machine shows apart from the cost of the gateway's work.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading


def pump(source: int, target: int) -> None:
    with contextlib.suppress(OSError):
        while data := os.read(source, 1 << 16):
            view = memoryview(data)
            while view:
                view = view[os.write(target, view) :]
    with contextlib.suppress(OSError):
        os.close(target)


def main(argv: list[str]) -> int:
    if not argv:
        raise SystemExit("usage: _relay.py COMMAND [ARGS...]")
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    threading.Thread(target=pump, args=(child.stdout.fileno(), 1), daemon=True).start()
    pump(0, child.stdin.fileno())  # stdin closed: the child's stdin is closed, and it exits
    return child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
