"""The `script` step kind: a Code Mode script (SPEC §13) run inside a template's execution.

Each tool call the script makes is a row `<step>.<n>` of the execution (n from 1), committed before
its answer reaches the script. A re-driven execution (a crash, a resume) runs the script again from
the start: call n is answered from its finished row instead of the server (the same tool with the
same arguments, else `script_diverged`), so no finished call runs twice.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import anyio.to_thread

from toolreel.core.caller import ToolCall
from toolreel.core.errors import CodeError, UpstreamError
from toolreel.core.model import JSON, StepKind, StepRecord, StepStatus
from toolreel.core.refs import step_output
from toolreel.core.script_run import answer_from_journal, answered, drive_script
from toolreel.core.script_sandbox import (
    DEFAULT_MAX_CALLS,
    DEFAULT_SCRIPT_MEMORY_MB,
    DEFAULT_SCRIPT_TIMEOUT,
    Answer,
    Request,
    ScriptLimits,
)
from toolreel.core.template import StepSpec
from toolreel.replayer._host import StepHost
from toolreel.replayer._state import error_text, failed, succeeded

__all__ = ["call_row_name", "script_limits", "script_step"]

_FIRST_DELAY, _LAST_DELAY = 0.25, 4.0  # seconds between tries of a transient failure: about 8 s in all


def call_row_name(step: str, index: int) -> str:
    """The row of call `index` (from 0) of script step `step` (step names cannot contain `.`)."""
    return f"{step}.{index + 1}"


def script_limits(spec: StepSpec) -> ScriptLimits:
    """A script step's limits: its own, else the defaults (a run and a dry replay alike)."""
    return ScriptLimits(
        timeout=spec.timeout or DEFAULT_SCRIPT_TIMEOUT,
        memory_mb=spec.memory_mb or DEFAULT_SCRIPT_MEMORY_MB,
        max_calls=spec.max_calls if spec.max_calls is not None else DEFAULT_MAX_CALLS,
    )


async def script_step(host: StepHost, spec: StepSpec, record: StepRecord, value: JSON) -> StepRecord:
    assert spec.script is not None
    if value is not None and not isinstance(value, dict):
        return failed(record, f"input: resolved to {type(value).__name__}, not an object for the script")
    limits = script_limits(spec)
    rows = await anyio.to_thread.run_sync(partial(host.ctx.store.get_steps, host.execution_id))
    journal = {row.name: row for row in rows if row.name.startswith(f"{spec.name}.") and answered(row)}
    calls = _Calls(host, spec, journal)
    finished = await drive_script(spec.script, value or {}, limits, calls.call)
    result = {"logs": list(finished.logs), "calls": calls.made}
    if finished.error is not None:
        return failed(record, f"script: {finished.error}", result)
    return succeeded(record, finished.value, result)


class _Calls:
    def __init__(self, host: StepHost, spec: StepSpec, journal: dict[str, StepRecord]) -> None:
        self.host, self.spec, self.journal = host, spec, journal
        self.made = 0

    async def call(self, index: int, request: Request) -> Answer | CodeError:
        self.made = index + 1
        name = call_row_name(self.spec.name, index)
        done = self.journal.get(name)
        if done is not None:
            return answer_from_journal(done, request, index)
        host = self.host
        server = host.ctx.caller.server_of(request.name)
        row = StepRecord(
            execution_id=host.execution_id, name=name, seq=host.next_seq(), kind=StepKind.TOOL,
            status=StepStatus.RUNNING, server=server, tool=_bare(request.name, server), input=request.arguments,
            resolved_input=request.arguments, started_at=time.time(),
        )  # fmt: skip
        host.submit([row])
        try:
            result = await self._call(request)
        except UpstreamError as exc:
            ended = failed(row, str(exc))
            answer = Answer(request.id, False, error=str(exc))
        else:
            if result.get("isError"):
                text = error_text(result) or "the tool reported an error"
                ended = failed(row, f"tool {request.name} returned an error: {text}", result, is_error=True)
                answer = Answer(request.id, False, error=text)
            else:
                output = step_output(result)
                ended, answer = succeeded(row, output, result), Answer(request.id, True, output)
        if not await host.commit([ended]):  # durable before the script hears of it
            return CodeError("script_cancelled: the execution stopped being driven here")
        return answer

    async def _call(self, request: Request) -> dict[str, Any]:
        """One call; an unreachable or starting server (a transient error) is tried again a few times, as a
        worker's servers may still be starting when a resumed script makes its first live call."""
        delay = _FIRST_DELAY
        while True:
            try:
                return await self.host.ctx.caller.call_tool(ToolCall(request.name, request.arguments))
            except UpstreamError as exc:
                if not exc.transient or delay > _LAST_DELAY:
                    raise
            await anyio.sleep(delay)
            delay *= 2


def _bare(listed: str, server: str | None) -> str:
    return listed.removeprefix(f"{server}__") if server else listed
