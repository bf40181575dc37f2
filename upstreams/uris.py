"""Upstream `skill://` and `ui://` resources through the aggregate: namespaced by server, their scheme kept.

Skills (SEP-2640) and MCP Apps (`ui://` resources a tool points at with `_meta.ui.resourceUri`) are addressed
by URIs two servers easily share (`ui://widget/app.html`, `skill://acme/SKILL.md`). In aggregate mode (tool
names prefixed by server) the gateway lists them as `<scheme>://<server>.<authority>/<path>`: the scheme a
host dispatches on is kept, the authority stays a valid host name (a server's name has no `.`), and the first
label says which server a read goes to. A tool's `_meta.ui.resourceUri` (and the older flat
`_meta["ui/resourceUri"]`) is rewritten the same way, so a host finds the app the tool names. Other schemes
are the servers' own business and pass unchanged, as do all URIs of an unprefixed gateway.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["NAMESPACED_SCHEMES", "inward", "outward", "outward_tool", "template_matches"]

NAMESPACED_SCHEMES: Final = ("skill", "ui")
_FLAT_UI_KEY: Final = "ui/resourceUri"


def _split(uri: str) -> tuple[str, str, str] | None:
    """(scheme, authority, rest) of a URI of a namespaced scheme, else None."""
    scheme, separator, remainder = uri.partition("://")
    if not separator or scheme not in NAMESPACED_SCHEMES:
        return None
    authority, slash, path = remainder.partition("/")
    return scheme, authority, slash + path


def outward(server: str, uri: str) -> str:
    """`uri` of `server` as the aggregate lists it."""
    parts = _split(uri)
    if parts is None:
        return uri
    scheme, authority, rest = parts
    return f"{scheme}://{server}.{authority}{rest}"


def inward(uri: str) -> tuple[str, str] | None:
    """(server, the server's own URI) for a namespaced URI the aggregate listed; None for any other."""
    parts = _split(uri)
    if parts is None:
        return None
    scheme, authority, rest = parts
    server, dot, own = authority.partition(".")
    if not dot or not server:
        return None
    return server, f"{scheme}://{own}{rest}"


def outward_tool(server: str, tool: Mapping[str, Any]) -> Mapping[str, Any]:
    """`tool` with the app it points at (`_meta.ui.resourceUri`, `_meta["ui/resourceUri"]`) namespaced."""
    meta = tool.get("_meta")
    if not isinstance(meta, Mapping):
        return tool
    ui = meta.get("ui")
    nested = ui.get("resourceUri") if isinstance(ui, Mapping) else None
    flat = meta.get(_FLAT_UI_KEY)
    if not isinstance(nested, str) and not isinstance(flat, str):
        return tool
    new_meta = dict(meta)
    if isinstance(ui, Mapping) and isinstance(nested, str):
        new_meta["ui"] = {**ui, "resourceUri": outward(server, nested)}
    if isinstance(flat, str):
        new_meta[_FLAT_UI_KEY] = outward(server, flat)
    return {**tool, "_meta": new_meta}


def template_matches(template: str, uri: str) -> bool:
    """Whether `uri` is one a resource template (RFC 6570 level 1: `{var}` is one path segment) names."""
    if not template:
        return False
    pattern = re.sub(r"\\\{[^}]*\\\}", "[^/]+", re.escape(template))
    return re.fullmatch(pattern, uri) is not None
