"""Conversion between the model's frozen dataclasses and table rows: JSON encoded once, enums as text.

A value neither database can take is stored in a safe, escaped form instead of failing its whole
batch: a lone surrogate (`"\\ud800"`, which no UTF-8 encoder accepts) in a JSON value becomes its JSON
escape (read back as the same value), and in a plain text column (an error message) its backslash escape,
as does a NUL character (PostgreSQL refuses it in text).

A step's `resolved_input` equal to its `input`, and an `output` that is exactly what SPEC §4 reads from
its stored (redacted) `result`, are stored as `SAME` instead of a second copy, and rebuilt on reading.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from typing import Any

from toolreel.core.errors import RefError, StoreError
from toolreel.core.model import (
    JSON,
    Execution,
    ExecutionMode,
    ExecutionStatus,
    StepKind,
    StepRecord,
    StepStatus,
    TemplateRecord,
)
from toolreel.core.refs import step_output

__all__ = [
    "EXECUTION_FIELDS",
    "EXECUTION_JSON",
    "SAME",
    "canonical_json",
    "dumps",
    "execution_from_row",
    "execution_to_row",
    "loads",
    "safe_text",
    "step_from_row",
    "step_to_row",
    "template_from_row",
]

Row = Mapping[Any, Any]  # a RowMapping or a plain dict of column values

EXECUTION_FIELDS = frozenset(Execution.__dataclass_fields__)
EXECUTION_JSON = frozenset({"inputs", "output", "prompt"})

# Not JSON, so no stored value can be mistaken for it; rows written before it hold both copies in full.
SAME = "="
# The kinds whose output is read from their result by SPEC §4 (a preset's result is its output, structured).
_DERIVED_KINDS = frozenset({StepKind.TOOL, StepKind.PRESET})

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_encode_ascii = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode
_encode_canonical = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode


def dumps(value: JSON, what: str) -> str | None:
    """JSON text, or None (SQL NULL) for None; `what` names the value if it is not JSON."""
    if value is None:
        return None
    try:
        text = _encode(value)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"cannot store {what}: it is not JSON ({exc})") from exc
    if text.isascii() or _encodable(text):  # the common case costs one scan in C
        return text
    return _encode_ascii(value)  # every non-ASCII character as a JSON escape: lone surrogates included


def safe_text(text: str | None) -> str | None:
    """A plain text value either database takes: lone surrogates and NUL backslash-escaped."""
    if text is None or (text.isascii() and "\x00" not in text) or (_encodable(text) and "\x00" not in text):
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def canonical_json(value: JSON) -> str:
    """Sorted keys, no spaces, UTF-8 unescaped: equal values give equal text (and so an equal hash)."""
    return _encode_canonical(value)


def loads(text: str | None) -> JSON:
    return None if text is None else json.loads(text)


def column_value(name: str, value: object) -> object:
    """One Execution field as its column holds it (update_execution)."""
    if name in EXECUTION_JSON:
        return dumps(value, f"execution field {name!r}")
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, enum.Enum):  # psycopg would dump an Enum by name, not by value
        return value.value
    return value


def execution_to_row(execution: Execution) -> dict[str, object]:
    what = f"execution {execution.id}"
    return {
        "id": execution.id,
        "mode": execution.mode.value,
        "status": execution.status.value,
        "created_at": execution.created_at,
        "updated_at": execution.updated_at,
        "session": execution.session,
        "template": execution.template,
        "template_version": execution.template_version,
        "template_hash": execution.template_hash,
        "inputs": dumps(execution.inputs, f"{what} inputs"),
        "output": dumps(execution.output, f"{what} output"),
        "error": safe_text(execution.error),
        "prompt": dumps(execution.prompt, f"{what} prompt"),
        "parent_id": execution.parent_id,
        "parent_step": execution.parent_step,
        "depth": execution.depth,
        "deadline": execution.deadline,
        "claimed_by": execution.claimed_by,
        "lease_until": execution.lease_until,
        "fence": execution.fence,
        "attempt": execution.attempt,
        "schedule": execution.schedule,
    }


def execution_from_row(row: Row) -> Execution:
    return Execution(
        id=row["id"],
        mode=ExecutionMode(row["mode"]),
        status=ExecutionStatus(row["status"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        session=row["session"],
        template=row["template"],
        template_version=row["template_version"],
        template_hash=row["template_hash"],
        inputs=loads(row["inputs"]),
        output=loads(row["output"]),
        error=row["error"],
        prompt=loads(row["prompt"]),
        parent_id=row["parent_id"],
        parent_step=row["parent_step"],
        depth=row["depth"],
        deadline=row["deadline"],
        claimed_by=row["claimed_by"],
        lease_until=row["lease_until"],
        fence=row["fence"],
        attempt=row["attempt"],
        schedule=row["schedule"],
    )


def step_to_row(step: StepRecord) -> dict[str, object]:
    what = f"step {step.name!r} of execution {step.execution_id}"
    written = dumps(step.input, f"{what} input")
    return {
        "execution_id": step.execution_id,
        "name": step.name,
        "attempt": step.attempt,
        "seq": step.seq,
        "kind": step.kind.value,
        "status": step.status.value,
        "server": safe_text(step.server),
        "tool": safe_text(step.tool),
        "input": written,
        "resolved_input": _resolved_text(step, written, what),
        "result": dumps(step.result, f"{what} result"),
        "output": SAME if _derived(step) else dumps(step.output, f"{what} output"),
        "is_error": step.is_error,
        "error": safe_text(step.error),
        "started_at": step.started_at,
        "ended_at": step.ended_at,
        "redacted": _encode(list(step.redacted)) if step.redacted else None,
        "idempotency_key": step.idempotency_key,
    }


def _resolved_text(step: StepRecord, written: str | None, what: str) -> str | None:
    """SAME when the arguments sent are the arguments written (no ref in them), compared as stored text."""
    if written is not None and step.resolved_input is step.input:
        return SAME
    text = dumps(step.resolved_input, f"{what} resolved_input")
    return SAME if text is not None and text == written else text


def _derived(step: StepRecord) -> bool:
    """Whether SPEC §4 reads `output` from `result`, both as stored. Compared as values: for these kinds the
    output was read from this same result, and what can part them is redaction, which the comparison sees."""
    result, output = step.result, step.output
    if output is None or step.is_error or step.kind not in _DERIVED_KINDS or not isinstance(result, Mapping):
        return False
    structured = result.get("structuredContent")
    if structured is not None:
        return structured is output or structured == output
    try:
        return bool(step_output(result) == output)
    except RefError:  # the result says isError: no output to read from it
        return False


def step_from_row(row: Row) -> StepRecord:
    result = loads(row["result"])
    return StepRecord(
        execution_id=row["execution_id"],
        name=row["name"],
        seq=row["seq"],
        kind=StepKind(row["kind"]),
        status=StepStatus(row["status"]),
        attempt=row["attempt"],
        server=row["server"],
        tool=row["tool"],
        input=loads(row["input"]),
        resolved_input=loads(row["input"] if row["resolved_input"] == SAME else row["resolved_input"]),
        result=result,
        output=step_output(result) if row["output"] == SAME else loads(row["output"]),
        is_error=bool(row["is_error"]),
        error=row["error"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        redacted=tuple(loads(row["redacted"]) or ()),
        idempotency_key=row["idempotency_key"],
    )


def template_from_row(row: Row) -> TemplateRecord:
    return TemplateRecord(
        name=row["name"],
        version=row["version"],
        hash=row["hash"],
        definition=json.loads(row["definition"]),
        created_at=row["created_at"],
        description=row["description"],
        source_executions=tuple(json.loads(row["source_executions"])),
    )
