"""Verified before saved: a template replayed dry against the recordings it came from, and the summary
a person reads first.

`verify` runs the replayer's own dry replay (every recorded output preset, nothing called) once per
recording, with that recording's input values, and collects every step and field whose resolved
input is not the recorded one. `summary` says in a few lines what was saved and whether it checks out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolreel.core.model import StepRecord
from toolreel.core.secrets import REDACTED
from toolreel.core.template import Template
from toolreel.templatizer._generalize import Finding, generalize
from toolreel.templatizer._result import LikelyInput, TemplatizeResult
from toolreel.templatizer._values import json_path, snake, type_name, walk

__all__ = ["Mismatch", "Verification", "propose_fixes", "summary", "verify"]

_SHOWN_INPUTS = 6  # inputs named in the summary line; the rest are counted
_SHOWN_VALUE = 40  # characters of a recorded value quoted in the summary
_PLACEHOLDER_RE = re.compile(r"\{\{[^}]*\}\}")  # a `{{@ref}}` inside a string: not literal text


@dataclass(frozen=True, slots=True)
class Mismatch:
    execution_id: str
    step: str
    field: str
    recorded: str
    got: str

    def to_json(self) -> dict[str, str]:
        return {
            "execution_id": self.execution_id,
            "step": self.step,
            "field": self.field,
            "recorded": self.recorded,
            "got": self.got,
        }


@dataclass(frozen=True, slots=True)
class Verification:
    """`verified` when every step of every recording resolves to exactly its recorded input."""

    recordings: int
    mismatches: tuple[Mismatch, ...]
    generalization: tuple[Finding, ...] = ()
    """The second pass: fields a replay on a changed world (fresh inputs, fresh ids) gets wrong."""

    @property
    def verified(self) -> bool:
        return not self.mismatches

    @property
    def steps(self) -> list[str]:
        return list(dict.fromkeys(m.step for m in self.mismatches))

    def to_json(self) -> dict[str, Any]:
        return {
            "verified": self.verified,
            "recordings": self.recordings,
            "differences": [m.to_json() for m in self.mismatches],
            "generalizes": not self.generalization,
            "generalization": [finding.to_json() for finding in self.generalization],
        }


def verify(result: TemplatizeResult, recordings: Sequence[Sequence[StepRecord]]) -> Verification:
    """Replay `result.template` dry against each recording (the replayer's own ref resolution)."""
    from toolreel.replayer import dry_replay  # the replayer (and the store) load on first use

    runs = result.run_inputs or (result.input_values,)
    found: list[Mismatch] = []
    for index, (recording, inputs) in enumerate(zip(recordings, runs, strict=False)):
        execution_id = recording[0].execution_id if recording else "?"
        for d in dry_replay(result.template, inputs, recording, result.loop_items_in(index)):
            found.append(Mismatch(execution_id, d.step, d.field, d.recorded, d.got))
    found += _redacted_literals(result.template)
    scripts = {
        step: calls for step, calls in result.loop_items_in(0).items() if result.template.step(step).kind == "script"
    }
    checked = generalize(result.template, runs[0], recordings[0], scripts) if recordings and not found else []
    return Verification(recordings=len(recordings), mismatches=tuple(found), generalization=tuple(checked))


def propose_fixes(result: TemplatizeResult, verification: Verification) -> list[LikelyInput]:
    """The generalization check's stale literals as inputs to offer in the confirmation form, unticked: a
    value that stays the same when the world changes, which the user may make an input with one tick."""
    offered = {repr(likely.value) for likely in result.likely_inputs}
    fixes: list[LikelyInput] = []
    taken = set(result.template.inputs) | {likely.name for likely in result.likely_inputs}
    for finding in verification.generalization:
        value = finding.value
        if finding.kind != "stale literal" or not isinstance(value, str | int | float) or repr(value) in offered:
            continue
        offered.add(repr(value))
        base = snake(finding.field.rsplit(".", 1)[-1].split("[")[0] or "value")
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}_{n}"
        taken.add(name)
        why = f"the generalization check: it stays {finding.recorded} when the world changes ({finding.fix})"
        fixes.append(LikelyInput(name, value, type_name(value), ((finding.step, finding.field),), why, ticked=False))
    return fixes


def _redacted_literals(template: Template) -> list[Mismatch]:
    """A redacted placeholder kept as a literal would be sent as is: the template cannot replay, whatever
    the recording's (equally redacted) arguments say."""
    found: list[Mismatch] = []
    for spec in template.steps:
        for keys, value in walk(spec.input):
            if isinstance(value, str) and REDACTED in _PLACEHOLDER_RE.sub("", value):
                got = f"the literal {REDACTED!r}: the value was redacted when recorded; name it an input"
                found.append(Mismatch("(template)", spec.name, json_path(keys), "a value to send", got))
    return found


def summary(result: TemplatizeResult, verification: Verification, *, saved: str | None, note: str | None) -> str:
    """A few readable lines: what was saved, its inputs, the refs inferred, whether it replays the recording.

    `saved` is e.g. "Saved template 'x' (version 2)" or why nothing was saved; `note` one more line.
    """
    template = result.template
    refs = sum(1 for inference in result.applied if inference.kind not in ("input", "secret", "explicit"))
    lines = [f"{saved or 'Not saved (dry run)'}: {len(template.steps)} steps, {refs} refs inferred between them."]
    lines.append(_inputs_line(result))
    if verification.verified:
        runs = "the recording" if verification.recordings == 1 else f"all {verification.recordings} recordings"
        lines.append(f"Verified: replayed against {runs}, every step gets exactly its recorded input.")
    else:
        lines.append(
            f"NOT verified: {len(verification.mismatches)} field(s) differ from the recording, in steps "
            f"{', '.join(verification.steps)} (see 'verification.differences')."
        )
    lines += _generalization_lines(verification)
    lines += _literal_lines(result)
    lines += _loop_lines(result)
    if note:
        lines.append(note)
    return "\n".join(lines)


def _generalization_lines(verification: Verification) -> list[str]:
    if not verification.verified:
        return []
    findings = verification.generalization
    if not findings:
        return [
            "Generalizes: replayed on a changed world (fresh inputs and ids), each step's input changes as it should."
        ]
    shown = "; ".join(
        f"{f.step} {f.field}: {f.kind} (recorded {_cut(f.recorded)}, needs {_cut(f.expected)}, "
        f"gets {_cut(f.got)}): {f.fix}"
        for f in findings[:_SHOWN_INPUTS]
    )
    more = f" and {len(findings) - _SHOWN_INPUTS} more" if len(findings) > _SHOWN_INPUTS else ""
    return [f"Generalization check: {len(findings)} field(s) would be wrong on other data: {shown}{more}."]


def _literal_lines(result: TemplatizeResult) -> list[str]:
    """What looked variable but was not made an input, and why: the thin proposals and the constants."""
    lines: list[str] = []
    thin = [
        likely for likely in result.likely_inputs if not likely.ticked and likely.name not in result.template.inputs
    ]
    if thin:
        shown = ", ".join(f"{likely.name} ({_cut(repr(likely.value))})" for likely in thin[:_SHOWN_INPUTS])
        lines.append(f"Proposed, not applied (thin evidence): {shown}; name them in inputs to make them inputs.")
    stayed = result.stayed_literal[:_SHOWN_INPUTS]
    if stayed:
        shown = "; ".join(f"{_cut(repr(s.value))} at {s.step} {s.input_path}: {s.why}" for s in stayed)
        more = (
            f" and {len(result.stayed_literal) - len(stayed)} more" if len(result.stayed_literal) > len(stayed) else ""
        )
        lines.append(f"Kept literal although it looked variable: {shown}{more}.")
    return lines


def _cut(text: str) -> str:
    return text if len(text) <= _SHOWN_VALUE else text[: _SHOWN_VALUE - 3] + "..."


def _loop_lines(result: TemplatizeResult) -> list[str]:
    """What became a loop, and what repeated calls stayed unrolled and why."""
    lines = [
        f"Loop: {loop.step} calls {loop.tool} for each element of {loop.over} ({loop.why}: {', '.join(loop.members)})."
        for loop in result.loops
    ]
    lines += [f"Kept unrolled: {', '.join(u.steps)}: {u.why}." for u in result.unrolled]
    lines += [f"Picked by name, not position: {pick.why}." for pick in result.picks]
    lines += [f"Only when there is something to do: {why}." for _, why in result.conditions]
    return lines


def _inputs_line(result: TemplatizeResult) -> str:
    inputs = result.template.inputs
    if not inputs:
        return "No inputs: nothing in the recording varies, the template replays the same values."
    shown = []
    for name in list(inputs)[:_SHOWN_INPUTS]:
        if inputs[name].secret:
            shown.append(f"{name} (secret)")
            continue
        value = repr(result.input_values.get(name))
        cut = value if len(value) <= _SHOWN_VALUE else value[: _SHOWN_VALUE - 3] + "..."
        shown.append(f"{name} (recorded {cut})")
    more = f" and {len(inputs) - _SHOWN_INPUTS} more" if len(inputs) > _SHOWN_INPUTS else ""
    return f"Inputs: {', '.join(shown)}{more}."
