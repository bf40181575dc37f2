"""Secret-named keys redacted in a JSON text without parsing it: the redactor's way for a text too large to
parse and walk (a 10 MB tool result), and for one that is not whole JSON (a document cut off mid-way).

One RE2 pass (linear time) over the text's UTF-8 bytes finds only the keys that could be secret-named: one
holding a secret word, or an escape that could spell one. Only those are decoded and judged, so the cost
grows with the text and with such keys, never with the text's other keys and values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Final

import re2

from toolreel.core.model import JSON

__all__ = ["KEY_WORDS", "needs_parse", "redact_keys"]

KEY_WORDS: Final = ("pass", "pwd", "secret", "token", "key", "auth", "credential", "cookie", "session", "bearer", "jwt")
"""A word every secret-named key holds once lower-cased (`is_secret_key` matches none without one)."""

_OPTIONS = re2.Options()
# Latin-1: each byte is one character, so `[^"\\]` steps over any UTF-8 sequence (no byte of which is `"` or
# `\`) and over the bytes of a lone surrogate, which no strict UTF-8 reader would take.
_OPTIONS.encoding = re2.Options.Encoding.LATIN1
_OPTIONS.dot_nl = True
_OPTIONS.log_errors = False
_WS: Final = rb"[ \t\n\r]*"
# A key string followed by its colon. A match can start only at a key's opening quote: one starting at a
# closing quote would hold structure (no secret word, no backslash), one inside a string runs to that
# string's end, and only a key's end is followed by a colon. Leftmost-first, so a key is taken whole.
_KEY: Final = re2.compile(
    rb'"((?:[^"\\]*(?i:' + "|".join(KEY_WORDS).encode() + rb')[^"\\]*)|[^"\\]*(?:\\.[^"\\]*)+)"' + _WS + b":" + _WS,
    _OPTIONS,
)
# A key written inside a string value (`"{\"password\": \"x\"}"`): JSON in text, which the redactor parses.
_ESCAPED_KEY: Final = re.compile(r'\\"(?:[ \t\n\r]|\\[nrt])*:')
# Characters whose lower case is ASCII (KELVIN SIGN -> `k`; I WITH DOT -> `i` + a combining dot):
# `is_secret_key` lower-cases keys, the byte scan's case folding is ASCII only.
_FOLDS_TO_ASCII: Final = ("\u212a", "\u0130")
# Anchored at a value's first byte, each in one forward pass (no alternatives that can overlap).
_STRING: Final = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_SCALAR: Final = re.compile(rb"[^,\]}\s]+")
_NESTING: Final = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


def needs_parse(text: str) -> bool:
    """Whether a scan could miss what parsing sees: JSON text inside a string value, or a key whose
    secret word is only there once Unicode lower-cases it."""
    return any(char in text for char in _FOLDS_TO_ASCII) or _ESCAPED_KEY.search(text) is not None


def redact_keys(
    text: str, is_secret: Callable[[str], bool], holds_secret: Callable[[JSON], bool], mark: str
) -> tuple[str, list[JSON]] | None:
    """`text` with the value of each secret-named key replaced by the JSON string `mark`, and the values
    replaced (to be learned); None when nothing was replaced. The rest of the text is kept byte for byte."""
    data = _encode(text)
    replacement = json.dumps(mark, ensure_ascii=False).encode()
    pieces: list[bytes] = []
    values: list[JSON] = []
    kept = 0  # the end of what is already in `pieces`
    for start, end in _secret_values(data, is_secret):
        if start < kept:
            continue  # a key inside a value already replaced whole
        value = _value(data[start:end])
        if holds_secret(value):
            pieces += [data[kept:start], replacement]
            values.append(value)
            kept = end
    if not values:
        return None
    pieces.append(data[kept:])
    return b"".join(pieces).decode("utf-8", "surrogatepass"), values


def _secret_values(data: bytes, is_secret: Callable[[str], bool]) -> Iterator[tuple[int, int]]:
    """(start, end) of the value of each key `is_secret` accepts."""
    for match in _KEY.finditer(data):
        if is_secret(_key(match.group(1))):
            start = match.end()
            yield start, _value_end(data, start)


def _key(raw: bytes) -> str:
    if b"\\" not in raw:
        return raw.decode("utf-8", "surrogatepass")
    try:
        return str(json.loads(b'"' + raw + b'"'))
    except ValueError:
        return raw.decode("utf-8", "surrogatepass")  # a bad escape: judge the key as written


def _value_end(data: bytes, start: int) -> int:
    """Where the value starting at `start` ends; the end of the text when it is cut off."""
    head = data[start : start + 1]
    if head in (b"{", b"["):
        return _nesting_end(data, start)
    match = (_STRING if head == b'"' else _SCALAR).match(data, start)
    return len(data) if match is None else match.end()


def _nesting_end(data: bytes, start: int) -> int:
    depth = 0
    for match in _NESTING.finditer(data, start):
        token = match.group()
        if token in (b"{", b"["):
            depth += 1
        elif token in (b"}", b"]"):
            depth -= 1
            if depth == 0:
                return match.end()
    return len(data)


def _value(raw: bytes) -> JSON:
    """The value as JSON reads it; text that does not read (cut off, not JSON) is kept as text, which
    holds a secret like any other string."""
    try:
        value: JSON = json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "surrogatepass")
    return value


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")
