"""`wait` steps and approval timeouts: what waits for a time or a signal without holding a worker.

A wait longer than `SHORT_WAIT` ends the drive: its row stays `running` with a marker saying what it
waits for and, for a time, when it is due (`DUE`); the execution is `paused`, unclaimed, and its
`lease_until` is when it wakes (`Run` takes the earliest due of its waiting rows). Any process sharing
the store (a worker, a gateway) claims it then and drives it on (`Store.claim_executions`). A signal is
delivered by `Engine.signal`, which drives the execution with the signal's data for the waiting step.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio

from toolreel.core.errors import RefError
from toolreel.core.model import JSON, StepRecord
from toolreel.core.template import StepSpec, WaitSpec
from toolreel.core.template_schema import format_duration, parse_time
from toolreel.replayer._state import AWAITING, DUE, StepState, failed, succeeded

if TYPE_CHECKING:
    from toolreel.replayer._host import StepHost

__all__ = [
    "SHORT_WAIT",
    "approval_due",
    "approval_timed_out",
    "clock",
    "signal_waits",
    "wait_args",
    "wait_step",
]

Resolver = Callable[[JSON], Awaitable[JSON]]

SHORT_WAIT = 1.0
"""Seconds: a wait this short is waited in the drive (pausing and waking again would cost more)."""


def clock(epoch: float) -> str:
    """An instant as ISO 8601 in UTC, as outputs and prompts show it."""
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


async def wait_args(wait: WaitSpec, resolve: Resolver) -> dict[str, JSON]:
    """The resolved wait: `{for: seconds}`, `{until: epoch}` or `{signal: name}`; a ref to something that is
    not a time raises a RefError (the step fails naming its field). `resolve`: the run's bounded resolver."""
    if wait.for_ is not None:
        return {"for": wait.for_}
    if wait.signal is not None:
        return {"signal": wait.signal}
    assert wait.until is not None
    value = await resolve(wait.until)
    try:
        return {"until": parse_time(value)}
    except ValueError as exc:
        raise RefError(f"`{wait.until}` gave {value!r}: {exc}", ref=wait.until) from None


async def wait_step(host: StepHost, state: StepState, record: StepRecord) -> StepRecord:
    wait = state.spec.wait
    assert wait is not None
    if wait.signal is not None:
        return _signal(host, wait.signal, wait.schema, record)
    args: dict[str, Any] = state.args if isinstance(state.args, dict) else {}
    due = host.take_due(record.name)  # a resumed wait keeps the time it was due at
    if due is None:
        due = float(args["until"]) if "until" in args else time.time() + float(args["for"])
    left = due - time.time()
    if left > SHORT_WAIT:
        prompt = {"wait": "time", "until": clock(due), "message": f"step {record.name} waits until {clock(due)}"}
        return record.replace(result={AWAITING: "time", DUE: due, "prompt": prompt})
    await anyio.sleep(max(left, 0.0))
    return succeeded(record, {"until": clock(due)})


def _signal(host: StepHost, name: str, schema: JSON, record: StepRecord) -> StepRecord:
    if host.has_signal(name):
        return succeeded(record, host.take_signal(name))  # checked against the schema before it was sent
    prompt: dict[str, JSON] = {"signal": name, "message": f"step {record.name} waits for signal {name!r}"}
    if schema is not None:
        prompt["schema"] = schema
    return record.replace(result={AWAITING: "signal", "prompt": prompt})


def signal_waits(result: JSON) -> str | None:
    """The signal a waiting row's result waits for, if it does."""
    if not isinstance(result, dict) or result.get(AWAITING) != "signal":
        return None
    prompt = result.get("prompt")
    name = prompt.get("signal") if isinstance(prompt, dict) else None
    return name if isinstance(name, str) else None


# ---------------------------------------------------------------------- approval timeouts


def approval_due(host: StepHost, spec: StepSpec, name: str) -> float | None:
    """When an approval stops waiting: kept from its first wait (a resume does not restart the clock)."""
    due = host.take_due(name)
    if due is None and spec.approve_timeout is not None:
        due = time.time() + spec.approve_timeout
    return due


def approval_timed_out(spec: StepSpec, record: StepRecord, prompt: str) -> StepRecord:
    """What `on_timeout` decides once an approval's timeout passed with no answer."""
    waited = format_duration(spec.approve_timeout or 0.0)
    if spec.on_timeout == "approve":
        return succeeded(record, {"approved": True, "response": None, "timed_out": True})
    if spec.on_timeout == "default" and isinstance(spec.approve_schema, dict):
        fields = spec.approve_schema.get("properties") or {}
        return succeeded(record, {key: field.get("default") for key, field in fields.items()})
    return failed(record, f"approval_timeout: nobody answered {prompt!r} within {waited} (on_timeout: reject)")
