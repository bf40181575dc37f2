"""The in-memory state of one run: per-step progress, the ref scope over it, and how a run ended.

A run rebuilds this from the store's step rows when it resumes, so everything here is derived
from rows: a finished row is final, a `running` row is either waiting (`result.awaiting`) or was
in flight when its process stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from core.errors import RefError
from core.model import JSON, Execution, StepRecord, StepStatus
from core.template import StepSpec

__all__ = ["AWAITING", "ChildRequest", "Outcome", "RunScope", "StepState", "awaiting_of", "failed", "succeeded"]

AWAITING = "awaiting"
"""Key in a `running` row's `result` marking a step that waits for a person (approval) or a paused child."""

OutcomeKind = Literal["succeeded", "failed", "cancelled", "paused", "interrupted", "stale"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a drive ended. `interrupted`: this process stopped driving (shutdown), the execution
    stays `running` for another to resume; `stale`: another process took it over."""

    kind: OutcomeKind
    output: JSON = None
    error: str | None = None
    prompt: JSON = None


@dataclass(frozen=True, slots=True)
class ChildRequest:
    """A `template` step (or item) asking its engine for the outcome of its child execution."""

    parent: Execution
    ancestry: tuple[str, ...]  # template names from the root to the parent
    step: StepSpec
    store_name: str  # the step's name, or `name[i]` for a for_each item
    inputs: JSON
    response: str | None  # a resume response this child's waiting step must receive
    parent_reason: Callable[[], str | None]


@dataclass(slots=True)
class StepState:
    spec: StepSpec
    deps: frozenset[str]
    dependents: list[str] = field(default_factory=list)
    blocked: int = 0  # dependencies not finished yet
    status: StepStatus | None = None  # set once finished (succeeded, failed, skipped, cancelled)
    output: JSON = None
    error: str | None = None
    ended_at: float = 0.0
    attempt: int = 0  # the last attempt number written
    launched: bool = False
    awaiting: bool = False  # waiting for an approval or a paused child
    args: JSON = None  # resolved input (in clear: what is sent), prompt of an approve step
    key: str | None = None  # resolved idempotency key
    items: list[JSON] | None = None  # resolved for_each list
    item_outputs: dict[int, JSON] = field(default_factory=dict)  # for_each items already succeeded
    item_attempts: dict[int, int] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.status is not None

    def finish(self, record: StepRecord) -> None:
        self.status = record.status
        self.output = record.output if record.status == StepStatus.SUCCEEDED else None
        self.error = record.error
        self.ended_at = record.ended_at or 0.0
        self.awaiting = False


def succeeded(record: StepRecord, output: JSON, result: JSON = None) -> StepRecord:
    return record.replace(status=StepStatus.SUCCEEDED, output=output, result=result, ended_at=time.time())


def failed(record: StepRecord, error: str, result: JSON = None, *, is_error: bool = False) -> StepRecord:
    return record.replace(
        status=StepStatus.FAILED, error=error, result=result, output=None, is_error=is_error, ended_at=time.time()
    )


def awaiting_of(record: StepRecord) -> Mapping[str, Any] | None:
    """The waiting marker of a `running` row, or None when the row was simply in flight."""
    if record.status != StepStatus.RUNNING or not isinstance(record.result, Mapping):
        return None
    marker = record.result.get(AWAITING)
    return record.result if marker is not None else None


class RunScope:
    """`core.refs.Scope` over a run's steps: finished steps resolve, failed ones raise, skipped give null."""

    __slots__ = ("_in_loop", "_index", "_inputs", "_item", "_steps")

    def __init__(
        self,
        steps: Mapping[str, StepState],
        inputs: Mapping[str, JSON],
        *,
        item: JSON = None,
        index: int | None = None,
        in_loop: bool = False,
    ) -> None:
        self._steps = steps
        self._inputs = inputs
        self._item = item
        self._index = index
        self._in_loop = in_loop

    def has_step(self, name: str) -> bool:
        state = self._steps.get(name)
        return state is not None and state.finished

    def step_output(self, name: str) -> JSON:
        state = self._steps[name]
        if state.status == StepStatus.SUCCEEDED:
            return state.output
        if state.status == StepStatus.SKIPPED:
            return None
        raise RefError(f"step {name} {state.status} ({state.error}); it has no output", step=name)

    def step_names(self) -> Sequence[str]:
        return [name for name, state in self._steps.items() if state.finished]

    @property
    def inputs(self) -> Mapping[str, JSON]:
        return self._inputs

    @property
    def item(self) -> JSON:
        return self._item

    @property
    def index(self) -> int | None:
        return self._index

    @property
    def in_loop(self) -> bool:
        return self._in_loop

    def for_item(self, item: JSON, index: int) -> RunScope:
        return RunScope(self._steps, self._inputs, item=item, index=index, in_loop=True)
