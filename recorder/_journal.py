"""The pipe between a gateway and its drain process: length-prefixed frames.

Each frame is a 4-byte big-endian length and a `marshal`-encoded message. The pipe is
private to a gateway and the child it started, and carries JSON-typed values only; marshal
is the standard library's fastest codec for exactly those types (a batch of small steps
encodes in about a microsecond each), and unlike pickle, loading it never runs code.

Gateway to drain: `("hello", db_url, secret_values)` once, then `("batch", [packed entry, ...])`,
and `("flush",)` when someone waits to read what was recorded (the drain writes at once).
Drain to gateway: `("ready",)` once the store is open, `("done", count)` after each batch is
committed, `("error", message)` when a write failed (the drain retries it).
"""

from __future__ import annotations

import json
import marshal
import os
import select
import struct
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["MAX_FRAME", "FrameReader", "decode", "encode", "pack", "pack_tuple", "unpack"]

_HEADER = struct.Struct(">I")
MAX_FRAME = 1 << 31  # a batch holding a few very large outputs still fits


def _dumps(value: tuple[Any, ...]) -> bytes:
    try:
        return marshal.dumps(value, 4)
    except ValueError:  # a value marshal does not know (a str subclass, say): JSON-typed it is
        return marshal.dumps(_plain(value), 4)


def encode(message: tuple[Any, ...]) -> bytes:
    data = _dumps(message)
    if len(data) >= MAX_FRAME:
        raise ValueError(f"a recording batch of {len(data)} bytes is larger than {MAX_FRAME}")
    return _HEADER.pack(len(data)) + data


def pack(item: tuple[Any, ...]) -> bytes:
    """One recorded entry as bytes, at once: the call's dicts are freed with the call, and what
    waits for the next batch is one flat object (a queue of live dicts kept the allocator's
    working set large and cold, which cost more than the encoding)."""
    return _dumps(tuple(item))  # marshal takes plain tuples only, not named ones


pack_tuple = _dumps
"""`pack` of an entry that is already a plain tuple (a call's path: one function call fewer)."""


def unpack(data: bytes) -> Any:
    return marshal.loads(data)


def _plain(message: tuple[Any, ...]) -> Any:
    # JSON round trip: only JSON types survive, which is what the store keeps anyway
    return json.loads(json.dumps(message, default=str))


def decode(data: bytes) -> Sequence[Any]:
    message = marshal.loads(data)
    if not isinstance(message, tuple | list) or not message or not isinstance(message[0], str):
        raise ValueError(f"not a journal message: {str(message)[:200]}")
    return message


class FrameReader:
    """Frames from a blocking file descriptor, with a timeout (the drain waits for input or
    for a quiet moment, whichever comes first)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = bytearray()

    def poll(self, timeout: float | None, *, limit: int | None = None) -> list[Sequence[Any]] | None:
        """The messages that arrive within `timeout` seconds (None: wait for one): at least one,
        or [] when the time is up; None at end of input. ValueError for a frame that is not a
        journal message."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not (messages := self._complete(limit)):
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            readable, _, _ = select.select([self._fd], [], [], left)
            if not readable:
                return []
            data = os.read(self._fd, 1 << 20)
            if not data:
                return None
            self._buffer += data
        return messages

    def _complete(self, limit: int | None) -> list[Sequence[Any]]:
        messages: list[Sequence[Any]] = []
        buffer, at = self._buffer, 0
        while len(buffer) - at >= _HEADER.size and (limit is None or len(messages) < limit):
            (length,) = _HEADER.unpack_from(buffer, at)
            if len(buffer) - at - _HEADER.size < length:
                break
            messages.append(decode(bytes(buffer[at + _HEADER.size : at + _HEADER.size + length])))
            at += _HEADER.size + length
        del buffer[:at]
        return messages


def frame_length(header: bytes) -> int:
    (length,) = _HEADER.unpack(header)
    return int(length)


HEADER_SIZE = _HEADER.size
