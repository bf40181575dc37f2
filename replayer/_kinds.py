"""What each launched step kind does: tool calls with timeout, retry and idempotency; for_each;
approvals; child templates (`replayer._child`). Each returns the step's final row (or a `running`
row marked `awaiting` when it waits for a person); rows of attempts and items are queued on the way.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from functools import partial
from typing import Any

import anyio
import anyio.to_thread

from toolreel.core.caller import ToolCall
from toolreel.core.errors import CodeError, CodeTimeout, RefError, UpstreamError, UpstreamTimeout
from toolreel.core.form import check_answer, parse_answer_text
from toolreel.core.model import JSON, StepKind, StepRecord, StepStatus
from toolreel.core.names import server_part
from toolreel.core.refs import step_output
from toolreel.core.sandbox import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT, CodeLimits, run_code
from toolreel.core.template import StepSpec
from toolreel.core.tool_digest import check_definition
from toolreel.replayer._child import template_step
from toolreel.replayer._decide import bounded, ref_failure, resolve_key
from toolreel.replayer._host import StepHost
from toolreel.replayer._llm import llm_step
from toolreel.replayer._policy import (
    NO_RETRY,
    attempt_failure_kind,
    idempotency_store_key,
    parse_answer,
    retry_delay,
    should_retry,
)
from toolreel.replayer._script import script_step
from toolreel.replayer._state import (
    AWAITING,
    DUE,
    SIGN_IN_NEEDED,
    StepState,
    StopCause,
    StopReason,
    awaiting_of,
    error_output,
    error_text,
    failed,
    sign_in_pause,
    succeeded,
)
from toolreel.replayer._wait import approval_due, approval_timed_out, wait_step

__all__ = ["STEP_KINDS", "execute"]

logger = logging.getLogger("toolreel.replayer")

# A step spec's kind -> the kind its rows are stored with.
STEP_KINDS = {
    "tool": StepKind.TOOL,
    "return": StepKind.RETURN,
    "approve": StepKind.APPROVE,
    "template": StepKind.TEMPLATE,
    "code": StepKind.CODE,
    "script": StepKind.SCRIPT,
    "wait": StepKind.WAIT,
    "switch": StepKind.SWITCH,
    "llm": StepKind.LLM,
}

# The caller enforces a step's timeout and cancels upstream; this backstop only catches a caller that does not.
_TIMEOUT_GRACE = 1.0


async def execute(host: StepHost, state: StepState, record: StepRecord) -> StepRecord:
    """Run the launched step `state` (its `running` row is `record`) by its kind: see `StepHost`."""
    spec = state.spec
    if spec.approve is not None:
        return await _approve(host, state, record)
    if spec.wait is not None:
        return await wait_step(host, state, record)
    if spec.llm is not None:
        return await llm_step(host, state, record)
    if spec.for_each is not None:
        return await _for_each(host, state, record)
    if spec.template is not None:
        return await template_step(host, state, record, state.args)
    if spec.code is not None:
        return await _code(host, spec, record, state.args)
    if spec.script is not None:
        return await script_step(host, spec, record, state.args)
    return await _tool(host, spec, record, state.args, state.key)


# ---------------------------------------------------------------------- code


async def _code(host: StepHost, spec: StepSpec, record: StepRecord, value: JSON) -> StepRecord:
    """The script in a worker thread (a busy one never holds up the event loop); retried like a tool call
    on `timeout` when the policy says so."""
    assert spec.code is not None
    limits = CodeLimits(timeout=spec.timeout or DEFAULT_TIMEOUT, memory_mb=spec.memory_mb or DEFAULT_MEMORY_MB)
    policy = spec.retry or NO_RETRY
    attempt = 1
    while True:
        try:
            output = await anyio.to_thread.run_sync(
                partial(run_code, spec.code, value, limits), abandon_on_cancel=True, limiter=host.ctx.code_lane
            )
        except CodeError as exc:
            ended = failed(record, f"code: {exc}")
            kind = "timeout" if isinstance(exc, CodeTimeout) else None
        else:
            return succeeded(record, output)
        if not should_retry(policy, attempt, kind):
            return ended
        host.end_attempt(ended)
        attempt += 1
        await anyio.sleep(retry_delay(policy, attempt))
        record = host.next_attempt(record)


# ---------------------------------------------------------------------- tool calls


async def _tool(host: StepHost, spec: StepSpec, record: StepRecord, args: JSON, key: str | None) -> StepRecord:
    if not isinstance(args, dict):
        return failed(record, f"input: resolved to {type(args).__name__}, not an object of tool arguments")
    changed = check_definition(host.ctx.caller, spec.name, spec.tool, spec.tool_digest)
    if changed is not None:  # stopped before calling a tool that may no longer mean what it did
        return failed(record, changed)
    stored_key = None
    if key is not None:
        stored_key = idempotency_store_key(key, scope=spec.idempotency_scope, execution_id=host.execution_id)
        stored = await anyio.to_thread.run_sync(partial(host.ctx.store.get_idempotent, stored_key, now=time.time()))
        if stored is not None:
            return succeeded(record, step_output(stored), stored)  # the stored result: not called again
    policy = spec.retry or NO_RETRY
    attempt = 1  # attempts in this drive: a re-run after a crash does not spend the retry budget
    while True:
        result, error = await _call(host, spec, args)
        if error is None and result is not None and not result.get("isError"):
            if stored_key is not None:
                await _remember(host, spec, stored_key, result)
            return succeeded(record, step_output(result), result)
        if error is not None and error.code == SIGN_IN_NEEDED:  # only a person can go on: wait, unsent
            return sign_in_pause(record, error.server or "", str(error), getattr(error, "command", ""))
        ended = _failed_attempt(spec, record, result, error)
        if not should_retry(policy, attempt, attempt_failure_kind(error, is_error=error is None)):
            return ended
        host.end_attempt(ended)  # ended: its start row must not be announced after this
        attempt += 1
        await anyio.sleep(retry_delay(policy, attempt))
        record = host.next_attempt(record)


async def _call(
    host: StepHost, spec: StepSpec, args: dict[str, Any]
) -> tuple[dict[str, Any] | None, UpstreamError | None]:
    assert spec.tool is not None
    timeout = spec.timeout
    backstop = anyio.fail_after(timeout + _TIMEOUT_GRACE) if timeout else contextlib.nullcontext()
    limiter = host.ctx.limiter
    try:
        limiter.acquire_nowait()  # a free slot: no trip through the event loop
    except anyio.WouldBlock:
        await limiter.acquire()
    try:
        with backstop:
            return await host.ctx.caller.call_tool(ToolCall(spec.tool, args, timeout)), None
    except TimeoutError:
        server = host.ctx.caller.server_of(spec.tool) or server_part(spec.tool)
        return None, UpstreamTimeout(server=server, tool=spec.tool, seconds=timeout or 0.0, step=spec.name)
    except UpstreamTimeout as exc:
        if timeout:  # the step's own timeout was the limit (it replaces the server's)
            server = exc.server or server_part(spec.tool)
            return None, UpstreamTimeout(server=server, tool=spec.tool, seconds=timeout, step=spec.name)
        return None, exc
    except UpstreamError as exc:
        return None, exc
    finally:
        limiter.release()


async def _remember(host: StepHost, spec: StepSpec, key: str, result: dict[str, Any]) -> None:
    expires = time.time() + spec.idempotency_ttl if spec.idempotency_ttl else None
    await anyio.to_thread.run_sync(partial(host.ctx.store.put_idempotent, key, result, expires_at=expires))


def _failed_attempt(spec: StepSpec, record: StepRecord, result: JSON, error: UpstreamError | None) -> StepRecord:
    if error is not None:
        message = str(error)
        if error.server and error.server not in message:
            message = f"server {error.server!r}: {message}"
        return failed(record, message)
    return failed(
        record, f"tool {spec.tool} returned an error: {error_text(result) or '(no text)'}", result, is_error=True
    )


# ---------------------------------------------------------------------- approvals


async def _approve(host: StepHost, state: StepState, record: StepRecord) -> StepRecord:
    prompt = str(state.args)
    form = state.spec.approve_schema
    due = approval_due(host, state.spec, record.name)
    if isinstance(form, dict):
        return await _ask_for_data(host, state, record, prompt, form, due)
    answer: bool | None = None
    response = host.take_response(state.spec.name)
    if response is not None:
        answer = parse_answer(response)
    elif host.ctx.approver is not None:
        asked = await _ask(host, prompt, None, due)
        if asked is _TIMED_OUT:
            return approval_timed_out(state.spec, record, prompt)
        answer = asked if isinstance(asked, bool) or asked is None else True
    if answer is None:
        return _pause(state, record, prompt, prompt, due)
    if answer:
        return succeeded(record, {"approved": True, "response": response})
    said = f" (response: {response!r})" if response is not None else ""
    return failed(record, f"approval refused: {prompt!r}{said}")


def _pause(state: StepState, record: StepRecord, prompt: str, shown: JSON, due: float | None) -> StepRecord:
    """Nobody could answer now: the step waits (until `due`, when its timeout decides)."""
    if due is not None and due <= time.time():
        return approval_timed_out(state.spec, record, prompt)
    marker: dict[str, JSON] = {AWAITING: "approval", "prompt": shown}
    if due is not None:
        marker[DUE] = due
    return record.replace(result=marker)


async def _ask_for_data(
    host: StepHost, state: StepState, record: StepRecord, message: str, form: dict[str, Any], due: float | None
) -> StepRecord:
    """An approval that asks for fields: the checked answer is the step's output. A bad answer from a
    client leaves the step waiting (a `--response` is checked before the run resumes)."""
    answer: dict[str, JSON] | bool | None = None
    response = host.take_response(state.spec.name)
    if response is not None:
        answer = parse_answer_text(form, response)
    elif host.ctx.approver is not None:
        asked = await _ask(host, message, form, due)
        if asked is _TIMED_OUT:
            return approval_timed_out(state.spec, record, message)
        answer = asked if not isinstance(asked, _TimedOut) else None
        if isinstance(answer, dict):
            try:
                answer = check_answer(form, answer)
            except ValueError as exc:
                logger.warning(
                    "execution %s: step %s: the answer was refused (%s); it pauses",
                    host.execution_id,
                    state.spec.name,
                    exc,
                )
                answer = None
    if answer is None or answer is True:
        return _pause(state, record, message, {"message": message, "schema": form}, due)
    if answer is False:
        return failed(record, f"approval refused: {message!r}")
    return succeeded(record, answer)


class _TimedOut:
    """What `_ask` returns when the approval's timeout passed while the person was being asked."""


