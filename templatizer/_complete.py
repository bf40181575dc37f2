"""Walks with a gap: calls of one tool that take the same field of successive list elements, one of which sent a
value too weak to be found alone (`li.wang` among the members, `eu` among the regions).

Its siblings' arguments say where it came from: `{{@get_team_1.members[0]}}@kettle.dev` and `...[2]...` beside a
literal `li.wang@kettle.dev` that is the same text around `members[1]`. The literal becomes that ref, so the calls
walk the whole list and fold into one loop; left literal, it split the walk and kept every call unrolled.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Final

from toolreel.core.errors import RefError
from toolreel.core.model import JSON
from toolreel.core.refs import is_ref, refs_in, resolve
from toolreel.templatizer._values import Keys, get_at, json_path, put_at, walk

if TYPE_CHECKING:
    from toolreel.templatizer._result import Unit
    from toolreel.templatizer._runs import Run

__all__ = ["complete_walks"]

_STEP: Final = r"@(?!input\b|item\b|index\b)[A-Za-z_]\w*(?:\.[A-Za-z_][\w-]*)*"
_WHOLE_RE: Final = re.compile(rf"^(?P<base>{_STEP})\[(?P<at>\d+)\](?P<path>(?:\.[A-Za-z_][\w-]*)*)$")
_PIECE_RE: Final = re.compile(
    rf"^(?P<pre>[^{{}}]*)\{{\{{(?P<base>{_STEP})\[(?P<at>\d+)\](?P<path>(?:\.[A-Za-z_][\w-]*)*)\}}\}}(?P<post>[^{{}}]*)$"
)
_SIBLINGS: Final = 2  # calls that took the list's elements by ref, at least, before a gap is filled


def complete_walks(units: Sequence[Unit], runs: Sequence[Run]) -> tuple[list[Unit], set[tuple[str, str]]]:
    """The units with each gap of a walk filled, and the (step, argument path) of each value filled."""
    out = list(units)
    filled: set[tuple[str, str]] = set()
    by_tool: dict[str, list[int]] = {}
    for i, unit in enumerate(out):
        if unit.for_each is None and unit.code is None:
            by_tool.setdefault(unit.tool, []).append(i)
    for members in by_tool.values():
        if len(members) <= _SIBLINGS:
            continue
        for keys in _leaves(out[members[0]].input):
            for i, text in _gaps(out, members, keys, runs):
                out[i] = replace(out[i], input=put_at(out[i].input, keys, text))
                filled.add((out[i].name, json_path(keys)))
    return out, filled


def _leaves(value: JSON) -> list[Keys]:
    return [keys for keys, leaf in walk(value) if keys and isinstance(leaf, str)]


def _gaps(units: Sequence[Unit], members: Sequence[int], keys: Keys, runs: Sequence[Run]) -> list[tuple[int, str]]:
    """The calls among `members` whose argument at `keys` is a literal equal to the siblings' shape read at an
    element no sibling took, with the text that reads it there."""
    shapes: set[tuple[str, str, str, str, bool]] = set()
    taken: set[int] = set()
    literal: list[int] = []
    for i in members:
        found, leaf = get_at(units[i].input, keys)
        if not found or not isinstance(leaf, str):
            return []
        m = _WHOLE_RE.match(leaf) or _PIECE_RE.match(leaf)
        if m is None:
            if is_ref(leaf) or refs_in(leaf):
                return []  # another kind of ref: not a walk of one list
            literal.append(i)
            continue
        parts = m.groupdict()
        whole = "pre" not in parts
        shapes.add((parts.get("pre") or "", parts["base"], parts["path"], parts.get("post") or "", whole))
        taken.add(int(parts["at"]))
    if len(shapes) != 1 or len(taken) < _SIBLINGS or not literal:
        return []
    ((pre, base, path, post, whole),) = shapes
    try:
        elements = resolve(base, runs[0].scope())
    except RefError:
        return []
    if not isinstance(elements, list):
        return []
    out: list[tuple[int, str]] = []
    for i in literal:
        recorded = get_at(units[i].record.resolved_input, keys)[1]
        at = [j for j, e in enumerate(elements) if j not in taken and _reads(e, path, pre, post, whole) == recorded]
        if len(at) == 1:
            taken.add(at[0])
            ref = f"{base}[{at[0]}]{path}"
            out.append((i, ref if whole else f"{pre}{{{{{ref}}}}}{post}"))
    return out


def _reads(element: JSON, path: str, pre: str, post: str, whole: bool) -> JSON:
    """What the siblings' argument would have been at this element."""
    value = element
    for key in path.split(".")[1:]:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    if whole:
        return value
    return f"{pre}{value if isinstance(value, str) else json.dumps(value)}{post}"
