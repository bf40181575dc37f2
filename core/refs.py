"""The ref grammar and resolver (SPEC §4, §5): `@input.x`, `@step.path`, `@item`, `@index`, `{{@ref}}`.

`resolve(value, scope)` replaces every ref at any depth and never mutates its input; unchanged
sub-values, and whole values a ref points at, are shared rather than copied (treat results as
read-only). A ref that does not resolve raises `RefError` naming the ref and what does exist.

Grammar decisions beyond the SPEC:
- a path is a chain of `.key` (`[A-Za-z_][A-Za-z0-9_-]*` or digits), `[n]` (negative counts from
  the end), `["quoted key"]` / `['quoted key']` (backslash escapes the next character), `.*`, `[*]`,
  `..key`, `[a:b]`, `[0,2]`, `[?(filter)]`; no spaces outside quotes and filters. A plain path
  (keys and indexes) is walked directly; the others are JSONPath evaluated by jsonpath-ng.
- a wildcard, filter, slice, union or descendant path yields the list of all its matches. The plain
  part before the first such segment must exist (else `RefError`); after it, no match is `[]`,
  because a filter that selects nothing is a legitimate answer (e.g. a `for_each` over no items).
- a ref to a step whose output is null (a skipped step) gives null whatever its path (SPEC §7).
- `{{@ref}}` is always text, even when it is the whole string; `{{@@` is a literal `{{@`.
"""

from __future__ import annotations

import difflib
import json
import re
import warnings
from collections.abc import Mapping, MutableMapping, Sequence, Set
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final, Protocol, TypeAlias

from jsonpath_ng import JSONPath
from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError
from jsonpath_ng.ext.parser import parse as _jsonpath_parse

from core.errors import RefError
from core.model import JSON

__all__ = [
    "RESERVED_ROOTS",
    "STEP_NAME_RE",
    "MappingScope",
    "Ref",
    "Scope",
    "escape_literal",
    "evaluate",
    "format_ref",
    "is_ref",
    "parse_ref",
    "ref_roots",
    "refs_in",
    "resolve",
    "step_name_for",
    "step_output",
    "unescape_literal",
]

STEP_NAME_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
RESERVED_ROOTS: Final = frozenset({"input", "item", "index"})

_HINT: Final = "inputs are written @input.<name>; a literal '@' at the start is written '@@'"
_MAX_LISTED: Final = 20
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
class _Segment:
    text: str  # as written, e.g. ".files" or "[3]"
    key: _Key | None  # None: a multi-match segment


@dataclass(frozen=True, slots=True)
class _Path:
    segments: tuple[_Segment, ...]
    prefix: tuple[_Segment, ...]  # the plain segments before the first multi-match one
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


def _scan_segments(s: str, i: int) -> tuple[list[_Segment], int]:
    """Consume path segments greedily from `i`; returns them and where they stop."""
    segments: list[_Segment] = []
    n = len(s)
    while i < n and s[i] in ".[":
        if s.startswith("[?", i):
            end = _scan_filter(s, i)
            if end is None:
                break
            segments.append(_Segment(s[i:end], None))
            i = end
            continue
        for regex, kind in _SEGMENTS:
            m = regex.match(s, i)
            if m is not None:
                segments.append(_Segment(m.group(0), _segment_key(kind, m)))
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
def _compile_path(path: str) -> _Path | None:
    suffix = _jsonpath_suffix(path)
    segments, end = _scan_segments(suffix, 0)
    if end != len(suffix) or not segments:
        return None
    prefix: list[_Segment] = []
    for segment in segments:
        if segment.key is None:
            break
        prefix.append(segment)
    if len(prefix) == len(segments):
        return _Path(tuple(segments), tuple(segments), None)
    try:
        # jsonpath-ng warns about deprecated filter syntax (`&`); the path still works.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            compiled = _jsonpath_parse("$" + suffix)
    except (JsonPathLexerError, JsonPathParserError, ValueError, TypeError, AttributeError):
        return None
    return _Path(tuple(segments), tuple(prefix), compiled)


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
    if _compile_path(path) is None:
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


