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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Final

from toolreel.core.errors import CodeError, RefError
from toolreel.core.model import JSON, StepRecord
from toolreel.core.refs import is_ref, refs_in, resolve
from toolreel.core.sandbox import CodeLimits, run_code
from toolreel.core.template import StepSpec, Template
from toolreel.core.template_io import parse_template, template_to_dict
from toolreel.templatizer._result import Inference
from toolreel.templatizer._runs import Run
from toolreel.templatizer._values import Keys, get_at, json_path, put_at, strength, walk

__all__ = ["Capture", "propose_captures"]

_LIMITS: Final = CodeLimits(timeout=1.0, memory_mb=32)
_MIN_STRENGTH: Final = 0.55  # weaker values ("open", "42") sit inside prose by chance
_GLUED_STRENGTH: Final = 0.9
_MIN_TEXT: Final = 2
_TOKEN_RE: Final = re.compile(r"[A-Za-z0-9]+")
_SAMPLE: Final = 6  # texts kept per token (the latest): a lookup costs the same however long the recording
_WORD_RE: Final = re.compile(r"[A-Za-z0-9]")
_CONTEXT_WORDS: Final = 6  # tokens of context tried on each side, nearest first
_CONTEXT_RE: Final = re.compile(r"\s+|[A-Za-z0-9_]+|[^\sA-Za-z0-9_]")  # spaces, a word, one other character


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

    @property
    def code(self) -> str:
        convert = "Number(m[1])" if self.number else "m[1]"
        pattern = json.dumps(self.pattern, ensure_ascii=False)
        return (
            "export default function(input) {\n"
            f"  const m = String(input.text).match(new RegExp({pattern}));\n"
            f'  if (m === null) throw new Error("no match for " + {pattern} + " in the text");\n'
            f"  return {convert};\n}}\n"
        )


@dataclass(frozen=True, slots=True)
class _Text:
    step: str
    order: int
    keys: Keys
    text: str


class _Texts:
    """Every string of the outputs so far, by the words it holds (a bounded sample per word)."""

    def __init__(self) -> None:
        self._by_token: dict[str, list[_Text]] = {}

    def add(self, step: str, order: int, output: JSON) -> None:
        for keys, node in walk(output):
            if isinstance(node, str) and len(node) >= _MIN_TEXT:
                entry = _Text(step, order, keys, node)
                by_token = self._by_token
                for token in set(_TOKEN_RE.findall(node)):
                    kept = by_token.get(token)
                    if kept is None:
                        by_token[token] = [entry]
                    else:
                        kept.append(entry)
                        if len(kept) > _SAMPLE:
                            del kept[0]

    def holding(self, value: str, *, whole: bool = False) -> list[_Text]:
        """Texts holding `value` at word boundaries (`whole`: or equal to it), latest first."""
        first = _TOKEN_RE.search(value)
        if first is None:
            return []
        found = [
            t for t in self._by_token.get(first.group(0), []) if (whole or t.text != value) and _bounded(t.text, value)
        ]
        return sorted(found, key=lambda t: t.order, reverse=True)


def _bounded(text: str, value: str) -> bool:
    return _position(text, value) is not None


def _position(text: str, value: str) -> int | None:
    glued: int | None = None
    start = text.find(value)
    while start >= 0:
        end = start + len(value)
        left = start == 0 or not (text[start - 1].isalnum() and value[0].isalnum())
        right = end == len(text) or not (text[end].isalnum() and value[-1].isalnum())
        if left and right:
            return start
        if (left or right) and glued is None:
            glued = start  # inside a token on one side (a date before its "T"): delimited() judges it
        start = text.find(value, start + 1)
    return glued


# --------------------------------------------------------------------------- patterns


def shape(value: str) -> str:
    """A pattern for values like this one: the same kind of characters, any length where ids vary."""
    if re.fullmatch(r"-?[0-9]+(?:\.[0-9]+)?", value):
        return r"-?[0-9]+(?:\.[0-9]+)?"
    if re.fullmatch(r"[0-9a-f]{7,64}", value) and any(c.isalpha() for c in value):
        return r"[0-9a-f]{7,64}"
    if re.fullmatch(r"[0-9:T+\-./ ]+", value) and sum(c.isdigit() for c in value) >= 4:
        return re.sub(r"[0-9]+", lambda m: rf"[0-9]{{{len(m.group(0))}}}", _escape(value))  # a date or a time
    if re.match(r"[a-z][a-z0-9+.-]*://", value) or value.startswith("/"):
        return r"[^\s\"'<>()\[\]`|,]+"
    if re.fullmatch(r"[A-Za-z0-9_\-.:#@]+", value):
        return r"[A-Za-z0-9_\-.:#@]*[A-Za-z0-9]" if value[-1].isalnum() else r"[A-Za-z0-9_\-.:#@]+"
    return ""  # free text: its extent comes from the context on both sides


