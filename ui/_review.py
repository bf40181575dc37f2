"""Save as template, reviewed by a person: the templatizer's proposal, then their decisions.

The templatizer (its public `templatize`) proposes refs and inputs; the page sends back, per
input path, "keep the literal" or "use this ref", and the inputs to make, renamed. A rejected
ref becomes the value recorded at that path again, and its step keeps waiting for the step the
ref named (`depends_on`), so the replay keeps the recorded order. The result is verified against
the recording before it can be saved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolreel.core.errors import TemplateError
from toolreel.core.refs import ref_roots
from toolreel.ui._paths import get_path, set_path
from toolreel.ui._verify import verify

if TYPE_CHECKING:
    from toolreel.core.model import StepRecord

__all__ = ["Decision", "ReviewRequest", "review"]


@dataclass(frozen=True, slots=True)
class Decision:
    """At `input_path` of `step`: `ref` (the inferred or candidate ref), or None for the literal."""

    step: str
    input_path: str
    ref: str | None


@dataclass(frozen=True, slots=True)
class ReviewRequest:
    name: str
    description: str | None = None
    inputs: Mapping[str, Any] | None = None  # name -> the recorded value it replaces; None: the likely ones
    decisions: tuple[Decision, ...] = field(default_factory=tuple)


def review(recording: Sequence[StepRecord], request: ReviewRequest) -> dict[str, Any]:
    """The proposal with the decisions applied: template, refs, candidates, inputs, verification."""
    from toolreel.core.template_io import dump_template_yaml, parse_template, template_to_dict
    from toolreel.templatizer import templatize

    inputs = request.inputs
    likely = None
    if inputs is None:  # as the management tool does: the likely inputs, by their proposed names
        first = templatize([recording], name=request.name, description=request.description)
        likely = [entry.to_json() for entry in first.likely_inputs]
        inputs = {entry.name: entry.value for entry in first.likely_inputs}
    result = templatize([recording], name=request.name, description=request.description, inputs=inputs)
    definition = template_to_dict(result.template)
    decided = {(d.step, d.input_path): d for d in request.decisions}
    for decision in decided.values():
        definition = _apply(definition, recording, decision)
    template = parse_template(_drop_unused_inputs(definition), source=f"template {request.name!r}")
    proposal = result.to_json()
    for group in ("inferred", "candidates"):
        for entry in proposal[group]:
            chosen = decided.get((entry["step"], entry["input_path"]))
            applied = group == "inferred" if chosen is None else chosen.ref == entry["ref"]
            entry["accepted"] = applied
    if likely is not None:
        proposal["likely_inputs"] = likely  # the first look: the page offers each one, named as proposed
    proposal.update(
        template=template_to_dict(template),
        yaml=dump_template_yaml(template),
        inputs_used=dict(result.input_values),
        verification=verify(template, recording, result.input_values).to_json(),
    )
    return proposal


def _apply(definition: dict[str, Any], recording: Sequence[StepRecord], decision: Decision) -> dict[str, Any]:
    steps = definition.get("steps", [])
    index = next((i for i, s in enumerate(steps) if s.get("name") == decision.step), None)
    if index is None:
        raise TemplateError(f"the template has no step {decision.step!r}", step=decision.step)
    step = dict(steps[index])
    current = get_path(step.get("input"), decision.input_path)
    if decision.ref is not None:
        step["input"] = set_path(step.get("input"), decision.input_path, decision.ref)
    else:
        step["input"] = set_path(step.get("input"), decision.input_path, _literal(recording, decision))
        waits = [r for r in sorted(ref_roots(current)) if r not in ("input", "item", "index")]
        step["depends_on"] = list(dict.fromkeys([*step.get("depends_on", []), *waits]))
        if not step["depends_on"]:
            del step["depends_on"]
    return {**definition, "steps": [*steps[:index], step, *steps[index + 1 :]]}


def _literal(recording: Sequence[StepRecord], decision: Decision) -> Any:
    from toolreel.core.refs import escape_literal

    row = next((r for r in recording if r.name == decision.step), None)
    if row is None:
        raise TemplateError(f"the recording has no step {decision.step!r}", step=decision.step)
    if any(decision.input_path == p or decision.input_path.startswith(p + ".") for p in row.redacted):
        raise TemplateError(
            f"{decision.step} {decision.input_path} is a secret: it stays an input, never a literal in a template",
            step=decision.step,
            field=decision.input_path,
        )
    return _escaped(get_path(row.resolved_input, decision.input_path), escape_literal)


def _escaped(value: Any, escape: Any) -> Any:
    """A recorded value written so that it resolves to itself (`@x` literals become `@@x`)."""
    if isinstance(value, str):
        return escape(value)
    if isinstance(value, list):
        return [_escaped(v, escape) for v in value]
    if isinstance(value, dict):
        return {k: _escaped(v, escape) for k, v in value.items()}
    return value


def _drop_unused_inputs(definition: dict[str, Any]) -> dict[str, Any]:
    """An input no step reads any more (its ref was turned back into a literal) is not asked for."""
    inputs = definition.get("inputs")
    if not inputs:
        return definition
    body = {k: v for k, v in definition.items() if k != "inputs"}
    used = {ref.path.split(".")[0].split("[")[0] for ref in _refs(body) if ref.root == "input" and ref.path}
    return {**definition, "inputs": {k: v for k, v in inputs.items() if k in used}}


def _refs(value: Any) -> list[Any]:
    from toolreel.core.refs import refs_in

    return refs_in(value)
