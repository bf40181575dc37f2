"""The ref grammar (SPEC §4): text to `Ref`, paths compiled once, `{{@ref}}` strings split into parts.

Pure functions of text, nothing reads a scope; `core.refs` re-exports the public names and evaluates refs.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Final, TypeAlias

from toolreel.core.model import JSON

if TYPE_CHECKING:
    from jsonpath_ng import JSONPath

__all__ = [
    "MAX_PATH_LENGTH",
    "RESERVED_ROOTS",
    "STEP_NAME_RE",
    "Ref",
    "RefPath",
    "Segment",
    "compile_path",
    "escape_literal",
    "format_ref",
    "is_ref",
    "literal_head",
    "parse_ref",
    "ref_roots",
    "refs_in",
    "split_template",
    "unescape_literal",
]

STEP_NAME_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
RESERVED_ROOTS: Final = frozenset({"input", "item", "index"})
MAX_PATH_LENGTH: Final = 2048  # characters of a ref's path (a filter of about 150 clauses)
_CACHED_LEN: Final = 512  # longer strings are parsed uncached: a ref is short, payloads are not


@dataclass(frozen=True, slots=True)
class Ref:
    root: str
    """`input`, `item`, `index`, or a step name."""
    path: str | None
    """The path as written without its leading dot (`items[0].id`, `[2]`, `..id`), or None."""
    text: str
    """The ref as written, e.g. `@list_issues.items[0].id` (without `{{ }}`)."""


# --------------------------------------------------------------------------- grammar

_ROOT_RE: Final = re.compile(r"@([A-Za-z_][A-Za-z0-9_]*)")
_OPEN_RE: Final = re.compile(r"\{\{([ \t]*)@")  # where an interpolation (or its escape `{{@@`) starts
_CLOSE_RE: Final = re.compile(r"[ \t]*\}\}")
_LOOKS_LIKE_REF_RE: Final = re.compile(r"@[A-Za-z_]")
_UNQUOTE_RE: Final = re.compile(r"\\(.)", re.DOTALL)
_SIMPLE_KEY_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# (regex, kind): kind "key" and "index" are plain, the rest are JSONPath-only (multi-match).
_SEGMENTS: Final[tuple[tuple[re.Pattern[str], str], ...]] = (
    (re.compile(r"\.\.(?:[A-Za-z_][A-Za-z0-9_-]*|\*)"), "multi"),
    (re.compile(r"\.\*"), "multi"),
    (re.compile(r"\.([A-Za-z_][A-Za-z0-9_-]*|[0-9]+)"), "key"),
    (re.compile(r"\[(-?[0-9]+)\]"), "index"),
    (re.compile(r"\[(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')\]", re.DOTALL), "quoted"),
    (re.compile(r"\[\*\]"), "multi"),
    (re.compile(r"\[-?[0-9]*:-?[0-9]*(?::-?[0-9]+)?\]"), "multi"),
    (re.compile(r"\[-?[0-9]+(?:,-?[0-9]+)+\]"), "multi"),
)

_Key: TypeAlias = str | int


@dataclass(frozen=True, slots=True)
class Segment:
    text: str  # as written, e.g. ".files" or "[3]"
    key: _Key | None  # None: a multi-match segment


@dataclass(frozen=True, slots=True)
class RefPath:
    segments: tuple[Segment, ...]
    prefix: tuple[Segment, ...]  # the plain segments before the first multi-match one
    jsonpath: JSONPath | None  # set when the path has a multi-match segment


def _scan_filter(s: str, i: int) -> int | None:
    """End of a `[?...]` segment starting at `i`, honouring nested brackets and quotes."""
    depth, j, n = 0, i, len(s)
    while j < n:
        c = s[j]
        if c in "'\"":
            j += 1
            while j < n and s[j] != c:
                j += 2 if s[j] == "\\" else 1
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return None


def _scan_segments(s: str, i: int) -> tuple[list[Segment], int]:
    """Consume path segments greedily from `i`; returns them and where they stop."""
    segments: list[Segment] = []
    n = len(s)
    while i < n and s[i] in ".[":
        if s.startswith("[?", i):
            end = _scan_filter(s, i)
            if end is None:
                break
            segments.append(Segment(s[i:end], None))
            i = end
            continue
        for regex, kind in _SEGMENTS:
            m = regex.match(s, i)
            if m is not None:
                segments.append(Segment(m.group(0), _segment_key(kind, m)))
                i = m.end()
                break
        else:
            break
    return segments, i


def _segment_key(kind: str, m: re.Match[str]) -> _Key | None:
    if kind == "key":
        return m.group(1)
    if kind == "index":
        return int(m.group(1))
    if kind == "quoted":
        return _UNQUOTE_RE.sub(r"\1", m.group(1)[1:-1])
    return None


def _jsonpath_suffix(path: str) -> str:
    return path if path.startswith(("[", "..")) else "." + path


@lru_cache(maxsize=4096)
def compile_path(path: str) -> RefPath | None:
    if len(path) > MAX_PATH_LENGTH:  # jsonpath-ng's parser takes seconds on 70,000 characters, on the loop
        return None
    suffix = _jsonpath_suffix(path)
    segments, end = _scan_segments(suffix, 0)
    if end != len(suffix) or not segments:
        return None
    prefix: list[Segment] = []
    for segment in segments:
        if segment.key is None:
            break
        prefix.append(segment)
    if len(prefix) == len(segments):
        return RefPath(tuple(segments), tuple(segments), None)
    # Imported here: only multi-match paths need jsonpath-ng, and loading its parser costs
    # every gateway start about 25 ms of CPU.
    from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError
    from jsonpath_ng.ext.parser import parse as _jsonpath_parse

    from toolreel.core._ref_regex import install_linear_regex, regexes_compile

    install_linear_regex()
    try:
        # jsonpath-ng warns about deprecated filter syntax (`&`); the path still works.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            compiled = _jsonpath_parse("$" + suffix)
    except (JsonPathLexerError, JsonPathParserError, ValueError, TypeError, AttributeError):
        return None
    if not regexes_compile(compiled):
        return None
    return RefPath(tuple(segments), tuple(prefix), compiled)


def _scan_ref(s: str, i: int) -> tuple[Ref, int] | None:
    """The ref starting with the '@' at `i`, and where it ends; None if no valid ref starts there."""
    m = _ROOT_RE.match(s, i)
    if m is None:
        return None
    start_path = m.end()
    _, end = _scan_segments(s, start_path)
    suffix = s[start_path:end]
    if not suffix:
        return Ref(m.group(1), None, s[i:end]), end
    path = suffix if suffix.startswith("..") or suffix[0] == "[" else suffix[1:]
    if compile_path(path) is None:
        return None
    return Ref(m.group(1), path, s[i:end]), end


def _parse_ref_uncached(text: str) -> Ref | None:
    if not _LOOKS_LIKE_REF_RE.match(text):
        return None
    scanned = _scan_ref(text, 0)
    if scanned is None or scanned[1] != len(text):
        return None
    return scanned[0]


_parse_ref_cached = lru_cache(maxsize=8192)(_parse_ref_uncached)


def parse_ref(text: str) -> Ref | None:
    """The ref that `text` is exactly, or None when `text` is a literal."""
    if len(text) < 2 or text[0] != "@":
        return None
    return _parse_ref_cached(text) if len(text) <= _CACHED_LEN else _parse_ref_uncached(text)


def is_ref(text: str) -> bool:
    return parse_ref(text) is not None


# A template string split into literal text and `{{@ref}}` placeholders (the Ref and the raw text).
_Part: TypeAlias = str | tuple[Ref, str]


def _split_uncached(s: str) -> tuple[_Part, ...]:
    parts: list[_Part] = []
    literal: list[str] = []
    pos = 0
    while (m := _OPEN_RE.search(s, pos)) is not None:
        at = m.end() - 1
        if s.startswith("@", at + 1):  # `{{@@` is the escape of a literal `{{@`
            literal.append(s[pos : at + 1])
            pos = at + 2
            continue
        scanned = _scan_ref(s, at)
        close = _CLOSE_RE.match(s, scanned[1]) if scanned is not None else None
        if scanned is None or close is None:
            literal.append(s[pos : m.end()])
            pos = m.end()
            continue
        literal.append(s[pos : m.start()])
        if any(literal):
            parts.append("".join(literal))
        literal = []
        parts.append((scanned[0], s[m.start() : close.end()]))
        pos = close.end()
    literal.append(s[pos:])
    if any(literal):
        parts.append("".join(literal))
    return tuple(parts)


_split_cached = lru_cache(maxsize=4096)(_split_uncached)


def split_template(s: str) -> tuple[_Part, ...]:
    if "{{" not in s:
        return (s,)
    return _split_cached(s) if len(s) <= _CACHED_LEN else _split_uncached(s)


def literal_head(s: str) -> tuple[str, str]:
    """A literal's leading text and the rest to interpolate: a leading `@@` is a literal `@`."""
    return ("@", s[2:]) if s.startswith("@@") else ("", s)