def _escape(text: str) -> str:
    return re.sub(r"([\\^$.|?*+()\[\]{}/])", r"\\\1", text)


def _context(text: str) -> str:
    """Literal context, with numbers in it generalized (a count or a date beside the value changes too)."""
    return re.sub(r"[0-9]+", "[0-9]+", _escape(text))


def _words(text: str, reverse: bool) -> list[str]:
    parts = _CONTEXT_RE.findall(text)
    return list(reversed(parts)) if reverse else parts


def patterns(text: str, start: int, value: str) -> Iterator[str]:
    """Candidate patterns, the least context first: before it, after it, then both."""
    body = shape(value)
    before = _words(text[:start], reverse=True)[:_CONTEXT_WORDS]
    after = _words(text[start + len(value) :], reverse=False)[:_CONTEXT_WORDS]
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
            if prose and not _WORD_RE.search(left + right):
                continue  # in prose a word beside the value ("hash", "ID:") holds better than its position
            yield f"{anchor}{_context(left)}{group}{_context(right)}{end}"
    yield from _line_patterns(text, start, group)


_LINE_WORD_RE: Final = re.compile(r"[A-Za-z][A-Za-z0-9]+")
_NEAR_TOKENS: Final = 4


def _line_patterns(text: str, start: int, group: str) -> Iterator[str]:
    """In a list written as lines (`Q3 board report FINAL (application/pdf) - ID: 1ZqR…`), the value of the line
    that a word of it names: the word anywhere before the value on its line, then the label next to the value.
    Marker words (`FINAL`, `PRIMARY`) are tried first, then the other words outside brackets, nearest first."""
    line_start = text.rfind("\n", 0, start) + 1
    head = text[line_start:start]
    near = "".join(reversed(_words(head, reverse=True)[:_NEAR_TOKENS]))
    words = list(_LINE_WORD_RE.finditer(head[: len(head) - len(near)]))
    if line_start == 0 and text.find("\n", start) < 0:
        return  # one line: the context patterns above cover it
    outside = [w for w in reversed(words) if not _bracketed(head, w.start())]
    ranked = [w for w in outside if w.group(0).isupper()] + [w for w in outside if not w.group(0).isupper()]
    for word in ranked:
        yield rf"(?:^|\n)[^\n]*?\b{_context(word.group(0))}\b[^\n]*?{_context(near)}{group}"


def _bracketed(line: str, at: int) -> bool:
    """Inside `(...)` or `[...]` on its line: an attribute of the entry (its type), not what names it."""
    return line.count("(", 0, at) > line.count(")", 0, at) or line.count("[", 0, at) > line.count("]", 0, at)


def _fits(pattern: str, text: str, start: int, value: str) -> bool:
    try:
        match = re.search(pattern, text)
    except re.error:
        return False
    return match is not None and match.start(1) == start and match.group(1) == value


# --------------------------------------------------------------------------- finding them


def _candidate(leaf: JSON, recorded: JSON) -> str | None:
    """The text to look for: a literal string (or number) argument strong enough not to be chance."""
    if isinstance(leaf, str) and (is_ref(leaf) or refs_in(leaf)):
        return None
    if isinstance(recorded, bool) or recorded is None:
        return None
    if isinstance(recorded, int | float):
        text = json.dumps(recorded)
        return text if strength(recorded) >= 0.8 else None
    if isinstance(recorded, str) and strength(recorded) >= _MIN_STRENGTH and "\n" not in recorded:
        return recorded
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


def _find(record: StepRecord, spec: StepSpec, texts: _Texts, runs: Sequence[Run], sent: _Sent) -> Iterator[Capture]:
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
        if found and isinstance(leaf, str) and isinstance(recorded, str) and not is_ref(leaf):
            yield from _pieces(record.name, keys, leaf, texts, runs, sent)


