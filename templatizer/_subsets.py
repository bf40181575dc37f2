"""A list argument holding a field of some elements of one list (`profile_ids: [@l[1].id, @l[4].id]`): the same
field of the elements a filter keeps, which follows the list in another world.

One call that takes the ids of the matching elements (add these profiles to a list, tag these assets, archive
these records) is the single-call twin of a loop over them: the elements are told apart the same way (a field's
value, a prefix, a tag, a state; `_select`), and the argument becomes that field of every kept element
(`@select_data[*].id`). Elements taken in another order than the list's, or that no condition tells apart, stay
positional (and are reported as such).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from toolreel.core.model import JSON

__all__ = ["collapse_subsets", "elements_of_one_list"]

# `@base[7].rest`: the last index of a ref to one element, and what is read of it (`["subsonic-response"]` a key too)
_ELEMENT_RE: Final = re.compile(
    r"^(@[A-Za-z_]\w*(?:\.[A-Za-z0-9_][\w-]*|\[-?\d+\]|\[\"[^\"\\]*\"\])*?)\[(\d+)\]((?:\.[A-Za-z0-9_][\w-]*)*)$"
)


def collapse_subsets(value: JSON, choose: Callable[[str, list[int]], str | None]) -> JSON:
    """`value` with each list of refs to one field of two or more elements of one list, in the list's order,
    replaced by that field of the elements `choose(base, indexes)` keeps (a ref to a list, or None: unchanged)."""
    if isinstance(value, dict):
        changed = {k: c for k, v in value.items() if (c := collapse_subsets(v, choose)) is not v}
        return {**value, **changed} if changed else value
    if not isinstance(value, list) or len(value) < 2:
        return value
    parts = [_ELEMENT_RE.match(v) if isinstance(v, str) else None for v in value]
    if all(parts):
        bases = {(m.group(1), m.group(3)) for m in parts if m}
        at = [int(m.group(2)) for m in parts if m]
        if len(bases) == 1 and at == sorted(set(at)):
            base, rest = bases.pop()
            kept = choose(base, at)
            if kept is not None:
                return f"{kept}{rest}" if kept != base and kept.endswith("]") else f"{kept}[*]{rest}"
    items = [collapse_subsets(v, choose) for v in value]
    return items if any(a is not b for a, b in zip(items, value, strict=True)) else value


def elements_of_one_list(values: JSON) -> bool:
    """Two or more of `values` (a list argument) are refs to one field of elements of one list: a subset of it,
    each element there for being in it, not for being the largest or the newest of it."""
    if not isinstance(values, list):
        return False
    parts = [m for v in values if isinstance(v, str) and (m := _ELEMENT_RE.match(v)) is not None]
    bases = [(m.group(1), m.group(3)) for m in parts]
    return any(bases.count(base) >= 2 for base in bases)
