"""Rug-pull protection (`"pin": true` per server): a tool whose definition changed since it was first seen is
held, and a live call to it is refused until someone approves the new definition.

`Pins` keeps the digest (core.tool_digest) of each pinned tool's definition as the gateway first listed it; a
later listing with another definition holds the tool, naming the parts that differ; listing the first
definition again releases it. What was first seen is kept for the gateway process's life (a restart starts
from the definitions it then finds); `toolreel__status` lists the held tools.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolreel.core.tool_digest import changed_parts, tool_digest

__all__ = ["Pins"]


class Pins:
    def __init__(self) -> None:
        self._first: dict[tuple[str, str], str] = {}  # (server, tool) -> digest of the definition first seen
        self._held: dict[tuple[str, str], list[str]] = {}  # (server, tool) -> parts that differ now
        self._now: dict[tuple[str, str], Mapping[str, Any]] = {}  # the definitions listed now

    def observe(self, server: str, tools: Sequence[Mapping[str, Any]]) -> None:
        """A pinned server listed `tools`: remember what is new, hold what changed."""
        for tool in tools:
            key = (server, str(tool.get("name")))
            self._now[key] = tool
            first = self._first.setdefault(key, tool_digest(tool))
            parts = changed_parts(first, tool)
            if parts:
                self._held[key] = parts
            else:
                self._held.pop(key, None)

    def held(self, server: str, tool: str) -> list[str] | None:
        """The parts of `tool`'s definition that changed since first seen, or None if it is not held."""
        return self._held.get((server, tool))

    def approve(self, server: str, tool: str) -> None:
        """The definition listed now is accepted: it is the one calls are checked against from now on."""
        key = (server, tool)
        if key in self._now:
            self._first[key] = tool_digest(self._now[key])
        self._held.pop(key, None)

    def definition(self, server: str, tool: str) -> Mapping[str, Any] | None:
        return self._now.get((server, tool))

    def listing(self) -> list[dict[str, Any]]:
        """The held tools, for `toolreel__status`."""
        return [{"server": s, "tool": t, "changed": parts} for (s, t), parts in sorted(self._held.items())]
