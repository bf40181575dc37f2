"""Paged reads: calls of one tool that read a list page by page, saved as one step that pages until the end.

An agent reads a long list in pages: the same call again with the next page's number, offset or cursor, until the
answer says there is no more (`has_more: false`, no `next`, `isLastPage: true`, a short page). Another world has
another number of pages, so the pages are one step of the template: a `script` step (SPEC §13) that calls the tool
with the first page's arguments, then with each next page's, until the answer ends the list, and returns the pages
as one answer (the last page's, its list holding every page's elements). While saving, the recorded pages are merged
by the same script code (run in the sandbox), and the rest of the templatizer reasons on that one answer: a loop over
every element of every page, a count over them.

Found when consecutive calls of one tool differ in one argument only, in the same way from each page to the next:
a cursor the previous answer gave (whole, at the same place every time), or a number that grows by the same step
(a page number, an offset). The end is read from the answers: a field set on every page but the last (a next
cursor, `has_more`), one set on the last only (`isLastPage`), else a page shorter than the others.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final
from urllib.parse import parse_qs, urlsplit

from toolreel.core.errors import CodeError
from toolreel.core.model import JSON, StepRecord, StepStatus
from toolreel.core.names import prefixed_name
from toolreel.core.sandbox import CodeLimits, run_code
from toolreel.core.template import StepSpec, Template
from toolreel.templatizer._result import Loop
from toolreel.templatizer._runs import Run
from toolreel.templatizer._values import Keys, get_at, key_tokens, walk

__all__ = ["Paging", "find_pagings", "merge_pages", "page_steps"]

_LIMITS: Final = CodeLimits(timeout=1.0, memory_mb=64)
_CURSOR_MIN: Final = 4  # characters of a cursor at least (a shorter equal value is chance)
_DEPTH: Final = 4  # how deep in an answer a cursor, an end flag or the list is looked for
_NEXT_WORDS: Final = frozenset(
    {"next", "more", "additional", "remaining", "cursor", "token", "continuation", "last", "evaluated"}
)  # (`has_additional`: Quay)
_END_WORDS: Final = frozenset({"last", "end", "done", "complete", "finished"})
_TOTAL_WORDS: Final = frozenset({"total", "count"})
_PAGE_WORDS: Final = frozenset({"page", "offset", "skip", "start", "from"})
_CURSOR_WORDS: Final = frozenset({"cursor", "token", "after", "marker", "key", "continuation", "next"})
_SHORTER_TRIES: Final = 3
_MISSING: Final = object()  # an argument one call leaves out

# One source for paging at replay and for merging the recorded pages when saving.
_PAGING_JS: Final = r"""
function get(value, keys) {
  for (const key of keys) {
    if (value === null || typeof value !== "object" || !(key in value)) return undefined;
    value = value[key];
  }
  return value;
}
function put(value, keys, x) {
  if (keys.length === 0) return x;
  const out = Array.isArray(value) ? value.slice() : Object.assign({}, value);
  out[keys[0]] = put(value === null || typeof value !== "object" ? {} : value[keys[0]], keys.slice(1), x);
  return out;
}
function truthy(v) {
  if (v === undefined || v === null || v === false || v === "") return false;
  if (Array.isArray(v)) return v.length > 0;
  return typeof v !== "object" || Object.keys(v).length > 0;
}
function items(page) {
  const found = get(page, PAGING.items);
  return Array.isArray(found) ? found : [];
}
function ended(page, seen) {
  // seen: the items of this page and of the ones before it
  const end = PAGING.end;
  if (end.when === "falsy") return !truthy(get(page, end.path));
  if (end.when === "truthy") return truthy(get(page, end.path));
  if (end.when === "total") return items(page).length === 0 || !(seen < Number(get(page, end.path)));
  if (end.when === "pages") {
    return items(page).length === 0 || !(Number(get(page, end.at)) < Number(get(page, end.path)));
  }
  return items(page).length < end.size;
}
function param(url, name) {
  // a query parameter of a URL, decoded (`page%5Bcursor%5D=bmV4...%3D` of a `links.next`)
  if (typeof url !== "string" || url.indexOf("?") < 0) return undefined;
  for (const part of url.slice(url.indexOf("?") + 1).split("#")[0].split("&")) {
    const at = part.indexOf("=");
    const decode = (text) => decodeURIComponent(text.replace(/\+/g, " "));
    if (decode(at < 0 ? part : part.slice(0, at)) === name) return decode(at < 0 ? "" : part.slice(at + 1));
  }
  return undefined;
}
function following(page, args) {
  const next = PAGING.next;
  if (next.kind === "cursor") return next.param ? param(get(page, next.path), next.param) : get(page, next.path);
  const now = get(args, PAGING.key);
  return (typeof now === "number" ? now : next.start) + next.by;
}
function merge(pages) {
  const all = [].concat(...pages.map(items));
  return put(pages[pages.length - 1], PAGING.items, all);
}
"""
_SCRIPT: Final = """
export default async function (input) {
  let args = input.args;
  const pages = [];
  let seen = 0;
  for (;;) {
    const page = await callTool(PAGING.tool, args);
    pages.push(page);
    seen += items(page).length;
    if (ended(page, seen)) break;
    args = put(args, PAGING.key, following(page, args));
  }
  return merge(pages);
}
"""
_MERGE: Final = """
export default function (input) {
  let seen = 0;
  const ends = input.pages.map((page) => ended(page, (seen += items(page).length)));
  return {merged: merge(input.pages), ended: ends};
}
"""


@dataclass(frozen=True, slots=True)
class Paging:
    """Recorded calls `pages` of `tool` read one list; the first one's name stands for all of them."""

    pages: tuple[str, ...]
    tool: str
    key: Keys  # the argument that pages
    next: dict[str, JSON]  # {"kind": "cursor", "path": [...]} or {"kind": "step", "by": n, "start": n}
    items: Keys  # where each page's list is ([] : the answer is the list)
    end: dict[str, JSON]  # {"when": "falsy" | "truthy" | "total", "path": [...]}, {"when": "pages", "path": [...],
    # "at": [...]} (this page's number reaching the count) or {"when": "short", "size": n}

    @property
    def first(self) -> str:
        return self.pages[0]

    def code(self, main: str) -> str:
        spec = {
            "tool": self.tool,
            "key": list(self.key),
            "next": self.next,
            "items": list(self.items),
            "end": self.end,
        }
        return f"const PAGING = {json.dumps(spec, ensure_ascii=False)};\n{_PAGING_JS}{main}"


