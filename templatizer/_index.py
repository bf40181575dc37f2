"""The index of everything earlier steps produced: by value (typed, any subtree), by text, by prefix.

Steps are added in recording order; a lookup for step n sees the outputs of steps before it.
Each distinct value keeps a count and a bounded sample of where it was produced (the first
and the latest few), so adding and looking up stay O(size of the values involved) however
often a value recurs: templatizing is linear in the size of the recording.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any, Final, NamedTuple

from toolreel.core.model import JSON
from toolreel.core.refs import format_ref
from toolreel.core.secrets import REDACTED
from toolreel.templatizer._values import (
    MIN_PIECE,
    MIN_SUBSTRING,
    Interner,
    Keys,
    is_cursor_key,
    is_short_piece,
    is_volatile_key,
    key_tokens,
    number_text,
)

_PREFIX: Final = 8  # substring candidates are bucketed by their first characters (at most this many)
_SAMPLE: Final = 4  # occurrences kept per value at each end (first ones, latest ones)
_NEVER: Final = 1 << 62
_TOKEN_RE: Final = re.compile(r"[^\W_]+|[\W_]")  # runs of letters/digits, and single other characters
_UNIT_RE: Final = re.compile(r"[0-9](?=[^\W\d_])")  # a digit followed by a letter
_NUMBER_RE: Final = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


class Occurrence(NamedTuple):
    """A value found at `keys` in the output of step `step` (the `order`-th kept step)."""

    step: str
    tool: str
    order: int
    keys: Keys
    key: str | None  # the nearest object key on the path
    cursor: bool  # under a pagination-cursor key

    @property
    def ref(self) -> str:
        return format_ref(self.step, self.keys)


class Bucket(NamedTuple):
    """How many times a value was produced, and a sample of where: the first and the latest few."""

    seen: int = 0
    first: tuple[Occurrence, ...] = ()
    latest: tuple[Occurrence, ...] = ()

    def sample(self) -> tuple[Occurrence, ...]:
        return self.first + self.latest if self.latest else self.first


# Stored as exact tuples, not the NamedTuples above: the cyclic garbage collector stops tracking a
# tuple of plain values after one look, but never a tuple subclass, and rescanning tens of thousands
# of index entries on every full collection made a large recording cost more than linear time.
_Raw = tuple[Any, ...]  # (seen, first raw occurrences, latest raw occurrences)
_EMPTY_RAW: Final[_Raw] = (0, (), ())


def _added(raw: _Raw, occurrence: _Raw) -> _Raw:
    seen, first, latest = raw
    if len(first) < _SAMPLE:
        return (seen + 1, (*first, occurrence), latest)
    return (seen + 1, first, (*latest[1 - _SAMPLE :], occurrence))


def _view(raw: _Raw | None) -> Bucket:
    if raw is None:
        return _EMPTY
    seen, first, latest = raw
    return Bucket(seen, tuple(map(Occurrence._make, first)), tuple(map(Occurrence._make, latest)))


_EMPTY = Bucket()


@lru_cache(maxsize=4096)
def clock_key(key: str) -> bool:
    """A key a clock puts its reading under (`datetime`, `now`, `currentTime`)."""
    return _CLOCK_RE.fullmatch("_".join(key_tokens(key))) is not None


@lru_cache(maxsize=4096)
def _hidden(key: str) -> bool:
    """Volatile keys hide their values from the index, except a clock's (see `_lasting`)."""
    return is_volatile_key(key) and not clock_key(key)


def _lasting(node: JSON, keys: Keys) -> bool:
    """A whole datetime a clock gave (`datetime`, `now`, `current_time`): it changes on every call, which
    is why an argument equal to it was read from it (`since: <the time the clock gave>`). A record's own
    timestamps (`created_at`) and shorter values (a date) equal other values by chance."""
    return isinstance(node, str) and len(node) >= _LASTING and "_meta" not in keys


_CLOCK_RE: Final = re.compile(r"(?:current_|local_|utc_)?(?:datetime|date_time|time|now|timestamp)")
_LASTING: Final = 16


