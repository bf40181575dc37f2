"""Does a template reproduce its recording? Each step's recorded output preset, nothing called:
every tool step's input, resolved against the recorded outputs and inputs, must equal what it
sent while recording (redacted values aside: they were never stored).

This is the page's seam for verification: the check runs here on the reviewed template (the
person's decisions included), so its verdict is about what will be saved.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolreel.core.errors import RefError, TemplateError
from toolreel.core.refs import MappingScope, resolve
from toolreel.ui._paths import set_path

if TYPE_CHECKING:
    from toolreel.core.model import StepRecord
    from toolreel.core.template import Template

__all__ = ["Difference", "Verification", "verify"]


@dataclass(frozen=True, slots=True)
class Difference:
    step: str
    problem: str


@dataclass(frozen=True, slots=True)
class Verification:
    verified: bool
    checked: int
    differences: tuple[Difference, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "verified": self.verified,
            "checked": self.checked,
            "differences": [{"step": d.step, "problem": d.problem} for d in self.differences],
        }


def verify(template: Template, recording: Sequence[StepRecord], inputs: Mapping[str, Any]) -> Verification:
    rows = {row.name: row for row in recording}
    outputs = {row.name: row.output for row in recording if not row.is_error}
    failed = {row.name: row.error or "failed" for row in recording if row.is_error}
    scope = MappingScope(steps=outputs, failed=failed, inputs=dict(inputs))
    differences: list[Difference] = []
    checked = 0
    for step in template.steps:
        row = rows.get(step.name)
        if step.kind != "tool" or row is None:
            continue
        checked += 1
        problem = _compare(step.input, row, scope)
        if problem is not None:
            differences.append(Difference(step.name, problem))
    return Verification(verified=not differences, checked=checked, differences=tuple(differences))


def _compare(written: Any, row: StepRecord, scope: MappingScope) -> str | None:
    try:
        resolved = resolve(written, scope)
    except RefError as exc:
        return f"does not resolve: {exc}"
    expected = row.resolved_input
    for path in row.redacted:  # never stored in clear: neither side can be compared there
        resolved, expected = _blank(resolved, path), _blank(expected, path)
    if _canonical(resolved) != _canonical(expected):
        return f"would send {_short(resolved)} where the recording sent {_short(expected)}"
    return None


def _blank(value: Any, path: str) -> Any:
    try:
        return set_path(value, path, None)
    except TemplateError:  # a path absent on one side: the difference stays
        return value


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _short(value: Any, limit: int = 160) -> str:
    text = _canonical(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
