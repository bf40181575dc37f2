"""Live pages: a server-sent event whenever what a page shows has changed.

A page subscribes to a topic (`executions`, or `execution:<id>`); the stream looks at the store
every `POLL` seconds and sends `change` when the topic's fingerprint differs. Pages watching the
same topic share one look per poll (a short cache), so a page costs a wake-up, not a query.
The page then fetches the JSON again: the stream carries no data of its own.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import anyio

from toolreel.core.errors import NotFoundError, StoreError

__all__ = ["POLL", "Fingerprints", "Streams", "digest"]

POLL = 0.5  # seconds between looks; also how stale a shared look may be
HEARTBEAT = 15.0  # a comment line keeps proxies from closing an idle stream


@dataclass(frozen=True, slots=True)
class _Look:
    at: float
    value: str


class Fingerprints:
    """Topic -> fingerprint, computed by `compute` at most once per `POLL` whatever the readers."""

    def __init__(self, compute: Callable[[str], Awaitable[str]]) -> None:
        self._compute = compute
        self._cache: dict[str, _Look] = {}
        self._locks: dict[str, anyio.Lock] = {}
        self.looks = 0  # how many times the store was asked (the bench reads it)

    async def get(self, topic: str) -> str:
        lock = self._locks.setdefault(topic, anyio.Lock())
        async with lock:
            look = self._cache.get(topic)
            if look is None or time.monotonic() - look.at >= POLL:
                self.looks += 1
                look = _Look(time.monotonic(), await self._compute(topic))
                self._cache[topic] = look
                self._prune()
            return look.value

    def _prune(self) -> None:
        """Topics no page looked at for a while (closed pages) are forgotten."""
        if len(self._cache) < 256:
            return
        old = time.monotonic() - 60.0
        for topic in [t for t, look in self._cache.items() if look.at < old]:
            del self._cache[topic]
            self._locks.pop(topic, None)


def digest(value: object) -> str:
    return hashlib.sha1(json.dumps(value, default=str).encode(), usedforsecurity=False).hexdigest()


class Streams:
    """The open event streams, so that a server that stops can end them as finished responses
    (a stream cut by cancellation is reported by the web server as a failed request)."""

    def __init__(self) -> None:
        self.stopping = anyio.Event()
        self.open = 0
        self._none_open = anyio.Event()
        self._none_open.set()

    async def stop(self, timeout: float = 1.0) -> None:
        self.stopping.set()
        with anyio.move_on_after(timeout):
            await self._none_open.wait()

    async def events(self, fingerprints: Fingerprints, topic: str) -> AsyncIterator[str]:
        """`change` events for one page, until it goes away or the server stops."""
        self.open += 1
        self._none_open = anyio.Event()
        try:
            async for event in _changes(fingerprints, topic, self.stopping):
                yield event
        finally:
            self.open -= 1
            if self.open == 0:
                self._none_open.set()


async def _changes(fingerprints: Fingerprints, topic: str, stopping: anyio.Event) -> AsyncIterator[str]:
    last = None
    quiet_since = time.monotonic()
    yield "retry: 2000\n\n"
    while not stopping.is_set():
        try:
            current = await fingerprints.get(topic)
        except (StoreError, NotFoundError) as exc:
            current = f"error: {exc}"
        if current != last:
            last = current
            quiet_since = time.monotonic()
            yield f"event: change\ndata: {json.dumps({'topic': topic})}\n\n"
        elif time.monotonic() - quiet_since >= HEARTBEAT:
            quiet_since = time.monotonic()
            yield ": still here\n\n"
        with anyio.move_on_after(POLL):
            await stopping.wait()
