"""`loading()`: import a command's modules with the cyclic garbage collector paused.

An import makes objects that live as long as the process (classes, functions, module namespaces);
their allocation triggers collections that find nothing to free, about a tenth of a command's
start-up CPU. Inside `loading()` the collector is off; at its end what the imports made is frozen
(never scanned again) and the collector is back on, so a long-running command collects as usual.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["loading"]


@contextlib.contextmanager
def loading() -> Iterator[None]:
    if not gc.isenabled():  # nested, or switched off by whoever runs us: theirs to turn back on
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
