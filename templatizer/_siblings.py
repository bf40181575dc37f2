"""Values of one record written side by side in a sentence: a person's first and last names, a city and its country.

Each of them alone is a short word, as likely chance as not (`Lee`, `Jordan`); two fields of the same output
object, both proper names, adjacent in the text the agent wrote (`Call with Jordan Lee: ...`), are that
record rendered, not a coincidence. Both are interpolated from that object, so the next run names its record.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from toolreel.core.errors import RefError
from toolreel.core.model import JSON
from toolreel.core.refs import MappingScope, resolve

__all__ = ["row_siblings", "sibling_pieces"]

_LAST_KEY_RE: Final = re.compile(r"^(@.+)\.([A-Za-z_][A-Za-z0-9_]*)$")
_NAME_RE: Final = re.compile(r"[^\W\d_][\w'’-]*")  # a word starting with a letter
_GAP: Final = " "  # the two values are separated by one space


def sibling_pieces(
    text: str, found: Sequence[tuple[int, int, Sequence[str]]], scope: MappingScope
) -> list[tuple[int, int, str]]:
    """(start, end, ref) for each pair of proper names in `text` that are two fields of one output object, side
    by side: `found` holds each piece found inside `text` with the refs of the outputs that hold it."""
    out: list[tuple[int, int, str]] = []
    taken: set[int] = set()
    for start, end, refs in found:
        if start in taken or not _proper(text[start:end]):
            continue
        for ref in refs:
            pair = _pair(text, start, end, ref, scope)
            if pair is not None:
                out += pair
                taken |= {piece[0] for piece in pair}
                break
    return out


def _pair(text: str, start: int, end: int, ref: str, scope: MappingScope) -> list[tuple[int, int, str]] | None:
    parsed = _LAST_KEY_RE.match(ref)
    if parsed is None:
        return None
    parent_ref, own = parsed.groups()
    try:
        parent = resolve(parent_ref, scope)
    except RefError:
        return None
    if not isinstance(parent, dict):
        return None
    after = _NAME_RE.match(text, end + len(_GAP)) if text[end : end + len(_GAP)] == _GAP else None
    if after is not None:
        key = _sibling(parent, own, after.group(0))
        if key is not None:
            return [(start, end, ref), (after.start(), after.end(), f"{parent_ref}.{key}")]
    before = text[: max(0, start - len(_GAP))] if text[max(0, start - len(_GAP)) : start] == _GAP else ""
    word = re.search(r"[^\W\d_][\w'’-]*$", before)
    if word is not None:
        key = _sibling(parent, own, word.group(0))
        if key is not None:
            return [(word.start(), word.end(), f"{parent_ref}.{key}"), (start, end, ref)]
    return None


def _sibling(parent: dict[str, object], own: str, word: str) -> str | None:
    """The other key of `parent` whose value is exactly `word`, a proper name."""
    if not _proper(word):
        return None
    for key, value in parent.items():
        if key != own and value == word and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            return key
    return None


def _proper(word: str) -> bool:
    return bool(word) and word[0].isupper() and _NAME_RE.fullmatch(word) is not None


# A ref to one field of one list item: `@stacks[2].id` (the item: `@stacks[2]`).
_ITEM_REF_RE: Final = re.compile(r"^(@[A-Za-z_]\w*(?:\.[A-Za-z_][\w-]*|\[\d+\])*\[\d+\])\.[A-Za-z_]\w*$")


def row_siblings(args: dict[str, JSON], scope: MappingScope) -> list[tuple[str, str, str]]:
    """A small number left literal under the very key it has in the list item another argument was taken from
    (`environmentId: 2` beside `id: @stacks[2].id`, stack 9 of environment 2) is that item's: a careful person
    reads both off the same row. Not when every item has it (`project_id: 2` of each template: the call's
    constant as well), nor when the arguments come from two rows. (key, ref, why) per argument to link."""
    rows = {m.group(1) for v in args.values() if isinstance(v, str) and (m := _ITEM_REF_RE.match(v))}
    if len(rows) != 1:
        return []
    row = rows.pop()
    try:
        items = resolve(row[: row.rindex("[")], scope)
    except RefError:
        return []
    out: list[tuple[str, str, str]] = []
    for key, value in args.items():
        if not isinstance(value, int | float) or isinstance(value, bool):
            continue
        try:
            got = resolve(f"{row}.{key}", scope)
        except RefError:
            continue
        shared = not isinstance(items, list) or all(isinstance(i, dict) and i.get(key) == value for i in items)
        if got == value and type(got) is type(value) and not shared:
            out.append((key, f"{row}.{key}", f"{key} of the item {row} that this call's other argument was taken from"))
    return out
