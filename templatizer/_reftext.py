"""Refs as text inside a template's values: find them, rewrite them (an element's index to `@item`, a step's new
name), and collapse a list of refs to every element of one list into one ref over the whole list."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from toolreel.core.model import JSON

__all__ = [
    "TOKEN_RE",
    "collapse",
    "heads",
    "index_of",
    "indexed_bases",
    "input_names",
    "rewrite",
    "strip_index",
    "strip_input",
    "substitute",
    "tokens",
]

# A plain ref as it appears in a string (whole or inside `{{...}}`): dotted keys and `[n]` indexes.
TOKEN_RE: Final = re.compile(r"(?<![@\w])@[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_][A-Za-z0-9_-]*|\[-?\d+\])*")
_INDEX_RE: Final = re.compile(r"\[(\d+)\]")
_OWN_ROOTS: Final = ("@item", "@index")


def tokens(value: JSON) -> list[str]:
    if isinstance(value, str):
        return TOKEN_RE.findall(value)
    if isinstance(value, dict):
        return [t for v in value.values() for t in tokens(v)]
    if isinstance(value, list):
        return [t for v in value for t in tokens(v)]
    return []


def substitute(value: JSON, change: Callable[[str], str]) -> JSON:
    if isinstance(value, str):
        return TOKEN_RE.sub(lambda m: change(m.group(0)), value)
    if isinstance(value, dict):
        return {k: substitute(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, change) for v in value]
    return value


def heads(token: str, prefix: str) -> bool:
    """`token` is `prefix` or goes on from it with a path (`@a.b` heads `@a.b.c`, not `@a.bc`)."""
    return token.startswith(prefix) and (len(token) == len(prefix) or token[len(prefix)] in ".[")


def indexed_bases(value: JSON) -> list[str]:
    """Every `@step.path` that some ref of `value` indexes with a literal `[n]` (candidate lists to walk)."""
    found: list[str] = []
    for token in tokens(value):
        if token.split(".")[0].split("[")[0] in _OWN_ROOTS:
            continue
        found += [token[: m.start()] for m in _INDEX_RE.finditer(token)]
    return list(dict.fromkeys(found))


def index_of(value: JSON, base: str) -> int | None:
    """The one index by which `value` takes an element of `base`, or None (none, or several)."""
    seen = {int(m.group(1)) for t in tokens(value) if (m := re.match(re.escape(base) + r"\[(\d+)\]", t))}
    return next(iter(seen)) if len(seen) == 1 else None


def strip_index(token: str, *, base: str, n: int, item: str) -> str:
    head = f"{base}[{n}]"
    return item + token[len(head) :] if heads(token, head) else token


def strip_input(token: str, *, name: str) -> str:
    head = f"@input.{name}"
    return "@item" + token[len(head) :] if heads(token, head) else token


def input_names(value: JSON) -> set[str]:
    return {re.split(r"[.\[]", t[len("@input.") :])[0] for t in tokens(value) if t.startswith("@input.")}


def rewrite(value: JSON, rename: Mapping[str, str]) -> Any:
    def change(token: str) -> str:
        root = re.split(r"[.\[]", token)[0][1:]
        target = rename.get(root)
        return target + token[len(root) + 1 :] if target is not None else token

    return substitute(value, change)


def collapse(value: JSON, length: Callable[[str], int | None]) -> JSON:
    """A list of refs to every element of one list in order (`[@l[0].id, @l[1].id]`) becomes `@l[*].id`:
    it then follows the list's length. `length(base)` is the list's length when recorded."""
    # The value itself when nothing changes: copying every input of every step kept garbage-collector work
    # growing faster than the recording.
    if isinstance(value, dict):
        changed = {k: c for k, v in value.items() if (c := collapse(v, length)) is not v}
        return {**value, **changed} if changed else value
    if not isinstance(value, list) or not value:
        return value
    whole = _whole_walk(value, length)
    if whole is not None:
        return whole
    items = [collapse(v, length) for v in value]
    return items if any(a is not b for a, b in zip(items, value, strict=True)) else value


def _whole_walk(value: list[JSON], length: Callable[[str], int | None]) -> str | None:
    first = value[0] if len(value) >= 2 else None  # one element: "all of them" or "the first" is a guess
    if not isinstance(first, str) or not TOKEN_RE.fullmatch(first):
        return None
    for m in re.finditer(r"\[0\]", first):
        base, rest = first[: m.start()], first[m.end() :]
        if all(v == f"{base}[{i}]{rest}" for i, v in enumerate(value)) and length(base) == len(value):
            return f"{base}[*]{rest}" if rest else base
    return None
