"""Recording mode: every upstream tool call of a client session becomes a step.

A `RecordingSession` resolves the agent's `@refs` against the steps it has recorded,
names steps `<tool>_<n>`, and hands finished steps to the `StoreWriter` (secrets
redacted). Nothing here waits for the disk.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.errors import RefError
from core.model import JSON, Execution, ExecutionMode, ExecutionStatus, StepKind, StepRecord, StepStatus, new_id, now
from core.refs import RESERVED_ROOTS, STEP_NAME_RE, MappingScope, ref_roots, resolve, step_name_for, step_output
from core.secrets import Redactor
from recorder._writer import StoreWriter

__all__ = ["LazyOutputs", "LiveStep", "RecordingSession", "redacted"]

STEP_META = "toolreel/step"
EXECUTION_META = "toolreel/execution"


@dataclass(slots=True)
class LiveStep:
    name: str
    seq: int
    server: str | None
    tool: str | None
    input: JSON
    resolved_input: JSON
    started_at: float
    status: StepStatus = StepStatus.RUNNING


class LazyOutputs(Mapping[str, JSON]):
    """Step outputs computed from raw results the first time a ref reads them: most
    outputs are never referenced, and the call path should not pay for parsing them."""

    def __init__(self) -> None:
        self._results: dict[str, Mapping[str, Any]] = {}
        self._outputs: dict[str, JSON] = {}

    def add(self, name: str, result: Mapping[str, Any]) -> None:
        self._results[name] = result

    def put(self, name: str, output: JSON) -> None:
        self._outputs[name] = output

    def __getitem__(self, name: str) -> JSON:
        if name not in self._outputs:
            self._outputs[name] = step_output(self._results[name])
        return self._outputs[name]

    def __contains__(self, name: object) -> bool:
        return name in self._outputs or name in self._results

    def __iter__(self) -> Iterator[str]:
        return iter({**dict.fromkeys(self._results), **dict.fromkeys(self._outputs)})

    def __len__(self) -> int:
        return len(set(self._results) | set(self._outputs))


@dataclass(frozen=True, slots=True)
class _Finished:
    """A finished call as queued; `build` runs on the writer's thread."""

    execution_id: str
    live: LiveStep
    result: Mapping[str, Any] | None
    error: str | None
    ended_at: float
    redactor: Redactor

    def build(self) -> StepRecord:
        live, result, error = self.live, self.result, self.error
        is_error = error is not None or result is None or bool(result.get("isError"))
        output: JSON = None
        if not is_error and result is not None:
            try:
                output = step_output(result)
            except RefError as exc:
                is_error, error = True, str(exc)
        record = StepRecord(
            execution_id=self.execution_id,
            name=live.name,
            seq=live.seq,
            kind=StepKind.TOOL,
            status=StepStatus.FAILED if is_error else StepStatus.SUCCEEDED,
            server=live.server,
            tool=live.tool,
            input=live.input,
            resolved_input=live.resolved_input,
            result=dict(result) if result is not None else None,
            output=output,
            is_error=is_error,
            error=(error or _error_text(result)) if is_error else None,
            started_at=live.started_at,
            ended_at=self.ended_at,
        )
        return redacted(record, self.redactor)


@dataclass(slots=True)
class _State:
    outputs: LazyOutputs = field(default_factory=lambda: LazyOutputs())
    failed: dict[str, str] = field(default_factory=dict)
    running: dict[str, LiveStep] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    summary: list[dict[str, Any]] = field(default_factory=list)
    seq: int = 0


