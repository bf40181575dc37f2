"""The in-memory state of one run: per-step progress, the ref scope over it, and how a run ended.

A run rebuilds this from the store's step rows when it resumes, so everything here is derived
from rows: a finished row is final, a `running` row is either waiting (`result.awaiting`) or was
in flight when its process stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from toolreel.core.errors import RefError
from toolreel.core.model import JSON, Execution, StepRecord, StepStatus
from toolreel.core.template import StepSpec, Template
from toolreel.core.template_io import dependencies
from toolreel.core.view import split_item_name

__all__ = [
    "AWAITING",
    "DUE",
    "ELAPSED",
    "RETRY",
    "SIGN_IN_NEEDED",
    "ChildRequest",
    "Loaded",
    "Outcome",
    "RunScope",
    "StepState",
    "StopCause",
    "StopReason",
    "awaiting_of",
    "build_states",
    "child_key",
    "error_output",
    "error_text",
    "failed",
    "load_rows",
    "retry_of",
    "sign_in_pause",
    "signs_in",
    "succeeded",
]

AWAITING = "awaiting"
"""Key in a `running` row's `result` marking a step that waits for a person (approval) or a paused child."""
ELAPSED = "elapsed"
"""Key in a waiting `template` row's `result`: seconds of the step's timeout its attempt used before the pause."""
DUE = "due"
"""Key in a waiting row's `result`: when (epoch seconds) it stops waiting on its own (a `wait` for a time, an
approval's timeout, a paused child's own); the execution is woken then."""

SIGN_IN_NEEDED = "sign_in_needed"
"""The `reason` of a pause no answer resolves, the code of the upstream error behind it (`upstreams.auth.SignInNeeded`,
matched by code: the replayer does not import the upstream layer): a person must sign in again (a refused
refresh); the step's attempt waits, unsent, and `resume` (no response) calls it once the sign-in is there."""

RETRY = "retry"
"""Key in the `result` of a `pending` row a retry wrote: the execution attempt that runs the step again."""

OutcomeKind = Literal["succeeded", "failed", "cancelled", "paused", "interrupted", "stale"]


class StopReason(StrEnum):
    """Why a run stops before its steps ran out. The first reason given wins."""

    CANCEL = "cancel"  # asked by a person or client, or a parent/sibling stopping
    FAILED = "failed"  # a step failed (not `include_failed`, not `on_error: continue`)
    RETURN = "return"  # a `return` step gave the output
    DEADLINE = "deadline"  # the execution's deadline passed
    TIMEOUT = "timeout"  # a parent's `template` step ran past its timeout (a child's cause only)
    INTERRUPT = "interrupt"  # this process stops driving (shutdown, store refused a write): resumable
    STALE = "stale"  # another process claimed the execution: this one lets go


StopCause = tuple[StopReason, str]
"""Why a run stops: (reason, message). What a child asks its parent when it is cancelled from outside;
the reason `timeout` (the parent step's timeout passed) comes with the message the child records."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a drive ended. `interrupted`: this process stopped driving (shutdown), the execution
    stays `running` for another to resume; `stale`: another process took it over."""

    kind: OutcomeKind
    output: JSON = None
    error: str | None = None
    prompt: JSON = None
    wake: float | None = None  # paused: when the earliest waiting step stops waiting on its own


@dataclass(frozen=True, slots=True)
class ChildRequest:
    """A `template` step (or item) asking its engine for the outcome of its child execution."""

    parent: Execution
    ancestry: tuple[str, ...]  # template names from the root to the parent
    step: StepSpec
    store_name: str  # the step's name, or `name[i]` for a for_each item
    inputs: JSON
    response: str | None  # a resume response this child's waiting step must receive
    parent_reason: Callable[[], StopCause | None]
    number: int = 1  # which child of this step row: 1 + the failed attempts before this one

    @property
    def key(self) -> str:
        """What the child's id is derived from: the first child keeps the plain row name (ids of runs
        stored before retries had children stay valid); a retry's child has its own (step names hold no `#`)."""
        return child_key(self.store_name, self.number)


