"""Per-item groups: loops over the same elements whose recorded calls took turns, one script step walking them.

When the agent handled each element with two calls or more in a row (post a note, then resolve; shut down, then
snapshot), and the next element only after, the order is part of the task: a note goes before its resolution.
Two `for_each` steps would make all of the first calls, then all of the second. The template language's form
for calls in order per element is a `script` step (SPEC §13): a loop over the elements making each element's calls
in the recorded order. Its code is written from the loops' inputs: `@item` refs become reads of the element,
literals stay literal, and every other value (an input, an earlier step's output, a text built on them) is handed
in through the step's `input`, resolved by the replay as any step input is. The verifying dry replay answers
the script's calls from the recorded ones, in their recorded order (`replayer._dry`).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from typing import Final

from toolreel.core._ref_grammar import compile_path, literal_head, split_template
from toolreel.core.model import JSON
from toolreel.core.refs import parse_ref, refs_in
from toolreel.core.template import StepSpec, Template
from toolreel.templatizer._result import Loop
from toolreel.templatizer._values import free_name

__all__ = ["group_items"]

_ITEMS: Final = "items"
_EACH_RE: Final = re.compile(r"_each(?:_\d+)?$")
_AT: Final = """function at(value, keys, written) {
  for (const key of keys) {
    if (value === null || typeof value !== "object" || !(key in value)) {
      throw new Error("the element has no " + written + ": " + JSON.stringify(value).slice(0, 200));
    }
    value = value[key];
  }
  return value;
}
const text = (v) => (typeof v === "string" ? v : JSON.stringify(v));
"""


class _Unfit(Exception):
    """A value the script cannot write (a multi-match path, a negative index): the loops stay as they are."""


def group_items(
    template: Template, loops: Sequence[Loop], seqs: Mapping[str, int]
) -> tuple[Template, tuple[Loop, ...]]:
    """The template with each run of loops that took turns over the same elements made one script step, and the
    loops as the dry replay compares them (a group's calls in their recorded order). `seqs`: each recorded
    call's place in the recording."""
    by_over: dict[str, list[Loop]] = {}
    for loop in loops:
        spec = _spec(template, loop.step)
        if spec is not None and spec.kind == "tool" and spec.for_each == loop.over:
            by_over.setdefault(loop.over, []).append(loop)
    out = list(loops)
    for members in by_over.values():
        members.sort(key=lambda loop: seqs.get(loop.members[0], 0))
        if len(members) < 2 or not _took_turns(members, seqs) or _read_elsewhere(template, members):
            continue
        try:
            template, grouped = _grouped(template, members)
        except _Unfit:
            continue
        out = [loop for loop in out if loop not in members] + [grouped]
    return template, tuple(out)


def _spec(template: Template, name: str) -> StepSpec | None:
    return next((step for step in template.steps if step.name == name), None)


def _took_turns(members: Sequence[Loop], seqs: Mapping[str, int]) -> bool:
    """Each element's calls, one per loop in the loops' order, all before the next element's (two elements at
    least: one cannot tell a group from two loops), in every recording."""
    for calls in zip(*(loop.run_members or (loop.members,) for loop in members), strict=True):
        if len({len(c) for c in calls}) != 1 or len(calls[0]) < 2:
            return False
        order = [seqs.get(call, -1) for element in zip(*calls, strict=True) for call in element]
        if order != sorted(order) or -1 in order:
            return False
    return True


def _read_elsewhere(template: Template, members: Sequence[Loop]) -> bool:
    """A step other than the loops reads one of them (its output would be the script's, shaped otherwise), or a
    loop has a condition, a retry, an error policy or a key of its own the script would drop."""
    names = {loop.step for loop in members}
    for step in template.steps:
        if step.name in names:
            if step.when is not None or step.retry is not None or step.idempotency_key or step.on_error != "fail_fast":
                return True
            continue
        values = [step.input, step.for_each, step.return_, step.approve, step.idempotency_key]
        if any(ref.root in names for ref in refs_in(values)):
            return True
    return False


def _grouped(template: Template, members: Sequence[Loop]) -> tuple[Template, Loop]:
    specs = [template.step(loop.step) for loop in members]
    passed: dict[str, JSON] = {_ITEMS: members[0].over}
    calls = [
        f"    const {_var(i)} = await callTool({json.dumps(spec.tool)}, {_js(spec.input, passed)});"
        for i, spec in enumerate(specs)
    ]
    outputs = ", ".join(f"{json.dumps(spec.name)}: {_var(i)}" for i, spec in enumerate(specs))
    code = (
        f"{_AT}\nexport default async function (input) {{\n  const out = [];\n"
        f"  for (const item of input.{_ITEMS}) {{\n" + "\n".join(calls) + f"\n    out.push({{{outputs}}});\n  }}\n"
        "  return out;\n}\n"
    )
    names = {spec.name for spec in specs}
    bases = dict.fromkeys(_EACH_RE.sub("", spec.name) for spec in specs)  # (one tool's two operations: one base)
    name = free_name("_".join(bases) + "_each", {step.name for step in template.steps} - names)
    depends = tuple(dict.fromkeys(d for spec in specs for d in spec.depends_on if d not in names))
    group = StepSpec(name=name, script=code, input=passed, depends_on=depends)
    steps: list[StepSpec] = []
    for step in template.steps:
        if step.name == specs[0].name:
            steps.append(group)
        elif step.name not in names:
            moved = tuple(dict.fromkeys(name if d in names else d for d in step.depends_on))
            steps.append(dataclasses.replace(step, depends_on=moved) if moved != step.depends_on else step)
    runs = zip(*(loop.run_members or (loop.members,) for loop in members), strict=True)
    run_members = tuple(tuple(call for element in zip(*calls_, strict=True) for call in element) for calls_ in runs)
    why = "their calls took turns over the same elements: each element's calls in the recorded order"
    loop = Loop(name, "script", members[0].over, run_members[0], why, run_members=run_members)
    return dataclasses.replace(template, steps=tuple(steps)), loop


def _var(index: int) -> str:
    return f"call{index + 1}"


def _js(value: JSON, passed: dict[str, JSON]) -> str:
    """`value` as a JavaScript expression of `item` and `input`."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {_js(v, passed)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_js(v, passed) for v in value) + "]"
    if not isinstance(value, str) or not (value.startswith("@") or "{{" in value):
        return json.dumps(value, ensure_ascii=False)
    ref = parse_ref(value) if value.startswith("@") else None
    if ref is not None:
        return _item(ref.path, value) if ref.root == "item" else _pass(value, passed)
    lead, rest = literal_head(value)
    parts = split_template(rest)
    if not any(not isinstance(part, str) and part[0].root == "item" for part in parts):
        return _pass(value, passed)  # no element in it: the replay resolves it whole
    pieces = [json.dumps(lead, ensure_ascii=False)] if lead else []
    for part in parts:
        if isinstance(part, str):
            pieces.append(json.dumps(part, ensure_ascii=False))
        elif part[0].root == "item":
            pieces.append(f"text({_item(part[0].path, part[0].text)})")
        else:
            pieces.append(f"text({_pass(part[0].text, passed)})")
    return " + ".join(pieces)


def _item(path: str | None, written: str) -> str:
    if path is None:
        return "item"
    compiled = compile_path(path)
    if compiled is None or compiled.jsonpath is not None:
        raise _Unfit(written)
    keys = [segment.key for segment in compiled.segments]
    if any(key is None or (isinstance(key, int) and key < 0) for key in keys):
        raise _Unfit(written)
    return f"at(item, {json.dumps(keys, ensure_ascii=False)}, {json.dumps(written, ensure_ascii=False)})"


def _pass(value: str, passed: dict[str, JSON]) -> str:
    """A value the replay resolves before the script runs, handed in as `input.valueN` (one per distinct value)."""
    for key, known in passed.items():
        if key != _ITEMS and known == value:
            return f"input.{key}"
    key = f"value{len(passed)}"
    passed[key] = value
    return f"input.{key}"
