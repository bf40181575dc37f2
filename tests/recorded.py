"""Recorded sessions for the templatizer's tests: StepRecords named the way the recorder names them, and what
a test reads of a result (the step inputs, the refs applied and proposed, a dry replay of the recording)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from toolreel.core.model import JSON, StepKind, StepRecord, StepStatus
from toolreel.core.template_io import template_to_dict
from toolreel.replayer import dry_replay
from toolreel.templatizer import TemplatizeResult, templatize, verify
from toolreel.templatizer._inputs import Unexplained
from toolreel.templatizer._inside import query_values

__all__ = ["Session", "applied", "candidates", "inputs_of", "reproduces", "saved", "selected_by", "steps_of"]


@dataclass
class Session:
    """Builds StepRecords the way the recorder names them: `<tool>_<n>`, seq from 1."""

    execution: str = "e1"
    steps: list[StepRecord] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def call(
        self,
        tool: str,
        args: dict[str, JSON],
        output: JSON,
        *,
        written: dict[str, JSON] | None = None,
        server: str = "svc",
        failed: bool = False,
        redacted: tuple[str, ...] = (),
        kind: StepKind = StepKind.TOOL,
    ) -> str:
        self.counts[tool] = self.counts.get(tool, 0) + 1
        name = f"{tool}_{self.counts[tool]}"
        self.steps.append(
            StepRecord(
                execution_id=self.execution,
                name=name,
                seq=len(self.steps) + 1,
                kind=kind,
                status=StepStatus.FAILED if failed else StepStatus.SUCCEEDED,
                server=server,
                tool=tool,
                input=written if written is not None else args,
                resolved_input=args,
                output=None if failed else output,
                is_error=failed,
                redacted=redacted,
            )
        )
        return name


def inputs_of(result: TemplatizeResult) -> dict[str, JSON]:
    return {step.name: step.input for step in result.template.steps}


def applied(result: TemplatizeResult) -> dict[tuple[str, str], str]:
    return {(i.step, i.input_path): i.ref for i in result.applied}


def candidates(result: TemplatizeResult) -> dict[tuple[str, str], str]:
    return {(i.step, i.input_path): i.ref for i in result.candidates}


def reproduces(result: TemplatizeResult, steps: Sequence[StepRecord]) -> None:
    """Resolving the template's step inputs against the recording gives back every recorded argument, typed
    (the replayer's dry replay: the code steps the templatizer adds run in their sandbox, loops per element)."""
    differences = dry_replay(result.template, result.input_values, steps, result.loop_items)
    assert differences == [], [d.to_json() for d in differences]


def saved(s: Session, read_only: frozenset[str] = frozenset()) -> TemplatizeResult:
    """What a plain "save this" keeps: the ticked likely inputs applied, then verified against the recording and
    replayed dry on it (`read_only`: the tools known to only read, `server__tool`)."""
    first = templatize([s.steps], name="t", read_only=read_only)
    chosen = first.ticked_inputs
    result = templatize([s.steps], name="t", inputs=chosen, read_only=read_only) if chosen else first
    assert verify(result, [s.steps]).verified
    reproduces(result, s.steps)
    return result


def steps_of(result: TemplatizeResult) -> dict[str, dict[str, Any]]:
    """The saved template's steps as a user reads them (the template's YAML/JSON form), by name."""
    return {step["name"]: step for step in template_to_dict(result.template)["steps"]}


def selected_by(query: str) -> dict[str, Any]:
    """The values a query selects by (`query_values`), by the field that names each: what a likely input gets."""
    return {lit.flag: lit.value for lit in query_values(Unexplained("s", ("query",), query, "db__query"))}
