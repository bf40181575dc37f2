"""Values the agent read out of text: a hash cut out of "committed with hash 5c22…", a URL's segment, a
number printed in prose, a field of JSON written inside text, a cell of a markdown table, the date of a
time tool's datetime.

Such a value is no earlier value as a whole, so a ref cannot carry it and, left literal, it is stale on
the next run. `propose_captures` finds it at word boundaries inside an earlier output's text (times and
other volatile fields included: a datetime read from a clock is the very thing that changes) and writes
the extraction as a `code` step: a regular expression anchored on the words around the value, capturing
the value's shape (hex, digits, a date, an id, a URL). It is kept only when the script, run on each
recording's own output, gives exactly the value that recording sent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Final

from toolreel.core.errors import CodeError, RefError
from toolreel.core.model import JSON, StepRecord
from toolreel.core.refs import is_ref, refs_in
from toolreel.core.template import InputSpec, StepSpec, Template
from toolreel.templatizer._codesteps import CodeRead, with_code_steps
from toolreel.templatizer._held import HeldText, Sent, Texts, position
from toolreel.templatizer._lines import INPUT_MARK, Opening, line_anchors, openings_of
from toolreel.templatizer._patterns import fits, line_patterns, patterns
from toolreel.templatizer._result import Inference
from toolreel.templatizer._runs import Run, reproduced, script_on
from toolreel.templatizer._values import Keys, get_at, is_trivial, json_path, strength, walk

__all__ = ["Capture", "propose_captures"]

_JS_SPECIAL: Final = r"/[.*+?^${}()|[\]\\]/g"  # what a JavaScript regular expression must escape
_MIN_STRENGTH: Final = 0.55  # weaker values ("open", "42") sit inside prose by chance
_GLUED_STRENGTH: Final = 0.9
_WORDLIKE_RE: Final = re.compile(r"[a-z]+(?:_[a-z]+)*")  # a word or a field name


@dataclass(frozen=True, slots=True)
class Capture:
    """`pattern`'s first group, searched in the text at `source`, is the value (`number`: as a number)."""

    step: str  # the consumer
    keys: Keys
    recorded: JSON
    source: str  # the ref to the text, e.g. `@git_commit_1`
    pattern: str
    number: bool
    piece: bool = False  # the value is a part of the argument's text (`{{@extract_1}}` inside it)
    field: Keys | None = None  # `source` is a list: the text is this field of every item, one per line
    every: tuple[str, str] | None = None  # every match, joined by (separator, last separator): "A, B and C"
    anchor: str | None = None  # what opens the line read (at `INPUT_MARK`): `@input.x`, or the text itself
    opening: str | None = None  # that text, when no input gave it: a likely input (`_lines.opening_inputs`)

    @property
    def given(self) -> dict[str, JSON]:
        """The code step's input."""
        return {"text": self.source} | ({"anchor": self.anchor} if self.anchor is not None else {})

    @property
    def code(self) -> str:
        convert = "Number(m[1])" if self.number else "m[1]"
        pattern = json.dumps(self.pattern, ensure_ascii=False)
        if self.anchor is not None:  # the input's text, escaped, where the mark is
            escaped = f"String(input.anchor).replace({_JS_SPECIAL}, " + '"\\\\$&")'
            pattern += f".split({json.dumps(INPUT_MARK)}).join({escaped})"
        if self.every is not None:
            sep, last = (json.dumps(s) for s in self.every)
            return (
                "export default function(input) {\n"
                + _text_of(self.field)
                + f'  const all = [...text.matchAll(new RegExp({pattern}, "g"))].map((m) => m[1]);\n'
                + f'  if (all.length === 0) throw new Error("no match for " + {pattern} + " in the text");\n'
                + f"  return all.length === 1 ? all[0] : all.slice(0, -1).join({sep}) + {last} + all[all.length - 1];\n"
                + "}\n"
            )
        return (
            "export default function(input) {\n"
            + _text_of(self.field)
            + f"  const m = text.match(new RegExp({pattern}));\n"
            f'  if (m === null) throw new Error("no match for " + {pattern} + " in the text");\n'
            f"  return {convert};\n}}\n"
        )


