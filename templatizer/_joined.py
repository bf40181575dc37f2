"""Texts listing the elements a filter keeps (`Fleet: 2 macOS hosts offline: mbp-jon.local, imac-design-1`), and
steps that still take an element of a loop's output by its position (said: they break on fewer elements).

`_conditions.join_texts` joins a field of the elements a text lists; where no one field tells them apart from the
others, the list it joins is a `select_*` step's (two conditions, `_select.separating`), inserted before the first
step that reads it. The state that filter keeps (`STATUS == "offline"`) is then a word of the text, not a ref to
the element that happened to hold it first: another run lists other hosts, all offline.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Final

from toolreel.core.model import JSON, StepRecord
from toolreel.templatizer._conditions import Select as Chooser
from toolreel.templatizer._conditions import join_texts
from toolreel.templatizer._reftext import tokens
from toolreel.templatizer._result import Loop, Unit, Unrolled
from toolreel.templatizer._select import SELECT_CODE, Select

__all__ = ["join_kept", "positional", "select_unit"]

_PLACED_RE: Final = re.compile(r"\{\{(@[^{}]+?)\[\d+\]\.([A-Za-z_][\w-]*)\}\}")


def join_kept(
    units: Sequence[Unit], choose: Chooser, chosen: Sequence[Select], taken: set[str], resolve: Callable[[str], JSON]
) -> list[Unit]:
    """`join_texts` with `choose` (which adds the select steps it makes to `chosen`): each select step goes before
    the first unit that reads it, and the texts write the state its filter keeps as a word."""
    joined = join_texts(units, choose, taken)
    if not chosen:
        return joined
    states = _kept_states(chosen)
    out: list[Unit] = []
    placed: set[str] = set()
    for unit in joined:
        read = {t.split(".")[0].split("[")[0] for t in tokens([unit.input])}
        out += [select_unit(s, unit.record) for s in chosen if f"@{s.step}" in read and s.step not in placed]
        placed |= {s.step for s in chosen if f"@{s.step}" in read}
        written = _states_written(unit.input, states, resolve) if unit.code is None and states else unit.input
        out.append(unit if written == unit.input else replace(unit, input=written))
    return out


def select_unit(select: Select, record: StepRecord) -> Unit:
    """The code step a select adds, as a unit of the template being built (before the first that reads it)."""
    return Unit(select.step, "", record, select.input, code=SELECT_CODE)


def _kept_states(selects: Sequence[Select]) -> dict[tuple[str, str], str]:
    """(list, key) -> the state a select keeps of that list by a literal `key == state`."""
    return {
        (s.base, c.key): c.value
        for s in selects
        for i, c in enumerate(s.where)
        if c.op == "==" and isinstance(c.value, str) and (i >= len(s.refs) or s.refs[i] is None)
    }


def _states_written(value: JSON, states: Mapping[tuple[str, str], str], resolve: Callable[[str], JSON]) -> JSON:
    """`value` with each `{{@base[i].key}}` whose element holds the state a select keeps of `base` written as it."""

    def written(match: re.Match[str]) -> str:
        state = states.get((match.group(1), match.group(2)))
        return state if state is not None and resolve(match.group(0)[2:-2]) == state else match.group(0)

    if isinstance(value, dict):
        return {k: _states_written(v, states, resolve) for k, v in value.items()}
    if isinstance(value, list):
        return [_states_written(v, states, resolve) for v in value]
    return _PLACED_RE.sub(written, value) if isinstance(value, str) else value


def positional(unit: Unit, loops: Sequence[Loop]) -> list[Unrolled]:
    """A step that still takes an element of a loop's output by its position: said, since it breaks where the
    loop has fewer elements."""
    out: list[Unrolled] = []
    for loop in loops:
        head = f"@{loop.step}["
        at = sorted(
            {
                int(m.group(1))
                for t in tokens([unit.input, unit.for_each])
                if (m := re.match(re.escape(head) + r"(\d+)\]", t))
            }
        )
        if at:
            why = f"it takes element(s) {at} of {loop.step}'s output by position (fewer elements: it fails there)"
            out.append(Unrolled((unit.name,), why))
    return out
