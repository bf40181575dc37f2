"""The `server__tool` rule: tool `t` of server `s` is listed as `s__t`, and a listed name is read back here.

A server's name never holds the separator (the config refuses it), so the first `__` splits a listed
name; a tool's own name may hold more. Every site that joins or splits a listed name calls these, so
the rule is written once. (`upstreams.names` maps names that are too long or illegal on top of it.)
"""

from __future__ import annotations

from typing import Final

__all__ = ["SEPARATOR", "prefixed_name", "server_part", "split_name", "split_prefixed"]

SEPARATOR: Final = "__"


def prefixed_name(server: str | None, tool: str | None) -> str | None:
    """`s__t`; the tool's own name when there is no server (a wrapped server's names are its own)."""
    return f"{server}{SEPARATOR}{tool}" if server and tool else tool


def split_prefixed(listed: str) -> tuple[str, str] | None:
    """`fs__read_file` -> ("fs", "read_file"); None when there is no separator."""
    server, sep, rest = listed.partition(SEPARATOR)
    return (server, rest) if sep and server and rest else None


def split_name(listed: str | None) -> tuple[str | None, str | None]:
    """(server, tool) of a listed name; (None, the name) when it names no server."""
    if not listed:
        return None, None
    split = split_prefixed(listed)
    return split if split is not None else (None, listed)


def server_part(listed: str) -> str:
    """The server a listed name routes to by the rule; the whole name when it has no separator (an
    unprefixed name is looked up as given)."""
    return listed.partition(SEPARATOR)[0]
