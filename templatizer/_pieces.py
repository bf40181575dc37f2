"""Parts of a string: where a value sits inside a text (a whole word or number, a day in an ISO date-time, a
version after a tag's `v`), a note after a record's name, and the text written back with `{{ref}}` placeholders
and every literal fragment escaped."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Final, NamedTuple

from toolreel.core.model import JSON
from toolreel.core.refs import escape_literal
from toolreel.templatizer._result import HIGH
from toolreel.templatizer._values import Keys, numeric_strength, walk

__all__ = [
    "Piece",
    "bounded_finds",
    "interpolate",
    "labelled_keys",
    "labelled_note",
    "literal",
    "non_overlapping",
    "note_after",
    "occurrences",
    "quoted_finds",
    "written_twice",
]

_OPEN_RE: Final = re.compile(r"\{\{([ \t]*)@")  # an interpolation start, which a literal must escape
_TWICE_MIN: Final = 3  # a number of fewer digits written twice is still too likely to be chance


class Piece(NamedTuple):
    """A part `[start:end]` of a string that becomes `{{ref}}`."""

    start: int
    end: int
    ref: str
    score: float


def literal(value: JSON) -> JSON:
    """A recorded value written so that it resolves to itself (strings escaped at any depth)."""
    if isinstance(value, str):
        return escape_literal(value)
    if isinstance(value, Mapping):
        return {k: literal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [literal(v) for v in value]
    return value


def bounded_finds(text: str, needle: str) -> list[tuple[int, int]]:
    found: list[tuple[int, int]] = []
    start = text.find(needle)
    while start >= 0:
        end = start + len(needle)
        cuts_left = (
            start > 0
            and text[start - 1].isalnum()
            and text[start].isalnum()
            and not _tag(text, start, needle)
            and not _clock(text, start, needle)
        )
        cuts_right = end < len(text) and text[end - 1].isalnum() and text[end].isalnum() and not _day(text, end, needle)
        if not cuts_left and not cuts_right and (start, end) != (0, len(text)):
            found.append((start, end))
        start = text.find(needle, start + 1)
    return found


def quoted_finds(text: str, needle: str) -> list[tuple[int, int]]:
    """Where `needle` stands quoted whole in `text` (`"DE"`, `'DE'`): a short value a query compares with."""
    if not needle:
        return []
    return [(m.start(2), m.end(2)) for m in re.finditer(rf"([\"'])({re.escape(needle)})\1", text)]


def _day(text: str, end: int, needle: str) -> bool:
    """`2026-10-01T00:00:00Z`: a date before the time of an ISO date-time, which is that day."""
    return bool(_DAY_RE.match(needle)) and text[end : end + 1] == "T" and text[end + 1 : end + 2].isdigit()


_DAY_RE: Final = re.compile(r"^\d{4}-\d\d-\d\d$")


def _clock(text: str, start: int, needle: str) -> bool:
    """`2026-05-12T14:00:00+02:00`: a time of day after the `T` of an ISO date-time, which is that time."""
    return bool(_TIME_RE.match(needle)) and text[start - 1] == "T" and text[start - 2 : start - 1].isdigit()


_TIME_RE: Final = re.compile(r"^\d\d:\d\d(?::\d\d)?$")


def _tag(text: str, start: int, needle: str) -> bool:
    """`v2026.11.3`: a version after the `v` of a release tag, which is the version itself."""
    return (
        needle[:1].isdigit()
        and needle.count(".") >= 2
        and text[start - 1] in "vV"
        and (start == 1 or not text[start - 2].isalnum())
    )


_NOTE_RE: Final = re.compile(r"\}\}(?::|[ \t]+[-\u2013\u2014])[ \t]+([^{}\n]*\S)$")  # `}}: note`, `}} - note`


def note_after(value: str, written: str) -> str | None:
    """The free text after a record named by refs and a colon or a dash (`Call with {{@c.first}} {{@c.last}}: renewal
    moves to Q1`, `{{@person.company_name}} - Fleet tracking`): a note about that record, an input of its own."""
    match = _NOTE_RE.search(written)
    if match is None or len(match.group(1).split()) < _NOTE_WORDS or not value.endswith(match.group(1)):
        return None
    return match.group(1)


_NOTE_WORDS: Final = 2
# `Closing wishlist items: out of scope for 2027`: a short capitalized label, then words that start in lower case
_LABELLED_RE: Final = re.compile(r"^[A-Z][^:{}\n]{2,40}:[ \t]+([a-z][^{}\n]*\S)$")


_DATED_RE: Final = re.compile(r"^\d{4}-\d\d-\d\d(?:[ T]\d\d:\d\d(?::\d\d)?)?:[ \t]+([^{}\n]*\S)$")


def labelled_note(value: str) -> str | None:
    """The note after a label the agent wrote whole (`Refund order #1043: arrived damaged`): a reason or a remark,
    as often the user's words for this run as the task's own; two words at least. A day as the label (`2026-11-28:
    Agreed to move standup to 10:00.`, a dated line in a log or a journal) heads the note whatever its case."""
    match = _LABELLED_RE.match(value) or _DATED_RE.match(value)
    if match is None or len(match.group(1).split()) < _NOTE_WORDS:
        return None
    return match.group(1)


def labelled_keys(value: str) -> list[str]:
    """The issue keys in the label of a labelled note (`NET-812: planned firmware upgrade`): the ticket the user
    named for this run, as the note after it is the reason they gave."""
    match = _LABELLED_RE.match(value)
    return _ISSUE_KEY_RE.findall(value[: match.start(1)]) if match is not None else []


_ISSUE_KEY_RE: Final = re.compile(r"\b[A-Z][A-Z0-9]{1,9}-\d{1,7}\b")  # `NET-812`, `INC2-4471`


def non_overlapping(pieces: list[Piece]) -> list[Piece]:
    """High confidence first, then longest, then strongest; skip anything overlapping what is taken."""
    taken: list[Piece] = []
    for piece in sorted(pieces, key=lambda p: (p.score >= HIGH, p.end - p.start, p.score), reverse=True):
        if all(piece.end <= t.start or piece.start >= t.end for t in taken):
            taken.append(piece)
    return sorted(taken)


def interpolate(text: str, pieces: Sequence[Piece]) -> str:
    """`text` with each piece replaced by `{{ref}}` and every literal fragment escaped."""
    out: list[str] = []
    pos = 0
    for start, end, ref, _ in sorted(pieces):
        out.append(_OPEN_RE.sub(lambda m: m.group(0) + "@", text[pos:start]))
        out.append("{{" + ref + "}}")
        pos = end
    out.append(_OPEN_RE.sub(lambda m: m.group(0) + "@", text[pos:]))
    written = "".join(out)
    # A leading `@@` is the escape of a literal `@`: a literal that starts with `@@` needs one more.
    return "@" + written if text.startswith("@@") and (not pieces or min(p.start for p in pieces) > 0) else written


def occurrences(text: str, value: str) -> Iterator[tuple[int, bool, bool]]:
    """Each place `value` stands in `text`: (start, whether its left side is a word boundary, whether its right
    side is). A boundary on both sides is the value itself; on one side, the value glued to a word."""
    start = text.find(value)
    while start >= 0:
        end = start + len(value)
        left = start == 0 or not (text[start - 1].isalnum() and value[0].isalnum())
        right = end == len(text) or not (text[end].isalnum() and value[-1].isalnum())
        yield start, left, right
        start = text.find(value, start + 1)


def written_twice(sent: JSON, keys: Keys, texts: Sequence[str]) -> set[str]:
    """The numbers among `texts` (found in the text at `keys` of a call's arguments `sent`) that another text
    argument of the call holds too, as a whole number: copied from one output, not chance."""
    others = [leaf for at, leaf in walk(sent) if isinstance(leaf, str) and at != keys and leaf]
    return {
        text
        for text in texts
        if numeric_strength(text) is not None
        and len(text) >= _TWICE_MIN
        and any(any(left and right for _, left, right in occurrences(o, text)) for o in others)
    }
