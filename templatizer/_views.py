"""Views of text outputs: a table or a markdown listing a tool printed, read as a list of rows.

Many tools answer in text: `kubectl get pods` prints an aligned table, issue trackers a markdown section
per issue (`## KEY` then `**Field**: value` lines), others a markdown table. Read as rows (`{column:
value}`), what the agent took out of them is an element of a list like any JSON output's, so refs, loops
over every row or over the rows one column selects, and joins of a column apply to it. A `code` step added
after the step that printed the text parses it at replay time; the rows the templatizer reasons on come
from the same script, run in the sandbox when saving, so what is verified is what replays. Text with no
such rows (a "No issues found." in another world) gives an empty list, not an error.
"""

from __future__ import annotations

import ast
import csv
import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from toolreel.core.errors import CodeError
from toolreel.core.model import JSON, StepRecord
from toolreel.core.sandbox import CodeLimits, run_code
from toolreel.templatizer._values import free_name, get_at, json_path
from toolreel.templatizer._view_code import VIEW_CODE

if TYPE_CHECKING:
    from toolreel.templatizer._runs import Run

__all__ = ["VIEW_CODE", "View", "read_view", "view_input"]

_LIMITS: Final = CodeLimits(timeout=1.0, memory_mb=32)
_HEADER_RE: Final = re.compile(r"^[A-Z][A-Z0-9 _%/().#-]*$")
# `| --- | --- |`, `---|---`; between pipes on both sides a cell may be shorter (`| -- | ---- |`, as GFM allows)
_RULE_RE: Final = re.compile(
    r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$|^\s*\|(\s*:?-+:?\s*\|){2,}\s*$|^\s*\+(-+\+)+\s*$",
    re.MULTILINE,
)
# A table drawn with box characters (`│ ID │ NAME │`, `┼────┼`), as a CLI prints it: read as the ASCII one.
_BOX: Final = str.maketrans("\u2502\u2503\u2551" + "\u2500\u2501\u2550", "|||" + "---", "") | {
    ord(c): "+" for c in "\u253c\u250c\u2510\u2514\u2518\u251c\u2524\u252c\u2534\u254b\u256c\u256a\u256b"
}
# A header's underline of dash runs, one per column (`------------ ------------------------------------`).
_DASHED_RE: Final = re.compile(r"\s*-{2,}(?: +-{2,})+\s*")
_RULE_LINE_RE: Final = re.compile(r"\s*(?:-{3,}|={3,})\s*")
_TITLE_RE: Final = re.compile(r"^[A-Z][A-Za-z0-9 _%/().#-]*$")
_HEADING_RE: Final = re.compile(r"^(#{1,6})\s+\S")
_FIELD_RE: Final = re.compile(r"^\s*(?:[-*]\s+)?\*\*[^*]+?\*\*")
# A line that opens JSON records inside prose (a database tool's rows between untrusted-data tags).
_JSON_LINE_RE: Final = re.compile(r"^(\s*)(?:\[\s*(?:\{|$)|\{\s*(?:[\"']|$))", re.MULTILINE)
_CSV_NAME_RE: Final = re.compile(r"^[A-Za-z_][\w.]*$")  # a column name: one word, no spaces (not a sentence)
_CSV_MIN_COLUMNS: Final = 2
_JSON_TRIES: Final = 5  # opening lines tried per text: a few parses, however long the text


@dataclass(frozen=True, slots=True)
class View:
    """The rows of a step's text output: the code step `name` computes them from `@source`."""

    name: str
    source: str
    shape: str  # table | pipes | dashed | nested | csv | sections | json | names | yaml | records | links | checklist
    #             | keyed (an object of entries keyed by name, not text)
    level: int  # the heading level of a section per row (sections only)
    rows: tuple[JSON, ...]  # per recording (None where the step is absent)

    @property
    def input(self) -> JSON:
        return view_input(self.source, self.shape, self.level)

    @property
    def step(self) -> str:
        """The step whose output holds the text (`source` may read one block of it: `find_1[1].text`)."""
        return re.split(r"[.\[]", self.source, maxsplit=1)[0]


def view_input(source: str, shape: str, level: int) -> JSON:
    return {"text": f"@{source}", "shape": shape, "level": level}


