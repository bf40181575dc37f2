"""The checks every JSON-RPC line passes at the process boundary, before anything acts on it.

A line that Python's `json` cannot parse (bad UTF-8, bad JSON, nesting past the interpreter's stack), that
nests deeper than `MAX_DEPTH`, or a request whose `id` is not a string or an integer, is answered with a
JSON-RPC error (a notification is dropped) instead of reaching code that assumes a well-formed message.
Lone UTF-16 surrogates (`"\\ud800"`, sent by servers that cut a string mid-emoji) are valid JSON: they are
kept, and written back out as the same escape (`encode_json`), so a client gets what the server sent.

Every forwarded message is read and written here, so both go through orjson (about a sixth of the standard
library's CPU per message), and through the standard library's `json` for exactly what orjson would read or
write otherwise: lone surrogates, `NaN` / `Infinity`, integers past 64 bits, nesting past orjson's limit,
JSON in UTF-16 or UTF-32. What a line means is the same either way.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Final

import mcp_types as types
import orjson
from pydantic import BaseModel
from pydantic_core import PydanticSerializationError

from toolreel.core.limits import DEFAULT_MAX_BODY_MB

__all__ = [
    "DEFAULT_MAX_BODY_MB",
    "MAX_DEPTH",
    "BadMessage",
    "check_message",
    "dump_message",
    "encode_json",
    "error_response",
    "parse_line",
    "valid_id",
]

# Deeper than any tool schema or result seen in practice, and below the depth pydantic's JSON reader (about
# 200) and writer (about 250) accept, so whatever passes here can also be validated and written back.
MAX_DEPTH: Final = 128

# One encoder each for the hot path (UTF-8 out) and the rare value holding a lone surrogate, which UTF-8
# cannot encode: that one keeps it as the `\\udXXX` escape it arrived as.
_UTF8: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_ASCII: Final = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class BadMessage(Exception):
    """Why a line is refused, as the JSON-RPC error it is answered with."""

    code: int
    message: str
    request_id: str | int | None = None

    def response(self) -> dict[str, Any]:
        return error_response(self.request_id, self.code, self.message)


# A run of this many digits may be an integer past 64 bits, which orjson reads as a float (silently); such a
# line is read by `json`. Digits become b"0" and the rest b" ", so the test is one translate and one search.
_DIGIT_RUN: Final = b"0" * 19
_DIGITS_ONLY: Final = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
# orjson writes these natively where `json` refuses them: refused by both, they still reach the caller as TypeError.
_DUMP_OPTIONS: Final = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


class NonFinite(float):
    """`NaN`, `Infinity` or `-Infinity` as read from a line (not JSON, but what some peers write): orjson would
    write it as `null`, so it is written back by `json`, as it came."""

    __slots__ = ()


def _number(text: str) -> float:
    value = float(text)
    return value if math.isfinite(value) else NonFinite(value)  # `1e400` overflows to infinity


def encode_json(value: Any) -> bytes:
    """`value` as compact JSON bytes; a string with a lone surrogate is written as its escape."""
    try:
        return orjson.dumps(value, option=_DUMP_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError: a lone surrogate, an integer past 64 bits, a NonFinite, ...
        pass
    text = _UTF8.encode(value)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return _ASCII.encode(value).encode()


def dump_message(message: BaseModel) -> bytes:
    """A pydantic JSON-RPC message as one line; pydantic refuses lone surrogates, so those go through `json`."""
    try:
        return message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
    except PydanticSerializationError:
        return encode_json(message.model_dump(mode="json", by_alias=True, exclude_unset=True)) + b"\n"


def error_response(request_id: str | int | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def valid_id(value: object) -> bool:
    """MCP request ids are strings or integers (JSON-RPC's null and fractions are not allowed; nor is a bool)."""
    return isinstance(value, str | int) and not isinstance(value, bool)


def parse_line(line: bytes) -> Any:
    """The JSON value of one line, or BadMessage (-32700 for what is not JSON, -32600 for nesting too deep)."""
    # Counting brackets (quoted ones too) bounds the depth from above at C speed; only a line that
    # could be too deep is walked.
    deep = line.count(b"[") + line.count(b"{") > MAX_DEPTH
    value = _NOT_READ
    if _DIGIT_RUN not in line.translate(_DIGITS_ONLY):
        try:  # noqa: SIM105  (not contextlib.suppress: this is every forwarded message's path)
            value = orjson.loads(line)
        except orjson.JSONDecodeError:  # then `json` reads it, or says why not in its words
            pass
    if value is _NOT_READ or (deep and _depth(value) > MAX_DEPTH):
        # A line too deep is refused as `json` refuses it (past the stack's depth, with no id), as it always was.
        value = _parse_std(line)
    if deep and _depth(value) > MAX_DEPTH:
        request_id = value.get("id") if isinstance(value, dict) and valid_id(value.get("id")) else None
        raise BadMessage(
            types.INVALID_REQUEST, f"Invalid Request: the message nests deeper than {MAX_DEPTH} levels", request_id
        )
    return value


_NOT_READ: Final[Any] = object()


def _parse_std(line: bytes) -> Any:
    try:
        return json.loads(line, parse_float=_number, parse_constant=_number)
    except RecursionError:
        problem = f"Invalid Request: the message nests deeper than {MAX_DEPTH} levels"
        raise BadMessage(types.INVALID_REQUEST, problem) from None
    except ValueError as exc:  # UnicodeDecodeError included
        raise BadMessage(types.PARSE_ERROR, f"Parse error: the line is not valid JSON ({exc})") from None


def check_message(value: Any) -> None:
    """Raise BadMessage unless `value` has a JSON-RPC 2.0 message's shape, with a usable id where one is needed."""
    if not isinstance(value, dict):
        raise BadMessage(types.INVALID_REQUEST, "Invalid Request: a JSON-RPC message is a JSON object")
    request_id = value.get("id")
    usable = request_id if valid_id(request_id) else None
    if value.get("jsonrpc") != "2.0":
        raise BadMessage(types.INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', usable)
    if "method" in value:
        if not isinstance(value["method"], str):
            raise BadMessage(types.INVALID_REQUEST, 'Invalid Request: "method" must be a string', usable)
        if "id" in value and usable is None:
            raise BadMessage(
                types.INVALID_REQUEST,
                f"Invalid Request: a request id is a string or an integer, not {_kind(request_id)}",
            )
        if "params" in value and not isinstance(value["params"], dict):
            raise BadMessage(types.INVALID_PARAMS, 'Invalid params: "params" must be an object', usable)
    elif "id" not in value or ("result" not in value and "error" not in value):
        raise BadMessage(types.INVALID_REQUEST, "Invalid Request: neither a request, a notification nor a response")


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", float: "a fraction", list: "an array", dict: "an object"}.get(
        type(value), type(value).__name__
    )


def _depth(value: Any) -> int:
    """How deep arrays and objects nest in `value` (iterative: no recursion to exhaust)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest
