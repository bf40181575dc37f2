"""How a run's end reads: the note on rows cancelled by a stop, the outcome of a run whose steps ran out."""

from __future__ import annotations

from collections.abc import Mapping

from toolreel.core.errors import RefError
from toolreel.core.form import mismatch
from toolreel.core.model import StepStatus
from toolreel.core.template import Template
from toolreel.replayer._decide import bounded
from toolreel.replayer._state import Outcome, RunScope, StepState, StopReason

__all__ = ["CHILD_REASON", "checked", "closing_note", "final_outcome"]

# Why a run stopped early -> the child outcome when a parent stops for that reason (`timeout`: the
# parent's template step ran past its timeout).
CHILD_REASON = {
    StopReason.CANCEL: StopReason.CANCEL,
    StopReason.FAILED: StopReason.CANCEL,
    StopReason.RETURN: StopReason.CANCEL,
    StopReason.DEADLINE: StopReason.DEADLINE,
    StopReason.TIMEOUT: StopReason.CANCEL,
}


def closing_note(reason: StopReason, message: str) -> str:
    """The error of a row in flight (or waiting) when the run stopped for `reason`."""
    if reason == StopReason.DEADLINE:
        return "deadline_exceeded: cancelled when the execution's deadline passed"
    if reason == StopReason.RETURN:
        return f"cancelled: {message}, which ends the execution"
    if reason == StopReason.FAILED:
        return f"cancelled: {message}"
    return f"cancelled: {message}" if message else "cancelled by request"


async def final_outcome(
    template: Template, scope: RunScope, steps: Mapping[str, StepState], order: Mapping[str, int]
) -> Outcome:
    """A run whose steps all finished: the template's `output`, else the last succeeded step's output,
    checked against `output_schema`."""
    if template.has_output:
        try:
            return checked(template, Outcome("succeeded", output=await bounded(template.output, scope)))
        except RefError as exc:
            return Outcome("failed", error=f"template {template.name!r}, field 'output': {exc}")
    done = [name for name, state in steps.items() if state.status == StepStatus.SUCCEEDED]
    last = max(done, key=lambda name: order.get(name, -1), default=None)
    return checked(template, Outcome("succeeded", output=steps[last].output if last else None))


def checked(template: Template, outcome: Outcome) -> Outcome:
    """A succeeded outcome whose output does not match the template's `output_schema` fails the run."""
    schema = template.output_schema
    if outcome.kind != "succeeded" or schema is None:
        return outcome
    problem = mismatch(schema, outcome.output)
    if problem is None:
        return outcome
    return Outcome(
        "failed",
        error=f"template {template.name!r}, field 'output_schema': the output does not match it {problem}",
    )
