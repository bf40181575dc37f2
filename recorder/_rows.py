"""Recorded calls as the gateway hands them over, and the store rows built from them.

The gateway's call path only collects plain values (`StepEntry`, `PresetEntry`,
`ExecutionEntry`: tuples of JSON-typed fields, cheap to make and to serialise); the drain
process builds the rows (outputs per SPEC §4, secrets redacted) and writes them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from toolreel.core.errors import NotFoundError, RefError
from toolreel.core.model import JSON, Execution, ExecutionMode, ExecutionStatus, StepKind, StepRecord, StepStatus
from toolreel.core.refs import step_output

if TYPE_CHECKING:
    from toolreel.core.store import Store

__all__ = [
    "Entry",
    "ExecutionEntry",
    "PresetEntry",
    "StepEntry",
    "build",
    "entry",
    "error_text",
    "write_entries",
]


class ExecutionEntry(NamedTuple):
    kind: str  # "execution"
    id: str
    created_at: float
    session: str


class StepEntry(NamedTuple):
    """A finished upstream call: what was written, what was sent, what came back."""

    kind: str  # "step"
    execution_id: str
    name: str
    seq: int
    server: str | None
    tool: str | None
    input: JSON
    resolved_input: JSON
    result: Mapping[str, Any] | None
    error: str | None
    started_at: float
    ended_at: float


class PresetEntry(NamedTuple):
    """toolreel__set_step_result: a step with a given output and no upstream call."""

    kind: str  # "preset"
    execution_id: str
    name: str
    seq: int
    server: str | None
    tool: str | None
    output: JSON
    at: float


Entry = ExecutionEntry | StepEntry | PresetEntry
_SHAPES: dict[str, type[Any]] = {"execution": ExecutionEntry, "step": StepEntry, "preset": PresetEntry}


def entry(values: tuple[Any, ...] | list[Any]) -> Entry:
    """An entry from its plain tuple (as it crossed the pipe); ValueError if it is not one."""
    shape = _SHAPES.get(values[0]) if values else None
    if shape is None or len(values) != len(shape._fields):
        raise ValueError(f"not a recorded entry: {str(values)[:200]}")
    made: Entry = shape(*values)
    return made


def build(item: Entry) -> Execution | StepRecord:
    """The row of one entry, in clear: the store redacts every row it writes."""
    if isinstance(item, ExecutionEntry):
        return Execution(
            id=item.id,
            mode=ExecutionMode.RECORD,
            status=ExecutionStatus.RECORDING,
            created_at=item.created_at,
            updated_at=item.created_at,
            session=item.session,
        )
    if isinstance(item, PresetEntry):
        return _preset(item)
    return _finished(item)


def _finished(item: StepEntry) -> StepRecord:
    result, error = item.result, item.error
    is_error = error is not None or result is None or bool(result.get("isError"))
    output: JSON = None
    if not is_error and result is not None:
        try:
            output = step_output(result)
        except RefError as exc:
            is_error, error = True, str(exc)
    return StepRecord(
        execution_id=item.execution_id,
        name=item.name,
        seq=item.seq,
        kind=StepKind.TOOL,
        status=StepStatus.FAILED if is_error else StepStatus.SUCCEEDED,
        server=item.server,
        tool=item.tool,
        input=item.input,
        resolved_input=item.resolved_input,
        result=dict(result) if result is not None else None,
        output=output,
        is_error=is_error,
        error=(error or error_text(result)) if is_error else None,
        started_at=item.started_at,
        ended_at=item.ended_at,
    )


def _preset(item: PresetEntry) -> StepRecord:
    return StepRecord(
        execution_id=item.execution_id,
        name=item.name,
        seq=item.seq,
        kind=StepKind.PRESET,
        status=StepStatus.SUCCEEDED,
        server=item.server,
        tool=item.tool,
        output=item.output,
        result={"structuredContent": item.output} if isinstance(item.output, dict) else None,
        started_at=item.at,
        ended_at=item.at,
    )


def write_entries(store: Store, entries: Sequence[Entry], created: set[str]) -> None:
    """Build and write a batch in order (an execution before its steps). `created` holds the
    executions this writer already made; an execution found in the store is not made again
    (a batch may be sent twice when a drain is restarted; steps are upserts)."""
    steps: list[StepRecord] = []
    for item in entries:
        row = build(item)
        if isinstance(row, StepRecord):
            steps.append(row)
            continue
        if steps:
            store.put_steps(steps)
            steps = []
        if row.id not in created:
            try:
                store.get_execution(row.id)
            except NotFoundError:
                store.create_execution(row)
            created.add(row.id)
    if steps:
        store.put_steps(steps)


def error_text(result: Mapping[str, Any] | None) -> str:
    if not result:
        return "no result"
    texts = [c.get("text", "") for c in result.get("content") or [] if isinstance(c, dict) and c.get("type") == "text"]
    text = " ".join(t for t in texts if t).strip()
    return (text[:500] if text else json.dumps(result)[:500]) or "the tool reported an error"