def _split(s: str) -> tuple[_Part, ...]:
    if "{{" not in s:
        return (s,)
    return _split_cached(s) if len(s) <= _CACHED_LEN else _split_uncached(s)


def _body(s: str) -> tuple[str, str]:
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
    lead, rest = _body(text)
    parts = _split(rest)
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
        found.extend(part[0] for part in _split(_body(value)[1]) if not isinstance(part, str))
    elif isinstance(value, Mapping):
        for item in value.values():
            _collect(item, found)
    elif isinstance(value, list | tuple):
        for item in value:
            _collect(item, found)


def ref_roots(value: JSON) -> set[str]:
    return {ref.root for ref in refs_in(value)}


# --------------------------------------------------------------------------- scopes


class Scope(Protocol):
    """What resolution reads: step outputs, the template inputs and the current for_each element."""

    def has_step(self, name: str) -> bool: ...

    def step_output(self, name: str) -> JSON:
        """The step's output; None for a skipped step; raises RefError for a failed one."""
        ...

    def step_names(self) -> Sequence[str]: ...

    @property
    def inputs(self) -> Mapping[str, JSON]: ...

    @property
    def item(self) -> JSON: ...

    @property
    def index(self) -> int | None: ...

    @property
    def in_loop(self) -> bool: ...


@dataclass
class MappingScope:
    """A Scope over plain mappings: outputs of succeeded steps, reasons of failed ones, skipped names."""

    steps: Mapping[str, JSON] = field(default_factory=dict)
    failed: Mapping[str, str] = field(default_factory=dict)
    skipped: Set[str] = field(default_factory=frozenset)
    inputs: Mapping[str, JSON] = field(default_factory=dict)
    item: JSON = None
    index: int | None = None
    in_loop: bool = False

    def has_step(self, name: str) -> bool:
        return name in self.steps or name in self.failed or name in self.skipped

    def step_output(self, name: str) -> JSON:
        if name in self.failed:
            raise RefError(f"step {name} failed ({self.failed[name]}); a failed step has no output", step=name)
        if name in self.skipped:
            return None
        return self.steps[name]

    def step_names(self) -> Sequence[str]:
        names = dict.fromkeys([*self.steps, *self.failed, *sorted(self.skipped)])
        return list(names)


# --------------------------------------------------------------------------- resolution


def resolve(value: JSON, scope: Scope) -> JSON:
    """`value` with every ref replaced by what it addresses; literals are unescaped (`@@x` -> `@x`)."""
    if isinstance(value, str):
        return _resolve_str(value, scope)
    if isinstance(value, dict):
        return _resolve_dict(value, scope)
    if isinstance(value, list):
        return _resolve_list(value, scope)
    return value


def _resolve_dict(value: dict[str, JSON], scope: Scope) -> JSON:
    out: dict[str, JSON] | None = None
    for key, item in value.items():
        new = resolve(item, scope)
        if new is not item:
            if out is None:
                out = dict(value)
            out[key] = new
    return value if out is None else out


def _resolve_list(value: list[JSON], scope: Scope) -> JSON:
    out: list[JSON] | None = None
    for i, item in enumerate(value):
        new = resolve(item, scope)
        if new is not item:
            if out is None:
                out = list(value)
            out[i] = new
    return value if out is None else out


def _resolve_str(s: str, scope: Scope) -> JSON:
    if s.startswith("@"):
        ref = parse_ref(s)
        if ref is not None:
            return evaluate(ref, scope)
    elif "{{" not in s:
        return s
    lead, rest = _body(s)
    parts = _split(rest)
    if not lead and parts == (s,):
        return s
    return lead + "".join(part if isinstance(part, str) else _as_text(evaluate(part[0], scope)) for part in parts)


