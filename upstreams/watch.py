"""Hot reload of `serve --config`: watch the file, and hand each config that parses to the hub.

The directory is watched (editors save by writing a new file and renaming it over the old
one), filtered to the one file. A config that no longer parses is reported on stderr and
kept on the hub for `toolreel__status`; the running one stays.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import anyio
import anyio.abc
import anyio.to_thread
import watchfiles

from toolreel.core.errors import ConfigError
from toolreel.upstreams.config import load_config
from toolreel.upstreams.hub import Hub

__all__ = ["watch_config"]

logger = logging.getLogger("toolreel.reload")
# watchfiles logs each wake with nothing changed at debug level: every WAKE_MS in `serve -v`'s stderr.
logging.getLogger("watchfiles.main").setLevel(logging.INFO)

STEP_MS = 50  # how long a burst of writes may pause before it counts as one save
# How long the watching thread waits for a change before it looks again. A stop waits for that thread to come
# back (it cannot be abandoned): watchfiles' default of 5 s held every `serve --config` 5 s at SIGTERM.
WAKE_MS = 200


async def watch_config(
    hub: Hub, path: str | Path, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    """Apply every saved version of the config at `path` to `hub`, until cancelled."""
    target = _absolute(path)

    def ours(change: watchfiles.Change, changed: str) -> bool:
        return _absolute(changed) == target and change != watchfiles.Change.deleted

    stop = anyio.Event()
    watcher = watchfiles.awatch(
        target.parent, watch_filter=ours, step=STEP_MS, stop_event=stop, recursive=False, rust_timeout=WAKE_MS
    )
    task_status.started()
    try:
        async for _changes in watcher:
            await reload_config(hub, target)
    finally:
        stop.set()


def _absolute(path: str | Path) -> Path:
    return Path(os.path.abspath(path))  # no I/O beyond the working directory; symlinks are watched as named


async def reload_config(hub: Hub, path: Path) -> None:
    started = time.monotonic()
    try:
        config = await anyio.to_thread.run_sync(load_config, path)
    except ConfigError as exc:
        hub.config_error = f"{exc} (the running config is kept)"
        logger.error("config reload refused: %s", hub.config_error)
        return
    hub.config_error = None
    report = hub.apply(config)
    if report.changed:
        logger.warning(
            "config reloaded in %.0f ms: added %s, removed %s, restarted %s, tools re-read %s",
            (time.monotonic() - started) * 1000,
            ", ".join(report.added) or "none",
            ", ".join(report.removed) or "none",
            ", ".join(report.restarted) or "none",
            ", ".join(report.refiltered) or "none",
        )
