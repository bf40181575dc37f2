"""`toolreel` with a switchable profiler, for bench/profile_gateway.py: `_profiled_gateway.py OUT toolreel-args`.

SIGUSR1 starts cProfile (thread CPU time) on the event loop's thread, SIGUSR2 stops it and writes its stats
to OUT: the profile holds the calls made between the two, none of the start-up.
"""

from __future__ import annotations

import cProfile
import signal
import sys
import time
from types import FrameType

from toolreel.gateway.launch import main

# CPU time of the loop's thread, not the clock: a pipe write that wakes the reader is often preempted by it
profile = cProfile.Profile(time.thread_time_ns, 1e-9)
out = sys.argv.pop(1)


def start(signum: int, frame: FrameType | None) -> None:
    profile.enable()


def stop(signum: int, frame: FrameType | None) -> None:
    profile.disable()
    profile.dump_stats(out)


signal.signal(signal.SIGUSR1, start)  # Python runs the handlers on the main thread: the event loop's
signal.signal(signal.SIGUSR2, stop)
main()