_TIMED_OUT = _TimedOut()


async def _ask(
    host: StepHost, prompt: str, form: dict[str, Any] | None, due: float | None
) -> dict[str, JSON] | bool | _TimedOut | None:
    assert host.ctx.approver is not None
    left = due - time.time() if due is not None else math.inf
    if left <= 0:
        return _TIMED_OUT
    try:
        with anyio.move_on_after(left) as asking:
            if form is None:
                return await host.ctx.approver.approve(prompt)
            return await host.ctx.approver.approve(prompt, form)
    except Exception:  # the person's client went away: nobody can be asked now, so the run pauses
        logger.warning(
            "execution %s: asking for approval failed; the execution pauses", host.execution_id, exc_info=True
        )
        return None
    return _TIMED_OUT if asking.cancelled_caught else None


# ---------------------------------------------------------------------- for_each


class _Items:
    """The shared progress of one for_each step's items."""

    def __init__(self, count: int) -> None:
        self.outputs: list[JSON] = [None] * count
        self.failure: tuple[int, str] | None = None
        self.waiting: dict[int, JSON] = {}  # index -> prompt
        self.due: float | None = None  # the earliest time a waiting item stops waiting on its own
        self.scope = anyio.CancelScope()

    def stopping(self) -> StopCause | None:
        """Why the items still running are stopped: a failed one fails the step, so their children
        are cancelled (not left to be resumed)."""
        if self.failure is None:
            return None
        return (StopReason.CANCEL, f"item {self.failure[0]} of the parent's for_each step failed")


