"""Reading and writing a value at a templatizer input path (`$.a.b[0]["odd key"]`)."""

from __future__ import annotations

import json
import re
from typing import Any, Final

from toolreel.core.errors import TemplateError

__all__ = ["get_path", "parse_path", "set_path"]

_TOKEN: Final = re.compile(r'\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')

Key = str | int


def parse_path(path: str) -> list[Key]:
    if not path.startswith("$"):
        raise TemplateError(f"input path {path!r} must start with '$'", field="input_path")
    keys: list[Key] = []
    i = 1
    while i < len(path):
        m = _TOKEN.match(path, i)
        if m is None:
            raise TemplateError(f"input path {path!r} cannot be read at character {i}", field="input_path")
        name, index, quoted = m.groups()
        keys.append(name if name is not None else int(index) if index is not None else json.loads(quoted))
        i = m.end()
    return keys


def get_path(value: Any, path: str) -> Any:
    for key in parse_path(path):
        try:
            value = value[key]
        except (KeyError, IndexError, TypeError):
            raise TemplateError(f"there is nothing at {path} in that input", field="input_path") from None
    return value


def set_path(value: Any, path: str, new: Any) -> Any:
    """A copy of `value` with `new` at `path` (containers on the way copied, the rest shared)."""
    keys = parse_path(path)
    if not keys:
        return new
    head, rest = keys[0], "$" + path[len(_first_token(path)) :]
    if isinstance(value, dict) and isinstance(head, str) and head in value:
        return {**value, head: set_path(value[head], rest, new)}
    if isinstance(value, list) and isinstance(head, int) and 0 <= head < len(value):
        return [*value[:head], set_path(value[head], rest, new), *value[head + 1 :]]
    raise TemplateError(f"the template's input has nothing at {path}", field="input_path")


def _first_token(path: str) -> str:
    m = _TOKEN.match(path, 1)
    assert m is not None
    return path[: m.end()]
