"""Recording mode: every upstream tool call of a client session becomes a step.

A `RecordingSession` resolves the agent's `@refs` against the steps it has recorded,
names steps `<tool>_<n>`, and hands finished steps to the `StoreWriter` as plain tuples
(the drain process builds and redacts the rows). Nothing here waits for the disk, and the
call path does as little as it can: most calls hold no ref and most outputs are never read.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from toolreel.core.bounded_refs import costly, resolve_bounded
from toolreel.core.errors import RefError
from toolreel.core.model import JSON, StepRecord, StepStatus, new_id
from toolreel.core.names import prefixed_name, split_name
from toolreel.core.refs import (
    RESERVED_ROOTS,
    STEP_NAME_RE,
    MappingScope,
    ref_roots,
    refs_in,
    resolve,
    step_name_base,
    step_name_for,
    step_output,
)
from toolreel.recorder._journal import pack_tuple, unpack
from toolreel.recorder._outputs import KeptOutputs
from toolreel.recorder._rows import ExecutionEntry, PresetEntry, StepEntry, error_text
from toolreel.recorder._writer import StoreWriter

__all__ = ["LazyOutputs", "LiveStep", "RecordingSession"]

_RUNNING = StepStatus.RUNNING.value
_SUCCEEDED = StepStatus.SUCCEEDED.value
_FAILED = StepStatus.FAILED.value
_RESULT = StepEntry._fields.index("result")
STEP_META = "toolreel/step"
MAX_STEP_NAME = 64  # a preset's name is a column, a ref root and a template step name
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
    execution_id: str


def _parsed_output(packed: bytes) -> JSON:
    return step_output(unpack(packed)[_RESULT])


class LazyOutputs(KeptOutputs):
    """Step outputs computed from raw results the first time a ref reads them: most
    outputs are never referenced, and the call path should not pay for parsing them.

    A finished call's result is kept inside its packed entry (`recorder._journal.pack`),
    the very bytes queued for the store: one encoding per call, and as bytes a session's
    results cost the garbage collector nothing (as dicts they were scanned again and again,
    a few microseconds per call once a session held a hundred thousand). Within a memory
    budget (`recorder._outputs`): older results wait in a spill file until a ref reads them."""

    def __init__(self, budget: int | None = None) -> None:
        super().__init__(_parsed_output, budget)


@dataclass(slots=True)
class _State:
    outputs: LazyOutputs = field(default_factory=lambda: LazyOutputs())
    failed: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    # (server, tool) -> (step name base, listed name): computed once per tool
    names: dict[tuple[str | None, str], tuple[str, str | None]] = field(default_factory=dict)
    # name -> listed tool, in start order: plain strings, which the collector skips. A step
    # is running while it is here and in neither `outputs` nor `failed`: a call opens a
    # step with one insertion and closes it with one, and no live object is kept per step.
    tools: dict[str, str | None] = field(default_factory=dict)
    seq: int = 0
    # One recording across gateways: the seq up to which the shared store has been read, and
    # name -> seq of the steps another gateway was running then.
    read_seq: int = 0
    elsewhere: dict[str, int] = field(default_factory=dict)

    def running(self, name: str) -> bool:
        return name in self.tools and name not in self.failed and name not in self.outputs

    def status(self, name: str) -> str:
        if name in self.failed:
            return _FAILED
        return _SUCCEEDED if name in self.outputs else _RUNNING


class RecordingSession:
    def __init__(self, key: str, writer: StoreWriter) -> None:
        self.key = key
        self.execution: ExecutionEntry | None = None
        self._writer = writer
        self._state = _State()

    @property
    def execution_id(self) -> str | None:
        return self.execution.id if self.execution else None

    def steps(self) -> list[dict[str, Any]]:
        """name, tool, status of every step so far, in start order (toolreel__status)."""
        state = self._state
        return [{"name": name, "tool": tool, "status": state.status(name)} for name, tool in state.tools.items()]

    # calls ----------------------------------------------------------------------------
    async def resolve_costly(self, arguments: Mapping[str, Any]) -> dict[str, Any] | None:
        """Arguments holding a ref whose JSONPath can run long (a filter), resolved off the event loop within
        the ref budget (`core.bounded_refs`); None when they hold none, for `begin` to resolve them."""
        if not _may_hold_refs(arguments) or not any(costly(ref) for ref in refs_in(dict(arguments))):
            return None
        self._refuse_running(ref_roots(dict(arguments)))
        scope = MappingScope(steps=self._state.outputs, failed=self._state.failed)
        resolved = await resolve_bounded(dict(arguments), scope, self._state.outputs.source)
        assert isinstance(resolved, dict)
        return resolved

    def begin(
        self,
        server: str | None,
        tool: str,
        arguments: Mapping[str, Any],
        shown: str | None = None,
        resolved: dict[str, Any] | None = None,
    ) -> LiveStep:
        """Resolve refs and open a step. Raises RefError (nothing is forwarded then).

        `shown`: the name the agent sees (`toolsOverride`), which names the step; `tool`, the
        upstream's own name, is what is recorded and called. `resolved`: what `resolve_costly` gave."""
        if resolved is None and _may_hold_refs(arguments):
            resolved = self._resolve(arguments)
        elif resolved is None:  # most calls hold no `@` at all: their arguments are forwarded as they are
            resolved = arguments if type(arguments) is dict else dict(arguments)
        state = self._state
        execution_id = self.execution.id if self.execution is not None else self._start_execution()
        names = state.names.get((server, tool))
        if names is None:
            names = state.names[server, tool] = (step_name_base(shown or tool), prefixed_name(server, tool))
        base, listed = names
        count = state.counts[base] = state.counts.get(base, 0) + 1
        name = f"{base}_{count}"
        if name in state.tools:  # toolreel__set_step_result took this name: the call gets the next free one
            name = _free_name(state, base)
        state.seq += 1
        state.tools[name] = listed
        return LiveStep(name, state.seq, server, tool, arguments, resolved, time.time(), execution_id)

    def end(self, live: LiveStep, result: Mapping[str, Any] | None, *, error: str | None = None) -> None:
        """Close a step with the upstream's result (or a transport error) and queue it.

        Only bookkeeping happens here; the output (SPEC §4), redaction and the row are
        built by the drain process, and refs compute an output the first time they need it.
        """
        self._writer.submit_packed(self.close_step(live, result, error))

    def close_step(self, live: LiveStep, result: Mapping[str, Any] | None, error: str | None = None) -> bytes:
        """`end` without the queueing: the step's packed entry, for a caller that stores it itself."""
        state = self._state
        name = live.name
        # a StepEntry's fields as a plain tuple: what `pack` encodes, without making the named one
        packed = pack_tuple(
            (
                "step", live.execution_id, name, live.seq, live.server, live.tool,
                live.input, live.resolved_input, result, error, live.started_at, time.time(),
            )
        )  # fmt: skip
        if error is not None or result is None or result.get("isError"):
            state.failed[name] = error or error_text(result)
        else:
            state.outputs.add_packed(name, packed)
        return packed

    def preset(self, output: JSON, *, step: str | None = None, tool: str | None = None) -> PresetEntry:
        """toolreel__set_step_result: a step with a given output and no upstream call."""
        entry = self.keep_preset(self.preset_name(step, tool), output, tool)
        self._writer.submit(entry)
        return entry

    def preset_name(self, step: str | None, tool: str | None) -> str:
        """The name a preset step gets: `step` if it is a free, legal name, else `<tool>_<n>`."""
        state = self._state
        if step is None:
            name = step_name_for(_unprefixed(tool) if tool else "preset", state.counts)
            return _free_name(state, name.rpartition("_")[0]) if name in state.tools else name
        if not STEP_NAME_RE.fullmatch(step) or step in RESERVED_ROOTS or len(step) > MAX_STEP_NAME:
            raise RefError(
                f"step name {step[:80]!r} must match [A-Za-z_][A-Za-z0-9_]*, be at most {MAX_STEP_NAME} "
                "characters and not be input/item/index"
            )
        if step in state.tools or step in state.outputs or step in state.failed:
            raise RefError(f"step {step!r} already exists in this session; choose another name")
        return step

    def keep_preset(self, name: str, output: JSON, tool: str | None, seq: int | None = None) -> PresetEntry:
        """Record preset step `name` in the session (not yet in the store): its output resolves refs now."""
        state = self._state
        execution_id = self.execution.id if self.execution is not None else self._start_execution()
        state.seq = max(state.seq, seq) if seq is not None else state.seq + 1
        state.outputs.put(name, output)
        server, bare = split_name(tool)
        state.tools[name] = prefixed_name(server, bare)
        at = seq if seq is not None else state.seq
        return PresetEntry("preset", execution_id, name, at, server, bare, output, time.time())

    def close(self) -> None:
        """The session is over: the outputs kept for its refs (and their spill file) are let go."""
        self._state.outputs.close()

    # one recording across gateways (recorder._shared) -------------------------------------
    def adopt(self, execution_id: str, created_at: float) -> None:
        """Record into an execution that exists in the store already (another gateway's, or made there)."""
        if self.execution is None:
            self.execution = ExecutionEntry("execution", execution_id, created_at, self.key)

    def absorb(self, steps: Iterable[StepRecord]) -> None:
        """Take in steps another gateway recorded for this client (read from the shared store): their
        names count, their outputs resolve refs, and a step still running there is waited for by name."""
        state = self._state
        for step in steps:
            state.seq, state.read_seq = max(state.seq, step.seq), max(state.read_seq, step.seq)
            name = step.name
            if name in state.tools and name not in state.elsewhere:
                continue  # this gateway's own step, or one taken in already
            state.tools[name] = prefixed_name(step.server, step.tool)
            base, _, count = name.rpartition("_")
            if count.isdigit():
                state.counts[base] = max(state.counts.get(base, 0), int(count))
            if step.status is StepStatus.RUNNING:
                state.elsewhere[name] = step.seq
                continue
            state.elsewhere.pop(name, None)
            if step.status is StepStatus.SUCCEEDED:
                state.outputs.put(name, step.output)
            else:
                state.failed[name] = step.error or f"step {name} {step.status.value}"

    @property
    def read_seq(self) -> int:
        """The highest seq read from the shared store (or claimed right after it)."""
        return self._state.read_seq

    def read_from(self) -> int:
        """The seq after which the store may hold what this session has not taken in: seqs are handed
        out in commit order, so that is the last one read, or before a step still running elsewhere."""
        state = self._state
        return min((state.read_seq, *(seq - 1 for seq in state.elsewhere.values())))

    def claimed(self, seq: int) -> None:
        """The store gave this session's newest step `seq` (its name was free on every gateway)."""
        state = self._state
        state.seq = max(state.seq, seq)
        if seq == state.read_seq + 1:  # no other gateway's claim came in between: nothing left to read
            state.read_seq = seq

    def retract(self, name: str) -> None:
        """Undo `begin` (or `preset_name`): the store refused the name; what the session reads next decides
        the name it proposes then."""
        state = self._state
        state.tools.pop(name, None)
        base, _, count = name.rpartition("_")
        if count.isdigit() and state.counts.get(base) == int(count):
            state.counts[base] = int(count) - 1

    # helpers --------------------------------------------------------------------------
    def _resolve(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Arguments that may hold refs (an `@` somewhere), resolved or unescaped."""
        state = self._state
        roots = ref_roots(dict(arguments))
        if not roots and not state.tools:
            return _unescaped(arguments)
        self._refuse_running(roots)
        # With no valid ref, still resolved against the steps: a string that starts as a ref to one of them
        # but does not parse is refused by name rather than sent on as text.
        scope = MappingScope(steps=state.outputs, failed=state.failed)
        resolved = resolve(dict(arguments), scope)
        assert isinstance(resolved, dict)
        return resolved

    def _refuse_running(self, roots: Iterable[str]) -> None:
        for root in roots:
            if self._state.running(root):
                raise RefError(
                    f"`@{root}` names step {root}, which has not finished yet; wait for its result, then pass it on",
                    ref=f"@{root}",
                )

    def _start_execution(self) -> str:
        self.execution = ExecutionEntry("execution", new_id(), time.time(), self.key)
        self._writer.submit(self.execution)
        return self.execution.id


def _free_name(state: _State, base: str) -> str:
    """The next `<base>_<n>` no step of the session has (counting on from where `base` is)."""
    count = state.counts.get(base, 0)
    while (name := f"{base}_{count}") in state.tools or count == 0:
        count += 1
    state.counts[base] = count
    return name


def _may_hold_refs(value: Any) -> bool:
    """False when no string anywhere in `value` holds an `@`: nothing to resolve or unescape.
    (Loops, not `any()` over a generator, and strings tested in place, not by a call each:
    this runs on every call, mostly on a few flat values.)"""
    if isinstance(value, str):
        return "@" in value
    if isinstance(value, dict):
        value = value.values()
    elif not isinstance(value, list):
        return False
    for item in value:
        if type(item) is str:
            if "@" in item:
                return True
        elif _may_hold_refs(item):
            return True
    return False


def _unescaped(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """No refs: only `@@` escapes can differ from what was written; resolve handles those."""
    text_needs = any(isinstance(v, str) and v.startswith("@@") for v in arguments.values())
    if not text_needs and not any(isinstance(v, dict | list) for v in arguments.values()):
        return dict(arguments)
    resolved = resolve(dict(arguments), MappingScope())
    assert isinstance(resolved, dict)
    return resolved


def _unprefixed(tool: str) -> str:
    return split_name(tool)[1] or tool
