"""Recording mode: client sessions become executions, tool calls become steps.

`Recorder` owns the background `StoreWriter` (which feeds the drain process, `recorder.drain`)
and one `RecordingSession` per client session; the gateway calls `begin` before forwarding
and `end` with the result.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from toolreel.core.errors import StoreError
from toolreel.recorder._session import EXECUTION_META, STEP_META, LiveStep, RecordingSession
from toolreel.recorder._writer import StoreWriter, backlog_mark

if TYPE_CHECKING:
    from toolreel.core.store import Store

__all__ = [
    "EXECUTION_META",
    "STEP_META",
    "LiveStep",
    "Recorder",
    "RecordingSession",
    "StoreWriter",
    "backlog_mark",
]


logger = logging.getLogger("toolreel.recorder")


class Recorder:
    def __init__(
        self,
        db: str | None = None,
        *,
        secret_values: Iterable[str] = (),
        local_store: Callable[[], Awaitable[Store]] | None = None,
    ) -> None:
        values = list(secret_values)
        self.writer = StoreWriter(db, values, on_error=self._failed, local_store=local_store)
        self.sessions: dict[str, RecordingSession] = {}
        self.pending_errors: list[str] = []  # reported to the agent with its next result
        self._ending: list[tuple[RecordingSession, LiveStep, Mapping[str, Any]]] = []

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        await self.writer.run(task_status=task_status)

    def session(self, key: str) -> RecordingSession:
        session = self.sessions.get(key)
        if session is None:
            session = self.sessions[key] = RecordingSession(key, self.writer)
        return session

    def end_soon(self, session: RecordingSession, live: LiveStep, result: Mapping[str, Any]) -> None:
        """Close a step right after the current loop turn, once its response is written: the
        loop runs this before it reads anything more, so a call that names the step is handled
        after it, and the caller does not wait for the packing. The steps that end in one turn
        close together, in one callback (at 8 calls in flight: one handle, not eight, and the
        same code run back to back)."""
        self._ending.append((session, live, result))
        if len(self._ending) == 1:
            asyncio.get_running_loop().call_soon(self._end_pending)

    def _end_pending(self) -> None:
        pending, self._ending = self._ending, []
        for session, live, result in pending:
            try:
                session.end(live, result)
            except Exception:  # one step's bookkeeping failing must not lose the others
                logger.exception("recording step %s failed", live.name)

    def _failed(self, exc: StoreError) -> None:
        self.pending_errors.append(f"toolreel could not save the recording: {exc}")
        del self.pending_errors[:-5]

    def take_errors(self) -> list[str]:
        errors, self.pending_errors = self.pending_errors, []
        return errors