@dataclass(slots=True)
class StepState:
    """One step of a run in memory: its place in the graph, what it resolved to, how it finished."""

    spec: StepSpec
    deps: frozenset[str]
    dependents: list[str] = field(default_factory=list)
    blocked: int = 0  # dependencies not finished yet
    join: frozenset[str] = frozenset()  # a `wait_for` join: the dependencies it counts (depends_on, else all)
    arrived: int = 0  # dependencies of `join` that succeeded
    others: int = 0  # dependencies outside `join` not finished yet (a join waits for these as usual)
    readied: bool = False  # started (or decided) already: a join is ready before all its dependencies finish
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

    @property
    def ready(self) -> bool:
        """Every dependency finished, or (a join) enough of them succeeded."""
        need = self.spec.wait_for
        return self.blocked == 0 or (need is not None and self.others == 0 and self.arrived >= need)

    def dependency_finished(self, name: str, status: StepStatus | None) -> None:
        self.blocked -= 1
        if name in self.join:
            self.arrived += status == StepStatus.SUCCEEDED
        else:
            self.others -= 1

    def finish(self, record: StepRecord) -> None:
        self.status = record.status
        self.output = record.output if record.status == StepStatus.SUCCEEDED else None
        if record.status == StepStatus.FAILED and self.spec.on_error == "continue":
            self.output = error_output(record)
        self.error = record.error
        self.ended_at = record.ended_at or 0.0
        self.awaiting = False


def succeeded(record: StepRecord, output: JSON, result: JSON = None) -> StepRecord:
    return record.replace(status=StepStatus.SUCCEEDED, output=output, result=result, ended_at=time.time())


def failed(record: StepRecord, error: str, result: JSON = None, *, is_error: bool = False) -> StepRecord:
    return record.replace(
        status=StepStatus.FAILED, error=error, result=result, output=None, is_error=is_error, ended_at=time.time()
    )


def retry_of(record: StepRecord) -> int | None:
    """The execution attempt a retry's marker row was written for; None for any other row."""
    if record.status != StepStatus.PENDING or not isinstance(record.result, Mapping):
        return None
    value = record.result.get(RETRY)
    return value if isinstance(value, int) else None


TOOL_ERROR = "tool_error"
STEP_FAILED = "step_failed"


def error_output(record: StepRecord) -> JSON:
    """What a step (or for_each item) with `on_error: continue` gives in place of an output when it fails:
    `tool_error` when the tool answered with an error result, `step_failed` for any other cause."""
    code = TOOL_ERROR if record.is_error else STEP_FAILED
    return {"error": {"code": code, "message": record.error or str(record.status)}}


def sign_in_pause(record: StepRecord, server: str, message: str, command: str) -> StepRecord:
    """`record` (a tool call's attempt) waiting for a sign-in: the prompt names the reason, server and command."""
    prompt = {"reason": SIGN_IN_NEEDED, "server": server, "message": message, "command": command}
    return record.replace(result={AWAITING: "sign_in", "prompt": prompt})


def signs_in(prompt: JSON) -> bool:
    """A pause's prompt asks for a sign-in, not an answer."""
    return isinstance(prompt, Mapping) and prompt.get("reason") == SIGN_IN_NEEDED


def error_text(result: JSON) -> str:
    """The text parts of a tool's error result, joined and cut to 2,000 characters ("" when it has none)."""
    content = result.get("content") if isinstance(result, dict) else None
    texts = [str(c.get("text", "")) for c in content or [] if isinstance(c, dict) and c.get("type") == "text"]
    return " ".join(t for t in texts if t).strip()[:2000]


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
        return name in self._steps

    def step_output(self, name: str) -> JSON:
        state = self._steps[name]
        if state.status is None:  # only a join starts before all its dependencies finished: not there yet
            return None
        if state.status == StepStatus.SUCCEEDED:
            return state.output
        if state.status == StepStatus.SKIPPED:
            return None
        if state.spec.on_error == "continue" and state.status == StepStatus.FAILED:
            return state.output  # its error, as the output later steps test
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


def build_states(template: Template) -> dict[str, StepState]:
    names = {spec.name for spec in template.steps}
    states = {spec.name: StepState(spec, frozenset(dependencies(spec) & names)) for spec in template.steps}
    for state in states.values():
        if state.spec.wait_for is not None:
            state.join = state.deps & set(state.spec.depends_on) if state.spec.depends_on else state.deps
        for dep in state.deps:
            states[dep].dependents.append(state.spec.name)
    return states


def child_key(store_name: str, number: int) -> str:
    """What the id of a template step's `number`-th child is derived from (see `ChildRequest.key`)."""
    return store_name if number == 1 else f"{store_name}#{number}"