def read_view(record: StepRecord, runs: Sequence[Run], taken: set[str]) -> View | None:
    """The view of `record`'s text output when it reads as two or more fields per row, with one row at least.
    An output of several text blocks (`[{type: text, text}, ...]`) is read block by block: the first that
    reads as rows is the view's text (`@step[1].text`)."""
    output = runs[0].outputs.get(record.name)
    blocks = _blocks(output)
    if blocks.count("\n\n") and _shape(blocks) == ("records", 0):  # one block per item (`Agent ID: 003` ...)
        rows = _rows(blocks, "records", 0)
        if isinstance(rows, list) and len(rows) >= _BLOCK_ROWS:
            others = [_rows(_blocks(run.outputs.get(record.name)), "records", 0) for run in runs[1:]]
            return View(free_name(f"{record.name}_rows", taken), record.name, "records", 0, (rows, *others))
    for at, text in _texts(output):
        shape = _shape(text)
        if shape is None:
            continue
        rows = _rows(text, *shape)
        if not isinstance(rows, list) or not rows:
            continue
        name = free_name(f"{record.name}_rows", taken)
        source = record.name if at is None else f"{record.name}[{at}].text" if isinstance(at, int) else ""
        if isinstance(at, str):
            source = f"{record.name}{json_path((at,))[1:]}"
        others = [_rows(_text_at(run.outputs.get(record.name), at), *shape) for run in runs[1:]]
        return View(name, source, shape[0], shape[1], (rows, *others))
    return _keyed_view(record, runs, taken)


def _keyed_view(record: StepRecord, runs: Sequence[Run], taken: set[str]) -> View | None:
    """An object whose entries are keyed by their names (Pulsar's `subscriptions: {"billing": {...}, ...}`,
    Docker's networks, Consul's services), read as a list of those entries with each name as `name`: what the
    agent took of them (a name, a loop over the ones with no consumers) is an element of a list then."""
    output = runs[0].outputs.get(record.name)
    if not isinstance(output, dict):
        return None
    places = [((), output), *(((key,), value) for key, value in output.items())]
    for keys, value in places:
        if _entries_by_name(value):
            source = f"{record.name}{json_path(keys)[1:]}"
            rows = tuple(_keyed_rows(get_at(run.outputs.get(record.name), keys)[1]) for run in runs)
            return View(free_name(f"{record.name}_rows", taken), source, "keyed", 0, rows)
    return None


_KEYED_MIN: Final = 2  # entries (and fields in each) for an object to read as entries keyed by name


def _entries_by_name(value: JSON) -> bool:
    """Two entries or more, each an object of the same fields (two at least), under names that are no field
    names of one record (`billing`, `audit-archive`, not `id`, `status`)."""
    if not isinstance(value, dict) or len(value) < _KEYED_MIN:
        return False
    entries = list(value.values())
    if not all(isinstance(e, dict) and len(e) >= _KEYED_MIN for e in entries):
        return False
    fields = [set(e) for e in entries if isinstance(e, dict)]
    shared = set.intersection(*fields)
    return len(shared) >= _KEYED_MIN and len(shared) * 2 >= max(len(f) for f in fields) and "name" not in shared


def _keyed_rows(value: JSON) -> JSON:
    if not isinstance(value, dict):
        return None
    try:
        return run_code(VIEW_CODE, {"text": value, "shape": "keyed", "level": 0}, _LIMITS)
    except CodeError:
        return None


def _texts(output: JSON) -> list[tuple[int | str | None, str]]:
    if isinstance(output, str):
        return [(None, output)]
    if isinstance(output, dict):  # a file's `content`, a command's `stdout`: a text field of several lines
        return [(key, text) for key, text in output.items() if isinstance(text, str) and "\n" in text.strip()]
    if not isinstance(output, list):
        return []
    return [
        (i, block["text"])
        for i, block in enumerate(output)
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    ]


def _blocks(output: JSON) -> str:
    """The text blocks of several lines of an output, one after another (as the view's script joins them)."""
    return "\n\n".join(text for at, text in _texts(output) if isinstance(at, int) and "\n" in text)


_BLOCK_ROWS: Final = 2


def _text_at(output: JSON, at: int | str | None) -> JSON:
    if at is None:
        return output
    if isinstance(at, str):
        return output.get(at) if isinstance(output, dict) else None
    if isinstance(output, list) and at < len(output) and isinstance(output[at], dict):
        return output[at].get("text")
    return None