class RecordingSession:
    def __init__(self, key: str, writer: StoreWriter, redactor: Redactor) -> None:
        self.key = key
        self.execution: Execution | None = None
        self._writer = writer
        self._redactor = redactor
        self._state = _State()

    @property
    def execution_id(self) -> str | None:
        return self.execution.id if self.execution else None

    def steps(self) -> list[dict[str, Any]]:
        """name, tool, status of every step so far, in start order (toolreel__status)."""
        return [dict(s) for s in self._state.summary]

    # calls ----------------------------------------------------------------------------
    def begin(self, server: str | None, tool: str, arguments: Mapping[str, Any]) -> LiveStep:
        """Resolve refs and open a step. Raises RefError (nothing is forwarded then)."""
        resolved = self._resolve(arguments)
        state = self._state
        self._ensure_execution()
        name = step_name_for(tool, state.counts)
        state.seq += 1
        live = LiveStep(name, state.seq, server, tool, dict(arguments), resolved, now())
        state.running[name] = live
        state.summary.append({"name": name, "tool": _listed(server, tool), "status": StepStatus.RUNNING.value})
        return live

    def end(self, live: LiveStep, result: Mapping[str, Any] | None, *, error: str | None = None) -> None:
        """Close a step with the upstream's result (or a transport error) and queue it.

        Only bookkeeping happens here; the output (SPEC §4), redaction and the row are
        built by the writer's thread, and refs compute an output the first time they need it.
        """
        state = self._state
        state.running.pop(live.name, None)
        failed = error is not None or result is None or bool(result.get("isError"))
        if failed:
            state.failed[live.name] = error or _error_text(result)
        else:
            assert result is not None
            state.outputs.add(live.name, result)
        live.status = StepStatus.FAILED if failed else StepStatus.SUCCEEDED
        self._set_summary(live.seq, live.status)
        self._writer.submit(_Finished(self._ensure_execution().id, live, result, error, now(), self._redactor))

    def preset(self, output: JSON, *, step: str | None = None, tool: str | None = None) -> StepRecord:
        """toolreel__set_step_result: a step with a given output and no upstream call."""
        state = self._state
        if step is not None:
            if not STEP_NAME_RE.fullmatch(step) or step in RESERVED_ROOTS:
                raise RefError(f"step name {step!r} must match [A-Za-z_][A-Za-z0-9_]* and not be input/item/index")
            if step in state.outputs or step in state.failed or step in state.running:
                raise RefError(f"step {step!r} already exists in this session; choose another name")
            name = step
        else:
            name = step_name_for(_unprefixed(tool) if tool else "preset", state.counts)
        state.seq += 1
        state.outputs.put(name, output)
        state.summary.append({"name": name, "tool": tool, "status": StepStatus.SUCCEEDED.value})
        stamp = now()
        server, _, bare = (tool or "").rpartition("__")
        record = StepRecord(
            execution_id=self._ensure_execution().id,
            name=name,
            seq=state.seq,
            kind=StepKind.PRESET,
            status=StepStatus.SUCCEEDED,
            server=server or None,
            tool=bare or None,
            output=output,
            result={"structuredContent": output} if isinstance(output, dict) else None,
            started_at=stamp,
            ended_at=stamp,
        )
        self._writer.submit(redacted(record, self._redactor))
        return record

    # helpers --------------------------------------------------------------------------
    def _resolve(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        state = self._state
        roots = ref_roots(dict(arguments))
        if not roots:
            return _unescaped(arguments)
        for root in roots:
            if root in state.running:
                raise RefError(
                    f"`@{root}` names step {root}, which has not finished yet; wait for its result, then pass it on",
                    ref=f"@{root}",
                )
        scope = MappingScope(steps=state.outputs, failed=state.failed)
        resolved = resolve(dict(arguments), scope)
        assert isinstance(resolved, dict)
        return resolved

    def _ensure_execution(self) -> Execution:
        if self.execution is None:
            stamp = now()
            self.execution = Execution(
                id=new_id(),
                mode=ExecutionMode.RECORD,
                status=ExecutionStatus.RECORDING,
                created_at=stamp,
                updated_at=stamp,
                session=self.key,
            )
            self._writer.submit(self.execution)
        return self.execution

    def _set_summary(self, seq: int, status: StepStatus) -> None:
        # summary rows are appended in seq order, so seq - 1 is the row
        self._state.summary[seq - 1]["status"] = status.value


def redacted(record: StepRecord, redactor: Redactor) -> StepRecord:
    # The output is read from the result, so checking the result covers it.
    if not redactor.might_hold_secrets([record.input, record.resolved_input, record.result]):
        return record
    redact = redactor.redact
    resolved, paths = redact(record.resolved_input)
    written, _ = redact(record.input)
    result, _ = redact(record.result)
    output, _ = redact(record.output)
    if not paths and resolved is record.resolved_input and result is record.result and output is record.output:
        return record
    return record.replace(input=written, resolved_input=resolved, result=result, output=output, redacted=paths)


def _unescaped(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """No refs: only `@@` escapes can differ from what was written; resolve handles those."""
    text_needs = any(isinstance(v, str) and v.startswith("@@") for v in arguments.values())
    if not text_needs and not any(isinstance(v, dict | list) for v in arguments.values()):
        return dict(arguments)
    resolved = resolve(dict(arguments), MappingScope())
    assert isinstance(resolved, dict)
    return resolved


def _error_text(result: Mapping[str, Any] | None) -> str:
    if not result:
        return "no result"
    texts = [c.get("text", "") for c in result.get("content") or [] if isinstance(c, dict) and c.get("type") == "text"]
    text = " ".join(t for t in texts if t).strip()
    return (text[:500] if text else json.dumps(result)[:500]) or "the tool reported an error"


def _listed(server: str | None, tool: str) -> str:
    return f"{server}__{tool}" if server else tool


def _unprefixed(tool: str) -> str:
    return tool.rpartition("__")[2] or tool