def find_pagings(kept: Sequence[StepRecord]) -> list[Paging]:
    """The paged reads of a recording: runs of two or more calls of one tool, each the previous one's next page."""
    by_tool: dict[str, list[StepRecord]] = {}
    for record in sorted(kept, key=lambda r: r.seq):
        if record.status == StepStatus.SUCCEEDED and not record.is_error and isinstance(record.output, dict | list):
            by_tool.setdefault(prefixed_name(record.server, record.tool) or record.name, []).append(record)
    found: list[Paging] = []
    for tool, calls in by_tool.items():
        start = 0
        while start < len(calls) - 1:
            paging, length = _longest(tool, calls[start:])
            if paging is not None:
                found.append(paging)
            start += max(length, 1)  # (a run that does not page is passed over whole: linear in the calls)
    return found


def _longest(tool: str, calls: Sequence[StepRecord]) -> tuple[Paging | None, int]:
    """The paging that the run of `calls` from the first one makes (two calls at least), and how many calls it
    spans (or how many to pass over: the run that does not page, but its last call, which may start another):
    the calls that each differ from the one before in the same paging-named argument; a few shorter runs are
    tried when the whole run does not page."""
    key = _differs(calls[0].resolved_input, calls[1].resolved_input)
    if key is None or not (set(key_tokens(str(key[-1]))) & (_PAGE_WORDS | _CURSOR_WORDS) or _handed(calls, key)):
        return None, 1
    end = 2
    while end < len(calls) and _differs(calls[end - 1].resolved_input, calls[end].resolved_input) == key:
        end += 1
    for length in range(end, max(1, end - _SHORTER_TRIES), -1):
        paging = _paging(tool, calls[:length])
        if paging is not None:
            return paging, length
    return None, end - 1


