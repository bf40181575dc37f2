"""Driving a Code Mode script: its machine on a worker thread of its own, its calls on the event loop.

`drive_script` is the one bridge between the synchronous sandbox (`core.script_sandbox`) and the
asynchronous caller: the gateway's `toolreel__run_script` and a template's `script` step both give it
a `call` that makes one tool call. Calls are made one at a time, in the order the script made them, so
step names and the calls a resumed run must repeat depend on the script and its answers alone. The
run's limits (wall time, number of calls) and the caller's cancellation end it with named errors.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Awaitable, Callable

import anyio
import anyio.from_thread
import anyio.to_thread
from anyio.lowlevel import RunVar

from toolreel.core.errors import CodeError, CodeTimeout
from toolreel.core.model import JSON, StepRecord, StepStatus
from toolreel.core.script_sandbox import Answer, Finished, Request, ScriptLimits, ScriptMachine

__all__ = ["CallFn", "answer_from_journal", "answered", "drive_script"]

# One call of the script: its answer, or a named error that ends the run.
CallFn = Callable[[int, Request], Awaitable[Answer | CodeError]]


SCRIPTS_AT_ONCE = 32
_LANE: RunVar[anyio.CapacityLimiter] = RunVar("toolreel_script_lane")


def _lane() -> anyio.CapacityLimiter:
    """The threads scripts run on (one per event loop), apart from anyio's default pool: a script's thread
    waits for its calls, and a call may need a default-pool thread (the store), so scripts filling that
    pool would deadlock."""
    try:
        return _LANE.get()
    except LookupError:
        lane = anyio.CapacityLimiter(SCRIPTS_AT_ONCE)
        _LANE.set(lane)
        return lane


async def drive_script(code: str, value: JSON, limits: ScriptLimits, call: CallFn) -> Finished:
    """Run the script to its end; `call(index, request)` makes call number `index` (from 0)."""
    return await _Drive(code, value, limits, call).run()


class _Drive:
    def __init__(self, code: str, value: JSON, limits: ScriptLimits, call: CallFn) -> None:
        self.code, self.value, self.limits, self.call = code, value, limits, call
        self.made = 0
        self.deadline = time.monotonic() + limits.timeout
        self.stopped = threading.Event()  # the caller went away: end at the next call
        self.in_flight: anyio.CancelScope | None = None  # the call being made, cancelled with the caller

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    async def run(self) -> Finished:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._stop_when_cancelled)
            try:
                finished = await anyio.to_thread.run_sync(self._drive, limiter=_lane())
            finally:
                tg.cancel_scope.cancel()
        return finished

    async def _stop_when_cancelled(self) -> None:
        try:
            await anyio.sleep_forever()
        finally:  # cancelled: with the caller, or because the run is over
            self.stopped.set()
            if self.in_flight is not None:
                self.in_flight.cancel()

    def _drive(self) -> Finished:
        """On the worker thread: the machine runs here, each batch of calls goes to the event loop."""
        try:
            machine = ScriptMachine(self.code, self.value, self.limits)
        except CodeError as exc:
            return Finished(error=exc)
        out = machine.start(self.remaining())
        while not isinstance(out, Finished):
            answers = anyio.from_thread.run(self._answer, out)
            if isinstance(answers, CodeError):
                return Finished(error=answers, logs=machine.logs())
            out = machine.advance(answers, self.remaining())
        return out

    async def _answer(self, requests: list[Request]) -> list[Answer] | CodeError:
        answers = []
        for request in requests:
            refused = self._refused()
            if refused is not None:
                return refused
            index = self.made
            self.made += 1
            with anyio.move_on_after(self.remaining()) as self.in_flight:
                answer = await self.call(index, request)
                if isinstance(answer, CodeError):
                    return answer
                answers.append(answer)
                continue
            return self._refused() or self._timeout()  # cancelled with the caller, else out of time
        return answers

    def _refused(self) -> CodeError | None:
        if self.stopped.is_set():
            return CodeError("script_cancelled: the call that ran the script was cancelled")
        if self.remaining() <= 0:
            return self._timeout()
        if self.made >= self.limits.max_calls:
            return CodeError(
                f"script_max_calls: the script made more than {self.limits.max_calls} tool calls "
                "(raise max_calls if it legitimately needs more)"
            )
        return None

    def _timeout(self) -> CodeTimeout:
        return CodeTimeout(
            f"script_timeout: the script ran past its timeout of {self.limits.timeout:g} s and was stopped"
        )


def answered(step: StepRecord) -> bool:
    """Whether a journal row holds a call's answer: it succeeded or the tool failed (a row cancelled or
    interrupted with its driver holds none: that call is made again)."""
    return step.status in (StepStatus.SUCCEEDED, StepStatus.FAILED)


def answer_from_journal(step: StepRecord, request: Request, index: int) -> Answer | CodeError:
    """Call `index` of a resumed run answered from its journal row `step`, if the script asks for the same
    call again (same tool, same arguments; arguments stored redacted are not compared); else `script_diverged`."""
    listed = f"{step.server}__{step.tool}" if step.server else str(step.tool)
    same_tool = request.name in (listed, step.tool)
    same_args = bool(step.redacted) or step.input == request.arguments  # redacted values cannot be compared
    if not (same_tool and same_args):
        return CodeError(
            f"script_diverged: on resuming, call {index + 1} of the script was {request.name}"
            f"({_short(request.arguments)}) but the run had called {listed}({_short(step.input)}); a script "
            "must make the same calls given the same input and answers (no clock, randomness or outside state)"
        )
    if step.status is StepStatus.SUCCEEDED:
        return Answer(request.id, True, step.output)
    return Answer(request.id, False, error=step.error or "the tool reported an error")


def _short(value: JSON) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 200 else text[:199] + "…"
