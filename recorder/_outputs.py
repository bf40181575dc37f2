"""The outputs a recording session keeps for refs, within a memory budget.

Every finished call's packed entry (`recorder._journal.pack`) is kept so that a later `@step`
can read its output. Past `budget` bytes, the oldest entries move to a spill file (a temporary
file, unlinked at once: nothing is left on disk when the process ends) and are read back from it
when a ref asks; parsed outputs are cached within the same budget, newest kept. Ten 10 MB results
once held 359 MB of a gateway's memory; they now hold at most the budget, plus the one being read.
"""

from __future__ import annotations

import os
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping

from toolreel.core.model import JSON

__all__ = ["BUDGET_ENV", "DEFAULT_BUDGET", "KeptOutputs"]

BUDGET_ENV = "TOOLREEL_REF_MEMORY_MB"
DEFAULT_BUDGET = 64 * 1024 * 1024  # bytes of packed results and parsed outputs kept in memory, per session


def budget_from_env() -> int:
    value = os.environ.get(BUDGET_ENV, "")
    try:
        return max(1, int(float(value) * 1024 * 1024)) if value else DEFAULT_BUDGET
    except ValueError:
        return DEFAULT_BUDGET


class _Spill:
    """Packed entries written to an unlinked temporary file, read back by (offset, length)."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="toolreel-refs-")  # noqa: SIM115 - lives as long as its session
        self._end = 0

    def put(self, data: bytes) -> tuple[int, int]:
        self._file.seek(self._end)
        self._file.write(data)
        where = (self._end, len(data))
        self._end += len(data)
        return where

    def get(self, where: tuple[int, int]) -> bytes:
        self._file.flush()
        self._file.seek(where[0])
        return self._file.read(where[1])

    def close(self) -> None:
        self._file.close()


class KeptOutputs(Mapping[str, JSON]):
    """name -> output, parsed on first read by `parse(packed)`; at most `budget` bytes in memory."""

    def __init__(self, parse: Callable[[bytes], JSON], budget: int | None = None) -> None:
        self._parse = parse
        self._budget = budget_from_env() if budget is None else budget
        self._packed: OrderedDict[str, bytes] = OrderedDict()  # oldest first
        self._packed_bytes = 0
        self._spilled: dict[str, tuple[int, int]] = {}
        self._spill: _Spill | None = None
        self._given: dict[str, JSON] = {}  # outputs set directly (toolreel__set_step_result): small, kept
        self._parsed: OrderedDict[str, tuple[JSON, int]] = OrderedDict()  # cache, least recently read first
        self._parsed_bytes = 0

    def add_packed(self, name: str, packed: bytes) -> None:
        self._packed[name] = packed
        self._packed_bytes += len(packed)
        while self._packed_bytes > self._budget and len(self._packed) > 1:
            old, data = self._packed.popitem(last=False)
            self._packed_bytes -= len(data)
            if self._spill is None:
                self._spill = _Spill()
            self._spilled[old] = self._spill.put(data)

    def put(self, name: str, output: JSON) -> None:
        self._given[name] = output

    def source(self, name: str) -> tuple[Callable[[bytes], JSON], bytes] | None:
        """How to parse `name`'s output and the bytes to parse, when it is held as bytes: another process
        can be sent these instead of the parsed value (bytes cost a copy; a parsed value, a walk)."""
        packed = self._packed.get(name)
        if packed is None and self._spill is not None and name in self._spilled:
            packed = self._spill.get(self._spilled[name])
        return None if packed is None or name in self._given else (self._parse, packed)

    def __getitem__(self, name: str) -> JSON:
        if name in self._given:
            return self._given[name]
        cached = self._parsed.get(name)
        if cached is not None:
            self._parsed.move_to_end(name)
            return cached[0]
        packed = self._packed.get(name)
        if packed is None:
            if self._spill is None or name not in self._spilled:
                raise KeyError(name)
            packed = self._spill.get(self._spilled[name])
        output = self._parse(packed)
        self._cache(name, output, len(packed))
        return output

    def _cache(self, name: str, output: JSON, size: int) -> None:
        if size > self._budget:
            return  # read again from its bytes next time rather than hold a parsed copy past the budget
        self._parsed[name] = (output, size)
        self._parsed_bytes += size
        while self._parsed_bytes > self._budget:
            _, (_, dropped) = self._parsed.popitem(last=False)
            self._parsed_bytes -= dropped

    def __contains__(self, name: object) -> bool:
        return name in self._given or name in self._packed or name in self._spilled

    def __iter__(self) -> Iterator[str]:
        return iter({**dict.fromkeys(self._spilled), **dict.fromkeys(self._packed), **dict.fromkeys(self._given)})

    def __len__(self) -> int:
        return len(set(self._spilled) | set(self._packed) | set(self._given))

    @property
    def in_memory(self) -> int:
        """Bytes of packed results and parsed outputs held in memory (the budget's measure)."""
        return self._packed_bytes + self._parsed_bytes

    def close(self) -> None:
        if self._spill is not None:
            self._spill.close()
            self._spill = None
