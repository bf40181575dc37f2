"""Lines of a text list named by the text that opens them: `- Anna Schulz (id 482) — nickname: Anni` among
`- Anna Schulze (id 517)` and `- Annika Schulz (id 611)`.

The agent found the id on the line whose name is the one the user meant, so the next run reads the id off the line
that name opens, wherever the line sits and whatever look-alikes stand beside it. The name is an input the user gave
(`query: "Packing list"`, then the line `- Packing list (id: …)`), or else the opening text itself, which look-alike
lines show was chosen: then it becomes a likely input, as a pick's name does (`_picks.pick_inputs`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from toolreel.core.model import JSON
from toolreel.core.refs import is_ref
from toolreel.templatizer._patterns import context, shape
from toolreel.templatizer._result import LikelyInput
from toolreel.templatizer._values import Keys, free_name, json_path, snake

if TYPE_CHECKING:
    from toolreel.templatizer._result import Inference

__all__ = ["INPUT_MARK", "LineAnchor", "Opening", "line_anchors", "opening_inputs", "openings_of"]

INPUT_MARK: Final = "\x01"  # in a pattern: where the text that opens the line goes (escaped at run time)
_BULLET_RE: Final = re.compile(r"[^\w\n]*")
_GAP: Final = 16  # characters between the opening text and the value on its line (` (id: `)
# The label before the value at the end of the opening: punctuation, then at most one short word (` (id `, `, ID: `)
_GAP_RE: Final = re.compile(r"[^\w\n]+(?:[A-Za-z]{1,6}[^\w\n]+)?$")
# A name of a few words (`Anna Schulz`): no quotes, brackets or `=` (an element of a page snapshot, `textbox "Notes"`)
_NAME_RE: Final = re.compile(r"^[^\W\d_a-z][^\n\"'\[\]{}=<>|]{2,59}$")  # (capitalized: `name` is a key)
_NAME_WORDS: Final = 6
_ID_SUFFIX_RE: Final = re.compile(r"_?(?:id|uuid|key)$")


@dataclass(frozen=True, slots=True)
class LineAnchor:
    """A pattern for the value on the line that `text` opens (at `INPUT_MARK`); `input`: the named input holding it."""

    pattern: str
    text: str
    input: str | None


@dataclass(frozen=True, slots=True)
class Opening:
    """An opening text an extraction step reads its line by, that no input gave: which line, the user's choice."""

    text: str
    step: str  # the extraction's code step
    key: str  # the argument the extracted value goes to (`contact_id`)


def line_anchors(text: str, start: int, value: str, inputs: Mapping[str, JSON], *, own: bool) -> Iterator[LineAnchor]:
    """Patterns for `value` at `start`, read off the line by what opens it: an input's text, then (`own`) the line's
    own name."""
    body = shape(value)
    if not body:
        return
    line_start = text.rfind("\n", 0, start) + 1
    head = text[line_start:start]
    bullets = _BULLET_RE.match(head)
    lead = head[bullets.end() if bullets else 0 :]
    for name, given in inputs.items():
        if isinstance(given, str) and len(given) >= 3 and "\n" not in given and lead.startswith(given):
            gap = lead[len(given) :]
            if gap.strip() and len(gap) <= _GAP:
                yield LineAnchor(_pattern(gap, body), given, name)
    gap_at = _GAP_RE.search(lead)
    if not own or gap_at is None or len(lead) - gap_at.start() > _GAP:
        return
    opening = lead[: gap_at.start()]
    if _NAME_RE.match(opening) and len(opening.split()) <= _NAME_WORDS and _look_alikes(text, line_start, opening):
        yield LineAnchor(_pattern(lead[gap_at.start() :], body), opening, None)


def _pattern(gap: str, body: str) -> str:
    return rf"(?:^|\n)[^\w\n]*{INPUT_MARK}{context(gap)}({body})"


def _look_alikes(text: str, line_start: int, opening: str) -> bool:
    """Another line opens with the same first word (`Anna Schulze` beside `Anna Schulz`): the line was chosen by
    its whole name, not found alone."""
    first = opening.split()[0]
    for at, line in _lines(text):
        if at == line_start:
            continue
        bullets = _BULLET_RE.match(line)
        if line[bullets.end() if bullets else 0 :].startswith(first):
            return True
    return False


def _lines(text: str) -> Iterator[tuple[int, str]]:
    at = 0
    for line in text.split("\n"):
        yield at, line
        at += len(line) + 1


def opening_inputs(openings: Sequence[Opening], likely: Sequence[LikelyInput], taken: set[str]) -> list[LikelyInput]:
    """The likely inputs with each opening text no input gave, ticked, named after the argument it identifies
    (`contact_id` gives `contact`)."""
    out = list(likely)
    for opening in openings:
        if any(item.value == opening.text for item in out):
            continue
        name = free_name(_ID_SUFFIX_RE.sub("", snake(opening.key)) or "name", taken)
        taken.add(name)
        why = f"{opening.step} reads the line it opens, among look-alike lines: which one, the user's choice"
        out.append(LikelyInput(name, opening.text, "string", ((opening.step, "$.anchor"),), why))
    return out


def openings_of(found: Sequence[tuple[str | None, str, Keys]], inferences: Sequence[Inference]) -> tuple[Opening, ...]:
    """The opening texts no input gave of the extractions kept (`found`: each extraction's opening, step and
    argument), each with its code step (the ref it wrote)."""
    steps = {
        (inference.step, inference.input_path): str(inference.ref)[1:]
        for inference in inferences
        if is_ref(str(inference.ref))  # (the extraction's value whole, not a part of a text)
    }
    return tuple(
        Opening(opening, steps[(step, json_path(keys))], str(keys[-1]))
        for opening, step, keys in found
        if opening is not None and (step, json_path(keys)) in steps
    )
