"""What runs each time a store is opened: `add_open_hook`, `run_open_hooks`.

The core does not know what sits above it; the recorder registers here the draining of
recording journals left by a process that died (`toolreel.recorder`), so that every command
that opens a store writes them. Light on purpose: no SQLAlchemy is imported to register.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from toolreel.core.errors import ToolreelError

if TYPE_CHECKING:
    from toolreel.core.store import Store

__all__ = ["OpenHook", "add_open_hook", "run_open_hooks"]

logger = logging.getLogger("toolreel.store")

OpenHook = Callable[["Store", str], None]
"""Called with the store just opened and the URL it was opened with (as given, password included)."""

_HOOKS: list[OpenHook] = []


def add_open_hook(hook: OpenHook) -> None:
    if hook not in _HOOKS:
        _HOOKS.append(hook)


def run_open_hooks(store: Store, url: str) -> None:
    """Run every hook; one that fails with a ToolreelError is logged and the store stays open
    (what it had to do is left for the next opening)."""
    for hook in list(_HOOKS):
        try:
            hook(store, url)
        except ToolreelError as exc:
            logger.warning("%s", exc)