def _as_text(value: JSON) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def evaluate(ref: Ref, scope: Scope) -> JSON:
    """What one ref addresses in `scope`; raises RefError saying what is missing and what exists."""
    path = _compile_path(ref.path) if ref.path is not None else None
    if ref.path is not None and path is None:
        raise RefError(f"`{ref.text}`: `{ref.path}` is not a valid path ({_HINT})", ref=ref.text)
    if ref.root == "input":
        return _evaluate_input(ref, path, scope)
    if ref.root in ("item", "index"):
        if not scope.in_loop:
            raise RefError(
                f"`{ref.text}`: @{ref.root} is only defined inside a for_each step, and this is not one",
                ref=ref.text,
            )
        base = scope.item if ref.root == "item" else scope.index
        return base if path is None else _follow(base, path, ref, f"`@{ref.root}`", f"@{ref.root}")
    return _evaluate_step(ref, path, scope)


def _evaluate_step(ref: Ref, path: _Path | None, scope: Scope) -> JSON:
    if not scope.has_step(ref.root):
        raise RefError(_unknown_step_message(ref, scope.step_names()), ref=ref.text)
    try:
        output = scope.step_output(ref.root)
    except RefError as exc:
        raise RefError(f"`{ref.text}`: {exc}", ref=ref.text, step=exc.step) from exc
    if path is None or output is None:  # a skipped step's output is null, and so is every path into it
        return output
    return _follow(output, path, ref, f"the output of step {ref.root}", "")


def _unknown_step_message(ref: Ref, names: Sequence[str]) -> str:
    listed = ", ".join(names) if names else "none"
    close = difflib.get_close_matches(ref.root, list(names), n=1)
    guess = f"; did you mean @{close[0]}?" if close else ""
    return f"`{ref.text}` names no step; steps so far: {listed}{guess} ({_HINT})"


def _evaluate_input(ref: Ref, path: _Path | None, scope: Scope) -> JSON:
    inputs = scope.inputs
    if path is None:
        return dict(inputs)
    first = path.segments[0].key
    if not isinstance(first, str):
        return _follow(dict(inputs), path, ref, "the inputs", "@input")
    if first not in inputs:
        declared = ", ".join(inputs) if inputs else "none"
        raise RefError(f"`{ref.text}`: no input `{first}`; declared inputs: {declared}", ref=ref.text)
    rest = _Path(path.segments[1:], path.prefix[1:], path.jsonpath)
    label = "@input" + path.segments[0].text
    value = inputs[first]
    if not rest.segments:
        return value
    if rest.jsonpath is not None:  # the JSONPath addresses the whole inputs object
        _walk(value, rest.prefix, ref, f"`{label}`", label)
        return [match.value for match in rest.jsonpath.find(dict(inputs))]
    return _walk(value, rest.segments, ref, f"`{label}`", label)


def _follow(value: JSON, path: _Path, ref: Ref, root_label: str, label_prefix: str) -> JSON:
    if path.jsonpath is None:
        return _walk(value, path.segments, ref, root_label, label_prefix)
    _walk(value, path.prefix, ref, root_label, label_prefix)  # names what is missing, if anything is
    return [match.value for match in path.jsonpath.find(value)]


def _walk(value: JSON, segments: Sequence[_Segment], ref: Ref, root_label: str, label_prefix: str) -> JSON:
    """Follow plain keys and indexes, with the same outcome as jsonpath-ng but errors that explain."""
    written = label_prefix
    label = root_label
    for segment in segments:
        key = segment.key
        if isinstance(key, int):
            if not isinstance(value, list | tuple):
                raise _mismatch(ref, label, value, "a list")
            if not -len(value) <= key < len(value):
                raise RefError(f"`{ref.text}`: {label} {_list_size(value)}", ref=ref.text)
            value = value[key]
        else:
            if not isinstance(value, Mapping):
                raise _mismatch(ref, label, value, "an object", key)
            if key not in value:
                raise RefError(f"`{ref.text}`: {label} has no key `{key}`; {_keys(value)}", ref=ref.text)
            value = value[key]
        written += segment.text
        label = f"`{written.removeprefix('.')}`"
    return value


