"""What an argument that differs between recordings becomes, and the parts of a string that change when the rest
of it does not.

`"db-main before pg16 upgrade 2026-04-07"` then `"gitlab before 17.0 upgrade 2026-05-01"`: the words both keep
(`before`, `upgrade`) are the task's, the words between them the run's. Each changing part is what the one-middle
rule of `_lockstep` says of a whole changing value: an earlier output's text or field in every recording (a ref),
else a value the user gave (an input of its own); a date is left to the date rule, which checks every recording.
Without this, the whole string became one input, and the user would retype the task's words with each run.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import TYPE_CHECKING, Final

from toolreel.core.model import JSON
from toolreel.templatizer._candidates import Cand
from toolreel.templatizer._lockstep import lockstep_piece, lockstep_ref
from toolreel.templatizer._pieces import Piece, interpolate
from toolreel.templatizer._values import Keys, last_key, snake

if TYPE_CHECKING:
    from toolreel.templatizer._inputs import InputTable
    from toolreel.templatizer._runs import Run

__all__ = ["changing"]

# A token is a word with the characters ids, slugs, versions, paths and addresses hold, or one other character.
_TOKEN_RE: Final = re.compile(r"[\w.@+/-]+|\s+|.", re.S)
_DATE_RE: Final = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$")
_NAME_BEFORE_RE: Final = re.compile(r"([A-Za-z_][\w-]*)[\"']?\s*[:=]\s*[\"']?$")
_KEPT_SHARE: Final = 1 / 3  # the words all recordings keep hold at least this share of the first one's letters
_KEPT_WORD: Final = 3  # and one of them at least this many


@dataclass(frozen=True, slots=True)
class _Gap:
    start: int  # in the first recording's text
    end: int
    texts: tuple[str | None, ...]  # the part in each recording (None where the argument is not sent)


def changing(
    step: str, keys: Keys, value: JSON, per_run: Sequence[tuple[bool, JSON]], runs: Sequence[Run], table: InputTable
) -> Cand:
    """What a value that differs between recordings is: an earlier output's (the whole value, or its one changing
    middle), a frame of words around refs and inputs, the text of a number input, else an input of its own."""
    lockstep = lockstep_ref(step, per_run, runs)
    if lockstep is not None:
        return Cand(lockstep[0], "confirmed", 0.95, lockstep[1])
    if isinstance(value, str):
        piece = lockstep_piece(step, per_run, runs)
        if piece is not None:
            start, end, ref, why = piece
            return Cand(interpolate(value, [Piece(start, end, ref, 1.0)]), "confirmed", 0.95, why)
        split = _segmented(step, keys, value, per_run, runs, table)
        if split is not None:
            return split
    as_text = table.derived_as_text(per_run)
    if as_text is not None:  # the text of a number or boolean input: "{{@input.x}}" gives it back
        return Cand(f"{{{{@input.{as_text}}}}}", "input", 1.0, f"the text of input {as_text!r} in every recording")
    name = table.derived(keys, per_run)
    shown = ", ".join(repr(v) for found, v in per_run if found)
    return Cand(
        f"@input.{name}", "input", 1.0, f"differs between recordings ({shown}) and no earlier output explains it"
    )


def _segmented(
    step: str, keys: Keys, value: str, per_run: Sequence[tuple[bool, JSON]], runs: Sequence[Run], table: InputTable
) -> Cand | None:
    """`value` with each changing part a ref or an input; None when the recordings share too few of its words."""
    gaps = _gaps([v if found and isinstance(v, str) else None for found, v in per_run])
    if not gaps:
        return None
    pieces: list[Piece] = []
    said: list[str] = []
    for gap in gaps:
        part = [(text is not None, text) for text in gap.texts]
        if _DATE_RE.match(gap.texts[0] or ""):
            continue  # the date rule computes it from a clock's output, or it stays (and fails verification)
        found = lockstep_ref(step, part, runs)
        if found is not None:
            pieces.append(Piece(gap.start, gap.end, found[0], 1.0))
            said.append(found[1])
            continue
        name = table.derived(keys, part, base=_name_before(value[: gap.start]) or snake(last_key(keys) or "value"))
        pieces.append(Piece(gap.start, gap.end, f"@input.{name}", 1.0))
        said.append(f"{gap.texts[0]!r} is input {name!r}")
    if not pieces:
        return None
    kept = sum(1 for found, _ in per_run if found)
    why = f"the words around it are the same in all {kept} recordings; " + "; ".join(said)
    return Cand(interpolate(value, pieces), "confirmed", 0.95, why)


def _gaps(texts: Sequence[str | None]) -> list[_Gap]:
    """The changing parts between the words every recording keeps; [] when they keep too few."""
    first = texts[0]
    assert first is not None
    tokens = _tokens(first)
    others = [(r, _tokens(t)) for r, t in enumerate(texts) if r and t is not None]
    if not others:
        return []
    maps = [_matched(tokens, theirs) for _, theirs in others]
    anchors = [i for i, (_, _, word) in enumerate(tokens) if _wordy(word) and all(i in m for m in maps)]
    letters = sum(ch.isalnum() for ch in first)
    kept = sum(ch.isalnum() for i in anchors for ch in tokens[i][2])
    if not anchors or kept < letters * _KEPT_SHARE or max(len(tokens[i][2]) for i in anchors) < _KEPT_WORD:
        return []
    gaps: list[_Gap] = []
    bounds = [-1, *anchors, len(tokens)]
    for left, right in itertools.pairwise(bounds):
        if right - left < 2:
            continue
        spans = [_span(tokens, left, right)]
        for (_, theirs), m in zip(others, maps, strict=True):
            spans.append(_span(theirs, m.get(left, -1), m.get(right, len(theirs))))
        gap = _gap(first, spans, texts, [r for r, _ in others])
        if gap is None:
            return []
        if gap.texts[0] is not None and any(t != gap.texts[0] for t in gap.texts if t is not None):
            gaps.append(gap)
    return gaps


def _gap(first: str, spans: list[tuple[int, int]], texts: Sequence[str | None], rows: list[int]) -> _Gap | None:
    """The part between two kept words in each recording, without the spaces, quotes and signs all of them have
    at its ends (`:'lena@acme.dev'` then `:'ravi@acme.dev'` are the addresses)."""
    raw = [first[slice(*spans[0])]]
    for row, (s, e) in zip(rows, spans[1:], strict=True):
        text = texts[row]
        assert text is not None
        raw.append(text[s:e])
    if all(r == raw[0] for r in raw):
        return _Gap(*spans[0], tuple(raw[0] if t is not None else None for t in texts))  # no change here
    head = _shared_signs(raw)
    tail = _shared_signs([r[::-1] for r in raw])
    if any(len(r) <= head + tail for r in raw):
        return None  # a part one recording has and another lacks: the rest is not a frame around inputs
    parts: list[str | None] = [None] * len(texts)
    parts[0] = raw[0][head : len(raw[0]) - tail]
    for row, r in zip(rows, raw[1:], strict=True):
        parts[row] = r[head : len(r) - tail]
    return _Gap(spans[0][0] + head, spans[0][1] - tail, tuple(parts))


def _shared_signs(texts: Sequence[str]) -> int:
    """How many leading characters, none a letter or digit, all `texts` share."""
    at = 0
    while all(len(t) > at and not t[at].isalnum() and t[at] == texts[0][at] for t in texts):
        at += 1
    return at


def _tokens(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group(0)) for m in _TOKEN_RE.finditer(text)]


def _matched(mine: list[tuple[int, int, str]], theirs: list[tuple[int, int, str]]) -> dict[int, int]:
    """My token index -> theirs, for the tokens the two texts share in order."""
    matcher = SequenceMatcher(None, [t[2] for t in mine], [t[2] for t in theirs], autojunk=False)
    return {a + k: b + k for a, b, size in matcher.get_matching_blocks() for k in range(size)}


def _span(tokens: list[tuple[int, int, str]], left: int, right: int) -> tuple[int, int]:
    """The characters strictly between token `left` and token `right` (-1: the text's start; past the last: its end,
    where the last token ends: the tokens cover every character)."""
    start = tokens[left][1] if left >= 0 else 0
    end = tokens[right][0] if right < len(tokens) else (tokens[-1][1] if tokens else 0)
    return start, end


def _wordy(token: str) -> bool:
    return any(ch.isalnum() for ch in token)


def _name_before(text: str) -> str | None:
    """The field a changing part is the value of (`slug_contains: "…"`, `primary_email:'…'`): its name."""
    m = _NAME_BEFORE_RE.search(text)
    return snake(m.group(1)) if m else None
