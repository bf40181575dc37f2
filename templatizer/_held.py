"""The strings of a recording's outputs so far, found by the words they hold, and what the agent sent: where
`_capture` looks for a value the agent read out of text, and for an echo of a value it had sent itself."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final

from toolreel.core.model import JSON, StepRecord
from toolreel.templatizer._pieces import occurrences
from toolreel.templatizer._values import Keys, walk

__all__ = ["HeldText", "Sent", "Texts", "bounded", "position"]

_MIN_TEXT: Final = 2
_TOKEN_RE: Final = re.compile(r"[A-Za-z0-9]+")
_SAMPLE: Final = 6  # texts kept per token (the latest): a lookup costs the same however long the recording


@dataclass(frozen=True, slots=True)
class HeldText:
    step: str
    order: int
    keys: Keys
    text: str


class Texts:
    """Every string of the outputs so far, by the words it holds (a bounded sample per word)."""

    def __init__(self) -> None:
        self._by_token: dict[str, list[HeldText]] = {}

    def add(self, step: str, order: int, output: JSON) -> None:
        for keys, node in walk(output):
            if isinstance(node, str) and len(node) >= _MIN_TEXT:
                entry = HeldText(step, order, keys, node)
                by_token = self._by_token
                for token in set(_TOKEN_RE.findall(node)):
                    kept = by_token.get(token)
                    if kept is None:
                        by_token[token] = [entry]
                    else:
                        kept.append(entry)
                        if len(kept) > _SAMPLE:
                            del kept[0]

    def sharing(self, fragment: str) -> list[HeldText]:
        """Texts that hold a word of `fragment` (each once)."""
        seen: dict[int, HeldText] = {}
        for token in set(_TOKEN_RE.findall(fragment)):
            for held in self._by_token.get(token, ()):
                seen.setdefault(id(held), held)
        return list(seen.values())

    def holding(self, value: str, *, whole: bool = False) -> list[HeldText]:
        """Texts holding `value` at word boundaries (`whole`: or equal to it), latest first."""
        first = _TOKEN_RE.search(value)
        if first is None:
            return []
        found = [
            t for t in self._by_token.get(first.group(0), []) if (whole or t.text != value) and bounded(t.text, value)
        ]
        return sorted(found, key=lambda t: t.order, reverse=True)


def bounded(text: str, value: str) -> bool:
    return position(text, value) is not None


def position(text: str, value: str) -> int | None:
    glued: int | None = None
    for start, left, right in occurrences(text, value):
        if left and right:
            return start
        if (left or right) and glued is None:
            glued = start  # inside a token on one side (a date before its "T"): delimited() judges it
    return glued


class Sent:
    """What the agent sent, step by step, searched only when an output's text holds a candidate value."""

    def __init__(self) -> None:
        self.records: list[tuple[int, JSON]] = []

    def add(self, record: StepRecord, order: int) -> None:
        self.records.append((order, record.resolved_input))

    def holding(self, value: str, *, whole: bool = True) -> list[HeldText]:
        found: list[HeldText] = []
        for order, sent in self.records:
            for keys, node in walk(sent):
                text = json.dumps(node) if isinstance(node, int | float) and not isinstance(node, bool) else node
                if isinstance(text, str) and (text == value or bounded(text, value)):
                    found.append(HeldText("", order, keys, text))
        return found
