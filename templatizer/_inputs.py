"""Template inputs: named by the caller, made from redacted values, or from values that vary between runs.

The table of a template's inputs and their values in each recording, the literals no output explains
(`Unexplained`, weighed by `_likely`), and fresh input names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from toolreel.core.model import JSON
from toolreel.core.secrets import is_secret_key
from toolreel.core.template import InputSpec
from toolreel.templatizer._values import (
    Keys,
    items_schema,
    last_key,
    scalar_text,
    snake,
    type_name,
)

__all__ = ["InputTable", "Names", "Schemas", "Unexplained"]

_SETTING_RE: Final = re.compile(r"^[a-z0-9]+(?:[_.:-][a-z0-9]+)*$")


@dataclass
class InputTable:
    """Inputs of the template being built; `values[r]` holds each input's value in recording `r`."""

    runs: int
    named: dict[str, JSON] = field(default_factory=dict)
    specs: dict[str, InputSpec] = field(default_factory=dict)
    values: list[dict[str, JSON]] = field(default_factory=list)
    used_by: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.values = [{} for _ in range(self.runs)]
        self._names = Names(set())
        self._secrets: dict[str, str] = {}  # base name -> secret input
        self._derived: dict[str, str] = {}  # the values in every run (canonical JSON) -> input
        self._as_text: dict[str, str] = {}  # the texts of a number/boolean input's values in every run -> input

    def add_named(self, inputs: Mapping[str, JSON]) -> None:
        for name, value in inputs.items():
            self._names.taken.add(name)
            self.named[name] = value
            self.specs[name] = InputSpec(type=type_name(value), items=items_schema(value))
            self.values[0][name] = value

    def secret(self, keys: Keys, placeholder: str) -> str:
        """The secret input for a redacted value at `keys`: one per key name (the same secret, reused)."""
        key = last_key(keys)
        base = snake(key) if key is not None and is_secret_key(key) else f"{snake(key or 'value')}_secret"
        name = self._secrets.get(base)
        if name is None:
            name = self._secrets[base] = self._names.fresh(base)
            self.specs[name] = InputSpec(
                type="string", secret=True, description="A secret (it was redacted when recorded)"
            )
            for run in self.values:
                run[name] = placeholder
        return name

    def derived_as_text(self, per_run: Sequence[tuple[bool, JSON]]) -> str | None:
        """A number or boolean input whose text is this string in every run (`4521903` and `"4521903"`)."""
        if not all(isinstance(value, str) for found, value in per_run if found):
            return None
        return self._as_text.get(json.dumps(per_run, sort_keys=True))

    def derived(self, keys: Keys, per_run: Sequence[tuple[bool, JSON]], base: str | None = None) -> str:
        """The input for a value that differs between runs; reused where the same values recur."""
        identity = json.dumps(per_run, sort_keys=True, default=str)
        name = self._derived.get(identity)
        if name is not None:
            return name
        name = self._derived[identity] = self._names.fresh(base or snake(last_key(keys) or "value"))
        first = per_run[0][1]
        self.specs[name] = InputSpec(type=type_name(first), enum=_closed_set(per_run), items=items_schema(first))
        texts = [(found, scalar_text(value)) for found, value in per_run]
        if all(text is not None for found, text in texts if found):
            self._as_text.setdefault(json.dumps(texts, sort_keys=True), name)
        for run, (found, value) in zip(self.values, per_run, strict=True):
            if found:
                run[name] = value
        return name

    def final_specs(self, kept: set[str]) -> dict[str, InputSpec]:
        """Inputs some kept step uses, with a description a person can read: what, an example, where."""
        out: dict[str, InputSpec] = {}
        for name, spec in self.specs.items():
            steps = [step for step in self.used_by.get(name, []) if step in kept]
            if not steps:
                continue
            where = f"used by {', '.join(steps)}"
            if spec.description:
                description = f"{spec.description}; {where}"
            else:
                description = f"{_label(name)} (recorded: {_example(self.values[0].get(name))}); {where}"
            out[name] = InputSpec(
                type=spec.type, description=description, secret=spec.secret, enum=spec.enum, items=spec.items
            )
        return out


_ENUM_MAX: Final = 5  # at most this many distinct values make a closed set
_EXAMPLE_MAX: Final = 40


def _closed_set(per_run: Sequence[tuple[bool, JSON]]) -> tuple[JSON, ...] | None:
    """The values seen, when three or more recordings keep choosing among a few settings (one recurs)."""
    values = [value for found, value in per_run if found]
    distinct: list[JSON] = []
    for value in values:
        if not any(type(value) is type(d) and value == d for d in distinct):
            distinct.append(value)
    if len(values) < 3 or len(distinct) >= len(values) or len(distinct) > _ENUM_MAX:
        return None
    if all(isinstance(v, str) and _SETTING_RE.match(v) and len(v) <= 24 for v in distinct):
        return tuple(distinct)
    if all(isinstance(v, bool) for v in distinct):
        return tuple(distinct)
    return None


def _label(name: str) -> str:
    return name.replace("_", " ").capitalize()


def _example(value: JSON) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _EXAMPLE_MAX else text[: _EXAMPLE_MAX - 3] + "..."


# --------------------------------------------------------------------------- likely inputs


@dataclass(frozen=True, slots=True)
class Unexplained:
    """A string, or a number no earlier output holds, left literal in a kept step's input."""

    step: str
    keys: Keys
    value: str | int | float
    tool: str = ""  # the listed name (`server__tool`), to find the parameter's schema
    of: int = 0  # an element of a list: the list's length
    flag: str = ""  # a value of a command line's flag (`--bucket`): judged and named by the flag
    reads: bool = False  # the step's tool is annotated read-only
    in_query: bool = False  # a value inside a query's text (`service.name:"checkout-api"`), named by its field
    sole: bool = False  # in a query: the one text it selects by, no state (what the query is about)
    built: bool = False  # a text already built on earlier outputs: only a value inside it may be an input
    opening: bool = False  # sent by the session's first call, before any output: from what the user asked
    note: bool = False  # the words after a label and a colon the agent wrote (`Closing wishlist items: <reason>`)

    @property
    def named(self) -> Keys:
        return (self.flag,) if self.flag else self.keys


Schemas = Mapping[str, Mapping[str, Any]]  # listed tool name -> its inputSchema


class Names:
    """Fresh names `base`, `base_2`, ... in constant time per name."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = set(taken)
        self.next: dict[str, int] = {}

    def fresh(self, base: str) -> str:
        n = self.next.get(base, 1)
        name = base if n == 1 else f"{base}_{n}"
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.next[base] = n + 1
        self.taken.add(name)
        return name
