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
from collections.abc import Callable, Mapping, MutableMapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from toolreel.core._ref_grammar import (
    MAX_PATH_LENGTH,
    RESERVED_ROOTS,
    STEP_NAME_RE,
    Ref,
    RefPath,
    Segment,
    compile_path,
    escape_literal,
    format_ref,
    is_ref,
    literal_head,
    parse_ref,
    ref_roots,
    refs_in,
    split_template,
    unescape_literal,
)
from toolreel.core.errors import RefError
from toolreel.core.model import JSON

__all__ = [
    "RESERVED_ROOTS",
    "STEP_NAME_RE",
    "MappingScope",
    "Ref",
    "Scope",
    "broken_ref",
    "escape_literal",
    "evaluate",
    "format_ref",
    "is_ref",
    "parse_ref",
    "ref_roots",
    "refs_in",
    "resolve",
    "step_name_base",
    "step_name_for",
    "step_output",
    "unescape_literal",
]

_STEP_AT_START: Final = re.compile(r"@([A-Za-z_][A-Za-z0-9_]*)")
_PLACEHOLDER_AT: Final = re.compile(r"\{\{@([A-Za-z_][A-Za-z0-9_]*)")
_HINT: Final = "inputs are written @input.<name>; a literal '@' at the start is written '@@'"
_MAX_LISTED: Final = 20


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
        _refuse_broken_ref(s, scope)
    elif "{{" not in s:
        return s
    elif "{{@" in s:
        _refuse_broken_ref(s, scope)
    lead, rest = literal_head(s)
    parts = split_template(rest)
    if not lead and parts == (s,):
        return s
    return lead + "".join(part if isinstance(part, str) else _as_text(evaluate(part[0], scope)) for part in parts)


def _refuse_broken_ref(s: str, scope: Scope) -> None:
    problem = broken_ref(s, scope.has_step)
    if problem is not None:
        raise RefError(problem, ref=_clip(s))


def broken_ref(s: str, has_step: Callable[[str], bool]) -> str | None:
    """Why `s` holds a malformed ref to a step that exists, or None. A string that starts with `@<step>`, or a
    `{{@<step>` placeholder, that does not parse was meant as a ref: sending it on as text would hide the
    mistake (`@list_1.items[0`, `@list_1 .name`, `{{@list_1.items[0}}`). Other strings stay literals."""
    if s.startswith("@") and parse_ref(s) is None:
        start = _STEP_AT_START.match(s)
        if start is not None and start.group(1) not in RESERVED_ROOTS and has_step(start.group(1)):
            return _broken(s, start.group(1), s[start.end() :])
    if "{{@" not in s:
        return None
    rest = literal_head(s)[1]
    for part in split_template(rest):  # what is left once the valid placeholders are taken out
        if not isinstance(part, str):
            rest = rest.replace(part[1], "", 1)
    for start in _PLACEHOLDER_AT.finditer(rest):
        if start.group(1) not in RESERVED_ROOTS and has_step(start.group(1)):
            return _broken(s, start.group(1), rest[start.end() :])
    return None


def _broken(s: str, step: str, rest: str) -> str:
    if len(rest) > MAX_PATH_LENGTH:
        return (
            f"`{_clip(s)}` holds a ref to step {step} whose path is {len(rest):,} characters long, past the "
            f"{MAX_PATH_LENGTH:,} a ref's path may have; select in fewer clauses, or in a code step"
        )
    return (
        f"`{_clip(s)}` holds a ref to step {step}, but `{_clip(rest)}` is not a valid path "
        f'(keys as .name or ["name"], indexes as [n], JSONPath filters as [?(...)], a placeholder closed by '
        "}}; a literal '@' at the start is written '@@', a literal '{{@' as '{{@@')"
    )


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _as_text(value: JSON) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def evaluate(ref: Ref, scope: Scope) -> JSON:
    """What one ref addresses in `scope`; raises RefError saying what is missing and what exists."""
    path = compile_path(ref.path) if ref.path is not None else None
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


def _evaluate_step(ref: Ref, path: RefPath | None, scope: Scope) -> JSON:
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


def _evaluate_input(ref: Ref, path: RefPath | None, scope: Scope) -> JSON:
    inputs = scope.inputs
    if path is None:
        return dict(inputs)
    first = path.segments[0].key
    if not isinstance(first, str):
        return _follow(dict(inputs), path, ref, "the inputs", "@input")
    if first not in inputs:
        declared = ", ".join(inputs) if inputs else "none"
        raise RefError(f"`{ref.text}`: no input `{first}`; declared inputs: {declared}", ref=ref.text)
    rest = RefPath(path.segments[1:], path.prefix[1:], path.jsonpath)
    label = "@input" + path.segments[0].text
    value = inputs[first]
    if not rest.segments:
        return value
    if rest.jsonpath is not None:  # the JSONPath addresses the whole inputs object
        _walk(value, rest.prefix, ref, f"`{label}`", label)
        return [match.value for match in rest.jsonpath.find(dict(inputs))]
    return _walk(value, rest.segments, ref, f"`{label}`", label)


def _follow(value: JSON, path: RefPath, ref: Ref, root_label: str, label_prefix: str) -> JSON:
    if path.jsonpath is None:
        return _walk(value, path.segments, ref, root_label, label_prefix)
    _walk(value, path.prefix, ref, root_label, label_prefix)  # names what is missing, if anything is
    return [match.value for match in path.jsonpath.find(value)]


def _walk(value: JSON, segments: Sequence[Segment], ref: Ref, root_label: str, label_prefix: str) -> JSON:
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
    if len(content) == 1:  # the usual result, read without the general case's lists (the store reads it per row)
        item = content[0]
        if not isinstance(item, Mapping) or item.get("type") != "text":
            return content
        text = str(item.get("text", ""))
        ok, value = _loads_strict(text)
        return value if ok else text
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
