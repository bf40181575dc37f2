"""Saving a recording whose work was a Code Mode script: a script template (SPEC §13).

The template is one `script` step holding the code, with an input per key of the recorded `input`
(its JSON type inferred from the recorded value), and the servers the script's calls went to. It is
verified as any template is, by replaying it against its recording: the script runs again with the
recorded input, every call answered from the run's journal; it must make the same calls and return
the same result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolreel.core.errors import CodeError
from toolreel.core.model import JSON, StepRecord
from toolreel.core.script_run import answer_from_journal, answered, drive_script
from toolreel.core.script_sandbox import Answer, Request, ScriptLimits
from toolreel.core.template import InputSpec, StepSpec, Template

__all__ = ["SCRIPT_STEP", "ScriptWork", "script_template", "script_work", "verify_script"]

SCRIPT_STEP = "script"
_RUN_SCRIPT = ("toolreel", "run_script")  # the recording's script step: (server, tool) of its preset row


@dataclass(frozen=True, slots=True)
class ScriptWork:
    """A recording's script run: its step in the recording and what that step recorded."""

    step: str
    code: str
    input: Mapping[str, JSON]
    result: JSON
    execution_id: str  # the script run's own execution (its journal)
    calls: tuple[str, ...]


def script_work(recording: Sequence[StepRecord]) -> ScriptWork | None:
    """The last script that succeeded in the recording, or None when its work was not a script."""
    for step in sorted(recording, key=lambda s: s.seq, reverse=True):
        output = step.output if isinstance(step.output, dict) else {}
        if (step.server, step.tool) == _RUN_SCRIPT and output.get("status") == "succeeded" and "code" in output:
            return ScriptWork(
                step.name, str(output["code"]), dict(output.get("input") or {}), output.get("result"),
                str(output["execution_id"]), tuple(output.get("calls") or ()),
            )  # fmt: skip
    return None


def _json_type(value: JSON) -> str | None:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    for kind, name in ((float, "number"), (str, "string"), (list, "array"), (dict, "object")):
        if isinstance(value, kind):
            return name
    return None


def script_template(name: str, description: str | None, work: ScriptWork, servers: Mapping[str, Any]) -> Template:
    inputs = {
        key: InputSpec(type=_json_type(value), description=f"recorded: {_short(value)}")
        for key, value in work.input.items()
    }
    step = StepSpec(name=SCRIPT_STEP, script=work.code, input={key: f"@input.{key}" for key in work.input} or None)
    return Template(
        name=name,
        steps=(step,),
        description=description or f"A script of {len(work.calls)} recorded tool calls.",
        inputs=inputs,
        output=f"@{SCRIPT_STEP}",
        has_output=True,
        servers=dict(servers),
    )


async def verify_script(work: ScriptWork, journal: Sequence[StepRecord]) -> list[str]:
    """Replay the script against its recording (no call made): what differs, [] when it replays exactly."""
    finished_rows = [row for row in sorted(journal, key=lambda r: r.seq) if answered(row)]
    problems: list[str] = []

    async def call(index: int, request: Request) -> Answer | CodeError:
        if index >= len(finished_rows):
            return CodeError(f"script_diverged: call {index + 1} ({request.name}) is not in the recording")
        return answer_from_journal(finished_rows[index], request, index)

    finished = await drive_script(work.code, dict(work.input), ScriptLimits(), call)
    if finished.error is not None:
        problems.append(f"the script does not replay its recording: {finished.error}")
    elif finished.value != work.result:
        problems.append(f"the script returns {_short(finished.value)} where it returned {_short(work.result)}")
    return problems


def _short(value: JSON) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:79] + "…"