@dataclass(slots=True)
class Loaded:
    """What a resumed run starts from, besides the step states `load_rows` filled in."""

    seq: int = 0  # the highest row seq so far
    opening: list[StepRecord] = field(default_factory=list)  # attempts a crash cut short, now recorded so
    reuse: set[str] = field(default_factory=set)  # waiting rows a relaunch replaces (same attempt)
    answer_for: str | None = None  # the waiting row a resume response answers
    order: dict[str, int] = field(default_factory=dict)  # finish order of finished steps
    done: int = 0
    failures: dict[str, int] = field(default_factory=dict)  # failed attempt rows, by row name
    elapsed: dict[str, float] = field(default_factory=dict)  # timeout spent by waiting attempts, by row name
    due: dict[str, float] = field(default_factory=dict)  # when waiting rows stop waiting, by row name


def load_rows(steps: Mapping[str, StepState], records: Sequence[StepRecord], clear: Mapping[str, JSON]) -> Loaded:
    """Rebuild step states from stored rows (latest attempt of each): finished rows are final, waiting
    rows are relaunched, rows left `running` by a dead process are recorded cancelled and run again."""
    loaded = Loaded()
    latest: dict[str, StepRecord] = {}
    for record in sorted(records, key=lambda r: (r.attempt, r.seq)):
        loaded.seq = max(loaded.seq, record.seq)
        latest[record.name] = record
        # A retry's marker counts as a failure: a template step run again starts a child of its own.
        if record.status == StepStatus.FAILED or retry_of(record) is not None:
            loaded.failures[record.name] = loaded.failures.get(record.name, 0) + 1
    waiting: list[StepRecord] = []
    for record in sorted(latest.values(), key=lambda r: (r.ended_at or 0.0, r.seq)):
        if record.name in clear:
            record = record.replace(output=clear[record.name])
        if record.status.finished:
            _load_finished(steps, record, loaded)
        elif (marker := awaiting_of(record)) is not None:
            waiting.append(record)
            loaded.reuse.add(record.name)
            if isinstance(spent := marker.get(ELAPSED), int | float):
                loaded.elapsed[record.name] = float(spent)
            if isinstance(due := marker.get(DUE), int | float):
                loaded.due[record.name] = float(due)
        elif record.status == StepStatus.RUNNING:
            loaded.opening.append(_interrupted(record))
        _load_attempt(steps, record)
    # A response answers the oldest waiting approval (or paused child); a for_each row only
    # aggregates its waiting items, so the answer goes to an item; a sign-in takes no answer.
    answerable = [r for r in waiting if (awaiting_of(r) or {}).get(AWAITING) not in _UNANSWERABLE]
    if answerable:
        loaded.answer_for = min(answerable, key=lambda r: r.seq).name
    for state in steps.values():
        state.blocked = sum(1 for dep in state.deps if not steps[dep].finished)
        state.arrived = sum(1 for dep in state.join if steps[dep].status == StepStatus.SUCCEEDED)
        state.others = sum(1 for dep in state.deps - state.join if not steps[dep].finished)
    return loaded


_UNANSWERABLE = (
    "items",
    "time",
    "signal",
    "llm",
    "sign_in",
)  # a response answers none of these: the time, a signal or a sign-in does


def _load_finished(steps: Mapping[str, StepState], record: StepRecord, loaded: Loaded) -> None:
    split = split_item_name(record.name)
    if split is not None:
        state = steps.get(split[0])
        if state is not None and record.status == StepStatus.SUCCEEDED:
            state.item_outputs[split[1]] = record.output
        return
    state = steps.get(record.name)
    if state is not None:
        state.finish(record)
        loaded.order[record.name] = len(loaded.order)
        loaded.done += 1


def _load_attempt(steps: Mapping[str, StepState], record: StepRecord) -> None:
    split = split_item_name(record.name)
    if split is None:
        if record.name in steps:
            steps[record.name].attempt = record.attempt
    elif split[0] in steps:
        steps[split[0]].item_attempts[split[1]] = record.attempt


def _interrupted(record: StepRecord) -> StepRecord:
    return record.replace(
        status=StepStatus.CANCELLED,
        ended_at=time.time(),
        error="interrupted: the process driving the execution stopped during this attempt; it is run again",
    )