async def _for_each(host: StepHost, state: StepState, record: StepRecord) -> StepRecord:
    spec = state.spec
    items = state.items or []
    progress = _Items(len(items))
    limiter = anyio.CapacityLimiter(max(1, spec.concurrency or host.ctx.max_concurrency))
    with progress.scope:
        async with anyio.create_task_group() as tg:
            for index, item in enumerate(items):
                if index in state.item_outputs:
                    progress.outputs[index] = state.item_outputs[index]
                else:
                    tg.start_soon(_one_item, host, state, index, item, limiter, progress)
    if progress.failure is not None:
        index, error = progress.failure
        host.cancel_items(spec.name, f"cancelled: item {index} of step {spec.name} failed")
        return failed(record, f"item {index} failed: {error}")
    if progress.waiting:
        first = min(progress.waiting)
        marker = {AWAITING: "items", "items": sorted(progress.waiting), "prompt": progress.waiting[first]}
        return record.replace(result=marker if progress.due is None else {**marker, DUE: progress.due})
    return succeeded(record, progress.outputs)


async def _one_item(
    host: StepHost, state: StepState, index: int, item: JSON, limiter: anyio.CapacityLimiter, progress: _Items
) -> None:
    async with limiter:
        record = await _item(host, state, index, item, progress)
    host.end_attempt(record)
    marker = awaiting_of(record)
    if record.status == StepStatus.SUCCEEDED:
        progress.outputs[index] = record.output
    elif marker is not None:
        progress.waiting[index] = marker.get("prompt")
        due = marker.get(DUE)
        if isinstance(due, int | float):
            progress.due = min(due, progress.due) if progress.due is not None else float(due)
    elif state.spec.on_error == "continue":
        progress.outputs[index] = error_output(record)
    elif progress.failure is None:
        progress.failure = (index, record.error or str(record.status))
        progress.scope.cancel()


async def _item(host: StepHost, state: StepState, index: int, item: JSON, progress: _Items) -> StepRecord:
    spec = state.spec
    scope = host.scope.for_item(item, index)
    try:
        args = await bounded(spec.input, scope) if spec.input is not None else {}
        key = await resolve_key(spec, scope)
    except RefError as exc:
        return failed(host.begin_item(state, index, None, None), ref_failure("input", exc))
    record = host.begin_item(state, index, args, key)
    if spec.template is not None:
        return await template_step(host, state, record, args, progress.stopping)
    if spec.code is not None:
        return await _code(host, spec, record, args)
    return await _tool(host, spec, record, args, key)
