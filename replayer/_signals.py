"""Where a signal goes: the execution (the one named, or a child it waits on) whose step waits for it.

Synchronous (the engine calls it in a worker thread). A signal is checked before anything moves: a name
no waiting step has, or data its schema refuses, is a `SignalError` and the execution stays as it was.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from toolreel.core.errors import SignalError
from toolreel.core.form import mismatch
from toolreel.core.model import JSON, ExecutionMode
from toolreel.core.store import Store
from toolreel.replayer._state import awaiting_of
from toolreel.replayer._wait import signal_waits

__all__ = ["SignalTarget", "signal_target"]


@dataclass(frozen=True, slots=True)
class SignalTarget:
    execution_id: str  # the execution whose step waits for the signal
    root_id: str  # the execution to drive (a child is driven through its root)
    step: str


def signal_target(store: Store, execution_id: str, name: str, data: JSON) -> SignalTarget:
    execution = store.get_execution(execution_id)
    if execution.mode != ExecutionMode.AUTO:
        raise SignalError(f"execution {execution_id} is a recording, not an auto-mode run: it takes no signals")
    if execution.status.finished:
        raise SignalError(
            f"execution {execution_id} already {execution.status}: no step waits for signal {name!r} any more",
            execution_id=execution_id,
        )
    root = execution
    while root.parent_id is not None:
        root = store.get_execution(root.parent_id)
    found, waited = _find(store, execution_id, name)
    if found is None:
        waits = f"it waits for {', '.join(sorted(set(waited)))}" if waited else "no step of it waits for a signal"
        raise SignalError(
            f"execution {execution_id} ({execution.status}) does not wait for signal {name!r} now ({waits}); "
            "a signal is taken by a step that waits for it, once the execution is paused on it",
            execution_id=execution_id,
        )
    target, step, schema = found
    if isinstance(schema, dict):
        problem = mismatch(schema, data)
        if problem is not None:
            raise SignalError(
                f"execution {target}, step {step}: the data of signal {name!r} does not match the step's schema "
                f"{problem}; nothing was delivered",
                execution_id=target,
                step=step,
            )
    return SignalTarget(target, root.id, step)


def _find(store: Store, execution_id: str, name: str) -> tuple[tuple[str, str, JSON] | None, list[str]]:
    """The first waiting step (in this execution, then in the children it waits on) that waits for `name`,
    and the signals waited for anywhere there."""
    queue = deque([execution_id])
    waited: list[str] = []
    seen: set[str] = set()
    while queue:
        current = queue.popleft()
        if current in seen:
            continue
        seen.add(current)
        for row in sorted(store.get_steps(current), key=lambda r: r.seq):
            marker = awaiting_of(row)
            if marker is None:
                continue
            signal = signal_waits(row.result)
            if signal == name:
                prompt = marker.get("prompt")
                return (current, row.name, prompt.get("schema") if isinstance(prompt, dict) else None), waited
            if signal is not None:
                waited.append(signal)
            child = marker.get("execution_id")
            if isinstance(child, str):
                queue.append(child)
    return None, waited
