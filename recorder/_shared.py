"""One recording for a stateless-era client whose calls reach several gateways that share a store.

Such a client has no session a load balancer could pin, so each call may land on another gateway. Each
gateway keeps the client's `RecordingSession` in memory as usual; before a call it reads from the store
what the others recorded since it last looked (their steps' names count, their outputs resolve refs),
claims the new step's name in the store (one transaction: a name taken elsewhere meanwhile is retried
as the next one), and before answering waits until the finished step is written, so the next call,
wherever it lands, sees it. Used where the store is one that several gateways can share (PostgreSQL).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from toolreel.core.errors import StoreError
from toolreel.core.model import (
    JSON,
    Execution,
    ExecutionMode,
    ExecutionStatus,
    StepKind,
    StepRecord,
    StepStatus,
    new_id,
)
from toolreel.recorder._rows import PresetEntry, build
from toolreel.recorder._session import LiveStep, RecordingSession
from toolreel.recorder._writer import StoreWriter

if TYPE_CHECKING:
    from toolreel.core.store import Store

__all__ = ["CLAIM_TRIES", "SharedRecordings", "shares_recordings"]

logger = logging.getLogger("toolreel.recorder")
CLAIM_TRIES = 8  # names taken by other gateways in a row before the call is refused


def shares_recordings(url: str | None) -> bool:
    """Whether gateways may share the store at `url`: a database server (PostgreSQL), not a file."""
    return bool(url) and str(url).startswith(("postgresql", "postgres:"))


class SharedRecordings:
    def __init__(
        self,
        store: Callable[[], Awaitable[Store]],
        writer: StoreWriter,
        *,
        secret_values: Sequence[str],
        idle_seconds: float,
    ) -> None:
        self._store = store
        self._writer = writer
        self._secret_values = list(secret_values)
        self._idle = idle_seconds

    async def begin(
        self, session: RecordingSession, server: str | None, tool: str, arguments: Mapping[str, Any], shown: str | None
    ) -> LiveStep:
        """`RecordingSession.begin` with the other gateways' steps taken in first and the name claimed in
        the store. Raises RefError (nothing forwarded) or StoreError (the store cannot say)."""
        store = await self._ready()
        await self._catch_up(store, session)
        for _ in range(CLAIM_TRIES):
            live = session.begin(server, tool, arguments, shown)
            seq = await anyio.to_thread.run_sync(store.claim_step, _running(live))
            if seq is not None:
                live.seq = seq
                session.claimed(seq)
                return live
            session.retract(live)
            await self._catch_up(store, session)
        raise StoreError(f"another gateway took {CLAIM_TRIES} step names in a row for this client; call again")

    async def preset(
        self, session: RecordingSession, output: JSON, *, step: str | None, tool: str | None
    ) -> PresetEntry:
        """`RecordingSession.preset` with the name claimed in the store, where the step is written whole."""
        store = await self._ready()
        await self._catch_up(store, session)
        for _ in range(CLAIM_TRIES):
            name = session.preset_name(step, tool)  # RefError for a bad or taken name
            server, _, bare = (tool or "").rpartition("__")
            entry = PresetEntry(
                "preset", session.execution_id or "", name, 0, server or None, bare or None, output, 0.0
            )
            record = build(entry._replace(at=time.time()))
            assert isinstance(record, StepRecord)
            seq = await anyio.to_thread.run_sync(store.claim_step, record)
            if seq is not None:
                session.claimed(seq)
                return session.keep_preset(name, output, tool, seq)
            await self._catch_up(store, session)
        raise StoreError(f"another gateway took {CLAIM_TRIES} step names in a row for this client; call again")

    async def written(self) -> None:
        """Wait until what was recorded is in the store, for the client's next call on another gateway.
        A store that cannot take it is reported (the call is answered all the same)."""
        await self._writer.flush()

    async def _ready(self) -> Store:
        store = await self._store()
        store.redactor.add(self._secret_values)  # the running rows written here are redacted like the rest
        return store

    async def _catch_up(self, store: Store, session: RecordingSession) -> None:
        if session.execution is None:
            now = time.time()
            new = Execution(
                id=new_id(), mode=ExecutionMode.RECORD, status=ExecutionStatus.RECORDING,
                created_at=now, updated_at=now, session=session.key,
            )  # fmt: skip
            found = await anyio.to_thread.run_sync(
                lambda: store.recording_of(session.key, active_since=now - self._idle, new=new)
            )
            session.adopt(found.id, found.created_at)
        execution_id = session.execution_id
        assert execution_id is not None
        after = session.read_from()
        steps = await anyio.to_thread.run_sync(lambda: store.get_steps(execution_id, after_seq=after))
        session.absorb(steps)


def _running(live: LiveStep) -> StepRecord:
    return StepRecord(
        execution_id=live.execution_id,
        name=live.name,
        seq=live.seq,
        kind=StepKind.TOOL,
        status=StepStatus.RUNNING,
        server=live.server,
        tool=live.tool,
        input=live.input,
        resolved_input=live.resolved_input,
        started_at=live.started_at,
    )