def _pieces(step: str, keys: Keys, leaf: str, texts: _Texts, runs: Sequence[Run], sent: _Sent) -> Iterator[Capture]:
    """Names and ids inside the literal parts of a text argument (`.../notes/report-q3.txt`), each read out of
    an earlier output: the part becomes `{{@extract_n}}`."""
    for fragment in _LITERAL_RE.split(leaf)[::2]:
        if "{{" in fragment or "@@" in fragment:
            continue
        for match in _PIECE_RE.finditer(fragment):
            piece = match.group(0)
            weak = _piece_strength(piece) < _GLUED_STRENGTH
            if piece == leaf or weak or not _apart(fragment, match.start(), match.end()):
                continue
            capture = _first_capture(step, keys, piece, piece, texts, runs, sent, piece=True)
            if capture is not None:
                yield capture


def _piece_strength(piece: str) -> float:
    """A run of digits weighs as the number it writes (`48213907` bytes is as telling as an id)."""
    return strength(int(piece)) if piece.isdigit() and not piece.startswith("0") else strength(piece)


def _apart(text: str, start: int, end: int) -> bool:
    """A part that stands as a word or a path segment of the argument, not cut out of a longer token."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    return before in _APART_BEFORE and (after in _APART_AFTER or (after == "." and text[end + 1 : end + 2] in " \n"))


_APART_BEFORE: Final = " \t\n/\"'([{<|,;=#"
_APART_AFTER: Final = " \t\n/\"')]}>|,;?#"
_LITERAL_RE: Final = re.compile(r"(\{\{[^}]*\}\})")  # placeholders, kept by split at odd places
_PIECE_RE: Final = re.compile(r"(?<![A-Za-z0-9_.-])[A-Za-z0-9][A-Za-z0-9_.-]*[A-Za-z0-9](?![A-Za-z0-9_-])")


def _first_capture(
    step: str,
    keys: Keys,
    recorded: JSON,
    value: str,
    texts: _Texts,
    runs: Sequence[Run],
    sent: _Sent,
    piece: bool = False,
) -> Capture | None:
    from_input = _from_inputs(step, keys, recorded, value, runs)
    if from_input is not None:
        return from_input  # read out of what the user gave (the id in the URL): that is its origin
    holders = texts.holding(value)
    echoes = [t.order for t in sent.holding(value, whole=True)] if holders else []
    for held in holders:
        if echoes and min(echoes) <= held.order:
            # The agent had sent it before this text held it: an echo of its own value. A text from before
            # it first sent it (the commit's sentence, before the branch made from that commit) is its origin.
            continue
        start = _position(held.text, value)
        if start is None:
            continue
        if not _delimited(held.text, start, value) and _strength(recorded) < _GLUED_STRENGTH:
            continue
        source = f"@{held.step}{json_path(held.keys)[1:]}"
        number = not isinstance(recorded, str)
        for pattern in patterns(held.text, start, value):
            if _fits(pattern, held.text, start, value):
                capture = Capture(step, keys, recorded, source, pattern, number, piece)
                if _reproduces(capture, runs):
                    return capture
    return None


def _from_inputs(step: str, keys: Keys, recorded: JSON, value: str, runs: Sequence[Run]) -> Capture | None:
    for name, given in runs[0].inputs.items():
        if not isinstance(given, str) or given == value:
            continue
        start = _position(given, value)
        if start is None or not _delimited(given, start, value):
            continue
        for pattern in patterns(given, start, value):
            if _fits(pattern, given, start, value):
                capture = Capture(step, keys, recorded, f"@input.{name}", pattern, not isinstance(recorded, str))
                if _reproduces(capture, runs):
                    return capture
    return None


def _reproduces(capture: Capture, runs: Sequence[Run]) -> bool:
    """The script, on each recording's own text, gives exactly what that recording sent."""
    checked = 0
    for run in runs:
        record = run.steps.get(capture.step)
        if record is None:
            continue
        ok, recorded = get_at(record.resolved_input if record.resolved_input is not None else {}, capture.keys)
        if not ok:
            return False
        if capture.piece:  # the part is read out of this recording's text and sits in its argument
            recorded = capture.recorded if run is runs[0] else _part_of(recorded, capture.pattern, run, capture)
        try:
            got = run_code(capture.code, {"text": resolve(capture.source, run.scope())}, _LIMITS)
        except (RefError, CodeError):
            return False
        if type(got) is not type(recorded) and not (isinstance(got, float) and isinstance(recorded, int)):
            return False
        if got != recorded:
            return False
        checked += 1
    return checked > 0


def _strength(value: JSON) -> float:
    return strength(value)


