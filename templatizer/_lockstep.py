"""Lockstep across recordings: an argument whose value, in every recording, is the value one earlier output
holds at one path, is that output (a ref), not something the user chose (an input).

It is the evidence several recordings add: one recording's equality may be chance, a path that carries the
argument's changing value in each of them is not. It reaches what single-recording scoring leaves out (a
datetime copied from a time tool: volatile keys are never producers there).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from toolreel.core.model import JSON
from toolreel.core.refs import format_ref
from toolreel.templatizer._values import get_at, is_trivial, same, scalar_text, walk

if TYPE_CHECKING:
    from toolreel.templatizer._runs import Run

__all__ = ["lockstep_piece", "lockstep_ref"]


def lockstep_ref(step: str, per_run: Sequence[tuple[bool, JSON]], runs: Sequence[Run]) -> tuple[str, str] | None:
    """(ref, evidence) of the latest earlier output path equal to the argument in every recording it is in."""
    values = [value for found, value in per_run if found]
    if len(values) < 2 or all(is_trivial(v) for v in values) or isinstance(values[0], dict | list):
        return None
    earlier = list(runs[0].steps)
    earlier = earlier[: earlier.index(step)] if step in earlier else []
    for producer in reversed(earlier):
        output = runs[0].outputs.get(producer)
        for keys, node in walk(output):
            if not same(node, values[0]) or not keys:
                continue
            if all(
                _holds(run, producer, keys, value)
                for run, (found, value) in zip(runs[1:], per_run[1:], strict=True)
                if found
            ):
                ref = format_ref(producer, keys)
                shown = ", ".join(repr(v) for v in values)
                return ref, f"changes in lockstep with {ref} across all {len(values)} recordings ({shown})"
    return _moved(earlier, per_run, runs, values)


def _moved(
    earlier: Sequence[str], per_run: Sequence[tuple[bool, JSON]], runs: Sequence[Run], values: Sequence[JSON]
) -> tuple[str, str] | None:
    """The same field of an element that sits elsewhere in each recording's list (`items[1].id`, then
    `items[0].id`), when in each recording that element alone has a field equal to one of the recording's named
    inputs (its name): the ref of the first recording, which the pick by that input then holds in place."""
    for producer in reversed(earlier):
        for keys, node in walk(runs[0].outputs.get(producer)):
            at = next((i for i, key in enumerate(keys) if isinstance(key, int)), None)
            if at is None or not same(node, values[0]) or is_trivial(node) or not _named(runs[0], producer, keys, at):
                continue
            if all(
                _somewhere(run, producer, keys, at, value)
                for run, (found, value) in zip(runs[1:], per_run[1:], strict=True)
                if found
            ):
                ref = format_ref(producer, keys)
                shown = ", ".join(repr(v) for v in values)
                return ref, f"the same field of an element of one list across all {len(values)} recordings ({shown})"
    return None


def _somewhere(run: Run, producer: str, keys: tuple[str | int, ...], at: int, value: JSON) -> bool:
    found, elements = get_at(run.outputs.get(producer), keys[:at])
    if not found or not isinstance(elements, list):
        return False
    here = [i for i, element in enumerate(elements) if get_at(element, keys[at + 1 :]) == (True, value)]
    return len(here) == 1 and _named(run, producer, (*keys[:at], here[0]), at)


def _named(run: Run, producer: str, keys: tuple[str | int, ...], at: int) -> bool:
    """The element at `keys[: at + 1]` alone in its list has a field equal to a named input of this recording."""
    found, element = get_at(run.outputs.get(producer), keys[: at + 1])
    _, elements = get_at(run.outputs.get(producer), keys[:at])
    if not found or not isinstance(element, dict) or not isinstance(elements, list):
        return False
    given = [v for v in run.inputs.values() if isinstance(v, str) and not is_trivial(v)]
    name = next((v for v in element.values() if any(same(v, g) for g in given)), None)
    return name is not None and sum(1 for e in elements if isinstance(e, dict) and name in e.values()) == 1


def _holds(run: Run, producer: str, keys: tuple[str | int, ...], value: JSON) -> bool:
    if producer not in run.outputs:
        return False
    found, there = get_at(run.outputs[producer], keys)
    return found and same(there, value)


def lockstep_piece(
    step: str, per_run: Sequence[tuple[bool, JSON]], runs: Sequence[Run]
) -> tuple[int, int, str, str] | None:
    """(start, end, ref, evidence) of the part of a string argument that changes between recordings, when that
    part is, in every recording, the text of one earlier output path ("Tracking in #311; ..." then "#977")."""
    values = [value for found, value in per_run if found]
    if len(values) < 2 or not all(isinstance(v, str) for v in values):
        return None
    texts = [str(v) for v in values]
    start = _word_start(texts[0], _common(texts))
    tail = _common([t[::-1] for t in texts])
    ends = [_word_end(t, len(t) - tail) for t in texts]
    middles = [t[start:end] for t, end in zip(texts, ends, strict=True)]
    if any(len(m) < 2 for m in middles) or any(end < start for end in ends):
        return None
    per_middle = [(True, m) for m in middles]
    earlier = list(runs[0].steps)
    earlier = earlier[: earlier.index(step)] if step in earlier else []
    found_runs = [run for run, (found, _) in zip(runs, per_run, strict=True) if found]
    for producer in reversed(earlier):
        for keys, node in walk(runs[0].outputs.get(producer)):
            if (
                keys
                and _text(node) == middles[0]
                and all(
                    _text_holds(run, producer, keys, middle)
                    for run, (_, middle) in zip(found_runs[1:], per_middle[1:], strict=True)
                )
            ):
                ref = format_ref(producer, keys)
                shown = ", ".join(repr(m) for m in middles)
                return start, ends[0], ref, f"its changing part is {ref} in all {len(values)} recordings ({shown})"
    return None


def _common(texts: Sequence[str]) -> int:
    """How many leading characters all `texts` share."""
    size = min(len(t) for t in texts)
    at = 0
    while at < size and all(t[at] == texts[0][at] for t in texts):
        at += 1
    return at


def _word_start(text: str, at: int) -> int:
    while at > 0 and text[at - 1].isalnum():
        at -= 1
    return at


def _word_end(text: str, at: int) -> int:
    while at < len(text) and text[at].isalnum():
        at += 1
    return at


def _text_holds(run: Run, producer: str, keys: tuple[str | int, ...], text: str) -> bool:
    if producer not in run.outputs:
        return False
    found, there = get_at(run.outputs[producer], keys)
    return found and _text(there) == text


def _text(value: JSON) -> str | None:
    return value if isinstance(value, str) else scalar_text(value)
