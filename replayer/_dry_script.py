"""A `script` step in a dry replay: the script runs, each call it makes answered from the recorded calls it stands
for, in their recorded order, and compared with them (the tool, then the arguments field by field)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from toolreel.core.errors import RefError
from toolreel.core.model import StepRecord, StepStatus
from toolreel.core.names import prefixed_name
from toolreel.core.refs import resolve
from toolreel.core.script_sandbox import Answer, Finished, Request, ScriptMachine
from toolreel.replayer._differences import Difference, diff, shown
from toolreel.replayer._script import script_limits
from toolreel.replayer._state import RunScope, StepState

__all__ = ["check_script"]

_CPU_SECONDS: Final = 5.0  # per entry into the engine: the script's own work between calls (a loop, a few objects)


def check_script(
    state: StepState, scope: RunScope, recorded: Mapping[str, StepRecord], members: Sequence[str]
) -> list[Difference]:
    """The differences between the calls the script makes and the recorded `members`; its output is what it
    returns given their recorded outputs."""
    spec = state.spec
    assert spec.script is not None
    try:
        value = resolve(spec.input, scope) if spec.input is not None else {}
    except RefError as exc:
        state.status, state.error = StepStatus.FAILED, str(exc)
        return [Difference(spec.name, "$", "(the script's input)", f"does not resolve: {exc}")]
    machine = ScriptMachine(spec.script, value, script_limits(spec))
    calls = _Calls(spec.name, recorded, members)
    step = machine.start(_CPU_SECONDS)
    while not isinstance(step, Finished):
        step = machine.advance([calls.answer(request) for request in step], _CPU_SECONDS)
    if calls.made < len(members):
        calls.differences.append(
            Difference(spec.name, "$", f"{len(members)} recorded calls", f"{calls.made} calls made")
        )
    if step.error is not None:
        state.status, state.error = StepStatus.FAILED, str(step.error)
        return [
            *calls.differences,
            Difference(spec.name, "$", "(the script's end)", f"the script failed: {step.error}"),
        ]
    state.status, state.output = StepStatus.SUCCEEDED, step.value
    return calls.differences


class _Calls:
    def __init__(self, step: str, recorded: Mapping[str, StepRecord], members: Sequence[str]) -> None:
        self.step, self.recorded, self.members = step, recorded, members
        self.made = 0
        self.differences: list[Difference] = []

    def answer(self, request: Request) -> Answer:
        index, self.made = self.made, self.made + 1
        record = self.recorded.get(self.members[index]) if index < len(self.members) else None
        at = f"{self.step}.{index + 1}"  # the row a replay stores the call as
        if record is None:
            self.differences.append(Difference(at, "$", "(no recorded call)", f"a call of {request.name}"))
            return Answer(request.id, False, error="no recorded call answers it")
        listed = prefixed_name(record.server, record.tool) or record.name
        if request.name != listed:
            self.differences.append(Difference(at, "tool", listed, request.name))
        want = record.resolved_input if record.resolved_input is not None else {}
        self.differences += [
            Difference(at, path, shown(a), shown(b)) for path, a, b in diff(want, request.arguments, "$")
        ]
        if record.status != StepStatus.SUCCEEDED or record.is_error:
            return Answer(request.id, False, error=record.error or "failed while recording")
        return Answer(request.id, True, record.output)