def _text_of(field: Keys | None) -> str:
    """The script's `text`: the source itself, or the field of every item of the source list, one per line (the
    item that says it, wherever it sits in the list on the next run)."""
    if field is None:
        return "  const text = String(input.text);\n"
    path = json.dumps(list(field))
    return (
        "  const items = Array.isArray(input.text) ? input.text : [];\n"
        f"  const text = items.map((item) => {path}.reduce((v, k) => (v == null ? v : v[k]), item))\n"
        '    .map((v) => (v == null ? "" : typeof v === "string" ? v : JSON.stringify(v))).join("\\n");\n'
    )


# --------------------------------------------------------------------------- finding them


def _candidate(leaf: JSON, recorded: JSON, *, weak: bool = False) -> str | None:
    """The text to look for: a literal string (or number) argument strong enough not to be chance (`weak`: any)."""
    if isinstance(leaf, str) and (is_ref(leaf) or refs_in(leaf)):
        return None
    if isinstance(recorded, bool) or recorded is None:
        return None
    if isinstance(recorded, int | float):
        text = json.dumps(recorded)
        return text if weak or strength(recorded) >= 0.8 else None
    if isinstance(recorded, str) and (weak or strength(recorded) >= _MIN_STRENGTH) and "\n" not in recorded:
        return recorded
    return None


def _on_named_line(
    step: str, keys: Keys, recorded: JSON, texts: Texts, runs: Sequence[Run], sent: Sent
) -> Capture | None:
    value = recorded if isinstance(recorded, str) else json.dumps(recorded)
    for held in texts.holding(value):
        for start in _delimited_at(held.text, value):
            capture = Capture(step, keys, recorded, _source(held), "", not isinstance(recorded, str))
            named = _line_of_input(capture, held, start, runs, own=True)
            # (the echo check walks every call sent so far: only for a line that a name opens)
            if named is not None and not any(t.order <= held.order for t in sent.holding(value, whole=True)):
                return named
    return None


def _delimited(text: str, start: int, value: str) -> bool:
    """The value stands apart in the text (spaces, quotes, brackets, a table's bars, a URL's slashes), not
    glued into a bigger token (`facilities` of `facilities.team`, `09:00` of `+09:00`): a glued piece is
    evidence only when it is itself strong (a full date, a long id)."""
    before = text[start - 1] if start > 0 else " "
    end = start + len(value)
    after = text[end] if end < len(text) else " "
    url = re.match(r"[a-z][a-z0-9+.-]*://", text) is not None
    apart = " \t\n\"'`([{<|,;=*"
    return (before in apart or (url and before == "/")) and (
        after in apart + ")]}>"
        or (after in ".:!?" and text[end + 1 : end + 2] in ("", " ", "\n"))
        or (url and after in "/?#")
    )


def _find(record: StepRecord, spec: StepSpec, texts: Texts, runs: Sequence[Run], sent: Sent) -> Iterator[Capture]:
    recorded_input = record.resolved_input if record.resolved_input is not None else {}
    for keys, leaf in walk(spec.input):
        if isinstance(leaf, dict | list) or not keys:
            continue
        found, recorded = get_at(recorded_input, keys)
        value = _candidate(leaf, recorded) if found else None
        if value is not None:
            capture = _first_capture(record.name, keys, recorded, value, texts, runs, sent)
            if capture is not None:
                yield capture
                continue
        elif found and not is_trivial(recorded) and _candidate(leaf, recorded, weak=True) is not None:
            # a weak value (`482`) is no chance on the line a chosen name opens, among look-alikes
            capture = _on_named_line(record.name, keys, recorded, texts, runs, sent)
            if capture is not None:
                yield capture
                continue
        if found and isinstance(leaf, str) and isinstance(recorded, str) and not is_ref(leaf):
            named = _named_line(record.name, keys, recorded, _beside(spec.input, keys), texts, runs, sent)
            if named is not None:
                yield named
                continue
            yield from _pieces(record.name, keys, leaf, texts, runs, sent)


