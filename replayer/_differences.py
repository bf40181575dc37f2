"""What a dry replay reports: the steps and fields whose resolved input is not the recorded one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from toolreel.core.model import JSON
from toolreel.core.secrets import REDACTED

__all__ = ["Difference", "diff", "shown"]

_MAX_SHOWN: Final = 200  # characters of a value quoted in a difference


@dataclass(frozen=True, slots=True)
class Difference:
    """Step `step` would receive `got` at `field` (a JSON path of its input) where it recorded `recorded`."""

    step: str
    field: str
    recorded: str
    got: str

    def to_json(self) -> dict[str, str]:
        return {"step": self.step, "field": self.field, "recorded": self.recorded, "got": self.got}


def diff(want: JSON, got: JSON, path: str) -> list[tuple[str, JSON, JSON]]:
    """(path, recorded, resolved) for every leaf that differs; types kept apart (1 is not "1" nor True), but a
    number is its value: JSON has one number type, and a code step's JavaScript writes 240310.0 as 240310."""
    if isinstance(want, dict) and isinstance(got, dict):
        out: list[tuple[str, JSON, JSON]] = []
        for key in [*want, *(k for k in got if k not in want)]:
            out += diff(want.get(key), got.get(key), f"{path}.{key}")
        return out
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        return [d for i, (a, b) in enumerate(zip(want, got, strict=True)) for d in diff(a, b, f"{path}[{i}]")]
    if (type(want) is type(got) or (_number(want) and _number(got))) and want == got:
        return []
    if want == REDACTED:  # redacted when recorded: nothing to compare (a literal placeholder is refused apart)
        return []
    return [(path, want, got)]


def _number(value: JSON) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def shown(value: JSON) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."
