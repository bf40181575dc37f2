"""Loops over a value cut out of each element: the id inside a URI, a draft's id without its `drafts.` prefix
(and over the whole values of one field, over several lists zipped).

A family of calls whose one varying argument is no element's field whole, but each is the same field of one
element of an earlier list with the same text around it (`https://api.calendly.com/scheduled_events/<uuid>`,
`drafts.<id>`), walks that list: a `cut_*` code step takes the text between that prefix and suffix out of
each element's field, and the loop walks what it returns. It fails, naming the field and the text it expected,
where an element's field is not built that way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from toolreel.core.model import JSON
from toolreel.templatizer._select import leaves, value_at
from toolreel.templatizer._values import Keys, json_path, walk

__all__ = ["CUT_CODE", "ZIP_CODE", "Cut", "cut_values", "find_column", "find_cut"]

CUT_CODE: Final = """export default function(input) {
  const at = (item) => input.key.split(".").reduce((v, k) => (v === null || v === undefined ? v : v[k]), item);
  return input.items.map((item) => {
    const v = at(item);
    const around = input.prefix.length + input.suffix.length;
    if (typeof v !== "string" || v.length <= around || !v.startsWith(input.prefix) || !v.endsWith(input.suffix)) {
      const want = JSON.stringify(input.prefix) + " + a value + " + JSON.stringify(input.suffix);
      throw new Error(input.key + " is " + JSON.stringify(v) + ", not " + want);
    }
    return v.slice(input.prefix.length, v.length - input.suffix.length);
  });
}
"""

# the elements of several lists walked together, as one list of objects (a loop over two lists at once)
ZIP_CODE: Final = """export default function(input) {
  const keys = Object.keys(input);
  const count = input[keys[0]].length;
  if (keys.some((key) => input[key].length !== count)) {
    const sizes = keys.map((key) => key + " " + input[key].length).join(", ");
    throw new Error("the lists walked together have different lengths: " + sizes);
  }
  return input[keys[0]].map((_, i) => Object.fromEntries(keys.map((key) => [key, input[key][i]])));
}
"""


@dataclass(frozen=True, slots=True)
class Cut:
    """Each call's `path` argument is elements `at` of `base`'s `key`, between `prefix` and `suffix`."""

    path: Keys
    base: str
    elements: tuple[JSON, ...]
    at: tuple[int, ...]
    key: str
    prefix: str
    suffix: str


def cut_values(elements: JSON, key: str, prefix: str, suffix: str) -> list[JSON] | None:
    """What the cut step returns for `elements` (the code's twin); None where it would fail."""
    if not isinstance(elements, list):
        return None
    out: list[JSON] = []
    for element in elements:
        value = value_at(element, key)
        around = len(prefix) + len(suffix)
        if not isinstance(value, str) or len(value) <= around or not value.startswith(prefix):
            return None
        if not value.endswith(suffix):
            return None
        out.append(value[len(prefix) : len(value) - len(suffix)])
    return out


def find_cut(inputs: Sequence[JSON], earlier: Sequence[tuple[str, JSON]]) -> Cut | None:
    """The list of an earlier output (`earlier`: step name and output, in recorded order) whose elements' field
    holds each call's one varying argument between the same prefix and suffix; None if there is none."""
    varying = _varying(inputs)
    if varying is None:
        return None
    path, values = varying
    texts = [str(v) for v in values]
    for step, output in earlier:
        for keys, listed in walk(output):
            if not isinstance(listed, list) or len(listed) < len(values) or not isinstance(listed[0], dict):
                continue
            found = _cut_in(listed, texts)
            if found is not None:
                key, at, prefix, suffix = found
                base = f"@{step}{json_path(keys)[1:]}"
                return Cut(path, base, tuple(listed), at, key, prefix, suffix)
    return None


def find_column(inputs: Sequence[JSON], earlier: Sequence[tuple[str, JSON]]) -> tuple[Keys, str, list[int], str] | None:
    """(the path, the list, the elements, their field) where each call's one varying argument is, whole, one field
    of a distinct element of an earlier list, in the list's order: ids too small to link alone (`1`, `7`) that
    together walk the list. None if no list holds them so."""
    varying = _varying(inputs, texts=False)
    if varying is None:
        return None
    path, values = varying
    for step, output in earlier:
        for keys, listed in walk(output):
            if not isinstance(listed, list) or len(listed) < len(values) or not isinstance(listed[0], dict):
                continue
            for key, _ in leaves(listed[0]):
                column = [value_at(e, key) for e in listed]
                at = [column.index(v) if column.count(v) == 1 else -1 for v in values]
                if -1 not in at and at == sorted(set(at)):
                    return path, f"@{step}{json_path(keys)[1:]}", at, key
    return None


def _varying(inputs: Sequence[JSON], *, texts: bool = True) -> tuple[Keys, list[JSON]] | None:
    """The one leaf the calls' arguments differ at, when its values are plain texts (no ref); or (not `texts`)
    texts and integers."""
    shapes = [dict(walk(value)) for value in inputs]
    if any(set(shape) != set(shapes[0]) for shape in shapes[1:]):
        return None
    paths = [
        keys
        for keys, value in shapes[0].items()
        if not isinstance(value, dict | list) and any(shape[keys] != value for shape in shapes[1:])
    ]
    if len(paths) != 1:
        return None
    values = [shape[paths[0]] for shape in shapes]
    if not texts and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return paths[0], values
    if not all(isinstance(v, str) and len(v) >= 3 and not v.startswith("@") and "{{@" not in v for v in values):
        return None
    return paths[0], [str(v) for v in values]


def _cut_in(listed: list[JSON], values: Sequence[str]) -> tuple[str, tuple[int, ...], str, str] | None:
    first = listed[0]
    assert isinstance(first, dict)
    for key, _ in leaves(first):
        texts = [value_at(e, key) for e in listed]
        at: list[int] = []
        arounds: set[tuple[str, str]] = set()
        for value in values:
            holders = [i for i, t in enumerate(texts) if isinstance(t, str) and t != value and value in t]
            if len(holders) != 1:
                break
            text = texts[holders[0]]
            assert isinstance(text, str)
            start = text.index(value)
            at.append(holders[0])
            arounds.add((text[:start], text[start + len(value) :]))
        else:
            if len(arounds) == 1 and at == sorted(set(at)):
                prefix, suffix = arounds.pop()
                return key, tuple(at), prefix, suffix
    return None