_SHORT_ID_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,15}$")
_LABEL_WORD_RE: Final = re.compile(r"[A-Za-z][A-Za-z0-9]{2,}")


def _beside(arguments: JSON, keys: Keys) -> list[str]:
    """The words of the call's other literal string arguments (`Subject textbox` beside `ref: "e9"`)."""
    out: list[str] = []
    for other, leaf in walk(arguments):
        if other != keys and isinstance(leaf, str) and not is_ref(leaf) and not refs_in(leaf):
            out += [w for w in _LABEL_WORD_RE.findall(leaf) if w not in out]
    return out


def _named_line(
    step: str, keys: Keys, recorded: str, beside: Sequence[str], texts: Texts, runs: Sequence[Run], sent: Sent
) -> Capture | None:
    """A short value too weak to be evidence alone (`e9`), read off the line of an earlier text that a word of
    the call's other argument names (`textbox "Subject" [ref=e9]` beside `element: "Subject textbox"`): the
    agent found the line by that word, so the next run reads the value on the line that word names."""
    if not beside or strength(recorded) >= _MIN_STRENGTH or not _SHORT_ID_RE.match(recorded):
        return None
    for held in texts.holding(recorded):
        if any(t.order <= held.order for t in sent.holding(recorded, whole=True)):
            continue  # the agent had sent it before: an echo
        for start in _delimited_at(held.text, recorded):
            line_start = held.text.rfind("\n", 0, start) + 1
            line_end = held.text.find("\n", start)
            line = held.text[line_start : line_end if line_end >= 0 else len(held.text)]
            for word in beside:
                for pattern in line_patterns(held.text, start, recorded, word) if _has_word(line, word) else ():
                    if fits(pattern, held.text, start, recorded):
                        capture = Capture(step, keys, recorded, _source(held), pattern, False)
                        if _reproduces(capture, runs):
                            return capture
    return None


def _delimited_at(text: str, value: str) -> Iterator[int]:
    start = text.find(value)
    while start >= 0:
        if _delimited(text, start, value):
            yield start
        start = text.find(value, start + 1)


def _has_word(line: str, word: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])", line) is not None


def _pieces(step: str, keys: Keys, leaf: str, texts: Texts, runs: Sequence[Run], sent: Sent) -> Iterator[Capture]:
    """Names and ids inside the literal parts of a text argument (`.../notes/report-q3.txt`), each read out of
    an earlier output: the part becomes `{{@extract_n}}`."""
    for fragment in _LITERAL_RE.split(leaf)[::2]:
        if "{{" in fragment or "@@" in fragment:
            continue
        done: set[int] = set()
        for match in _LABELLED_RE.finditer(fragment):
            value = match.group(2)
            if " " in value and _labelled_in(match.group(1), value, texts):
                capture = _first_capture(step, keys, value, value, texts, runs, sent, piece=True)
                if capture is not None:
                    done |= set(range(match.start(2), match.end(2)))
                    yield capture
        strong = [
            m
            for m in _PIECE_RE.finditer(fragment)
            if m.group(0) != leaf
            and m.start() not in done
            and (_piece_strength(m.group(0)) >= _GLUED_STRENGTH or _same_label(fragment, m, texts))
            and _apart(fragment, m.start(), m.end())
        ]
        for value, start in _labelled_values(fragment, texts):
            if start not in done:
                capture = _first_capture(step, keys, value, value, texts, runs, sent, piece=True)
                if capture is not None:
                    done |= set(range(start, start + len(value)))
                    yield capture
        for run in _enumerations(fragment, strong):
            capture = _every_capture(step, keys, fragment, run, texts, runs, sent)
            if capture is not None:
                done |= {m.start() for m in run}
                yield capture
        for match in strong:
            if match.start() in done:
                continue
            capture = _first_capture(step, keys, match.group(0), match.group(0), texts, runs, sent, piece=True)
            if capture is not None:
                yield capture


