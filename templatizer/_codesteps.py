"""Inserting the `code` steps that compute arguments: one place for how a computed value enters a template.

Extractions out of text (`_capture`), dates rewritten in another format (`_dates`) and values computed from
earlier outputs (`_transforms`) each find `CodeRead`s; `with_code_steps` inserts one `code` step per distinct
computation before the first step that needs it, points each argument at it (the whole argument, or the
recorded piece of its text as `{{@step}}`), drops the inputs no step reads any more, and re-validates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from toolreel.core.model import JSON
from toolreel.core.refs import refs_in
from toolreel.core.template import StepSpec, Template
from toolreel.core.template_io import parse_template, template_to_dict
from toolreel.templatizer._result import Inference
from toolreel.templatizer._values import Keys, get_at, json_path, put_at

__all__ = ["CodeRead", "Placer", "drop_unread", "values_read", "with_code_steps"]

Placer = Callable[[str, str, str], str | None]  # (text, recorded piece, step name) -> text with `{{@step}}`


@dataclass(frozen=True, slots=True)
class CodeRead:
    """The argument at `keys` of `step` is computed by `code` from `input` (refs to earlier outputs)."""

    step: str
    keys: Keys
    recorded: JSON
    code: str
    input: Mapping[str, JSON]
    base: str  # the code step's name is `<base>_<n>`
    why: Callable[[str], str]  # the evidence, given the code step's name
    piece: bool = False  # the value is a part of the argument's text, interpolated there


def with_code_steps(
    template: Template, reads: Sequence[CodeRead], place: Placer | None = None
) -> tuple[Template, tuple[Inference, ...]]:
    """`template` with a code step for each distinct computation in `reads`; `place` puts a piece in its text
    (a read whose piece it cannot place is left out)."""
    taken = {step.name for step in template.steps}
    inserted: dict[str, list[StepSpec]] = {}
    inputs: dict[str, JSON] = {step.name: step.input for step in template.steps}
    made: dict[tuple[str, str], str] = {}  # one step per computation: the same value read twice is one read
    inferences: list[Inference] = []
    for item in reads:
        identity = (repr(sorted(item.input.items())), item.code)
        name = made.get(identity, "")
        fresh = not name
        if fresh:
            name = _free_name(item.base, taken)
            taken.add(name)
            made[identity] = name
            inserted.setdefault(item.step, []).append(StepSpec(name=name, code=item.code, input=dict(item.input)))
        if item.piece:
            _, current = get_at(inputs[item.step], item.keys)
            text = place(current, str(item.recorded), name) if place is not None and isinstance(current, str) else None
            if text is None:
                if fresh:
                    taken.discard(name)
                    del made[identity]
                    inserted[item.step].pop()
                continue
            inputs[item.step] = put_at(inputs[item.step], item.keys, text)
        else:
            inputs[item.step] = put_at(inputs[item.step], item.keys, f"@{name}")
        _, held = get_at(inputs[item.step], item.keys)
        ref = held if item.piece and isinstance(held, str) else f"@{name}"
        inferences.append(Inference(item.step, json_path(item.keys), ref, "high", 0.9, item.why(name), "transform"))
    steps: list[StepSpec] = []
    for step in template.steps:
        steps += inserted.get(step.name, [])
        steps.append(replace(step, input=inputs[step.name]))
    read = [[s.input, s.for_each, [leaf.ref for leaf in s.when.leaves()] if s.when else None] for s in steps]
    used = {ref.path.split(".")[0] for ref in refs_in(read) if ref.root == "input" and ref.path}
    kept_inputs = {name: spec for name, spec in template.inputs.items() if name in used}
    rewritten = replace(template, steps=tuple(steps), inputs=kept_inputs)
    return parse_template(template_to_dict(rewritten)), tuple(inferences)


def _free_name(base: str, taken: set[str]) -> str:
    n = 1
    while f"{base}_{n}" in taken:
        n += 1
    return f"{base}_{n}"


def drop_unread(template: Template, added: set[str]) -> tuple[Template, set[str]]:
    """The template without the steps of `added` no other step reads (a later rule replaced the refs they
    stood for; a code step nobody reads would still run, and could fail, at replay time), and which went."""
    if not added:
        return template, set()
    read: set[str] = set()
    for step in template.steps:
        if step.name not in added:
            read |= {ref.root for ref in refs_in(values_read(step))} | set(step.depends_on)
    # a kept added step may read another added one (a pick out of a view's rows)
    grew = True
    while grew:
        more = {ref.root for s in template.steps if s.name in added & read for ref in refs_in(values_read(s))}
        grew = not more <= read
        read |= more
    unread = added - read
    if not unread:
        return template, set()
    steps = tuple(step for step in template.steps if step.name not in unread)
    return parse_template(template_to_dict(replace(template, steps=steps))), unread


def values_read(step: StepSpec) -> JSON:
    """Every value of a step that may hold refs it reads: its input, loop, key, return, approval and condition."""
    leaves = [leaf.ref for leaf in step.when.leaves()] if step.when is not None else []
    return [step.input, step.for_each, step.idempotency_key, step.return_, step.approve, *leaves]
