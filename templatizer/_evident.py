"""The handled elements of a list told apart by one top-level value that no other element has.

`evident_filter` gives `base[?(@.key == value)]` (or `!=` a category the left-out ones share); `evident_choice` gives
that one condition where its value is the user's choice for the run (`cat == "tv"`), for a select step whose value
can be an input (`_select`).
"""

from __future__ import annotations

import json
import re
from typing import Final

from toolreel.core.model import JSON
from toolreel.templatizer._evidence import is_machine_id
from toolreel.templatizer._select import KEY_RE, Condition
from toolreel.templatizer._values import same, strength

__all__ = ["evident_choice", "evident_filter"]


def evident_filter(base: str, elements: list[JSON], at: list[int]) -> str | None:
    """`base[?(@.key == value)]` when the handled elements share a value at `key` that no other element has."""
    handled = [elements[i] for i in at]
    others = [e for i, e in enumerate(elements) if i not in at]
    shared = _evident(handled, others)
    if shared is None:
        return _excluding_filter(base, handled, others) if all(isinstance(e, dict) for e in handled) else None
    key, value = shared
    return f"{base}[?(@.{key} == {json.dumps(value)})]"


def evident_choice(elements: list[JSON], at: list[int]) -> Condition | None:
    """The condition of `evident_filter` when its value is one the user chose for this run (the category, the
    device, the user whose items the task handles: `cat == "tv"`), not a state of the task (`status ==
    "exited"`, `execution_mode == "remote"`), a number or a code, nor a value read out of another output (an id,
    an address): a select step keeps the elements then, so that the value can be an input."""
    handled = [elements[i] for i in at]
    shared = _evident(handled, [e for i, e in enumerate(elements) if i not in at])
    if shared is None or not isinstance(value := shared[1], str) or not _CHOICE_RE.fullmatch(value):
        return None
    if len(value.split()) > _CHOICE_WORDS:
        return None
    condition = Condition(shared[0], "==", value)
    return None if condition.state or is_machine_id(value) else condition


# A name or a category: letters first, no address, not a code with a long run of digits, a category's length at most
_CHOICE_RE: Final = re.compile(r"(?!.*\d{4})[A-Za-z][\w .'&+-]{0,63}")
_CHOICE_WORDS: Final = 4  # a longer value is a text the elements share, not a name the user gave


def _evident(handled: list[JSON], others: list[JSON]) -> tuple[str, JSON] | None:
    """The top-level field and value every handled element shares and no other element has (the one that says
    most, where several do)."""
    if not all(isinstance(e, dict) for e in handled):
        return None
    first = handled[0]
    assert isinstance(first, dict)
    separating: list[tuple[str, JSON]] = []
    for key, value in first.items():
        if not KEY_RE.fullmatch(key) or not isinstance(value, str | bool | int) or isinstance(value, float):
            continue
        if all(isinstance(e, dict) and same(e.get(key), value) for e in handled) and not any(
            isinstance(e, dict) and same(e.get(key), value) for e in others
        ):
            separating.append((key, value))
    if not separating:
        return None
    # Several fields may tell them apart here (`READY 0/1` and `STATUS CrashLoopBackOff`): the one that says
    # most is a word of the domain, not a count that happens to match (`True` says little, `0/1` less).
    return max(separating, key=lambda kv: strength(kv[1]) if isinstance(kv[1], str) else 0.3)


def _excluding_filter(base: str, handled: list[JSON], others: list[JSON]) -> str | None:
    """`base[?(@.key != value)]` when the elements left out share a value at `key` that no handled element has,
    and `key` is a category (two handled elements share a value there, so it is not an id): every ticket but
    the closed ones, whether open or pending."""
    if len(others) < 2 or not all(isinstance(e, dict) for e in others):
        return None
    first = others[0]
    assert isinstance(first, dict)
    for key, value in first.items():
        if not KEY_RE.fullmatch(key) or not isinstance(value, str) or not value:
            continue
        kept = [e.get(key) for e in handled if isinstance(e, dict)]
        if not all(isinstance(e, dict) and same(e.get(key), value) for e in others):
            continue
        if any(same(k, value) for k in kept) or not all(isinstance(k, str) for k in kept):
            continue
        if len(set(map(str, kept))) < len(kept):
            return f"{base}[?(@.{key} != {json.dumps(value)})]"
    return None