def _shape(text: str) -> tuple[str, int] | None:
    """Which parser the text calls for (cheap tests first: most outputs are not tables)."""
    body = text.strip()
    if "\n" not in body:
        # one line: records printed whole (`str(rows)` of a SQL tool; JSON text was parsed already), or names
        if _JSON_LINE_RE.match(body) and _embedded(body):
            return "json", 0
        return ("names", 0) if _names(body) else None
    names = re.findall(r"\S+(?: \S+)*", body.split("\n", 1)[0])
    if len(names) >= 2 and all(_HEADER_RE.match(name) for name in names):
        return "table", 0
    if body.count("\n") >= 2 and _DASHED_RE.fullmatch(body.split("\n", 2)[1]):
        return "dashed", 0
    ruled = body.count("\n") >= 2 and _RULE_LINE_RE.fullmatch(body.split("\n", 2)[1])
    if ruled and len(names) >= 2 and all(_TITLE_RE.match(name) for name in names):  # restic's `ID  Time` over `---`
        return "ruled", 0
    if _bare_pipes(body):
        return "pipes", 0
    if ("|" in body and _RULE_RE.search(body)) or ("\u2502" in body and _RULE_RE.search(body.translate(_BOX))):
        return "pipes", 0
    if _csv(body):
        return "csv", 0
    if _JSON_LINE_RE.search(body) and _embedded(body):
        return "json", 0
    level = _section_level([line for line in body.splitlines() if line.strip()]) if "**" in body else 0
    if level and "#" in body:
        return "sections", level
    if _nested(body):
        return "nested", 0
    if _YAML_ITEM_RE.search(body):
        return "yaml", 0
    if _records(body):
        return "records", 0
    if _links(body):
        return "links", 0
    if len(_CHECK_ITEM_RE.findall(body)) >= _LINKS_MIN:
        return "checklist", 0
    return ("names", 0) if _names(body) else None


_BULLET: Final = r"[-*\u2022\u00b7\u25aa\u25e6\u2023]"  # the list markers of a text listing (`VIEW_CODE`'s too)
_KEY: Final = r"[A-Za-z][\w .\/-]{0,40}?"  # a field's name before its `: `
_RECORD_FIELD_RE: Final = re.compile(rf"^(?:{_BULLET}\s+)?({_KEY}):\s+(.*)$")
_BLOCK_SPLIT_RE: Final = re.compile(r"\n\s*(?:(?:-{3,}|={3,}|\*{3,})\s*)?\n")


# A bulleted line that is no `Key: value` field: it opens a record (`• debian.iso`, its fields indented below).
_BULLET_TITLE_RE: Final = re.compile(rf"(?m)^(?=[ \t]*{_BULLET}[ \t]+(?!{_KEY}:\s)\S)")


def _nested(body: str) -> bool:
    """Names each on a line of its own, ending with a colon, each followed by its indented answer (Salt's output:
    `web-01.prod:` then `    True`): two names at least, every line one or the other."""
    lines = [line for line in body.splitlines() if line.strip()]
    heads = [_NESTED_HEAD_RE.fullmatch(line) is not None for line in lines]
    return (
        sum(heads) >= 2
        and heads[0]
        and all(head or _answer(line) for head, line in zip(heads, lines, strict=True))
        and not any(a and b for a, b in itertools.pairwise(heads))  # (each name has its answer)
    )


def _answer(line: str) -> bool:
    return line.startswith("  ") and not _YAML_LINE_RE.match(line)


_NESTED_HEAD_RE: Final = re.compile(r"[^\s:][^:]*:")
_YAML_LINE_RE: Final = re.compile(r"\s+(?:- |[\w.-]+:(?:\s|$))")  # (a YAML mapping's keys and items are no answers)


def _records(body: str) -> bool:
    """Two blocks or more of `Key: value` lines (two fields at least each) that open with the same key: records
    printed one per block (`Title: …` / `UUID: …`, then `---`, or under a bulleted title), not prose with a colon."""
    firsts: list[str] = []
    for block in (part for chunk in _BLOCK_SPLIT_RE.split(body) for part in _BULLET_TITLE_RE.split(chunk)):
        fields = [m.group(1) for line in block.splitlines() if (m := _RECORD_FIELD_RE.match(line.strip()))]
        if len(fields) >= 2:
            firsts.append(fields[0])
    return len(firsts) >= 2 and len(set(firsts)) == 1


_LINK_ITEM_RE: Final = re.compile(r"^\s*(?:[-*\u2022]|\d+\.)\s+\[[^\]]+\]\(\S+?\)(?=\s|$)")
_LINKS_MIN: Final = 2
_CHECK_ITEM_RE: Final = re.compile(r"(?m)^\s*[-*+]\s+\[[ xX]\]\s+\S")