def _handed(calls: Sequence[StepRecord], key: Keys) -> bool:
    """The second call's argument at `key`, however short its name (Google Reader's `c`), is the cursor the first
    answer handed out under a name that says so (`continuation`), and the first call had none."""
    found, value = get_at(calls[1].resolved_input, key)
    if not found or not isinstance(value, str) or len(value) < _CURSOR_MIN or get_at(calls[0].resolved_input, key)[0]:
        return False
    return any(
        leaf == value and at and set(key_tokens(str(at[-1]))) & (_NEXT_WORDS | _CURSOR_WORDS)
        for at, leaf in walk(calls[0].output)
    )


def _paging(tool: str, pages: Sequence[StepRecord]) -> Paging | None:
    keys = {_differs(a.resolved_input, b.resolved_input) for a, b in itertools.pairwise(pages)}
    if len(keys) != 1 or (key := keys.pop()) is None:
        return None
    following = _cursor(pages, key) or _step(pages, key)
    items = _items(pages)
    if following is None or items is None:
        return None
    seen = list(itertools.accumulate(len(_list_at(p.output, items)) for p in pages))
    last_ends = [False] * (len(pages) - 1) + [True]
    for end in _ends(pages, items, following):
        if [_ended(p.output, items, end, n) for p, n in zip(pages, seen, strict=True)] != last_ends:
            continue  # (the script's own test, run once below on the one that holds here)
        paging = Paging(tuple(p.name for p in pages), tool, key, following, items, end)
        merged = _run(paging, [p.output for p in pages])
        if merged is not None and merged["ended"] == last_ends:
            return paging
    return None


def _list_at(page: JSON, items: Keys) -> list[JSON]:
    found = get_at(page, items)[1]
    return found if isinstance(found, list) else []


def _ended(page: JSON, items: Keys, end: dict[str, JSON], seen: int) -> bool:
    """The script's `ended`, in Python: whether `page` ends the list under the end condition `end`, `seen` items
    read with it."""
    if end["when"] == "short":
        size = end["size"]
        return isinstance(size, int) and len(_list_at(page, items)) < size
    path = end["path"]
    value = get_at(page, tuple(path))[1] if isinstance(path, list) else None
    if end["when"] == "total":
        return not _list_at(page, items) or not (isinstance(value, int | float) and seen < value)
    if end["when"] == "pages":  # this page's number has reached the number of pages
        at = end["at"]
        number = get_at(page, tuple(at))[1] if isinstance(at, list) else None
        if not isinstance(value, int | float) or not isinstance(number, int | float):
            return True
        return not _list_at(page, items) or not number < value
    truthy = value not in (None, False, "", [], {})
    return truthy if end["when"] == "truthy" else not truthy


def _leaves(value: JSON) -> dict[Keys, JSON]:
    return {keys: node for keys, node in walk(value) if keys and not isinstance(node, dict)}


def _differs(a: JSON, b: JSON) -> Keys | None:
    """The one argument whose value differs between two calls (present in the second), or None: a leaf, or the
    object all the differing leaves sit in (a cursor that is an object: DynamoDB's `exclusive_start_key`)."""
    left, right = _leaves(a), _leaves(b)
    paths = [k for k in {*left, *right} if left.get(k, _MISSING) != right.get(k, _MISSING)]
    if not paths or not all(k in right for k in paths):
        return None
    common = paths[0]
    for path in paths[1:]:
        size = next(
            (i for i, (x, y) in enumerate(zip(common, path, strict=False)) if x != y), min(len(common), len(path))
        )
        common = common[:size]
    if not common or any(isinstance(k, int) for k in common) or (len(paths) > 1 and common in paths):
        return None
    return common


