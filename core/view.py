"""The one JSON view of an execution, a recording or a replay: what `toolreel__get_execution`,
`toolreel__run_template` and `toolreel executions show --json` return alike.

`{execution_id, status, mode, template, attempt, inputs, output | error | prompt, steps: [...]}`; one entry
per step (the latest attempt) with its input as written and as resolved, for_each items nested
under their step as `items`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolreel.core.model import JSON, Execution, ExecutionStatus, StepRecord, TemplateRecord
from toolreel.core.names import prefixed_name

__all__ = [
    "DEADLINE_EXCEEDED",
    "execution_view",
    "item_name",
    "outcome_code",
    "split_item_name",
    "template_record_view",
]

DEADLINE_EXCEEDED = "deadline_exceeded"
"""How the error of a run stopped by its deadline begins (SPEC §8), and its code."""


def item_name(step: str, index: int) -> str:
    """The store name of item `index` of for_each step `step` (step names cannot contain `[`)."""
    return f"{step}[{index}]"


def split_item_name(name: str) -> tuple[str, int] | None:
    if not name.endswith("]") or "[" not in name:
        return None
    step, _, index = name[:-1].partition("[")
    return (step, int(index)) if index.isdigit() else None


def execution_view(execution: Execution, steps: Sequence[StepRecord]) -> dict[str, Any]:
    view: dict[str, Any] = {
        "execution_id": execution.id,
        "status": str(execution.status),
        "mode": str(execution.mode),
        "template": execution.template,
        "template_version": execution.template_version,
        "attempt": execution.attempt,  # 1 + the times it was retried (`toolreel executions retry`)
    }
    if execution.inputs:
        view["inputs"] = execution.inputs
    if execution.status == ExecutionStatus.SUCCEEDED:
        view["output"] = execution.output
    elif execution.status == ExecutionStatus.PAUSED:
        view["prompt"] = execution.prompt
    if execution.error is not None:
        view["error"] = execution.error
        view["error_code"] = outcome_code(execution)
    if execution.parent_id is not None:
        view["parent"] = {"execution_id": execution.parent_id, "step": execution.parent_step}
    if execution.schedule is not None:
        view["schedule"] = execution.schedule  # the schedule whose tick started it (`toolreel schedule list`)
    view["steps"] = _steps_view(steps)
    return view


def outcome_code(execution: Execution) -> str | None:
    """The stable code (docs/errors.md) of how an execution ended badly; None if it did not."""
    if execution.status == ExecutionStatus.CANCELLED:
        return "execution_cancelled"
    if execution.status != ExecutionStatus.FAILED:
        return None
    if (execution.error or "").startswith(DEADLINE_EXCEEDED):
        return DEADLINE_EXCEEDED
    return "execution_failed"


def _steps_view(steps: Sequence[StepRecord]) -> list[dict[str, Any]]:
    top: dict[str, dict[str, Any]] = {}
    items: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for record in sorted(steps, key=lambda r: r.seq):
        split = split_item_name(record.name)
        if split is None:
            top[record.name] = step_view(record)
        else:
            items.setdefault(split[0], []).append((split[1], step_view(record)))
    for name, entries in items.items():
        if name in top:
            top[name]["items"] = [entry for _, entry in sorted(entries, key=lambda pair: pair[0])]
    return list(top.values())


def step_view(record: StepRecord) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": record.name,
        "kind": str(record.kind),
        "tool": prefixed_name(record.server, record.tool),
        "status": str(record.status),
        "attempt": record.attempt,
    }
    if record.input is not None:
        entry["input"] = record.input  # as written: refs intact
    if record.resolved_input is not None and record.resolved_input != record.input:
        entry["resolved_input"] = record.resolved_input
    if record.output is not None:
        entry["output"] = record.output
    if record.error is not None:
        entry["error"] = record.error
    if isinstance(record.result, dict) and "awaiting" in record.result:
        entry["awaiting"] = record.result["awaiting"]
    elif record.kind == "llm" and isinstance(record.result, dict):  # what was asked, answered, and by whom
        entry["llm"] = {key: record.result.get(key) for key in ("prompt", "answer", "model", "via")}
    entry["started_at"] = record.started_at
    entry["ended_at"] = record.ended_at
    return entry


def template_record_view(record: TemplateRecord, *, definition: bool = False) -> dict[str, JSON]:
    """A stored template version as `toolreel templates ... --json` and the web view show it."""
    out: dict[str, JSON] = {
        "name": record.name,
        "version": record.version,
        "hash": record.hash,
        "description": record.description,
        "created_at": record.created_at,
        "source_executions": list(record.source_executions),
    }
    if definition:
        out["definition"] = dict(record.definition)
    return out
