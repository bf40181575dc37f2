"""The index of everything earlier steps produced: by value (typed, any subtree), by text, by prefix.

Steps are added in recording order; a lookup for step n sees the outputs of steps before it.
Adding and looking up are linear in the size of the values involved, so templatizing a
recording is linear in its size rather than quadratic in its step count.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final

from core.model import JSON
from core.refs import format_ref
from templatizer._values import (
    MIN_SUBSTRING,
    Interner,
    Keys,
    is_cursor_key,
    is_volatile_key,
    last_key,
    number_text,
)

_PREFIX: Final = 8  # substring candidates are bucketed by their first characters (at most this many)
_NEVER: Final = 1 << 62


@dataclass(frozen=True, slots=True)
class Occurrence:
    """A value found at `keys` in the output of step `step` (the `order`-th kept step)."""

    step: str
    tool: str
    order: int
    keys: Keys
    echo: bool  # the value was already in an input at or before this step: the server only repeated it

    @property
    def ref(self) -> str:
        return format_ref(self.step, self.keys)

    @property
    def key(self) -> str | None:
        return last_key(self.keys)

    @property
    def cursor(self) -> bool:
        return is_cursor_key(self.key)


class OutputIndex:
    def __init__(self) -> None:
        self.interner = Interner()
        self.by_id: dict[int, list[Occurrence]] = {}
        self.string_by_text: dict[str, list[Occurrence]] = {}
        self.number_by_text: dict[str, list[Occurrence]] = {}
        self.prefixes: dict[str, set[str]] = {}  # first _PREFIX characters -> texts (strings and numbers)
        self.first_input: dict[int, int] = {}  # value id -> order of the first step whose input held it

    # ------------------------------------------------------------------ building

    def note_input(self, order: int, ids: Mapping[Keys, int]) -> None:
        """Note what the agent itself sent at step `order` (ids of its nodes from `interner`)."""
        for node_id in ids.values():
            self.first_input.setdefault(node_id, order)

    def add_output(self, step: str, tool: str, order: int, output: JSON) -> None:
        ids = self.interner.intern_tree(output)
        for keys, node in _producible(output):
            node_id = ids.get(keys)
            # Small numbers are indexed (several recordings may confirm them); lookups filter them.
            if node_id is None or node is None or isinstance(node, bool) or node in ("", [], {}):
                continue
            echo = self.first_input.get(node_id, _NEVER) <= order
            occurrence = Occurrence(step, tool, order, keys, echo)
            self.by_id.setdefault(node_id, []).append(occurrence)
            if isinstance(node, str):
                self._add_text(node, occurrence, self.string_by_text)
            elif (text := number_text(node)) is not None:
                self._add_text(text, occurrence, self.number_by_text)

    def _add_text(self, text: str, occurrence: Occurrence, table: dict[str, list[Occurrence]]) -> None:
        table.setdefault(text, []).append(occurrence)
        if len(text) >= MIN_SUBSTRING:
            self.prefixes.setdefault(text[:_PREFIX], set()).add(text)

    # ------------------------------------------------------------------ lookups

    def exact(self, node_id: int | None) -> list[Occurrence]:
        return self.by_id.get(node_id, []) if node_id is not None else []

    def coerced(self, value: JSON) -> list[Occurrence]:
        """Numbers whose text is this string, or strings that are this number's text."""
        if isinstance(value, str):
            return self.number_by_text.get(value, [])
        text = number_text(value)
        return self.string_by_text.get(text, []) if text is not None else []

    def texts(self, text: str) -> list[Occurrence]:
        """Strings equal to `text` and numbers whose text it is."""
        return self.string_by_text.get(text, []) + self.number_by_text.get(text, [])

    def substrings(self, text: str) -> Iterator[tuple[int, int, str]]:
        """(start, end, found): indexed texts inside `text` (not all of it) that do not cut a word.

        Each start position costs at most a few dict lookups: texts are bucketed by their first
        characters, so the work is linear in `len(text)` times the (small) bucket sizes.
        """
        size = len(text)
        for start in range(size - MIN_SUBSTRING + 1):
            if start and text[start - 1].isalnum() and text[start].isalnum():
                continue
            for length in range(MIN_SUBSTRING, min(_PREFIX, size - start) + 1):
                for found in self.prefixes.get(text[start : start + length], ()):
                    end = start + len(found)
                    # Below _PREFIX characters a bucket key is the whole text, so it matched already.
                    if length == _PREFIX and not text.startswith(found, start):
                        continue
                    if _ends_cleanly(text, end) and (start, end) != (0, size):
                        yield start, end, found


def _ends_cleanly(text: str, end: int) -> bool:
    return end <= len(text) and not (end < len(text) and text[end - 1].isalnum() and text[end].isalnum())


def _producible(output: JSON) -> Iterator[tuple[Keys, JSON]]:
    """Nodes a ref may point at: everything except what sits under volatile keys (timestamps, `_meta`)."""
    stack: list[tuple[Keys, JSON]] = [((), output)]
    while stack:
        keys, node = stack.pop()
        yield keys, node
        if isinstance(node, Mapping):
            stack.extend(
                ((*keys, k), v)
                for k, v in reversed(list(node.items()))
                if isinstance(k, str) and not is_volatile_key(k)
            )
        elif isinstance(node, list):
            stack.extend(((*keys, i), v) for i, v in reversed(list(enumerate(node))))
