"""Recorded sessions for the templatizer's tests: StepRecords named the way the recorder names them, and what
a test reads of a result (the step inputs, the refs applied and proposed, a dry replay of the recording)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from toolreel.core.model import JSON, StepKind, StepRecord, StepStatus
from toolreel.replayer import dry_replay
from toolreel.templatizer import TemplatizeResult, templatize, verify

__all__ = ["Session", "applied", "candidates", "inputs_of", "reproduces", "saved"]


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


def saved(s: Session) -> TemplatizeResult:
    """What a plain "save this" keeps: the ticked likely inputs applied, then verified against the recording."""
    first = templatize([s.steps], name="t")
    result = templatize([s.steps], name="t", inputs=first.ticked_inputs) if first.ticked_inputs else first
    assert verify(result, [s.steps]).verified
    return result