class OutputIndex:
    def __init__(self) -> None:
        self.interner = Interner()
        self.by_id: dict[int, _Raw] = {}  # 2 * value id + (1 under a cursor key) -> where produced
        self.strings: dict[str, _Raw] = {}
        self.numbers: dict[str, _Raw] = {}  # by the text of the number
        # Texts shorter than _PREFIX by themselves; longer ones by their first _PREFIX characters, with
        # the longest length seen under that prefix (so a lookup tries only ends that can match).
        self.short_texts: set[str] = set()
        self.long_texts: dict[str, tuple[set[str], int]] = {}
        self.first_input: list[int] = []  # by value id: order of the first step whose input held it
        self.secrets: list[Occurrence] = []  # where outputs hold a redacted value, in order
        # A record's own timestamps, hidden from the lookups above: by value id, where (`stamp`)
        self.stamps: dict[int, list[Occurrence]] = {}

    # ------------------------------------------------------------------ building

    def note_input(self, order: int, ids: Mapping[Keys, int]) -> None:
        """Note what the agent itself sent at step `order` (ids of its nodes from `interner`)."""
        first = self.first_input
        first.extend([_NEVER] * (self.interner.size - len(first)))
        for node_id in ids.values():
            if first[node_id] > order:
                first[node_id] = order

    def add_output(self, step: str, tool: str, order: int, output: JSON) -> None:
        """Index every node of a step's output, except echoes (values the agent had already sent:
        the server only repeated them) and what sits under volatile keys (timestamps, `_meta`)."""
        hidden: list[tuple[Keys, JSON, int]] = []
        for keys, node, node_id in self.interner.nodes(output, skip=_hidden, hidden_texts=hidden):
            if node is None or node is True or node is False or node == "" or node == [] or node == {}:
                continue
            if keys and isinstance(keys[-1], str) and clock_key(keys[-1]) and not _lasting(node, keys):
                continue
            if node == REDACTED:  # a secret the step produced (a token): all redacted values look alike
                key = next((k for k in reversed(keys) if isinstance(k, str)), None)
                self.secrets.append(Occurrence(step, tool, order, keys, key, False))
                continue
            if node_id < len(self.first_input) and self.first_input[node_id] <= order:
                continue
            key = next((k for k in reversed(keys) if isinstance(k, str)), None)
            cursor = is_cursor_key(key)
            occurrence = (step, tool, order, keys, key, cursor)  # an Occurrence, stored as a plain tuple
            slot = 2 * node_id + cursor
            self.by_id[slot] = _added(self.by_id.get(slot, _EMPTY_RAW), occurrence)
            if cursor:
                continue  # a cursor is passed whole, never spliced into a string
            if isinstance(node, str):
                self._add_text(node, occurrence, self.strings)
            elif (text := number_text(node)) is not None:
                self._add_text(text, occurrence, self.numbers)
        for keys, node, node_id in hidden:
            last = keys[-1] if keys else None
            if isinstance(last, str) and isinstance(node, str) and len(node) >= _LASTING:
                self.stamps.setdefault(node_id, []).append(Occurrence(step, tool, order, keys, last, False))

    def stamp(self, node_id: int | None) -> list[Occurrence]:
        """Where a record's own timestamp (`updated_at`) with this value id was produced; see `_infer`."""
        return self.stamps.get(node_id, []) if node_id is not None else []

    def _add_text(self, text: str, occurrence: _Raw, table: dict[str, _Raw]) -> None:
        table[text] = _added(table.get(text, _EMPTY_RAW), occurrence)
        if len(text) < MIN_SUBSTRING and not is_short_piece(text):
            return
        if len(text) < _PREFIX:
            self.short_texts.add(text)
            return
        texts, longest = self.long_texts.get(text[:_PREFIX], (set(), 0))
        texts.add(text)
        self.long_texts[text[:_PREFIX]] = (texts, max(longest, len(text)))

    # ------------------------------------------------------------------ lookups

    def exact(self, node_id: int | None, cursor: bool) -> Bucket:
        return _view(self.by_id.get(2 * node_id + cursor)) if node_id is not None else _EMPTY

    def coerced(self, value: JSON) -> Bucket:
        """Numbers whose text is this string, or strings that are this number's text."""
        if isinstance(value, str):
            return _view(self.numbers.get(value))
        text = number_text(value)
        return _view(self.strings.get(text)) if text is not None else _EMPTY

    def texts(self, text: str) -> list[Bucket]:
        """Strings equal to `text`, and numbers whose text it is."""
        return [_view(raw) for raw in (self.strings.get(text), self.numbers.get(text)) if raw is not None]

    def substrings(self, text: str) -> Iterator[tuple[int, int, str]]:
        """(start, end, found): indexed texts inside `text` (not all of it) that do not cut a word.

        Only token boundaries are tried: each start costs a few set lookups of the slices ending at
        the token ends in reach, never a scan of every text sharing a prefix, so the work stays
        linear in `len(text)` however many similar values (`usr_0000…`) were produced.
        """
        if not self.short_texts and not self.long_texts:
            return
        size = len(text)
        token_ends = {m.end() for m in _TOKEN_RE.finditer(text)}
        # A number glued to its unit ("3.25h", "1253ms") ends inside a token: such ends take numbers only.
        unit_ends = {m.end() for m in _UNIT_RE.finditer(text)} - token_ends
        ends = sorted(token_ends | unit_ends)
        for match in _TOKEN_RE.finditer(text):
            start = match.start()
            first = bisect_left(ends, start + MIN_PIECE)  # shorter than MIN_SUBSTRING: decimals, short numbers
            for end in ends[first:]:
                if end - start >= _PREFIX:
                    break
                piece = text[start:end]
                long_enough = end - start >= MIN_SUBSTRING or is_short_piece(piece)
                fits = end not in unit_ends or _NUMBER_RE.fullmatch(piece) is not None
                if long_enough and fits and piece in self.short_texts and (start, end) != (0, size):
                    yield start, end, piece
            entry = self.long_texts.get(text[start : start + _PREFIX])
            if entry is None:
                continue
            texts, longest = entry
            for end in ends[bisect_left(ends, start + _PREFIX) : bisect_right(ends, start + longest)]:
                piece = text[start:end]
                fits = end not in unit_ends or _NUMBER_RE.fullmatch(piece) is not None
                if fits and piece in texts and (start, end) != (0, size):
                    yield start, end, piece
