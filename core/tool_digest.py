"""The digest of a tool's definition, kept by a saved template's tool steps (`tool_digest`, SPEC §7).

A definition is what an agent and a replay rely on: `name`, `description`, `inputSchema` and `annotations`.
The digest keeps one short hash per part (`tool-v1:<name>.<description>.<inputSchema>.<annotations>`), so a
replay that finds another definition can say which parts changed, and show them as they are now, although
the template never stored the old definition (only its digest: nothing of it can leak).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final, Protocol, runtime_checkable

__all__ = [
    "DIGEST_META",
    "PARTS",
    "DefinesTools",
    "changed_parts",
    "check_definition",
    "recorded_digest",
    "tool_changed_message",
    "tool_digest",
]
# A recorded step's result keeps the digest of the definition its call was made with (`_meta`, stored only):
# a template saved later from it is pinned to that definition, not to whatever is listed at save time.
DIGEST_META = "toolreel/tool_digest"

PARTS: Final = ("name", "description", "inputSchema", "annotations")
_PREFIX: Final = "tool-v1:"


@runtime_checkable
class DefinesTools(Protocol):
    """A `ToolCaller` that can say a tool's current definition (the gateway's upstreams do)."""

    def tool_definition(self, name: str) -> Mapping[str, Any] | None:
        """The upstream's own definition of listed tool `name`, or None if no server lists it."""
        ...


def tool_digest(tool: Mapping[str, Any]) -> str:
    return _PREFIX + ".".join(_part_hash(tool.get(part)) for part in PARTS)


def changed_parts(digest: str, tool: Mapping[str, Any]) -> list[str]:
    """The parts of `tool` whose hash is not the one `digest` kept; every part for a digest of unknown form."""
    kept = digest.removeprefix(_PREFIX).split(".") if digest.startswith(_PREFIX) else []
    if len(kept) != len(PARTS):
        return list(PARTS)
    return [part for part, old in zip(PARTS, kept, strict=True) if old != _part_hash(tool.get(part))]


def tool_changed_message(step: str, tool_name: str, parts: list[str], tool: Mapping[str, Any]) -> str:
    now = "; ".join(f"{part} is now {_shown(tool.get(part))}" for part in parts)
    return (
        f"tool_changed: step {step!r} calls {tool_name!r}, whose definition changed since the template was "
        f"saved ({', '.join(parts)} differ: {now}); nothing was sent. Check that the step still means what it "
        "did, then save the template again (or edit its tool_digest) to accept the new definition."
    )


def check_definition(caller: object, step: str, tool_name: str | None, digest: str | None) -> str | None:
    """The `tool_changed` error for a step whose tool has another definition now, else None (no digest
    kept, a caller that cannot tell, or a tool no server lists: the call reports that itself)."""
    if digest is None or tool_name is None or not isinstance(caller, DefinesTools):
        return None
    tool = caller.tool_definition(tool_name)
    if tool is None:
        return None
    parts = changed_parts(digest, tool)
    return tool_changed_message(step, tool_name, parts, tool) if parts else None


def _part_hash(value: Any) -> str:
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _shown(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def recorded_digest(result: Any) -> str | None:
    """The digest a recorded step's result keeps (DIGEST_META), if any."""
    meta = result.get("_meta") if isinstance(result, Mapping) else None
    digest = meta.get(DIGEST_META) if isinstance(meta, Mapping) else None
    return digest if isinstance(digest, str) else None
