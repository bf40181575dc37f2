"""`Recorder`: the gateway's recording hook, one `RecordingSession` per client session over one `StoreWriter`."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from toolreel.core.errors import StoreError
from toolreel.recorder import _spool
from toolreel.recorder._session import LiveStep, RecordingSession
from toolreel.recorder._writer import StoreWriter

if TYPE_CHECKING:
    from toolreel.core.store import Store

__all__ = ["Recorder"]

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
        _spool.know_secrets(values)
        spool = None if local_store is not None else _spool.Spool(_spool.journal_dirs(db), values)
        self.writer = StoreWriter(db, values, on_error=self._failed, local_store=local_store, spool=spool)
        self.sessions: dict[str, RecordingSession] = {}
        self.pending_errors: list[str] = []  # reported to the agent with its next result

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        await self.writer.run(task_status=task_status)

    def session(self, key: str) -> RecordingSession:
        session = self.sessions.get(key)
        if session is None:
            session = self.sessions[key] = RecordingSession(key, self.writer)
        return session

    def close_session(self, key: str) -> None:
        """The client session is over: its bookkeeping (step names, outputs for refs) is released;
        what it recorded is in the writer's hands already."""
        session = self.sessions.pop(key, None)
        if session is not None:
            session.close()

    def end(self, session: RecordingSession, live: LiveStep, result: Mapping[str, Any]) -> None:
        """Close a step before its answer goes out: its entry is in the journal (`recorder._spool`)
        when the agent reads the step's name, so a gateway killed right after answering loses nothing."""
        try:
            session.end(live, result)
        except Exception:  # the step's bookkeeping failing must not fail the call it records
            logger.exception("recording step %s failed", live.name)

    def _failed(self, exc: StoreError) -> None:
        if str(exc) == self.writer.failing:
            return  # a failing write is said on every result while it lasts (`StoreWriter.failing`)
        self.pending_errors.append(f"toolreel could not save the recording: {exc}")
        del self.pending_errors[:-5]

    def take_errors(self) -> list[str]:
        errors, self.pending_errors = self.pending_errors, []
        return errors
