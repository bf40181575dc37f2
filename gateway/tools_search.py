"""`toolreel__search_tools` and `toolreel__call_tool`: the listing of a gateway in search mode.

`SearchTools` decides, at each `tools/list`, whether the upstream tools are listed (`all`, or `auto`
under the threshold) or replaced by the two search tools. The mode comes from `serve --tools`, else
from the config's `"toolreel": {"tools": ...}` (so a hot reload can change it). In search mode the
gateway's own tools are cut to a core too (`CORE_TOOLS`, the first `LISTED_TEMPLATES` templates): the
others are searched like the upstream tools, and every one stays callable by name.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import anyio

from toolreel.core.skill import REEL_PREFIX
from toolreel.gateway.hook import LocalCall
from toolreel.gateway.management import Extension, GatewayHook, tool_result
from toolreel.gateway.search import (
    CALL_TOOL,
    DEFAULT_LIMIT,
    MAX_LIMIT,
    SEARCH_TOOL,
    ToolIndex,
    ToolsMode,
    call_tool_error,
    count_tokens,
    parse_limit,
)
from toolreel.upstreams.hub import error_result

__all__ = ["CORE_TOOLS", "LISTED_TEMPLATES", "SearchTools"]

logger = logging.getLogger("toolreel.gateway")

_READ = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
# The gateway's own tools an agent needs without searching (docs/decisions/tool-search.md): how its session
# stands, saving it as a template, running one. A fixed few, so the listing does not grow with the product.
CORE_TOOLS = frozenset(
    {SEARCH_TOOL, CALL_TOOL, "toolreel__status", "toolreel__save_template", "toolreel__run_template"}
)
LISTED_TEMPLATES = 3  # `reel__*` tools listed in search mode (in the catalogue's order); the others are searched


class SearchTools(Extension):
    def __init__(self, hook: GatewayHook, override: ToolsMode | None = None) -> None:
        self.hook = hook
        self.override = override
        self._listing: list[dict[str, Any]] | None = None  # the hub's listing the caches below are of
        self._index: ToolIndex | None = None
        self._hidden: list[dict[str, Any]] = []  # the gateway's own unlisted tools the index holds
        self._tokens = 0

    @property
    def mode(self) -> ToolsMode:
        return self.override or self.hook.hub.config.tools

    def searching(self) -> bool:
        """Whether the upstream tools are replaced by the search tools in the listing now."""
        mode = self.mode
        if mode == "auto":
            self._refresh()
            return self._tokens > self.hook.hub.config.search_threshold
        return mode == "search"

    def _refresh(self) -> None:
        listing = self.hook.hub.listed_tools()
        if listing is not self._listing:  # the hub builds a new list whenever its tools change
            self._listing, self._index = listing, None
            self._tokens = count_tokens(listing) if self.mode == "auto" else 0

    def index(self) -> ToolIndex:
        self._refresh()
        hidden = self._hidden_own()
        if self._index is None or hidden != self._hidden:
            self._hidden = hidden
            self._index = ToolIndex([*(self._listing or []), *hidden])
        return self._index

    def _hidden_own(self) -> list[dict[str, Any]]:
        """The gateway's own tools that search mode does not list. Gathered from the hook's tools and the
        other layers: this layer's own `listed` asks `searching`, and lists only core tools anyway."""
        own = [tool.definition() for tool in self.hook.tools.values()]
        own += [tool for layer in self.hook.extensions if layer is not self for tool in layer.listed()]
        return _split_own(own)[1]

    # Extension ---------------------------------------------------------------------------
    def shown_upstream(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [] if self.searching() else tools

    def shown_local(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return _split_own(tools)[0] if self.searching() else tools

    def listed(self) -> list[dict[str, Any]]:
        if not self.searching():
            return []
        return [self._search_definition(), _call_definition()]

    async def call(self, call: LocalCall) -> dict[str, Any] | None:
        if call.name == SEARCH_TOOL:
            return await self._search(call.arguments)
        if call.name == CALL_TOOL:  # reached only when the call could not be unwrapped
            return error_result(call_tool_error(call.arguments))
        return None

    async def _search(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            return error_result(f"{SEARCH_TOOL} needs 'query': words describing the tool you need")
        limit = parse_limit(arguments.get("limit"))
        index = self.index()
        hits = await anyio.to_thread.run_sync(index.search, query, limit)
        found = [{**hit.tool, "score": round(hit.score, 3)} for hit in hits]
        answer: dict[str, Any] = {"tools": found, "catalog_size": len(index.tools)}
        if not found:
            answer["hint"] = "no tool matches these words; try other words (what the tool does, or its server)"
        else:
            answer["hint"] = f"call one with {CALL_TOOL}(name, arguments); its arguments follow its inputSchema"
        return tool_result(answer)

    def _search_definition(self) -> dict[str, Any]:
        return {
            "name": SEARCH_TOOL,
            "description": self._catalog_summary(),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What the tool should do."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
                },
                "required": ["query"],
            },
            "annotations": dict(_READ),
        }

    def _catalog_summary(self) -> str:
        """The search tool's description: what there is to find (servers and their tool counts), so an
        agent knows to search; brief, as it is listed on every turn in place of the tools themselves."""
        counts: dict[str, int] = {}
        for tool in self.hook.hub.listed_tools():
            server = self.hook.hub.server_of(str(tool.get("name", ""))) or "?"
            counts[server] = counts.get(server, 0) + 1
        hidden = len(self._hidden_own())
        if hidden:
            counts["toolreel"] = hidden
        servers = ", ".join(f"{server} ({count})" for server, count in counts.items())
        return (
            f"Search the {sum(counts.values())} tools of the servers {servers}; they are not listed. "
            f"Returns the best matches with their input schemas; call one with {CALL_TOOL}."
        )


def _split_own(tools: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The gateway's own tools as (listed in search mode, found by search)."""
    shown: list[dict[str, Any]] = []
    hidden: list[dict[str, Any]] = []
    templates = 0
    for tool in tools:
        name = str(tool.get("name", ""))
        if name.startswith(REEL_PREFIX):
            templates += 1
            listed = templates <= LISTED_TEMPLATES
        else:
            listed = name in CORE_TOOLS
        (shown if listed else hidden).append(tool)
    return shown, hidden


def _call_definition() -> dict[str, Any]:
    return {
        "name": CALL_TOOL,
        "description": f"Call a tool found with {SEARCH_TOOL}: the same as calling it directly.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "arguments": {"type": "object", "description": "As its inputSchema says."},
            },
            "required": ["name"],
        },
    }
