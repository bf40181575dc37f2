"""The generalization check: the template replayed dry on a changed world, not only on its own recording.

Replaying a template against the data it was made from cannot tell a real ref from a coincidence, nor a
value that varies from a constant: both give back the recorded arguments. So the recording is perturbed:
every input gets a fresh value, and every id the servers produced (a strong value: an id, a hash, a long
number, also inside text) gets a fresh one, pushed through every output and argument that carried it.
Weaker output values (an amount, a status) change in the outputs too, but an argument is expected to
follow one only when a strong value of the same output item sits in the same call. The template must
then send exactly the perturbed arguments: a literal that stays is a stale literal, an argument that
changes where nothing says it should is a coincidental ref.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Final, Literal

from toolreel.core.model import JSON, StepRecord
from toolreel.core.refs import refs_in
from toolreel.core.secrets import REDACTED
from toolreel.core.template import Template
from toolreel.templatizer._values import Keys, get_at, is_trivial, json_path, strength, walk

__all__ = ["Finding", "FindingKind", "generalize", "perturb_value"]

FindingKind = Literal["stale literal", "coincidental ref", "missed ref", "fails", "wrong value"]

_STRONG: Final = 0.75  # at or above: an id the servers minted, fresh in another world
_TEXT_ID_RE: Final = re.compile(r"(?<![A-Za-z0-9])(?=[A-Za-z0-9_-]*[0-9])(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{6,}")
_HEX: Final = frozenset("0123456789abcdef")
_WORD: Final = 0.55  # below: a common word (`open`, `person`), never expected to travel with its item
_FAILED_RE: Final = re.compile(r"does not resolve|the code step failed")  # the dry replay's words
_STALE_MIN: Final = 5  # an old text this long left in a changed field is no accident
_DATE_RE: Final = re.compile(r"(\d{4}-\d{2}-\d{2})(T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(Z|[+-]\d{2}:\d{2})?")
_DATE_PIECE_RE: Final = re.compile(r"(?<![0-9])\d{4}-\d{2}-\d{2}(?![0-9])")
_NUMBER_RE: Final = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
_FIELD_RE: Final = re.compile(r"\.([^.\[]+)|\[(\d+)\]")


@dataclass(frozen=True, slots=True)
class Finding:
    """One step input field that would be wrong on other data, and what to do about it."""

    step: str
    field: str
    kind: FindingKind
    recorded: str  # the value in the recording
    expected: str  # what the changed world needs
    got: str  # what the template sends there
    value: JSON = None  # the recorded value itself

    @property
    def fix(self) -> str:
        if self.kind == "stale literal":
            return "make it an input (or a ref to the step that gives it): it stays the same in every run"
        if self.kind == "coincidental ref":
            return "keep it literal: it follows an earlier output only because the values happened to be equal"
        if self.kind == "fails":
            return "the step cannot run on other data: check the refs and computed values it needs"
        if self.kind == "missed ref":
            return "make it a ref to the earlier output that gives it, not an input: a server produced it"
        return "check the ref: it takes another producer's value"

    def to_json(self) -> dict[str, str]:
        return {
            "step": self.step,
            "field": self.field,
            "kind": self.kind,
            "recorded": self.recorded,
            "expected": self.expected,
            "got": self.got,
            "fix": self.fix,
        }


# --------------------------------------------------------------------------- fresh values


def perturb_value(value: JSON) -> JSON:
    """A different value of the same shape: digits and letters rotated (hex stays hex), numbers moved."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value + 7919 if value >= 0 else value - 7919
    if isinstance(value, float):
        return round(value + 1.25, 6)
    if isinstance(value, str):
        return _moved_date(value) or _rotated(value)
    return value


def _moved_date(text: str) -> str | None:
    """An ISO date or date-time three days and one hour later, in the same format (a valid date still)."""
    match = _DATE_RE.fullmatch(text)
    if match is None:
        return None
    try:
        day = date.fromisoformat(match.group(1)) + timedelta(days=3)
    except ValueError:
        return None
    hour = match.group(2)
    later = f"{(int(hour[1:3]) + 1) % 24:02d}" if hour else ""
    return day.isoformat() + (f"T{later}{hour[3:]}" if hour else "") + (match.group(3) or "")


def _rotated(text: str) -> str:
    hexish = all(c in _HEX for c in text.lower()) and text.lower() == text
    out = []
    for c in text:
        if c.isdigit():
            out.append(str((int(c) + 3) % 10))
        elif hexish and c in "abcdef":
            out.append("abcdef"[("abcdef".index(c) + 3) % 6])
        elif "a" <= c <= "z":
            out.append(chr((ord(c) - 97 + 3) % 26 + 97))
        elif "A" <= c <= "Z":
            out.append(chr((ord(c) - 65 + 3) % 26 + 65))
        else:
            out.append(c)
    return "".join(out)