# A labelled line of a text the agent wrote (`Culprit: CartSummary in src/components/cart`).
_LABELLED_RE: Final = re.compile(r"(?m)^[ \t*>-]*([A-Za-z][A-Za-z ]{1,30}?)\**:\**[ \t]+(\S.{6,}?)[ \t]*$")
_LABEL_BEFORE_RE: Final = re.compile(r"([A-Za-z]{2,})\W{0,4}$")
# A labelled line of a tool's text (`Conditions: light rain`, `Temperature: 17.2°C (feels like 16.8°C)`).
_LINE_VALUE_RE: Final = re.compile(r"(?m)^[ \t*>-]*[A-Za-z][\w ]{1,30}?\**:\**[ \t]+(\S[^\n]*?)[ \t]*$")


def _labelled_values(fragment: str, texts: Texts) -> Iterator[tuple[str, int]]:
    """What the agent copied off labelled lines of an earlier text into its own words, without the label
    ("17.2°C, light rain" from `Temperature: 17.2°C (...)` and `Conditions: light rain`): the line's whole value,
    or its first word where that holds a number, found apart in `fragment`; with a digit or two words in it, a
    copy is no chance. (value, where it starts in `fragment`)"""
    seen: set[str] = set()
    for held in texts.sharing(fragment):
        for match in _LINE_VALUE_RE.finditer(held.text):
            whole = match.group(1)
            first = whole.split()[0]
            for value in (whole, first) if first != whole and any(c.isdigit() for c in first) else (whole,):
                if value in seen or len(value) < _LABELLED_MIN or not (" " in value or any(c.isdigit() for c in value)):
                    continue
                seen.add(value)
                start = position(fragment, value)
                if start is not None and _delimited(fragment, start, value):
                    yield value, start


_LABELLED_MIN: Final = 3


def _labelled_in(label: str, value: str, texts: Texts) -> bool:
    """An earlier text holds the value after the same label on its line (`**Culprit**: CartSummary in ...`)."""
    for held in texts.holding(value):
        start = position(held.text, value)
        if start is not None:
            line = held.text[held.text.rfind("\n", 0, start) + 1 : start]
            if label.lower() in line.lower():
                return True
    return False


def _same_label(fragment: str, match: re.Match[str], texts: Texts) -> bool:
    """A number too short to be evidence alone, labelled by the same word in the argument and in an earlier
    text: right before it in both (`week 48` and `Week 48`), or the word that labels it in the earlier text
    (a JSON key, `"signups": 42`) named earlier on the argument's line when that line writes a labelled value
    (`Signups today so far: 42`, not `the timeout to 30 s`). The agent copied it with its label."""
    piece = match.group(0)
    before = fragment[: match.start()]
    mine = _LABEL_BEFORE_RE.search(before)
    if not piece.isdigit() or mine is None:
        return False
    head = before[before.rfind("\n") + 1 :]
    # Named anywhere on the line only when the line writes it as a labelled value (`Signups today so far: 42`).
    line = {word.lower() for word in _WORD_RE.findall(head)} if _LABELLED_END_RE.search(head) else set()
    for held in texts.holding(piece):
        start = position(held.text, piece)
        theirs = _LABEL_BEFORE_RE.search(held.text[:start]) if start is not None else None
        if theirs is None:
            continue
        label = theirs.group(1).lower()
        if label == mine.group(1).lower() or (len(label) >= _LABEL_MIN and label in line):
            return True
    return False


_WORD_RE: Final = re.compile(r"[A-Za-z]{2,}")
_LABELLED_END_RE: Final = re.compile(r"[A-Za-z][:=]\s*$")
_LABEL_MIN: Final = 4  # a label named anywhere on the line must be a real word, not `id` or `no`