def _cursor(pages: Sequence[StepRecord], key: Keys) -> dict[str, JSON] | None:
    """Each next page's argument is a value the previous answer holds whole, or as a parameter of a URL it holds
    (`links.next`), at one place for every page."""
    places: set[tuple[Keys, str]] | None = None  # (where, and the URL's parameter holding it, or "")
    for before, page in itertools.pairwise(pages):
        sent = get_at(page.resolved_input, key)[1]
        if not (isinstance(sent, dict) or (isinstance(sent, str) and len(sent) >= _CURSOR_MIN)):
            return None
        here: set[tuple[Keys, str]] = set()
        for keys, node in walk(before.output):
            if keys and len(keys) <= _DEPTH and not any(isinstance(k, int) for k in keys):
                if node == sent:
                    here.add((keys, ""))
                elif isinstance(node, str) and isinstance(sent, str) and "?" in node:
                    here |= {(keys, name) for name, values in parse_qs(urlsplit(node).query).items() if sent in values}
        places = here if places is None else places & here
    named = [(keys, name) for keys, name in places or set() if set(key_tokens(str(keys[-1]))) & _NEXT_WORDS]
    if not named:
        return None  # (a value passed on from one answer to the next call is a ref, not a page's cursor)
    keys, name = min(named, key=lambda place: len(place[0]))
    return {"kind": "cursor", "path": list(keys), **({"param": name} if name else {})}


def _step(pages: Sequence[StepRecord], key: Keys) -> dict[str, JSON] | None:
    """A number that grows by the same step from each page to the next (a page number, an offset); the first call
    may leave it out (its value is then the one before the second's: 1 for a page number, 0 for an offset)."""
    if not set(key_tokens(str(key[-1]))) & _PAGE_WORDS:
        return None  # (`id: 101` then `id: 102` are two items, not two pages)
    values = [get_at(p.resolved_input, key)[1] for p in pages]
    given = [v for v in values[1:] if isinstance(v, int) and not isinstance(v, bool)]
    if len(given) != len(values) - 1:
        return None
    first = values[0]
    if first is None:
        first = 1 if "page" in key_tokens(str(key[-1])) else 0
    if not isinstance(first, int) or isinstance(first, bool):
        return None
    numbers = [first, *given]
    steps = {b - a for a, b in itertools.pairwise(numbers)}
    if len(steps) != 1 or (by := steps.pop()) <= 0:
        return None
    return {"kind": "step", "by": by, "start": first}


def _items(pages: Sequence[StepRecord]) -> Keys | None:
    """Where each page's list is: the answer itself, or the list field every page has (the longest in all)."""
    if all(isinstance(p.output, list) for p in pages):
        return ()
    lists: dict[Keys, int] = {}
    for page in pages:
        for keys, node in walk(page.output):
            if keys and len(keys) <= 2 and isinstance(node, list) and not any(isinstance(k, int) for k in keys):
                lists[keys] = lists.get(keys, 0) + 1
    common = [keys for keys, count in lists.items() if count == len(pages)]
    if not common:
        return None
    return max(common, key=lambda keys: sum(len(get_at(p.output, keys)[1] or []) for p in pages))


def _ends(pages: Sequence[StepRecord], items: Keys, following: dict[str, JSON]) -> list[dict[str, JSON]]:
    """End conditions to try, the likeliest first: the cursor's place emptied, a field naming the next page or
    more to come, one naming the end, then a short page."""
    candidates: list[tuple[int, dict[str, JSON]]] = []
    if following["kind"] == "cursor":
        candidates.append((0, {"when": "falsy", "path": following["path"]}))
    paths: set[Keys] = set()
    total = sum(len(_list_at(p.output, items)) for p in pages)
    for page in pages:
        paths |= {
            keys
            for keys, node in walk(page.output)
            if keys
            and len(keys) <= _DEPTH
            and not any(isinstance(k, int) for k in keys)
            and keys[: len(items)] != items
        }
    for keys in sorted(paths, key=lambda k: (len(k), str(k))):
        words = set(key_tokens(str(keys[-1])))
        if words & _NEXT_WORDS:
            candidates.append((1, {"when": "falsy", "path": list(keys)}))
        if words & _END_WORDS:
            candidates.append((2, {"when": "truthy", "path": list(keys)}))
        if words & _TOTAL_WORDS and all(get_at(p.output, keys)[1] == total for p in pages):
            candidates.append((2, {"when": "total", "path": list(keys)}))  # `total: 3` on every page: all there is
    candidates += [(2, end) for end in _page_counts(pages, paths)]
    sizes = {len(get_at(p.output, items)[1] or []) for p in pages[:-1]}
    if len(sizes) == 1:
        candidates.append((3, {"when": "short", "size": sizes.pop()}))
    return [end for _, end in sorted(candidates, key=lambda c: c[0])]