class _Swap:
    """Old value -> fresh value, for whole values and (strings and numbers' texts) inside strings."""

    def __init__(self) -> None:
        self.whole: dict[str, JSON] = {}  # canonical JSON of the old value -> new
        self.texts: dict[str, str] = {}
        self._pattern: re.Pattern[str] | None = None

    def add(self, old: JSON, new: JSON, *, inside_text: bool = True) -> None:
        self.whole[_canon(old)] = new
        if inside_text:
            old_text, new_text = _text(old), _text(new)
            if old_text is not None and new_text is not None and len(old_text) >= 3:
                self.texts[old_text] = new_text
                self._pattern = None

    def __contains__(self, value: JSON) -> bool:
        return _canon(value) in self.whole

    def apply(self, value: JSON, whole_only: Collection[Keys] | None = None) -> JSON:
        return self._apply(value, (), whole_only)

    def _apply(self, value: JSON, keys: Keys, whole_only: Collection[Keys] | None) -> JSON:
        if isinstance(value, dict):
            return {k: self._apply(v, (*keys, k), whole_only) for k, v in value.items()}
        if isinstance(value, list):
            return [self._apply(v, (*keys, i), whole_only) for i, v in enumerate(value)]
        if value == REDACTED:
            return value
        key = _canon(value)
        if key in self.whole:
            return self.whole[key] if whole_only is None or keys in whole_only else value
        if isinstance(value, str) and self.texts:
            return self._in_text(value)
        return value

    def _in_text(self, text: str) -> str:
        if self._pattern is None:
            ordered = sorted(self.texts, key=len, reverse=True)
            words = "|".join(re.escape(t) for t in ordered if not _NUMBER_RE.fullmatch(t)) or "(?!)"
            numbers = "|".join(re.escape(t) for t in ordered if _NUMBER_RE.fullmatch(t)) or "(?!)"
            # A number may carry its unit ("3.25h"); a word may not be cut out of a longer word.
            self._pattern = re.compile(
                f"(?<![A-Za-z0-9.])(?:{numbers})(?![0-9]|\\.[0-9])|(?<![A-Za-z0-9])(?:{words})(?![A-Za-z0-9])"
            )
        return self._pattern.sub(lambda m: self.texts[m.group(0)], text)


def _canon(value: JSON) -> str:
    return json.dumps([type(value).__name__, value], sort_keys=True)


def _text(value: JSON) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return json.dumps(value)
    return None


# --------------------------------------------------------------------------- the changed world


@dataclass(frozen=True, slots=True)
class _World:
    inputs: dict[str, JSON]
    recording: list[StepRecord]
    expected: dict[str, JSON]  # step -> the arguments a correct replay sends there
    stale_texts: tuple[str, ...]  # the old ids and input texts (as the dry replay quotes values: repr)


def _changed_world(template: Template, inputs: Mapping[str, JSON], recording: Sequence[StepRecord]) -> _World:
    strong, weak = _Swap(), _Swap()
    sent: set[str] = set()
    for record in recording:
        for _, node in walk(record.resolved_input):
            sent.add(_canon(node))
            if isinstance(node, str):  # ids the agent wrote inside its own text are its own too
                sent.update(_canon(m.group(0)) for m in _TEXT_ID_RE.finditer(node) if m.group(0) not in strong)
        _note_outputs(record.output, strong, weak, sent)
    fresh: dict[str, JSON] = {}
    for name, value in inputs.items():
        spec = template.inputs.get(name)
        if spec is not None and spec.secret:
            fresh[name] = value
        elif value in strong and strong.apply(value) == value:
            # a name a server listed, kept as words in the changed outputs: the user names another element there,
            # and the server lists that element under the new name (a world where the name is gone is no world)
            fresh[name] = perturb_value(value)
            strong.add(value, fresh[name], inside_text=False)
        elif value in strong:  # a server gave it before it was sent: in another world the server gives another
            fresh[name] = perturb_value(perturb_value(value))
        else:
            fresh[name] = perturb_value(value)
            if not is_trivial(value):
                strong.add(value, fresh[name])
    changed: list[StepRecord] = []
    expected: dict[str, JSON] = {}
    weak_items = _WeakItems(recording)
    for record in recording:
        args = record.resolved_input if record.resolved_input is not None else {}
        flows = weak_items.flowing(record.name, args, strong)
        expected[record.name] = weak.apply(strong.apply(args), whole_only=flows)
        output = weak.apply(strong.apply(record.output))
        changed.append(record.replace(output=output, resolved_input=expected[record.name]))
    stale = tuple(text.replace("'", "\\'") for text in strong.texts if len(text) >= _STALE_MIN)
    return _World(fresh, changed, expected, stale)


def _note_outputs(output: JSON, strong: _Swap, weak: _Swap, sent: set[str]) -> None:
    """Every value an output produced (not an echo of what the agent sent) gets a fresh one."""
    for _, node in walk(output):
        if isinstance(node, dict | list) or is_trivial(node) or node == REDACTED:
            continue
        if _canon(node) in sent or node in strong or node in weak:
            continue
        if isinstance(node, str):
            # an id written inside text ("with hash 5c22ab1…"), a date inside a date-time
            for match in [*_TEXT_ID_RE.finditer(node), *_DATE_PIECE_RE.finditer(node)]:
                piece = match.group(0)
                if piece != node and _canon(piece) not in sent and piece not in strong:
                    strong.add(piece, perturb_value(piece))
        if isinstance(node, str) and any(c.isspace() for c in node.strip()):
            strong.add(node, strong.apply(node), inside_text=False)  # prose: the same words, its ids fresh
        elif strength(node) >= _STRONG:
            strong.add(node, perturb_value(node))
        else:  # a weak value changes only where it is the whole value: inside a sentence it is a word
            weak.add(node, perturb_value(node), inside_text=not isinstance(node, str))


