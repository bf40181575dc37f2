"""What the templatizer returns: the template and every decision it made, with evidence."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from toolreel.core.model import JSON, StepRecord
from toolreel.core.template import Template
from toolreel.core.template_io import template_to_dict

Confidence = Literal["high", "medium", "low"]
InferenceKind = Literal[
    "exact", "coerced", "subtree", "substring", "input", "secret", "explicit", "confirmed", "transform"
]

HIGH = 0.8  # at or above: applied
MEDIUM = 0.5  # at or above: reported as a candidate; below: dropped silently


def confidence_of(score: float) -> Confidence:
    return "high" if score >= HIGH else "medium" if score >= MEDIUM else "low"


@dataclass(frozen=True, slots=True)
class Inference:
    """One value of one step input turned into (or proposed as) a ref.

    `ref` is what the template holds at `input_path`: a ref (`@create_user_1.id`,
    `@input.email`) or a string with `{{@ref}}` placeholders.
    """

    step: str
    input_path: str
    ref: str
    confidence: Confidence
    score: float
    evidence: str
    kind: InferenceKind = "exact"

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "input_path": self.input_path,
            "ref": self.ref,
            "kind": self.kind,
            "confidence": self.confidence,
            "score": round(self.score, 3),
            "evidence": self.evidence,
        }


@dataclass(frozen=True, slots=True)
class LikelyInput:
    """A literal that no output explains and that looks like something a user chooses per run.

    It stays a constant unless named: `save_template(..., inputs={name: value})`.
    """

    name: str
    value: JSON
    type: str | None
    used_at: tuple[tuple[str, str], ...]  # (step, input_path), the value itself or inside a string
    reason: str
    ticked: bool = True  # False: thin evidence, proposed unticked and never applied without the user

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "type": self.type,
            "used_at": [{"step": step, "input_path": path} for step, path in self.used_at],
            "reason": self.reason,
            "ticked": self.ticked,
        }


@dataclass(frozen=True, slots=True)
class StayedLiteral:
    """A value that looked variable but stays literal in the template, and why (a default, an enum...)."""

    step: str
    input_path: str
    value: JSON
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "input_path": self.input_path, "value": self.value, "why": self.why}


@dataclass(frozen=True, slots=True)
class Loop:
    step: str
    tool: str
    over: str
    members: tuple[str, ...]
    why: str
    folded_inputs: tuple[str, ...] = ()  # the per-call inputs the list input replaces
    elements: tuple[tuple[tuple[str, str], ...], ...] = ()
    """Per recorded call, what its `@item` refs stood for: (`@item` or `@item.<key>`, `@list_1.items[2]`)."""
    run_members: tuple[tuple[str, ...], ...] = ()  # the calls it stands for in each recording ([0]: `members`)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"step": self.step, "tool": self.tool, "for_each": self.over}
        out.update(replaces=list(self.members), why=self.why)
        return out | ({"folded_inputs": list(self.folded_inputs)} if self.folded_inputs else {})


@dataclass(frozen=True, slots=True)
class Unrolled:
    steps: tuple[str, ...]
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"steps": list(self.steps), "why": self.why}


@dataclass(frozen=True, slots=True)
class Pick:
    step: str  # the code step added
    replaces: str  # the positional ref head, `@list_1.items[4]`
    key: str
    value: str  # a literal value or `@input.x`
    state: bool = False  # picked by a state the element alone has (a condition of the task), not by a name
    walked: bool = False  # one of several elements of one list handed to the same tool: walked, not named
    best: str = ""  # "max" or "min": the element with the largest (smallest) `key`, which the agent quoted
    also: tuple[tuple[str, JSON], ...] = ()  # (key, value) the element has too: a name and an artist, a year
    label: str = ""  # what a name picked from a list of names is (`uid`), for its input: it has no key to say it

    @property
    def why(self) -> str:
        if self.best:
            most = "largest" if self.best == "max" else "smallest"
            return f"{self.replaces} is now the element with the {most} {self.key} ({self.step})"
        if not self.key:
            return f"{self.replaces} is now the name {self.value} found in that list ({self.step})"
        more = "".join(f" and whose {key} is {value}" for key, value in self.also)
        return f"{self.replaces} is now the element whose {self.key} is {self.value}{more} ({self.step})"


@dataclass(frozen=True, slots=True)
class TemplatizeResult:
    template: Template
    applied: tuple[Inference, ...]
    candidates: tuple[Inference, ...]
    likely_inputs: tuple[LikelyInput, ...]
    dropped: tuple[Inference, ...]  # refs that did not reproduce the recorded argument: left literal
    left_out: tuple[tuple[str, str], ...] = ()  # (step, why) for recorded steps not in the template
    input_values: Mapping[str, JSON] = field(default_factory=dict)
    """Each template input's value in the (first) recording: what reproduces it. Secrets: the placeholder."""
    run_inputs: tuple[Mapping[str, JSON], ...] = ()
    """The same for every recording given, in order (an input a recording lacks is absent)."""
    stayed_literal: tuple[StayedLiteral, ...] = ()

    loops: tuple[Loop, ...] = ()  # repeated calls folded into one for_each step
    unrolled: tuple[Unrolled, ...] = ()  # repeated calls kept as they were, and why
    picks: tuple[Pick, ...] = ()  # list elements taken by position, now picked by their name
    conditions: tuple[tuple[str, str], ...] = ()  # (step, why) for the steps given a `when`

    @property
    def ticked_inputs(self) -> dict[str, JSON]:
        """The likely inputs a plain save applies (the unticked ones wait for the user)."""
        return {likely.name: likely.value for likely in self.likely_inputs if likely.ticked}

    @property
    def loop_items(self) -> dict[str, tuple[str, ...]]:
        """Each loop step's recorded calls, in element order: what a dry replay compares its items with."""
        return self.loop_items_in(0)

    def loop_items_in(self, recording: int) -> dict[str, tuple[str, ...]]:
        """The same in recording `recording` (another recording may have another number of elements)."""
        return {loop.step: (loop.run_members or (loop.members,))[recording] for loop in self.loops}

    def to_json(self) -> dict[str, Any]:
        """The answer of `toolreel__save_template`."""
        return {
            "template": template_to_dict(self.template),
            "inferred": [inference.to_json() for inference in self.applied],
            "candidates": [inference.to_json() for inference in self.candidates],
            "likely_inputs": [likely.to_json() for likely in self.likely_inputs],
            "dropped": [inference.to_json() for inference in self.dropped],
            "left_out": [{"step": step, "why": why} for step, why in self.left_out],
            "stayed_literal": [item.to_json() for item in self.stayed_literal],
            "loops": [loop.to_json() for loop in self.loops],
            "unrolled": [unrolled.to_json() for unrolled in self.unrolled]
            + [{"steps": [pick.step], "why": pick.why} for pick in self.picks],
            "conditions": [{"step": step, "why": why} for step, why in self.conditions],
        }


@dataclass(frozen=True, slots=True)
class Unit:
    """One step of the template being built: a recorded call, or a loop standing for several."""

    name: str
    tool: str  # listed name, server__tool
    record: StepRecord  # the recorded call (a loop's first member)
    input: JSON
    for_each: str | None = None
    members: tuple[str, ...] = ()  # the recorded calls a loop stands for, in element order
    code: str | None = None  # a pure step the folding adds (the lists a loop walks together, zipped)