def escape_literal(text: str) -> str:
    """`text` written so that it resolves to itself: `{{@` -> `{{@@`, and a leading `@@` when needed."""
    escaped = _OPEN_RE.sub(lambda m: m.group(0) + "@", text)
    if escaped.startswith("@@") or parse_ref(escaped) is not None:
        return "@" + escaped
    return escaped


def unescape_literal(text: str) -> str:
    """The value of a literal (not a ref): leading `@@` -> `@`, `{{@@` -> `{{@`; placeholders kept."""
    lead, rest = literal_head(text)
    parts = split_template(rest)
    if not lead and parts == (text,):
        return text
    return lead + "".join(part if isinstance(part, str) else part[1] for part in parts)


def format_ref(root: str, keys: Sequence[_Key] = ()) -> str:
    """The ref text addressing `keys` under `root`, quoting keys as needed: `@x.a[0]["b c"]`."""
    out = ["@", root]
    for key in keys:
        if isinstance(key, int):
            out.append(f"[{key}]")
        elif _SIMPLE_KEY_RE.fullmatch(key) and key not in ("where", "wherenot"):
            out.append("." + key)
        else:
            out.append('["' + key.replace("\\", "\\\\").replace('"', '\\"') + '"]')
    return "".join(out)


# --------------------------------------------------------------------------- finding refs


def refs_in(value: JSON) -> list[Ref]:
    """Every ref in `value` at any depth, in order: whole-string refs and `{{@ref}}` placeholders."""
    found: list[Ref] = []
    _collect(value, found)
    return found


def _collect(value: JSON, found: list[Ref]) -> None:
    if isinstance(value, str):
        ref = parse_ref(value)
        if ref is not None:
            found.append(ref)
            return
        found.extend(part[0] for part in split_template(literal_head(value)[1]) if not isinstance(part, str))
    elif isinstance(value, Mapping):
        for item in value.values():
            _collect(item, found)
    elif isinstance(value, list | tuple):
        for item in value:
            _collect(item, found)


def ref_roots(value: JSON) -> set[str]:
    return {ref.root for ref in refs_in(value)}
