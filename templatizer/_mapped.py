"""A list argument of objects, one per element of an earlier list (`recipients: [{address: {email: @l[0].email,
name: "{{@l[0].first}} {{@l[0].last}}"}}, {... @l[1] ...}]`): one object per element of that list on every run.

Where each object is the same shape around refs to one element, the elements taken in the list's order, the
argument is the output of a `code` step run `for_each` element of the list (or of the filter `choose` finds that
keeps exactly those elements), its input the shape with `@item` in place of the element: another run's list of
five people gives five recipients. Objects of different shapes, or refs to two elements in one object, stay as
recorded. The literals of a loop's calls that are elements of a list input are marked as refs to them first
(`marked_elements`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from toolreel.core.model import JSON
from toolreel.core.refs import unescape_literal
from toolreel.templatizer._affixes import around
from toolreel.templatizer._reftext import TOKEN_RE, tokens
from toolreel.templatizer._values import free_name, is_trivial, same

__all__ = ["MAP_CODE", "Mapped", "map_lists", "marked_elements"]

MAP_CODE: Final = "export default function(input) {\n  return input;\n}\n"
# `@base[7].rest` as a token: the element's list, its index, and what is read of it
_ELEMENT_RE: Final = re.compile(
    r"^(@[A-Za-z_]\w*(?:\.[A-Za-z0-9_][\w-]*|\[-?\d+\])*?)\[(\d+)\]((?:\.[A-Za-z0-9_][\w-]*)*)$"
)


@dataclass(frozen=True, slots=True)
class Mapped:
    """A code step `name` run for each element of `over`, its input `shape`: one object per element."""

    name: str
    over: str
    shape: JSON


def map_lists(
    value: JSON, choose: Callable[[str, list[int]], str | None], taken: Callable[[], set[str]], out: list[Mapped]
) -> JSON:
    """`value` with each list of objects built one per element of one list replaced by `@map`, `@map_2`…, a step
    added to `out` (named apart from the names `taken()` gives, asked only then, and those of `out`); unchanged
    where none is."""
    if isinstance(value, dict):
        changed = {k: c for k, v in value.items() if (c := map_lists(v, choose, taken, out)) is not v}
        return {**value, **changed} if changed else value
    if not isinstance(value, list):
        return value
    found = _one_shape(value) if len(value) >= 2 and all(isinstance(v, dict) for v in value) else None
    if found is not None:
        base, at, shape = found
        over = choose(base, at)
        if over is not None:
            name = free_name("map", taken() | {m.name for m in out})
            out.append(Mapped(name, over, shape))
            return f"@{name}"
    items = [map_lists(v, choose, taken, out) for v in value]
    return items if any(a is not b for a, b in zip(items, value, strict=True)) else value


def _one_shape(objects: list[JSON]) -> tuple[str, list[int], JSON] | None:
    """(the list, the indexes in order, the shape with `@item`) when every object is one shape around one element."""
    shapes: list[str] = []
    bases: set[str] = set()
    at: list[int] = []
    for obj in objects:
        elements = {m.groups()[:2] for t in tokens(obj) if (m := _ELEMENT_RE.match(t)) is not None}
        if len(elements) != 1:
            return None
        base, index = elements.pop()
        bases.add(base)
        at.append(int(index))
        placeholder = f"{base}[{index}]"
        shapes.append(json.dumps(obj, sort_keys=True).replace(placeholder, "@item"))
    if len(bases) != 1 or len(set(shapes)) != 1 or at != sorted(set(at)) or "@item" not in shapes[0]:
        return None
    shape: JSON = json.loads(shapes[0])
    return bases.pop(), at, shape


def marked_elements(value: JSON, lists: Mapping[str, list[JSON]]) -> JSON:
    """`value` with each literal that is one element of a list input written as a ref to it (`@input.emails[1]`)."""
    if isinstance(value, dict):
        return {k: marked_elements(v, lists) for k, v in value.items()}
    if isinstance(value, list):
        return [marked_elements(v, lists) for v in value]
    if is_trivial(value) or (isinstance(value, str) and TOKEN_RE.search(value)):
        return value
    plain = unescape_literal(value) if isinstance(value, str) else value
    found = [(name, i) for name, items in lists.items() for i, item in enumerate(items) if same(item, plain)]
    if len(found) == 1:
        return f"@input.{found[0][0]}[{found[0][1]}]"
    if found or not isinstance(value, str) or value.startswith("@"):
        return value
    # An element inside a text, between separators (`tenant:acme:flags` for `acme`): the text is built around it.
    inside = [
        (name, i, m)
        for name, items in lists.items()
        for i, item in enumerate(items)
        if isinstance(item, str) and not is_trivial(item) and (m := around(value, item)) is not None
    ]
    if len(inside) != 1:
        return value
    name, i, (prefix, suffix) = inside[0]
    return f"{prefix}{{{{@input.{name}[{i}]}}}}{suffix}"
