"""The words the agent had read before a call: every word of the outputs recorded before it.

A text whose every word was in an earlier output (an element's label and role read out of a page snapshot, a
status name out of a database's schema, a field name out of a listing) was composed from what the servers
said, not typed by the user: it is no likely input, whatever its key. The index is built once per recording,
on first use, and each word keeps the first step whose output held it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Final

from toolreel.core.model import JSON

__all__ = ["OutputWords", "words_of"]

_WORD_RE: Final = re.compile(r"[^\W_]+")
_SIGNIFICANT: Final = 3  # shorter words ("a", "of", "Q1") say nothing about where a text came from


def words_of(text: str) -> list[str]:
    """The significant words of `text`, lower-cased."""
    return [w for w in _WORD_RE.findall(text.lower()) if len(w) >= _SIGNIFICANT]


class OutputWords:
    """For each word of any recorded output, the `seq` of the first step whose output held it.

    A text counts as read when its words were, but neither as the very phrase (a name written as is in a
    listing, a pick among what was read) nor in the answer of the call that sent it (a search that found
    the team it named): those name an entity, which is the user's choice as often as not."""

    def __init__(self, outputs: Mapping[str, JSON], seqs: Mapping[str, int]) -> None:
        self._outputs = outputs
        self._seqs = seqs  # steps without a seq (views derived from an output) are not read here
        self._first: dict[str, int] | None = None
        self._joined = ""  # every output text, in recording order, one per line: one scan per question
        self._ends: list[tuple[int, int]] = []  # (seq, offset in `_joined` where that step's texts end)

    def _index(self) -> dict[str, int]:
        if self._first is None:
            first: dict[str, int] = {}
            recorded = [(self._seqs[name], output) for name, output in self._outputs.items() if name in self._seqs]
            parts: list[str] = []
            size = 0
            for seq, output in sorted(recorded, key=lambda item: item[0]):
                for text in _texts(output):
                    parts.append(text)
                    size += len(text) + 1
                    for word in words_of(text):
                        first.setdefault(word, seq)
                self._ends.append((seq, size))
            self._joined = "\n".join(parts)
            self._first = first
        return self._first

    def names_field(self, text: str, step: str) -> bool:
        """`text` is a key of an object in the output of `step` itself: the call names a field of the data it
        answers with (`propertyName: "email"` and `properties.email`, a filter on `Status`)."""
        return any(text in keys for keys in _keys(self._outputs.get(step)))

    def read_before(self, text: str, step: str) -> bool:
        """Every significant word of `text` (one at least) was in an output recorded before `step`."""
        words = words_of(text)
        if not words:
            return False
        before = self._seqs.get(step, 0)
        first = self._index()
        if not all(first.get(word, before) < before for word in words):
            return False
        phrase = re.compile(rf"(?<!\w){re.escape(text)}(?!\w)")
        if any(phrase.search(held) for held in _texts(self._outputs.get(step))):
            return False  # the call found what it named (a team searched by its name): an entity, chosen
        end = max((offset for seq, offset in self._ends if seq < before), default=0)
        return phrase.search(self._joined, 0, end) is None


def _texts(value: JSON) -> Iterator[str]:
    """The keys and scalar values of an output, as texts (a JSON text inside a string is read as text)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield key
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
    elif value is not None:
        yield str(value)


def _keys(value: JSON) -> Iterator[Mapping[str, JSON]]:
    """Every object of an output (its keys are looked up)."""
    if isinstance(value, Mapping):
        yield value
        for item in value.values():
            yield from _keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from _keys(item)