class _WeakItems:
    """Where a weak output value (an amount, a status) sits: it travels with the strong values of its item."""

    def __init__(self, recording: Sequence[StepRecord]) -> None:
        self.items: dict[str, list[tuple[str, Keys]]] = {}  # canonical value -> (step, item path)
        for record in recording:
            for keys, node in walk(record.output):
                if not isinstance(node, dict | list):
                    self.items.setdefault(_canon(node), []).append((record.name, _item_of(keys)))

    def flowing(self, step: str, args: JSON, strong: _Swap) -> set[Keys]:
        """Argument paths holding a weak value whose output item also gave a strong argument of this call."""
        homes = {home for _, node in walk(args) if node in strong for home in self.items.get(_canon(node), [])}
        weak_homes: dict[tuple[str, Keys], set[str]] = {}
        for _, node in walk(args):
            if not isinstance(node, dict | list) and not is_trivial(node) and node not in strong:
                for home in self.items.get(_canon(node), []):
                    weak_homes.setdefault(home, set()).add(_canon(node))
        homes |= {home for home, values in weak_homes.items() if len(values) >= 2}  # two travel together
        return {
            keys
            for keys, node in walk(args)
            if _may_travel(node) and any(home in homes for home in self.items.get(_canon(node), []))
        }


def _may_travel(node: JSON) -> bool:
    """A number or a name travels with its item; a word such as `open` or `person` is vocabulary, shared by
    outputs and calls by design: it is expected to stay."""
    if isinstance(node, dict | list):
        return False
    return not isinstance(node, str) or strength(node) >= _WORD


def _item_of(keys: Keys) -> Keys:
    """The path of the innermost list element holding `keys` (the whole output when none)."""
    last = max((i for i, key in enumerate(keys) if isinstance(key, int)), default=-1)
    return keys[: last + 1]


# --------------------------------------------------------------------------- the check


def generalize(
    template: Template,
    inputs: Mapping[str, JSON],
    recording: Sequence[StepRecord],
    scripts: Mapping[str, Sequence[str]] | None = None,
) -> list[Finding]:
    """The fields a replay on a changed world gets wrong (none: the template generalizes).

    Reported: a value that stays where the changed world needs a fresh one (wholly, or an id left inside a
    text), and a whole-value ref that follows an output the world says it should not. A field built by a
    code step or by interpolation into prose is judged only for stale values: which words of a sentence
    travel with an output is beyond what this check can know. `scripts`: the recorded calls each script step the
    templatizer wrote stands for (a paged read's pages, a group's calls), which answer it in the changed world."""
    from toolreel.replayer import dry_replay  # the replayer loads on first use

    world = _changed_world(template, inputs, recording)
    original = {record.name: record.resolved_input for record in recording}
    written = {step.name: step.input for step in template.steps}
    computed = _computed_fields(template)
    findings: list[Finding] = []
    for difference in dry_replay(template, world.inputs, world.recording, scripts):
        keys = _keys(difference.field)
        found, before = get_at(original.get(difference.step), keys)
        _, held = get_at(written.get(difference.step), keys)
        recorded = repr(before) if found else "?"
        kind = _kind(recorded, difference.recorded, difference.got, world.stale_texts)
        if kind == "wrong value" and isinstance(held, str) and held.startswith("@input."):
            kind = "missed ref"
        whole_ref = (
            isinstance(held, str) and held.startswith("@") and (difference.step, difference.field) not in computed
        )
        if difference.field == "$" and _FAILED_RE.match(difference.got):
            kind, whole_ref = "fails", True
        if kind == "stale literal" or whole_ref:
            findings.append(
                Finding(difference.step, difference.field, kind, recorded, difference.recorded, difference.got, before)
            )
    return findings


def _kind(recorded: str, expected: str, got: str, stale: Sequence[str]) -> FindingKind:
    if got == recorded and expected != recorded:
        return "stale literal"
    if expected == recorded and got != recorded:
        return "coincidental ref"
    if any(old in got and old not in expected for old in stale):
        return "stale literal"  # an id left inside a text the world changed
    return "wrong value"


def _computed_fields(template: Template) -> set[tuple[str, str]]:
    """Fields fed by a code step: a function of earlier outputs that this check cannot recompute by itself."""
    code = {step.name for step in template.steps if step.kind == "code"}
    out: set[tuple[str, str]] = set()
    for step in template.steps:
        for keys, node in walk(step.input):
            if isinstance(node, str) and any(ref.root in code for ref in refs_in(node)):
                out.add((step.name, json_path(keys)))
    return out


def _keys(field: str) -> Keys:
    return tuple(int(index) if index else key for key, index in _FIELD_RE.findall(field))
