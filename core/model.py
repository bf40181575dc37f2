"""The values every package shares: executions, steps, templates as stored.

These are frozen dataclasses: read-only values passed between the gateway, recorder,
templatizer, replayer and the store. Validation of what users write happens at the edges
(config, template files, MCP arguments); inside, these are trusted.
"""

from __future__ import annotations

import dataclasses
import enum
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

__all__ = [
    "JSON",
    "SCRIPT_TEMPLATE",
    "Execution",
    "ExecutionMode",
    "ExecutionQuery",
    "ExecutionStatus",
    "StepClaim",
    "StepKind",
    "StepRecord",
    "StepStatus",
    "TemplateDraft",
    "TemplateRecord",
    "new_id",
    "now",
]

JSON: TypeAlias = Any
"""A JSON value: dict, list, str, int, float, bool or None."""

SCRIPT_TEMPLATE = "toolreel__run_script"
"""The `template` of a Code Mode script run (an execution of its own, SPEC §13): list them by it."""


def new_id() -> str:
    """A sortable-enough unique id (hex uuid4); used for executions."""
    return uuid.uuid4().hex


def now() -> float:
    return time.time()


class ExecutionStatus(enum.StrEnum):
    RECORDING = "recording"
    PENDING = "pending"
    RUNNING = "running"
    PAUSED = "paused"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (ExecutionStatus.SUCCEEDED, ExecutionStatus.FAILED, ExecutionStatus.CANCELLED)


class StepStatus(enum.StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (StepStatus.SUCCEEDED, StepStatus.FAILED, StepStatus.SKIPPED, StepStatus.CANCELLED)


class ExecutionMode(enum.StrEnum):
    RECORD = "record"
    AUTO = "auto"


class StepKind(enum.StrEnum):
    TOOL = "tool"
    PRESET = "preset"  # toolreel__set_step_result: an output given, nothing called
    RETURN = "return"
    APPROVE = "approve"
    TEMPLATE = "template"
    CODE = "code"
    SCRIPT = "script"  # a Code Mode script (SPEC §13); its calls are rows `<step>.<n>`
    WAIT = "wait"  # a time or a signal waited for
    SWITCH = "switch"  # which case's branch runs (nothing called)
    LLM = "llm"  # a model asked (its prompt, answer and model are the row's result)


@dataclass(frozen=True, slots=True)
class ExecutionQuery:
    """Which executions `list_executions` returns: one value, so the interface and its
    implementation do not each spell out (and keep in step) the same filters."""

    status: ExecutionStatus | None = None
    template: str | None = None
    limit: int = 50
    cursor: str | None = None  # a previous page's next cursor

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError(f"list_executions: limit must be at least 1, got {self.limit}")


@dataclass(frozen=True, slots=True)
class Execution:
    """One recording session or one auto-mode run of a template."""

    id: str
    mode: ExecutionMode
    status: ExecutionStatus
    created_at: float
    updated_at: float
    session: str | None = None  # recording: the client session it groups
    template: str | None = None
    template_version: int | None = None
    template_hash: str | None = None
    inputs: JSON = None
    output: JSON = None
    error: str | None = None
    prompt: JSON = None  # paused: what the approval step asks
    parent_id: str | None = None  # child run of a `template` step
    parent_step: str | None = None
    depth: int = 0
    deadline: float | None = None  # epoch seconds
    claimed_by: str | None = None  # the process driving it (auto mode)
    lease_until: float | None = None
    fence: int = 0  # incremented on every claim; writes carrying an older fence are refused
    attempt: int = 1  # 1 + the times a failed or cancelled run was retried (the same id goes on)
    schedule: str | None = None  # the schedule whose tick started it

    def replace(self, **changes: Any) -> Execution:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, slots=True, weakref_slot=True)  # the redactor remembers records it returned, weakly
class StepRecord:
    """One attempt of one step. Recording writes attempt 1; retries add rows.

    `input` is the arguments as written (refs intact); `resolved_input` what was sent.
    `result` is the raw MCP result (for a tool step, the CallToolResult as a wire dict);
    `output` is what `@step...` addresses (see `core.refs.step_output`), None when the
    step failed.
    """

    execution_id: str
    name: str
    seq: int  # order of start within the execution, from 1
    kind: StepKind
    status: StepStatus
    attempt: int = 1
    server: str | None = None
    tool: str | None = None  # the upstream's own tool name (no server prefix)
    input: JSON = None
    resolved_input: JSON = None
    result: JSON = None
    output: JSON = None
    is_error: bool = False
    error: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    redacted: tuple[str, ...] = ()  # JSON paths (`$.a.b`) of resolved_input values stored redacted
    idempotency_key: str | None = None

    def replace(self, **changes: Any) -> StepRecord:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, slots=True)
class StepClaim:
    """What `Store.claim_step` did: the seq the step was written at (None: its name was taken), and the
    steps others wrote since the caller last read, before it."""

    seq: int | None
    newer: tuple[StepRecord, ...] = ()


@dataclass(frozen=True, slots=True)
class TemplateDraft:
    """A template to save as its next version: what `Store.save_template` takes, as one value
    (the store adds the version, the hash and the time)."""

    name: str
    definition: Mapping[str, JSON]
    description: str | None = None
    source_executions: Sequence[str] = ()  # the recordings it was made from


@dataclass(frozen=True, slots=True)
class TemplateRecord:
    """One stored version of a template. `definition` is the template as a JSON object."""

    name: str
    version: int
    hash: str
    definition: Mapping[str, JSON]
    created_at: float
    description: str | None = None
    source_executions: Sequence[str] = field(default_factory=tuple)
