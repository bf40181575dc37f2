"""Regex filters in refs (`@s[?(@.name =~ "^a")]`) run on RE2, whose time is linear in the text.

jsonpath-ng matches `=~` with Python's backtracking `re`: `(a+)+$` against 40 characters never ends,
and refs are resolved on the event loop, so one agent's ref would freeze every client. RE2 has no
backreferences or lookaround; a pattern that needs them does not compile, and the path is refused
(`regexes_compile`) instead of failing, or hanging, when it runs.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2

__all__ = ["LinearRegexError", "check_linear", "install_linear_regex", "regexes_compile", "search"]

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is reported to the user, not printed by RE2 on stderr


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> Any:
    return re2.compile(pattern, _OPTIONS)


class LinearRegexError(ValueError):
    """A pattern RE2 cannot run: a syntax error, or a feature it lacks (lookaround, backreferences)."""


def check_linear(pattern: str) -> None:
    """Raise LinearRegexError, saying why, when `pattern` does not compile on RE2."""
    try:
        _compiled(pattern)
    except re2.error as exc:
        reason = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise LinearRegexError(
            f"{pattern!r} is not a regular expression toolreel can run: patterns run on RE2, in time linear in the "
            f"text, which has no lookahead, lookbehind or backreferences ({reason})"
        ) from None


def _supported(pattern: str) -> bool:
    try:
        _compiled(pattern)
    except re2.error:
        return False
    return True


def search(value: Any, pattern: Any) -> bool:
    """jsonpath-ng's `=~`: a string that `pattern` matches somewhere (RE2 semantics)."""
    return isinstance(value, str) and isinstance(pattern, str) and _compiled(pattern).search(value) is not None


def install_linear_regex() -> None:
    """Make jsonpath-ng's `=~` use `search`. Its filters look the operator up in this table at each match,
    so replacing the entry is the one place to change it (idempotent)."""
    from jsonpath_ng.ext import filter as jsonpath_filter

    jsonpath_filter.OPERATOR_MAP["=~"] = search


def regexes_compile(path: object) -> bool:
    """Every `=~` pattern in a parsed JSONPath compiles on RE2."""
    return all(_supported(pattern) for pattern in _patterns(path))


def _patterns(path: object) -> list[str]:
    found: list[str] = []
    stack: list[object] = [path]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if getattr(node, "op", None) == "=~" and isinstance(getattr(node, "value", None), str):
            found.append(getattr(node, "value"))  # noqa: B009 - checked just above
        for child in getattr(node, "__dict__", {}).values():
            if isinstance(child, list | tuple):
                stack.extend(child)
            elif type(child).__module__.startswith("jsonpath_ng"):
                stack.append(child)
    return found
