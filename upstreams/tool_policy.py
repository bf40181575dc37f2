"""Which of a server's tools the agent sees, under which name, and which need a yes first.

A server's `tools` / `excludeTools` globs (`*`, `?`) choose tools by the upstream's own
names; `toolsOverride` renames and redescribes them for the agent only (calls map back);
`confirm` lists tool-name globs, or `"destructive"` for tools annotated `destructiveHint`.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolreel.core.errors import ConfigError

__all__ = ["DESTRUCTIVE", "ToolOverride", "ToolPolicy", "parse_policy"]

DESTRUCTIVE = "destructive"
_TOOL_NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True, slots=True)
class ToolOverride:
    name: str | None = None
    description: str | None = None


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    tools: tuple[str, ...] | None = None  # allowlist globs; None: every tool
    exclude: tuple[str, ...] = ()
    overrides: Mapping[str, ToolOverride] = field(default_factory=dict)
    confirm: tuple[str, ...] = ()
    confirm_destructive: bool = False

    def shows(self, name: str) -> bool:
        """`tools` first, then `excludeTools` (SPEC §1), both on the upstream's own name."""
        if self.tools is not None and not _matches(name, self.tools):
            return False
        return not _matches(name, self.exclude)

    def shown_name(self, name: str) -> str:
        override = self.overrides.get(name)
        return override.name if override is not None and override.name else name

    def present(self, tool: dict[str, Any], listed: str) -> dict[str, Any]:
        """The tool as the agent sees it: listed name, and the overridden description."""
        override = self.overrides.get(tool.get("name", ""))
        if override is not None and override.description is not None:
            return {**tool, "name": listed, "description": override.description}
        return tool if listed == tool.get("name") else {**tool, "name": listed}

    def needs_confirmation(self, tool: Mapping[str, Any]) -> bool:
        name = str(tool.get("name", ""))
        if self.confirm and _matches(name, self.confirm):
            return True
        annotations = tool.get("annotations") or {}
        return self.confirm_destructive and annotations.get("destructiveHint") is True


def _matches(name: str, globs: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, glob) for glob in globs)


def parse_policy(entry: Mapping[str, Any], path: str, source: str | None) -> ToolPolicy:
    """The policy keys of one server entry, validated; a ConfigError names the key."""
    confirm, destructive = _confirm(entry.get("confirm"), f"{path}.confirm", source)
    return ToolPolicy(
        tools=None if entry.get("tools") is None else _globs(entry["tools"], f"{path}.tools", source),
        exclude=_globs(entry.get("excludeTools", []), f"{path}.excludeTools", source),
        overrides=_overrides(entry.get("toolsOverride", {}), f"{path}.toolsOverride", source),
        confirm=confirm,
        confirm_destructive=destructive,
    )


def _globs(value: Any, path: str, source: str | None) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise ConfigError('must be a list of tool names or globs (* and ?), e.g. ["read_*"]', file=source, path=path)
    return tuple(value)


def _confirm(value: Any, path: str, source: str | None) -> tuple[tuple[str, ...], bool]:
    if value is None:
        return (), False
    if value == DESTRUCTIVE:
        return (), True
    if isinstance(value, str):
        value = [value]
    globs = _globs(value, path, source)
    return tuple(g for g in globs if g != DESTRUCTIVE), DESTRUCTIVE in globs


def _overrides(value: Any, path: str, source: str | None) -> dict[str, ToolOverride]:
    if not isinstance(value, dict):
        raise ConfigError(
            'must be an object of upstream tool name -> {"name": ..., "description": ...}', file=source, path=path
        )
    out: dict[str, ToolOverride] = {}
    renamed: dict[str, str] = {}
    for tool, spec in value.items():
        where = f"{path}.{tool}"
        if not isinstance(spec, dict) or not spec or set(spec) - {"name", "description"}:
            raise ConfigError('must be an object with "name" and/or "description"', file=source, path=where)
        name, description = spec.get("name"), spec.get("description")
        if name is not None and (not isinstance(name, str) or not _TOOL_NAME_RE.fullmatch(name) or "__" in name):
            raise ConfigError(
                f"name {name!r} must be 1-64 characters of [A-Za-z0-9_-] without '__'",
                file=source,
                path=f"{where}.name",
            )
        if description is not None and not isinstance(description, str):
            raise ConfigError("must be a string", file=source, path=f"{where}.description")
        if name is not None and name in renamed:
            raise ConfigError(f"name {name!r} is already given to {renamed[name]!r}", file=source, path=f"{where}.name")
        if name is not None:
            renamed[name] = tool
        out[tool] = ToolOverride(name=name, description=description)
    return out
