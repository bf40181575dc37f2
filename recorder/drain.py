"""The drain: a child process of the gateway that writes its recordings to the store.

`python -m recorder.drain` reads batches of recorded calls from stdin (`recorder._journal`),
builds the rows (outputs per SPEC §4, secrets redacted), writes each batch in one
transaction and acknowledges it on stdout. It runs at the lowest CPU priority: parsing,
redaction and SQL never compete with forwarding, and a recording that cannot keep up
with a burst of calls is written when the burst ends. A failed write is reported to the
gateway and retried; the drain ends at end of input, or when its gateway is gone.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

from core.errors import StoreError
from core.secrets import Redactor
from recorder._journal import encode, read_frame, unpack
from recorder._rows import entry, write_entries

if TYPE_CHECKING:
    from core.store import Store

__all__ = ["main"]

logger = logging.getLogger("toolreel.drain")
RETRY_DELAY = 1.0
LAST_TRIES = 3  # attempts left for a batch once the gateway is gone


class _Reply:
    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream

    def __call__(self, *message: Any) -> bool:
        """Send a message to the gateway; False when it is gone (then the store is what matters)."""
        try:
            self._stream.write(encode(message))
            self._stream.flush()
        except (BrokenPipeError, ValueError):
            return False
        return True


def main() -> int:
    # Ctrl-C reaches the whole process group; the gateway decides when recording ends (end of input).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.nice(19)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="toolreel recorder: %(message)s")
    source, reply = sys.stdin.buffer, _Reply(sys.stdout.buffer)
    parent = os.getppid()
    hello = read_frame(source)
    if hello is None or hello[0] != "hello":
        logger.error("expected a hello from the gateway, got %r; exiting", hello)
        return 2
    _, db, secret_values = hello
    store = _open(db, reply, parent)
    if store is None:
        return 1
    reply("ready")
    try:
        return _drain(store, Redactor(secret_values), source, reply, parent)
    finally:
        store.close()


def _open(db: str | None, reply: _Reply, parent: int) -> Store | None:
    from core.store import open_store  # SQLAlchemy: loaded after the priority is lowered

    while True:
        try:
            return open_store(db)
        except StoreError as exc:  # file-system errors included
            if not reply("error", str(exc)):  # the gateway reports what it is told; else say it here
                logger.error("%s; retrying in %g s", exc, RETRY_DELAY)
        if os.getppid() != parent:
            return None
        time.sleep(RETRY_DELAY)


def _drain(store: Store, redactor: Redactor, source: IO[bytes], reply: _Reply, parent: int) -> int:
    created: set[str] = set()
    while True:
        message = _next_frame(source)
        if message is None:
            return 0
        if message[0] != "batch":
            logger.error("ignored an unknown message %r", message[0])
            continue
        entries = [entry(unpack(packed)) for packed in message[1]]
        if not _write_until_done(store, redactor, entries, created, reply, parent):
            logger.error("%d recorded calls not saved: the store kept failing and the gateway is gone", len(entries))
            return 1
        reply("done", len(entries))


def _next_frame(source: IO[bytes]) -> Sequence[Any] | None:
    try:
        return read_frame(source)
    except (ValueError, EOFError, TypeError) as exc:
        logger.error("the gateway sent a frame that cannot be read (%s); stopping", exc)
        return None


def _write_until_done(
    store: Store, redactor: Redactor, entries: list[Any], created: set[str], reply: _Reply, parent: int
) -> bool:
    tries_left: int | None = None
    while True:
        try:
            write_entries(store, redactor, entries, created)
            return True
        except StoreError as exc:
            if not reply("error", str(exc)):
                logger.error("recording not saved: %s", exc)
        if os.getppid() != parent:
            tries_left = LAST_TRIES if tries_left is None else tries_left - 1
            if tries_left <= 0:
                return False
        time.sleep(RETRY_DELAY)


if __name__ == "__main__":
    sys.exit(main())