_SEPARATORS: Final = (", and ", " and ", ", ", ",", "; ", " & ")


def _enumerations(text: str, pieces: Sequence[re.Match[str]]) -> Iterator[list[re.Match[str]]]:
    """Runs of two or more pieces written as one list (`A, B and C`): only separators between them."""
    run: list[re.Match[str]] = []
    for match in pieces:
        if run and text[run[-1].end() : match.start()] in _SEPARATORS:
            run.append(match)
            continue
        if len(run) >= 2:
            yield run
        run = [match]
    if len(run) >= 2:
        yield run


def _every_capture(
    step: str, keys: Keys, text: str, run: Sequence[re.Match[str]], texts: Texts, runs: Sequence[Run], sent: Sent
) -> Capture | None:
    """A list written out in the argument whose items are every match of one pattern in an earlier text, in
    order: one code step that joins every match the same way (`A, B and C`), so the next run names all of its
    items, however many there are."""
    values = [m.group(0) for m in run]
    seps = [text[a.end() : b.start()] for a, b in pairwise(run)]
    if len(set(seps[:-1])) > 1:
        return None
    every = (seps[0], seps[-1])
    written = text[run[0].start() : run[-1].end()]
    for held in texts.holding(values[0]):
        if any(t.order <= held.order for t in sent.holding(values[0], whole=True)):
            continue
        start = position(held.text, values[0])
        if start is None:
            continue
        for source, whole, at, field in _readings(held, start, runs[0]):
            for pattern in patterns(whole, at, values[0]):
                if _all_matches(pattern, whole) == values:
                    capture = Capture(step, keys, written, source, pattern, False, True, field, every)
                    if _reproduces(capture, runs):
                        return capture
    return None


def _all_matches(pattern: str, text: str) -> list[str]:
    try:
        return [m.group(1) for m in re.finditer(pattern, text)]
    except (re.error, IndexError):
        return []


def _piece_strength(piece: str) -> float:
    """A run of digits weighs as the number it writes (`48213907` bytes is as telling as an id); a version
    (`v3.5.1`, three numbers) as an id: a release named in prose is read from the page that lists it."""
    if _VERSION_RE.fullmatch(piece):
        return _GLUED_STRENGTH
    return strength(int(piece)) if piece.isdigit() and not piece.startswith("0") else strength(piece)


_VERSION_RE: Final = re.compile(r"[vV]?\d+\.\d+\.\d+")


