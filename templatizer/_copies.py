"""A value copied from one read onto what another read of the same tool showed: promote a flag from Staging to
Production.

The agent read a setting in two places (`get-setting-value` of Staging, then of Production), saw they differ (`true`
beside `false`) and set the second to the first's. The flag is a boolean, whose equality alone is never evidence;
here it is: of two reads of one tool that differ at that field, the write sends the one's value under the very
field name. The write is a ref to that read, and it runs only while the two still differ: where they are equal
already, a careful agent writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from toolreel.core.model import JSON, StepRecord
from toolreel.core.refs import refs_in
from toolreel.core.template import StepSpec, Template, When
from toolreel.core.template_io import parse_template, template_to_dict
from toolreel.templatizer._values import Keys, json_path, walk

if TYPE_CHECKING:
    from toolreel.templatizer._runs import Run

__all__ = ["copied_flag", "guard_on_copies"]


def copied_flag(run: Run, record: StepRecord, keys: Keys, value: JSON) -> str | None:
    """The ref to the one field of the same name, outside any list, that holds `value` (a boolean) in one of two or
    more earlier reads of one tool that disagree there; None if there is not exactly one."""
    key = keys[-1] if keys and isinstance(keys[-1], str) else None
    if key is None or not isinstance(value, bool):
        return None
    by_tool: dict[str, list[tuple[str, Keys, bool]]] = {}
    for earlier in run.steps.values():
        if earlier.seq >= record.seq or earlier.name not in run.outputs:
            continue
        for path, leaf in walk(run.outputs[earlier.name]):
            if path and path[-1] == key and isinstance(leaf, bool) and not any(isinstance(k, int) for k in path):
                by_tool.setdefault(f"{earlier.server}__{earlier.tool}", []).append((earlier.name, path, leaf))
    found = [
        f"@{name}{json_path(path)[1:]}"
        for places in by_tool.values()
        if len({leaf for _, _, leaf in places}) == 2
        for name, path, leaf in places
        if leaf == value
    ]
    return found[0] if len(found) == 1 else None


def guard_on_copies(
    template: Template, read_only: Collection[str], outputs: Mapping[str, JSON]
) -> tuple[Template, list[tuple[str, str]]]:
    """Each call that may write and sends a flag copied from one read (`@get_setting_value_1.value`) onto what
    another read of the same tool showed gets `when: {ref: <the other's field>, neq: <the copied one>}`; the other
    read is the one whose arguments the call names too (the same environment)."""
    tools = {step.name: step.tool for step in template.steps}
    guards: list[tuple[str, str]] = []
    steps: list[StepSpec] = []
    for step in template.steps:
        if step.tool is not None and step.tool not in read_only and step.when is None and step.for_each is None:
            when = _copy_guard(step, template, tools, outputs)
            if when is not None:
                why = f"it runs only while {when.ref} differs from {when.value}, the value it copies there"
                guards.append((step.name, why))
                step = replace(step, when=when)
        steps.append(step)
    if not guards:
        return template, []
    return parse_template(template_to_dict(replace(template, steps=tuple(steps)))), guards


def _copy_guard(
    step: StepSpec, template: Template, tools: Mapping[str, str | None], outputs: Mapping[str, JSON]
) -> When | None:
    by_name = {other.name: other for other in template.steps}
    for ref in refs_in(step.input):
        source = ref.root
        if source not in outputs or source not in by_name or not ref.path:
            continue
        copied = _at(outputs[source], ref.path)
        if not isinstance(copied, bool):
            continue
        for other in template.steps:
            if other.name == source or tools.get(other.name) != tools.get(source) or other.name not in outputs:
                continue
            there = _at(outputs[other.name], ref.path)
            # the call names what the other read names and the source does not (the target environment)
            target = (_named(step) & _named(other)) - _named(by_name[source])
            if target and isinstance(there, bool) and there != copied:
                return When(ref=f"@{other.name}.{ref.path}", op="neq", value=ref.text)
    return None


def _named(step: StepSpec) -> set[str]:
    """What a step's arguments name: their refs and their values."""
    return {r.text for r in refs_in(step.input)} | {json.dumps(v) for _, v in walk(step.input)}


def _at(output: JSON, path: str) -> JSON:
    node: JSON = output
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node