def _part_of(recorded: JSON, pattern: str, run: Run, capture: Capture) -> JSON:
    """What another recording's argument holds where this one holds the part: the capture's own result, if
    its argument has it at word boundaries (else the recorded argument, which then fails the check)."""
    try:
        got = run_code(capture.code, {"text": resolve(capture.source, run.scope())}, _LIMITS)
    except (RefError, CodeError):
        return recorded
    return (
        got if isinstance(recorded, str) and isinstance(got, str) and _position(recorded, got) is not None else recorded
    )


class _Sent:
    """What the agent sent, step by step, searched only when an output's text holds a candidate value."""

    def __init__(self) -> None:
        self.records: list[tuple[int, JSON]] = []

    def add(self, record: StepRecord, order: int) -> None:
        self.records.append((order, record.resolved_input))

    def holding(self, value: str, *, whole: bool = True) -> list[_Text]:
        found: list[_Text] = []
        for order, sent in self.records:
            for keys, node in walk(sent):
                text = json.dumps(node) if isinstance(node, int | float) and not isinstance(node, bool) else node
                if isinstance(text, str) and (text == value or _bounded(text, value)):
                    found.append(_Text("", order, keys, text))
        return found


# --------------------------------------------------------------------------- the template


def propose_captures(
    template: Template, kept: Sequence[StepRecord], runs: Sequence[Run]
) -> tuple[Template, tuple[Inference, ...]]:
    """The template with an extraction `code` step before each literal an earlier output's text explains."""
    specs = {step.name: step for step in template.steps}
    texts, sent = _Texts(), _Sent()
    found: list[Capture] = []
    for order, record in enumerate(kept, start=1):
        spec = specs.get(record.name)
        if spec is not None and spec.tool is not None:
            found += _find(record, spec, texts, runs, sent)
        sent.add(record, order)
        if record.name in runs[0].outputs:
            texts.add(record.name, order, runs[0].outputs[record.name])
    if not found:
        return template, ()
    return _rewritten(template, found)


def _with_placeholder(text: str, piece: str, step: str) -> str | None:
    """`text` with the first literal occurrence of `piece` (outside any `{{...}}`) as `{{@step}}`."""
    parts = _LITERAL_RE.split(text)
    for i in range(0, len(parts), 2):
        start = _position(parts[i], piece)
        if start is not None:
            parts[i] = parts[i][:start] + "{{@" + step + "}}" + parts[i][start + len(piece) :]
            return "".join(parts)
    return None


def _rewritten(template: Template, found: Sequence[Capture]) -> tuple[Template, tuple[Inference, ...]]:
    taken = {step.name for step in template.steps}
    inserted: dict[str, list[StepSpec]] = {}
    inputs: dict[str, JSON] = {step.name: step.input for step in template.steps}
    inferences = []
    made: dict[tuple[str, str], str] = {}  # one step per extraction: the same value read twice is one read
    for item in found:
        name = made.get((item.source, item.code), "")
        fresh = not name
        if fresh:
            n = 1
            while f"extract_{n}" in taken:
                n += 1
            name = made[item.source, item.code] = f"extract_{n}"
            taken.add(name)
            inserted.setdefault(item.step, []).append(StepSpec(name=name, code=item.code, input={"text": item.source}))
        if item.piece:
            _, current = get_at(inputs[item.step], item.keys)
            text = _with_placeholder(current, str(item.recorded), name) if isinstance(current, str) else None
            if text is None:
                if fresh:
                    taken.discard(name)
                    del made[item.source, item.code]
                    inserted[item.step].pop()
                continue
            inputs[item.step] = put_at(inputs[item.step], item.keys, text)
        else:
            inputs[item.step] = put_at(inputs[item.step], item.keys, f"@{name}")
        evidence = (
            f"{item.recorded!r} is no earlier value but is read out of the text {item.source} "
            f"(pattern {item.pattern!r}); the code step {name} reproduces it from the recording"
        )
        _, held = get_at(inputs[item.step], item.keys)
        ref = held if item.piece and isinstance(held, str) else f"@{name}"
        inferences.append(Inference(item.step, json_path(item.keys), ref, "high", 0.9, evidence, "transform"))
    steps: list[StepSpec] = []
    for step in template.steps:
        steps += inserted.get(step.name, [])
        steps.append(replace(step, input=inputs[step.name]))
    used = {ref.path.split(".")[0] for ref in refs_in([s.input for s in steps]) if ref.root == "input" and ref.path}
    kept_inputs = {name: spec for name, spec in template.inputs.items() if name in used}
    rewritten = replace(template, steps=tuple(steps), inputs=kept_inputs)
    return parse_template(template_to_dict(rewritten)), tuple(inferences)
