"""The `Mcp-Param-*` headers (SEP-2243) of a `tools/call` to a server spoken to over HTTP in the stateless era.

A tool may mark arguments with `x-mcp-header` in its input schema; a client then mirrors their values into
`Mcp-Param-<token>` request headers, and the server refuses (-32020) a call whose headers disagree with its
body. The gateway is that server's client: it mirrors them as the SDK's own client does (`mcp.shared.inbound`),
from the tool's definition as the server listed it. A tool whose annotations are invalid gets no headers (the
SDK's client would not list it at all; the gateway lists what the server lists).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcp.shared.inbound import find_invalid_x_mcp_header, mcp_param_headers, x_mcp_header_map

__all__ = ["ParamHeaders"]


class ParamHeaders:
    """One server's header maps, remade when its tool listing is replaced (by identity: a refresh makes a new list)."""

    def __init__(self) -> None:
        self._listing: Sequence[Mapping[str, Any]] | None = None
        self._maps: dict[str, dict[tuple[str, ...], str]] = {}

    def for_call(self, tools: Sequence[Mapping[str, Any]], name: str, arguments: Any) -> dict[str, str]:
        if tools is not self._listing:
            self._listing, self._maps = tools, _maps(tools)
        header_map = self._maps.get(name)
        if not header_map or not isinstance(arguments, Mapping):
            return {}
        return mcp_param_headers(header_map, arguments)


def _maps(tools: Sequence[Mapping[str, Any]]) -> dict[str, dict[tuple[str, ...], str]]:
    maps: dict[str, dict[tuple[str, ...], str]] = {}
    for tool in tools:
        schema = tool.get("inputSchema")
        if isinstance(schema, Mapping) and find_invalid_x_mcp_header(schema) is None:
            found = x_mcp_header_map(schema)
            if found:
                maps[str(tool.get("name"))] = found
    return maps