def _links(body: str) -> bool:
    """A markdown list of links, two items at least, every item a link (a search's hits, a page's children)."""
    items = [line for line in body.splitlines() if re.match(r"^\s*(?:[-*\u2022]|\d+\.)\s", line)]
    return len(items) >= _LINKS_MIN and all(_LINK_ITEM_RE.match(line) for line in items)


# A YAML sequence item that is a mapping of two fields at least (`- id: '12:401'` then `  name: cart-drawer`).
_YAML_ITEM_RE: Final = re.compile(r"^( *)- [A-Za-z_][\w-]*:(?: .*)?\n\1  [A-Za-z_][\w-]*:", re.MULTILINE)


_NAME_TOKEN_RE: Final = re.compile(r"^[\w.\-/:@]+$")
_LABEL_RE: Final = re.compile(r"^[A-Za-z][\w ]*:\s+")
_NAMES_MIN: Final = 3


def _bare_pipes(body: str) -> bool:
    """A table of `|`-separated columns with no rule under its header: every line has as many bars, two at least."""
    lines = [line for line in body.splitlines() if line.strip()]
    bars = lines[0].count("|")
    return len(lines) >= 2 and bars >= 2 and all(line.count("|") == bars for line in lines)  # (a header, a row)


def _names(body: str) -> bool:
    """A list of names: one per line (comment lines aside), or separated by commas after a label."""
    kept = [line.strip() for line in body.splitlines() if line.strip() and not line.strip().startswith("#")]
    if len(kept) == 1:
        parts = [part.strip() for part in _LABEL_RE.sub("", kept[0], count=1).split(",")]
        return len(parts) >= _NAMES_MIN and all(_NAME_TOKEN_RE.match(part) for part in parts)
    return len(kept) >= _NAMES_MIN and all(_NAME_TOKEN_RE.match(line) for line in kept)


def _csv(body: str) -> bool:
    """Comma-separated rows under a header of two or more distinct column names (`sku,name,qty`), every row with
    as many fields (read as CSV), a row at least. A sentence with commas has no such header."""
    lines = [line for line in body.splitlines() if line.strip()]
    names = lines[0].split(",")
    if len(names) < _CSV_MIN_COLUMNS or len(set(names)) != len(names) or len(lines) < _CSV_MIN_COLUMNS:
        return False
    if not all(_CSV_NAME_RE.match(name) for name in names):
        return False
    return all(len(row) == len(names) for row in csv.reader(lines[1:], skipinitialspace=True))


def _embedded(body: str) -> bool:
    """Whether the view's script finds JSON records in `body`: the first of (at most 5) lines opening a JSON
    array or object that parses whole, on that line or up to the first later line closing it at the same
    indentation."""
    lines = body.splitlines()
    tried = 0
    for i, line in enumerate(lines):
        opened = _JSON_LINE_RE.match(line)
        if opened is None:
            continue
        if tried == _JSON_TRIES:
            return False
        tried += 1
        indent, j = opened.group(1), i
        if not line.rstrip().endswith(("]", "}")):
            j = next(
                (
                    k
                    for k in range(i + 1, len(lines))
                    if lines[k].startswith(indent) and lines[k][len(indent) :][:1] in ("]", "}")
                ),
                -1,
            )
            if j < 0:
                continue
        if _parses("\n".join(lines[i : j + 1])):
            return True
    return False


def _parses(text: str) -> bool:
    """JSON, or the Python literal a `str(rows)` answer prints (the script reads both)."""
    try:
        json.loads(text)
    except ValueError:
        pass
    else:
        return True
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _section_level(lines: Sequence[str]) -> int:
    """The heading level whose sections hold `**Field**: value` lines (0: none)."""
    levels: list[int] = []
    current = 0
    for line in lines:
        heading = _HEADING_RE.match(line)
        if heading is not None:
            current = len(heading.group(1))
        elif current and _FIELD_RE.match(line):
            levels.append(current)
            current = 0
    return max(set(levels), key=levels.count) if levels else 0


def _rows(text: JSON, shape: str, level: int) -> JSON:
    if not isinstance(text, str):
        return None
    try:
        return run_code(VIEW_CODE, {"text": text, "shape": shape, "level": level}, _LIMITS)
    except CodeError:
        return None