def _apart(text: str, start: int, end: int) -> bool:
    """A part that stands as a word or a path segment of the argument, not cut out of a longer token."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    ends = after in ".!?:" and text[end + 1 : end + 2] in ("", " ", "\n")  # the end of a sentence or a clause
    return before in _APART_BEFORE and (after in _APART_AFTER or ends)


_APART_BEFORE: Final = " \t\n/\"'([{<|,;=#"
_APART_AFTER: Final = " \t\n/\"')]}>|,;?#"
_LITERAL_RE: Final = re.compile(r"(\{\{[^}]*\}\})")  # placeholders, kept by split at odd places
_PIECE_RE: Final = re.compile(r"(?<![A-Za-z0-9_.-])[A-Za-z0-9][A-Za-z0-9_.-]*[A-Za-z0-9](?![A-Za-z0-9_-])")


def _first_capture(
    step: str,
    keys: Keys,
    recorded: JSON,
    value: str,
    texts: Texts,
    runs: Sequence[Run],
    sent: Sent,
    piece: bool = False,
) -> Capture | None:
    from_input = _from_inputs(step, keys, recorded, value, runs)
    if from_input is not None:
        return from_input  # read out of what the user gave (the id in the URL): that is its origin
    holders = texts.holding(value)
    echoes = [t.order for t in sent.holding(value, whole=True)] if holders else []
    for held, start in _places(holders, value, recorded):
        if echoes and min(echoes) <= held.order:
            # The agent had sent it before this text held it: an echo of its own value. A text from before
            # it first sent it (the commit's sentence, before the branch made from that commit) is its origin.
            continue
        number = not isinstance(recorded, str)
        named = _line_of_input(Capture(step, keys, recorded, _source(held), "", number, piece), held, start, runs)
        if named is not None:
            return named
        for source, text, at, field in _readings(held, start, runs[0]):
            for pattern in patterns(text, at, value):
                if fits(pattern, text, at, value):
                    capture = Capture(step, keys, recorded, source, pattern, number, piece, field)
                    if _reproduces(capture, runs):
                        return capture
    return None


def _line_of_input(
    capture: Capture, held: HeldText, start: int, runs: Sequence[Run], *, own: bool = False
) -> Capture | None:
    """The value on the line that the user's text, or (`own`) the line's own chosen name, opens (`_lines`)."""
    value = capture.recorded if isinstance(capture.recorded, str) else str(capture.recorded)
    for anchor in line_anchors(held.text, start, value, runs[0].inputs, own=own):
        if (
            anchor.text.startswith("@")
            or "{{" in anchor.text
            or not fits(anchor.pattern.replace(INPUT_MARK, re.escape(anchor.text)), held.text, start, value)
        ):
            continue
        given = f"@input.{anchor.input}" if anchor.input is not None else anchor.text
        opening = anchor.text if anchor.input is None else None
        anchored = replace(capture, pattern=anchor.pattern, anchor=given, opening=opening)
        if _reproduces(anchored, runs):
            return anchored
    return None


def _source(held: HeldText) -> str:
    """The ref to the text an earlier output holds."""
    return f"@{held.step}{json_path(held.keys)[1:]}"


def _places(holders: Sequence[HeldText], value: str, recorded: JSON) -> list[tuple[HeldText, int]]:
    """Where each text holds the value, the texts that hold it standing apart first (`- checkout-api (URL`), then
    those that hold it glued into a longer token (`checkout-api-canary`), which a strong value may be read from
    when no text holds it apart."""
    apart: list[tuple[HeldText, int]] = []
    glued: list[tuple[HeldText, int]] = []
    for held in holders:
        start = next(_delimited_at(held.text, value), None)
        if start is not None:
            apart.append((held, start))
        elif (start := position(held.text, value)) is not None and _strength(recorded) >= _GLUED_STRENGTH:
            glued.append((held, start))
    return apart + glued


def _readings(held: HeldText, start: int, run: Run) -> Iterator[tuple[str, str, int, Keys | None]]:
    """Where to read the value: first, for a text that is one item's field in a list (an incident's title), that
    field of every item, one per line, so the next run reads the item that says it rather than the item at this
    position; then the text alone."""
    last = max((i for i, key in enumerate(held.keys) if isinstance(key, int)), default=-1)
    if last >= 0:
        list_keys, index, field = held.keys[:last], held.keys[last], held.keys[last + 1 :]
        _, items = get_at(run.outputs.get(held.step), list_keys)
        if isinstance(items, list) and len(items) > 1 and isinstance(index, int):
            lines = [_field_text(item, field) for item in items]
            at = sum(len(line) + 1 for line in lines[:index]) + start
            yield f"@{held.step}{json_path(list_keys)[1:]}", "\n".join(lines), at, field
    yield _source(held), held.text, start, None


def _field_text(item: JSON, field: Keys) -> str:
    found, value = get_at(item, field)
    if not found or value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _from_inputs(step: str, keys: Keys, recorded: JSON, value: str, runs: Sequence[Run]) -> Capture | None:
    if _WORDLIKE_RE.fullmatch(value):  # (`products`, `due_date`: as likely a word of the user's text as a value)
        return None
    for name, given in runs[0].inputs.items():
        if not isinstance(given, str) or given == value:
            continue
        start = position(given, value)
        if start is None or not _delimited(given, start, value):
            continue
        for pattern in patterns(given, start, value):
            if fits(pattern, given, start, value):
                capture = Capture(step, keys, recorded, f"@input.{name}", pattern, not isinstance(recorded, str))
                if _reproduces(capture, runs):
                    return capture
    return None


def _reproduces(capture: Capture, runs: Sequence[Run]) -> bool:
    """The script, on each recording's own text, gives exactly what that recording sent."""

    def holds(got: JSON, recorded: JSON, run: Run) -> bool:
        if capture.piece:  # the part is read out of this recording's text and sits in its argument
            recorded = capture.recorded if run is runs[0] else _part_of(recorded, capture.pattern, run, capture)
        if type(got) is not type(recorded) and not (isinstance(got, float) and isinstance(recorded, int)):
            return False
        return bool(got == recorded)

    return reproduced(capture.step, capture.keys, runs, script_on(capture.code, capture.given), holds)


