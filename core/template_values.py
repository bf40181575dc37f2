"""The values a template writes as text: durations (`30s`, `500ms`), times (ISO 8601 with a zone) and the
constraints an input may carry (a pattern, a minimum and maximum), parsed and checked.

`core.template_schema` validates templates with these; the replayer reads durations and times with them.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any

from pydantic import BeforeValidator, WithJsonSchema

from toolreel.core._ref_regex import LinearRegexError, check_linear

__all__ = ["Duration", "check_constraints", "format_duration", "parse_duration", "parse_time"]

_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_PATTERN = r"^\s*\d+(\.\d+)?\s*(ms|s|m|h)?\s*$"


def parse_duration(value: object) -> float:
    """`30s`, `500ms`, `2m`, `1h`, or a number of seconds -> seconds (float)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration like 30s, 500ms, 2m or a number of seconds, got {value!r}")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError(f"a duration cannot be negative, got {value!r}")
        return float(value)
    match = _DURATION_RE.match(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"expected a duration like 30s, 500ms, 2m or a number of seconds, got {value!r}")
    number, unit = match.group(1), match.group(2) or "s"
    # Milliseconds divide (not multiply by 0.001) so that "300ms" is exactly 0.3.
    return float(number) / 1000 if unit == "ms" else float(number) * _UNIT_SECONDS[unit]


def format_duration(seconds: float) -> str | float:
    """The shortest of `1h`, `2m`, `30s`, `500ms` that parses back to exactly `seconds`, else the number."""
    for unit, factor in (("h", 3600), ("m", 60), ("s", 1)):
        whole = round(seconds / factor)
        if whole > 0 and parse_duration(f"{whole}{unit}") == seconds:
            return f"{whole}{unit}"
    millis = round(seconds * 1000)
    if parse_duration(f"{millis}ms") == seconds:
        return f"{millis}ms"
    return seconds


_DURATION_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "pattern": _DURATION_PATTERN, "examples": ["30s", "500ms", "2m"]},
        {"type": "number", "minimum": 0},
    ]
}
Duration = Annotated[float, BeforeValidator(parse_duration), WithJsonSchema(_DURATION_SCHEMA)]


def parse_time(value: object) -> float:
    """An ISO 8601 time with a zone (`2026-12-01T09:00:00Z`, `...+01:00`), or epoch seconds -> epoch seconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise ValueError(
            f"expected a time in ISO 8601 with its zone, like 2026-12-01T09:00:00Z, or epoch seconds; got {value!r}"
        )
    return moment.timestamp()


def check_constraints(pattern: str | None, minimum: float | None, maximum: float | None) -> None:
    """Refuse a pattern that does not compile and a minimum above the maximum."""
    if pattern is not None:
        try:
            check_linear(pattern)  # input patterns run on RE2, as ref regexes do: refused here, not at run time
        except LinearRegexError as exc:
            raise ValueError(f"`pattern` {exc}") from None
    if minimum is not None and maximum is not None and minimum > maximum:
        raise ValueError(f"`minimum` {minimum} is above `maximum` {maximum}")