def _list_size(value: Sequence[Any]) -> str:
    if not value:
        return "is an empty list"
    return f"has {len(value)} item{'s' if len(value) != 1 else ''} (indexes 0–{len(value) - 1})"


def _keys(value: Mapping[str, Any]) -> str:
    if not value:
        return "it is an empty object"
    names = list(value)
    more = f", … ({len(names) - _MAX_LISTED} more)" if len(names) > _MAX_LISTED else ""
    return "keys: " + ", ".join(str(name) for name in names[:_MAX_LISTED]) + more


def _mismatch(ref: Ref, label: str, value: JSON, wanted: str, key: str | None = None) -> RefError:
    hint = ""
    if key is not None and key.isdigit() and isinstance(value, list | tuple):
        hint = f"; index a list with [{key}]"
    return RefError(f"`{ref.text}`: {label} is {_kind(value)}, not {wanted}{hint}", ref=ref.text)


def _kind(value: JSON) -> str:
    if value is None:
        return "null"
    return next((name for kinds_of, name in _KINDS if isinstance(value, kinds_of)), type(value).__name__)


_KINDS: Final[tuple[tuple[type | tuple[type, ...], str], ...]] = (
    (bool, "a boolean"),  # before int: a bool is an int to isinstance
    ((int, float), "a number"),
    (str, "a string"),
    ((list, tuple), "a list"),
    (Mapping, "an object"),
)


# --------------------------------------------------------------------------- step outputs and names


def _refuse_constant(constant: str) -> JSON:
    raise ValueError(constant)


_STRICT_JSON: Final = json.JSONDecoder(parse_constant=_refuse_constant)  # one decoder, not one per call
_JSON_START: Final = frozenset('{["-0123456789tfn')


def _loads_strict(text: str) -> tuple[bool, JSON]:
    """(True, value) when `text` is JSON; NaN and Infinity are not (they are not JSON)."""
    stripped = text.lstrip()
    if not stripped or stripped[0] not in _JSON_START:  # most plain text is refused without parsing
        return False, None
    try:
        return True, _STRICT_JSON.decode(text)
    except ValueError:
        return False, None


def step_output(result: Mapping[str, JSON]) -> JSON:
    """What `@step` addresses in an MCP CallToolResult wire dict (SPEC §4).

    1. `structuredContent` when present (not null);
    2. when every content item is text: one item that parses as JSON -> that value; several items
       that each parse as JSON -> the list of their values (how SDK servers return sequences);
    3. a single text item that is not JSON -> that string;
    4. otherwise (mixed, non-text, or several non-JSON texts) the list of content items as JSON.
    A result with `isError` has no addressable output: RefError (check `isError` before calling).
    """
    if result.get("isError"):
        raise RefError("the tool call failed (isError); a failed step has no addressable output")
    structured = result.get("structuredContent")
    if structured is not None:
        return structured
    content: list[JSON] = result.get("content") or []
    if content and all(isinstance(item, Mapping) and item.get("type") == "text" for item in content):
        texts = [str(item.get("text", "")) for item in content]
        parsed = [_loads_strict(text) for text in texts]
        if all(ok for ok, _ in parsed):
            values = [value for _, value in parsed]
            return values[0] if len(values) == 1 else values
        if len(texts) == 1:
            return texts[0]
    return content


_UNSAFE_NAME_CHAR: Final = re.compile(r"[^A-Za-z0-9_]")


def step_name_base(tool: str) -> str:
    """What `step_name_for` numbers: the tool name (without server prefix) made a legal name."""
    base = _UNSAFE_NAME_CHAR.sub("_", tool) or "_"
    return "_" + base if base[0].isdigit() else base


def step_name_for(tool: str, counts: MutableMapping[str, int]) -> str:
    """The next step name for `tool` (without server prefix): `read_file_1`, `get_tiny_image_2`, ...

    `counts` holds the per-name counters of one execution and is updated.
    """
    base = step_name_base(tool)
    counts[base] = counts.get(base, 0) + 1
    return f"{base}_{counts[base]}"
