"""The part of several texts that varies, between a shared prefix and suffix cut at separators.

An agent that handles a list the user gave often builds each argument around the element: a Redis hash
`tenant:acme:flags`, a path `/srv/acme/config.yaml`, a repository `acme/web`, a label selector `app=web`, a
greeting `Welcome Ann`. What the user listed is the varying middle; the rest is the template's text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from toolreel.core.model import JSON

__all__ = ["Affixes", "around", "built_around_item", "split_affixes"]

# A cut falls only after (prefix) or before (suffix) one of these: a dot or an `@` would cut inside a file
# name, a domain or an e-mail address, which the user gives whole.
_SEPARATORS: Final = frozenset(":/= #,;|\n")

Affixes = tuple[str, str, list[str]]  # prefix, suffix, the middles in order


def split_affixes(texts: Sequence[str]) -> Affixes | None:
    """(prefix, suffix, middles) when at least two distinct texts share a prefix or a suffix ending (starting)
    at a separator and the middles left are distinct and not empty; None otherwise."""
    if len(texts) < 2 or len(set(texts)) != len(texts):
        return None
    prefix = _common_prefix(texts)
    prefix = prefix[: _last_cut(prefix)]
    rest = [t[len(prefix) :] for t in texts]
    suffix = _common_prefix([t[::-1] for t in rest])[::-1]
    suffix = suffix[_first_cut(suffix) :]
    if not prefix and not suffix:
        return None
    middles = [t[: len(t) - len(suffix)] for t in rest]
    if any(not m or m[0] in _SEPARATORS or m[-1] in _SEPARATORS for m in middles):
        return None
    if "{{" in prefix + suffix or "}}" in prefix + suffix or prefix.startswith("@"):
        return None  # text a ref would read as its own syntax stays whole
    return prefix, suffix, middles


def _last_cut(prefix: str) -> int:
    """The length of `prefix` up to and including its last separator (0: none)."""
    at = max((i for i, c in enumerate(prefix) if c in _SEPARATORS), default=-1)
    return at + 1


def _first_cut(suffix: str) -> int:
    """Where the shared suffix starts: at its first separator (its whole length: none)."""
    return next((i for i, c in enumerate(suffix) if c in _SEPARATORS), len(suffix))


def around(text: str, part: str) -> tuple[str, str] | None:
    """(before, after) when `part` occurs once in `text`, between separators or the text's ends, and the
    text around it is plain text a ref would not read as its own syntax; else None."""
    at = text.find(part)
    if at < 0 or text.find(part, at + 1) >= 0 or len(part) == len(text):
        return None
    before, after = text[:at], text[at + len(part) :]
    if (before and before[-1] not in _SEPARATORS) or (after and after[0] not in _SEPARATORS):
        return None
    if "{{" in text or "}}" in text or text.startswith("@"):
        return None
    return before, after


def _common_prefix(texts: Sequence[str]) -> str:
    first, last = min(texts), max(texts)  # the prefix all share is the one the extremes share
    n = next((i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), min(len(first), len(last)))
    return first[:n]


def built_around_item(per_item: JSON, per_run: list[list[JSON]]) -> tuple[JSON, list[list[JSON]]]:
    """When each call passed its input whole and the values share a prefix or suffix (`tenant:acme:flags`,
    `tenant:globex:flags`), the list holds the middles the user listed and the argument is built around the
    item (`tenant:{{@item}}:flags`); else both unchanged. The same cut must hold in every recording."""
    if _count_whole_item(per_item) != 1 or not all(isinstance(v, str) for run in per_run for v in run):
        return per_item, per_run
    split = [split_affixes([str(v) for v in run]) for run in per_run]
    if any(s is None for s in split) or len({(s[0], s[1]) for s in split if s is not None}) != 1:
        return per_item, per_run
    prefix, suffix, _ = split[0] if split[0] is not None else ("", "", [])
    built = f"{prefix}{{{{@item}}}}{suffix}"
    middles: list[list[JSON]] = [list(s[2]) for s in split if s is not None]
    return _substitute_whole(per_item, "@item", built), middles


def _count_whole_item(value: JSON) -> int:
    if isinstance(value, dict):
        return sum(_count_whole_item(v) for v in value.values())
    if isinstance(value, list):
        return sum(_count_whole_item(v) for v in value)
    return 1 if value == "@item" else 0


def _substitute_whole(value: JSON, old: str, new: str) -> JSON:
    if isinstance(value, dict):
        return {k: _substitute_whole(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute_whole(v, old, new) for v in value]
    return new if value == old else value