def _page_counts(pages: Sequence[StepRecord], paths: set[Keys]) -> list[dict[str, JSON]]:
    """`current_page: 1, 2` beside `total_pages: 2` on every page (`page`/`pages`, `pageNumber`/`totalPages`): the
    list ends on the page whose number reaches the count."""
    numbers = {keys: [get_at(p.output, keys)[1] for p in pages] for keys in paths}
    counted = {
        keys: values
        for keys, values in numbers.items()
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values)
    }
    steps = [keys for keys, values in counted.items() if all(b == a + 1 for a, b in itertools.pairwise(values))]
    out: list[dict[str, JSON]] = []
    for at in steps:
        last = counted[at][-1]
        for keys, values in counted.items():
            if keys != at and set(values) == {last} and _counts_pages(key_tokens(str(keys[-1]))):
                out.append({"when": "pages", "path": list(keys), "at": list(at)})
    return out


def _counts_pages(words: Sequence[str]) -> bool:
    """`total_pages`, `pages`, `last_page`, `pageCount`: a number of pages; not `per_page` nor a page's `count` of
    items, which may equal the number of pages by chance."""
    return "pages" in words or ("page" in words and ("last" in words or "count" in words))


def _run(paging: Paging, pages: list[JSON]) -> dict[str, JSON] | None:
    try:
        out = run_code(paging.code(_MERGE), {"pages": pages}, _LIMITS)
    except CodeError:
        return None
    return out if isinstance(out, dict) else None


def merge_pages(kept: Sequence[StepRecord], run: Run, pagings: Sequence[Paging]) -> list[StepRecord]:
    """`kept` with each paged read one record: the first page's, answering with every page merged (as the saved
    step will); `run` changed alike."""
    out = list(kept)
    for paging in pagings:
        records = {r.name: r for r in out}
        merged = _run(paging, [records[name].output for name in paging.pages])
        assert merged is not None  # (it merged when it was found)
        first = dataclasses.replace(records[paging.first], output=merged["merged"])
        out = [first if r.name == paging.first else r for r in out if r.name not in paging.pages[1:]]
        run.steps = {name: (first if name == paging.first else r) for name, r in run.steps.items()}
        for name in paging.pages[1:]:
            run.steps.pop(name, None)
            run.outputs.pop(name, None)
        run.outputs[paging.first] = merged["merged"]
    return out


def page_steps(template: Template, pagings: Sequence[Paging]) -> tuple[Template, tuple[Loop, ...]]:
    """The template with each paged read's step a script step paging until the end, and what its dry replay
    compares it with (the recorded pages, in order)."""
    by_first = {paging.first: paging for paging in pagings}
    steps: list[StepSpec] = []
    loops: list[Loop] = []
    for step in template.steps:
        paging = by_first.get(step.name)
        if paging is None or step.kind != "tool" or step.for_each is not None:
            steps.append(step)
            continue
        code = paging.code(_SCRIPT)
        steps.append(dataclasses.replace(step, tool=None, input={"args": step.input}, script=code, tool_digest=None))
        why = f"{len(paging.pages)} pages when recorded, read until the answer ends the list"
        loops.append(Loop(step.name, "script", "", paging.pages, why, run_members=(paging.pages,)))
    return dataclasses.replace(template, steps=tuple(steps)), tuple(loops)
