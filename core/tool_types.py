"""TypeScript-style declarations of tools, from their JSON Schemas, for agents writing Code Mode scripts.

Short on purpose: a declaration is read by a model inside its context window, so it keeps what a
call needs (names, types, required keys, enums, descriptions in one line) and drops the rest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["declaration", "ts_type"]

_IDENT_RE = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_MAX_DEPTH = 6
_PRIMITIVES = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean", "null": "null"}


def _key(name: str) -> str:
    return name if _IDENT_RE.match(name) else json.dumps(name)


def _one_line(text: object, limit: int = 160) -> str:
    flat = " ".join(str(text).split()).replace("*/", "* /")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def ts_type(schema: object, depth: int = 0) -> str:
    """A JSON Schema as a TypeScript type (`unknown` where the schema says nothing usable)."""
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return "unknown"
    if "enum" in schema and isinstance(schema["enum"], list):
        return " | ".join(json.dumps(v) for v in schema["enum"]) or "never"
    if "const" in schema:
        return json.dumps(schema["const"])
    for combiner in ("anyOf", "oneOf"):
        if isinstance(schema.get(combiner), list):
            return " | ".join(ts_type(s, depth + 1) for s in schema[combiner]) or "unknown"
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(ts_type({**schema, "type": k}, depth) for k in kind)
    if kind == "array":
        item = ts_type(schema.get("items"), depth)
        return f"Array<{item}>"
    if kind == "object" or "properties" in schema:
        return _object(schema, depth)
    return _PRIMITIVES.get(str(kind), "unknown")


def _object(schema: Mapping[str, Any], depth: int) -> str:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return "Record<string, unknown>"
    required = set(schema.get("required") or ())
    indent = "  " * (depth + 1)
    lines = []
    for name, sub in properties.items():
        described = sub.get("description") if isinstance(sub, Mapping) else None
        note = f"{indent}/** {_one_line(described)} */\n" if described else ""
        mark = "" if name in required else "?"
        lines.append(f"{note}{indent}{_key(str(name))}{mark}: {ts_type(sub, depth + 1)};")
    return "{\n" + "\n".join(lines) + "\n" + "  " * depth + "}"


def declaration(tools: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> str:
    """`declare const tools: {server: {tool(args): Promise<output>}}` for tool definitions by server and name."""
    parts = ["declare const tools: {"]
    for server, defined in tools.items():
        parts.append(f"  {_key(server)}: {{")
        parts.extend(_member(tool, definition) for tool, definition in defined.items())
        parts.append("  };")
    parts.append("};")
    return "\n".join(parts)


def _member(tool: str, definition: Mapping[str, Any]) -> str:
    args = ts_type(definition.get("inputSchema") or {"type": "object"}, 2)
    output = definition.get("outputSchema")
    # Without an output schema the output is the result's JSON, or its text (SPEC §4): not declared.
    returned = ts_type(output, 2) if isinstance(output, Mapping) else "unknown"
    described = definition.get("description")
    note = f"    /** {_one_line(described, 400)} */\n" if described else ""
    return f"{note}    {_key(tool)}(args: {args}): Promise<{returned}>;"
