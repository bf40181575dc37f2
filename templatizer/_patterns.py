"""Regular expressions that find a value in a text again: the value's shape between the fewest words of context
that make its first match the recorded one (`_capture` proves each on the recordings)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

__all__ = ["context", "fits", "line_patterns", "patterns", "shape", "words"]

_WORD_RE: Final = re.compile(r"[A-Za-z0-9]")
_LETTER_RE: Final = re.compile(r"[A-Za-z]")
_NUMBERISH_RE: Final = re.compile(r"[0-9][0-9.:/-]*")  # a number, an address, a version, a date
_CONTEXT_WORDS: Final = 6  # tokens of context tried on each side, nearest first
_CONTEXT_RE: Final = re.compile(r"\s+|[A-Za-z0-9_]+|[^\sA-Za-z0-9_]")  # spaces, a word, one other character


def shape(value: str) -> str:
    """A pattern for values like this one: the same kind of characters, any length where ids vary."""
    if re.fullmatch(r"-?[0-9]+(?:\.[0-9]+)?", value):
        return r"-?[0-9]+(?:\.[0-9]+)?"
    if re.fullmatch(r"[0-9a-f]{7,64}", value) and any(c.isalpha() for c in value):
        return r"[0-9a-f]{7,64}"
    if re.fullmatch(r"[0-9]+(?:\.[0-9]+){2,}", value):
        return r"[0-9]+(?:\.[0-9]+){2,}"  # a version (`1.0.215`, `1.41.1`): each part's length varies, unlike a date's
    if re.fullmatch(r"[0-9:T+\-./ ]+", value) and sum(c.isdigit() for c in value) >= 4:
        return re.sub(r"[0-9]+", lambda m: rf"[0-9]{{{len(m.group(0))}}}", _escape(value))  # a date or a time
    if re.match(r"[a-z][a-z0-9+.-]*://", value) or value.startswith("/"):
        return r"[^\s\"'<>()\[\]`|,]+"
    if re.fullmatch(r"[A-Za-z0-9_\-.:#@]+", value):
        return r"[A-Za-z0-9_\-.:#@]*[A-Za-z0-9]" if value[-1].isalnum() else r"[A-Za-z0-9_\-.:#@]+"
    return ""  # free text: its extent comes from the context on both sides


def _escape(text: str) -> str:
    return re.sub(r"([\\^$.|?*+()\[\]{}/])", r"\\\1", text)


def context(text: str) -> str:
    """Literal context, with numbers in it generalized (a count or a date beside the value changes too)."""
    return re.sub(r"[0-9]+", "[0-9]+", _escape(text))


def words(text: str, reverse: bool) -> list[str]:
    parts = _CONTEXT_RE.findall(text)
    return list(reversed(parts)) if reverse else parts


def patterns(text: str, start: int, value: str) -> Iterator[str]:
    """Candidate patterns, the least context first: before it, after it, then both."""
    body = shape(value)
    before = words(text[:start], reverse=True)[:_CONTEXT_WORDS]
    after = words(text[start + len(value) :], reverse=False)[:_CONTEXT_WORDS]
    group = f"({body})" if body else "(.+?)"
    prose = any(c.isspace() for c in text.strip())
    for n in range(0, len(before) + 1):
        left = "".join(reversed(before[:n]))
        anchor = "^" if n == len(before) and start - len(left) == 0 else ""
        for m in range(0, len(after) + 1):
            right = "".join(after[:m])
            end = "$" if start + len(value) + len(right) == len(text) else ""
            if not (left or anchor or right.strip() or end) or not (body or right or end):
                continue
            if prose and not _beside_word(left + right, value):
                continue  # in prose a word beside the value ("hash", "ID:") holds better than its position
            yield f"{anchor}{context(left)}{group}{context(right)}{end}"
    yield from _line_patterns(text, start, group)


def _beside_word(context: str, value: str) -> bool:
    """A word in the context (`ID:`, the `1.` of a numbered line, `==2.31.0` after a name): but a number is no word
    beside a number (`10.20.30.44` on the line before `10.20.30.45`): it says only where the value happens to be."""
    if _LETTER_RE.search(context):
        return True
    return bool(_WORD_RE.search(context)) and not _NUMBERISH_RE.fullmatch(value)


_LINE_WORD_RE: Final = re.compile(r"[A-Za-z][A-Za-z0-9]+")
_NEAR_TOKENS: Final = 4


def _line_patterns(text: str, start: int, group: str) -> Iterator[str]:
    """In a list written as lines (`Q3 board report FINAL (application/pdf) - ID: 1ZqR…`), the value of the line
    that a word of it names: the word anywhere before the value on its line, then the label next to the value.
    Marker words (`FINAL`, `PRIMARY`) are tried first, then the other words outside brackets, nearest first."""
    line_start = text.rfind("\n", 0, start) + 1
    head = text[line_start:start]
    near = "".join(reversed(words(head, reverse=True)[:_NEAR_TOKENS]))
    found = list(_LINE_WORD_RE.finditer(head[: len(head) - len(near)]))
    if line_start == 0 and text.find("\n", start) < 0:
        return  # one line: the context patterns above cover it
    outside = [w for w in reversed(found) if not _bracketed(head, w.start())]
    ranked = [w for w in outside if w.group(0).isupper()] + [w for w in outside if not w.group(0).isupper()]
    for word in ranked:
        yield rf"(?:^|\n)[^\n]*?\b{context(word.group(0))}\b[^\n]*?{context(near)}{group}"


def line_patterns(text: str, start: int, value: str, word: str) -> Iterator[str]:
    """The value on the line that `word` names, before it (`textbox "Subject" [ref=e9]`) or after it
    (`uid=1_5 textbox "Subject"`), with the tokens right beside the value as its label."""
    group = f"({shape(value) or '.+?'})"
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    head = text[line_start:start]
    tail = text[start + len(value) : line_end if line_end >= 0 else len(text)]
    named = rf"\b{context(word)}\b"
    near = "".join(reversed(words(head, reverse=True)[:_NEAR_TOKENS]))
    if re.search(named, head[: len(head) - len(near)]):
        yield rf"(?:^|\n)[^\n]*?{named}[^\n]*?{context(near)}{group}"
    after = "".join(words(tail, reverse=False)[:_NEAR_TOKENS])
    if re.search(named, tail[len(after) :]) or re.search(named, tail):
        yield rf"(?:^|\n)[^\n]*?{context(near)}{group}{context(after)}[^\n]*?{named}"


def _bracketed(line: str, at: int) -> bool:
    """Inside `(...)` or `[...]` on its line: an attribute of the entry (its type), not what names it."""
    return line.count("(", 0, at) > line.count(")", 0, at) or line.count("[", 0, at) > line.count("]", 0, at)


def fits(pattern: str, text: str, start: int, value: str) -> bool:
    try:
        match = re.search(pattern, text)
    except re.error:
        return False
    return match is not None and match.start(1) == start and match.group(1) == value
