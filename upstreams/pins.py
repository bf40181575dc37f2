"""Rug-pull protection (`"pin": true` per server): a tool whose definition changed since it was first seen is
held, and a live call to it is refused until someone approves the new definition.

`Pins` keeps the digest (core.tool_digest) of each pinned tool's definition as the gateway first listed it; a
later listing with another definition holds the tool, naming the parts that differ; listing the first
definition again releases it. What was first seen (or last approved) is kept in the store (`keep_in`, under
`pin/<server>/<tool>`), so a restarted gateway, or another one on the same store, holds a tool that changed
while it was down; `toolreel__status` lists the held tools.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

import anyio
import anyio.to_thread

from toolreel.core.errors import StoreError
from toolreel.core.tool_digest import changed_parts, tool_digest

__all__ = ["KEPT_PREFIX", "Kept", "Pins"]

logger = logging.getLogger("toolreel.pins")

KEPT_PREFIX: Final = "pin/"  # + server + "/" + tool: the digest calls are checked against
LOAD_TIMEOUT: Final = 30.0  # seconds a call to a pinned server waits for the store's pins


class Kept(Protocol):
    """The store's key/value rows (core.store): where first-seen digests outlive the process."""

    def get_kept(self, key: str) -> str | None: ...

    def put_kept(self, key: str, value: str) -> None: ...

    def kept_keys(self, prefix: str) -> list[str]: ...


def _kept_key(key: tuple[str, str]) -> str:
    return f"{KEPT_PREFIX}{key[0]}/{key[1]}"  # a server's name has no "/" (upstreams.config.SERVER_NAME_RE)


class Pins:
    def __init__(self) -> None:
        self._first: dict[tuple[str, str], str] = {}  # (server, tool) -> digest of the definition first seen
        self._held: dict[tuple[str, str], list[str]] = {}  # (server, tool) -> parts that differ now
        self._now: dict[tuple[str, str], Mapping[str, Any]] = {}  # the definitions listed now
        self._kept: Kept | None = None
        self._unsaved: set[tuple[str, str]] = set()  # first seen before the store was open
        self.loaded = anyio.Event()  # the store's digests are in (keep_in)

    def observe(self, server: str, tools: Sequence[Mapping[str, Any]]) -> None:
        """A pinned server listed `tools`: remember what is new, hold what changed."""
        for tool in tools:
            key = (server, str(tool.get("name")))
            self._now[key] = tool
            if key not in self._first:
                self._first[key] = tool_digest(tool)
                self._save(key)
            self._judge(key)

    def _judge(self, key: tuple[str, str]) -> None:
        now = self._now.get(key)
        if now is None:
            return
        parts = changed_parts(self._first[key], now)
        if parts:
            self._held[key] = parts
        else:
            self._held.pop(key, None)

    def _save(self, key: tuple[str, str]) -> None:
        """The digest of `key` into the store: rare (a tool first seen, a definition approved), so written at once."""
        if self._kept is None:
            self._unsaved.add(key)
            return
        try:
            self._kept.put_kept(_kept_key(key), self._first[key])
        except StoreError as exc:  # the gateway goes on; the digest is kept in memory for this process
            logger.error("pinned tool %s of server %s: its digest was not stored: %s", key[1], key[0], exc)

    async def keep_in(self, kept: Kept) -> None:
        """Read the digests the store keeps (they win over what this process saw first: they were seen earlier)
        and from now on store the new ones."""
        stored = await anyio.to_thread.run_sync(_read_all, kept)
        for key, digest in stored.items():
            self._first[key] = digest
            self._unsaved.discard(key)
            self._judge(key)
        self._kept = kept
        for key in sorted(self._unsaved):
            await anyio.to_thread.run_sync(self._save, key)
        self._unsaved.clear()
        self.loaded.set()

    async def wait_loaded(self) -> bool:
        """Whether the store's digests are in, waiting for them a while (a call right after a restart)."""
        with anyio.move_on_after(LOAD_TIMEOUT):
            await self.loaded.wait()
        return self.loaded.is_set()

    def held(self, server: str, tool: str) -> list[str] | None:
        """The parts of `tool`'s definition that changed since first seen, or None if it is not held."""
        return self._held.get((server, tool))

    def approve(self, server: str, tool: str) -> None:
        """The definition listed now is accepted: it is the one calls are checked against from now on."""
        key = (server, tool)
        if key in self._now:
            self._first[key] = tool_digest(self._now[key])
            self._save(key)
        self._held.pop(key, None)

    def definition(self, server: str, tool: str) -> Mapping[str, Any] | None:
        return self._now.get((server, tool))

    def listing(self) -> list[dict[str, Any]]:
        """The held tools, for `toolreel__status`."""
        return [{"server": s, "tool": t, "changed": parts} for (s, t), parts in sorted(self._held.items())]


def _read_all(kept: Kept) -> dict[tuple[str, str], str]:
    found: dict[tuple[str, str], str] = {}
    for name in kept.kept_keys(KEPT_PREFIX):
        server, slash, tool = name.removeprefix(KEPT_PREFIX).partition("/")
        digest = kept.get_kept(name)
        if slash and digest is not None:
            found[server, tool] = digest
    return found
