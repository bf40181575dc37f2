"""One recording for a stateless-era client whose calls reach several gateways that share a store.

Such a client has no session a load balancer could pin, so each call may land on another gateway. Each
gateway keeps the client's `RecordingSession` in memory as usual; before a call it reads from the store
what the others recorded since it last looked (their steps' names count, their outputs resolve refs),
claims the new step's name in the store (one transaction: a name taken elsewhere meanwhile is retried
as the next one), and before answering waits until the finished step is written, so the next call,
wherever it lands, sees it. Used where the store is one that several gateways can share (PostgreSQL).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from toolreel.core.errors import RefBudgetError, RefError, StoreError
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
from toolreel.core.names import split_name
from toolreel.recorder._journal import unpack
from toolreel.recorder._rows import PresetEntry, build, entry
from toolreel.recorder._session import LiveStep, RecordingSession
from toolreel.recorder._writer import StoreWriter

if TYPE_CHECKING:
    from toolreel.core.store import Store

__all__ = ["CLAIM_TRIES", "SharedRecordings", "shares_recordings"]

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
        """`RecordingSession.begin` with the step's name claimed in the store. Most calls take one transaction:
        the claim itself says when another gateway wrote steps since this one last read, and returns them.
        Raises RefError (nothing forwarded) or StoreError (the store cannot say)."""
        store = await self._ready()
        if session.execution is None:
            await self._adopt(store, session)
        read_again = True  # a ref may name a step another gateway made: read once more before refusing it
        for _ in range(CLAIM_TRIES):
            try:
                # a JSONPath filter resolves off the loop, within the ref budget, as on an unshared store
                resolved = await session.resolve_costly(arguments)
                live = session.begin(server, tool, arguments, shown, resolved)
            except RefBudgetError:
                raise  # spent: reading the others' steps again would not make it cheaper
            except RefError:
                if not read_again:
                    raise
                read_again = False
                await self._catch_up(store, session)
                continue
            claim = await self._claim(store, session, _running(live))
            if claim is not None:
                live.seq = claim
                return live
        raise StoreError(f"another gateway took {CLAIM_TRIES} step names in a row for this client; call again")

    async def preset(
        self, session: RecordingSession, output: JSON, *, step: str | None, tool: str | None
    ) -> PresetEntry:
        """`RecordingSession.preset` with the name claimed in the store, where the step is written whole."""
        store = await self._ready()
        if session.execution is None:
            await self._adopt(store, session)
        for _ in range(CLAIM_TRIES):
            name = session.preset_name(step, tool)  # RefError for a bad or taken name
            server, bare = split_name(tool)
            made = PresetEntry("preset", session.execution_id or "", name, 0, server, bare, output, time.time())
            record = build(made)
            assert isinstance(record, StepRecord)
            claim = await self._claim(store, session, record)
            if claim is not None:
                return session.keep_preset(name, output, tool, claim)
        raise StoreError(f"another gateway took {CLAIM_TRIES} step names in a row for this client; call again")

    async def end(self, session: RecordingSession, live: LiveStep, result: Mapping[str, Any]) -> None:
        """Close the step and write it to the store before the answer goes out, so the client's next call
        sees it wherever it lands (one transaction from here: the recorder process's batching would make
        each call wait for a round trip through it). A store that cannot take it now gets it through the
        recorder, journaled, and the StoreError says so."""
        packed = session.close_step(live, result)
        record = build(entry(unpack(packed)))
        assert isinstance(record, StepRecord)
        store = await self._store()
        try:
            await anyio.to_thread.run_sync(store.put_step, record)
        except StoreError:
            self._writer.submit_packed(packed)
            raise

    async def _ready(self) -> Store:
        store = await self._store()
        if self._secret_values:  # told once: the rows written from here are redacted like the rest
            store.redactor.add(self._secret_values)
            self._secret_values = []
        return store

    async def _claim(self, store: Store, session: RecordingSession, step: StepRecord) -> int | None:
        """The seq `step` was written at, or None when another gateway holds its name (given up then: the
        caller proposes one again). What others wrote meanwhile is read in either way."""
        after = session.read_seq
        claim = await anyio.to_thread.run_sync(lambda: store.claim_step(step, after_seq=after))
        if claim.seq is None:
            session.retract(step.name)  # first: the step of that name read now is the other gateway's
        if claim.newer:
            session.absorb(claim.newer)
        if claim.seq is not None:
            session.claimed(claim.seq)
        elif not claim.newer:  # taken by a step this session read before it had a name here: read all again
            await self._catch_up(store, session, after=0)
        return claim.seq

    async def _adopt(self, store: Store, session: RecordingSession) -> None:
        """The client's first call here: its recording, made by any gateway (or now), and its steps so far."""
        now = time.time()
        new = Execution(
            id=new_id(), mode=ExecutionMode.RECORD, status=ExecutionStatus.RECORDING,
            created_at=now, updated_at=now, session=session.key,
        )  # fmt: skip
        found = await anyio.to_thread.run_sync(
            lambda: store.recording_of(session.key, active_since=now - self._idle, new=new)
        )
        session.adopt(found.id, found.created_at)
        await self._catch_up(store, session)

    async def _catch_up(self, store: Store, session: RecordingSession, *, after: int | None = None) -> None:
        execution_id = session.execution_id
        assert execution_id is not None
        since = session.read_from() if after is None else after
        steps = await anyio.to_thread.run_sync(
            lambda: store.get_steps(execution_id, after_seq=since, all_attempts=True)
        )
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