def _strength(value: JSON) -> float:
    return strength(value)


def _part_of(recorded: JSON, pattern: str, run: Run, capture: Capture) -> JSON:
    """What another recording's argument holds where this one holds the part: the capture's own result, if
    its argument has it at word boundaries (else the recorded argument, which then fails the check)."""
    try:
        got = script_on(capture.code, capture.given)(run)
    except (RefError, CodeError):
        return recorded
    return (
        got if isinstance(recorded, str) and isinstance(got, str) and position(recorded, got) is not None else recorded
    )


# --------------------------------------------------------------------------- the template


def propose_captures(
    template: Template, kept: Sequence[StepRecord], runs: Sequence[Run], input_specs: Mapping[str, InputSpec]
) -> tuple[Template, tuple[Inference, ...], tuple[Opening, ...]]:
    """The template with an extraction `code` step before each literal an earlier output's text explains, and the
    texts that open the lines read where no input gave them. `input_specs`: how to declare an input only a line's
    reading uses (no argument holds it)."""
    specs = {step.name: step for step in template.steps}
    texts, sent = Texts(), Sent()
    found: list[Capture] = []
    for order, record in enumerate(kept, start=1):
        spec = specs.get(record.name)
        if spec is not None and spec.tool is not None:
            found += _find(record, spec, texts, runs, sent)
        sent.add(record, order)
        if record.name in runs[0].outputs and record.name in specs:  # a call folded into a loop is no step
            texts.add(record.name, order, runs[0].outputs[record.name])
    if not found:
        return template, (), ()
    anchors = {item.anchor.removeprefix("@input.") for item in found if item.anchor and item.opening is None}
    declared = {**template.inputs, **{name: input_specs[name] for name in anchors if name in input_specs}}
    template, inferences = _rewritten(replace(template, inputs=declared), found)
    return template, inferences, openings_of([(item.opening, item.step, item.keys) for item in found], inferences)


def _with_placeholder(text: str, piece: str, step: str) -> str | None:
    """`text` with the first literal occurrence of `piece` (outside any `{{...}}`) as `{{@step}}`."""
    parts = _LITERAL_RE.split(text)
    for i in range(0, len(parts), 2):
        start = position(parts[i], piece)
        if start is not None:
            parts[i] = parts[i][:start] + "{{@" + step + "}}" + parts[i][start + len(piece) :]
            return "".join(parts)
    return None


def _rewritten(template: Template, found: Sequence[Capture]) -> tuple[Template, tuple[Inference, ...]]:
    return with_code_steps(template, [_read(item) for item in found], _with_placeholder)


def _read(item: Capture) -> CodeRead:
    def why(name: str) -> str:
        return (
            f"{item.recorded!r} is no earlier value but is read out of the text {item.source} "
            f"(pattern {item.pattern!r}); the code step {name} reproduces it from the recording"
        )

    return CodeRead(item.step, item.keys, item.recorded, item.code, item.given, "extract", why, item.piece)
