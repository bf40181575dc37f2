"""Numbers a sentence tallies: `Acme Ltd: 5 unpaid invoices, balance 4445.00`, `3 open pledges, total 1525.50`.

An agent that reports on a list writes how many items it has and what their amounts add up to. Such a number is no
earlier value, so no ref carries it, and left literal it reports the recorded list on every run. `propose_tallies`
finds each number written in an argument's own words (outside its `{{...}}` refs) that exactly one count or sum of
one earlier list gives, as written (`4445.00`: two decimals), and puts it in the text as `{{@tally_n}}`, a `code`
step counting or adding up that list on each run (a paged read's list holds every page). The evidence rules keep
chance out: a sum needs a decimal part or three digits; a count needs the word after it to name what the list
holds (`invoices` of `list_invoices`) or a sum of the same list beside it in the same text; lists of one item
count nothing. Kept only when the script, run on each recording's outputs, gives a number its text holds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from toolreel.core.model import JSON, StepRecord
from toolreel.core.refs import is_ref, refs_in
from toolreel.core.template import StepSpec, Template
from toolreel.templatizer._codesteps import CodeRead, with_code_steps
from toolreel.templatizer._result import Inference
from toolreel.templatizer._runs import Run, reproduced, script_on
from toolreel.templatizer._values import Keys, entity_words, get_at, json_path, record_paths, walk

__all__ = ["propose_tallies"]

# (a sum may group its thousands: `11,925.25`)
_NUMBER_RE: Final = re.compile(r"(?<![\w.,/:#$-])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\w/:]|[.,]\d)")
_WORD_RE: Final = re.compile(r"[A-Za-z]+")
_REF_PART_RE: Final = re.compile(r"(\{\{[^}]*\}\})")
_WHOLE: Final = 1e-9
_DECIMALS: Final = 3
_SUM_DIGITS: Final = 3  # a whole sum of fewer digits equals a chosen number by chance too often


_GROUPED: Final = 1000
# the thousands grouped with commas, as the sentence wrote them (`11,925.25`)
_GROUPING: Final = (
    '  const [whole, part] = fixed.split(".");\n'
    '  const grouped = whole.replace(/\\B(?=(\\d{3})+(?!\\d))/g, ",");\n'
    '  return part === undefined ? grouped : grouped + "." + part;\n'
)


@dataclass(frozen=True, slots=True)
class _Tally:
    """The number of items of the list at `source`, or (a `field`) the sum of that field over them."""

    source: str
    items: int
    field: Keys = ()  # none: a count
    total: float = 0.0
    words: frozenset[str] = frozenset()  # what the list holds, by its tool's and keys' names: a count's evidence
    shared: str = ""  # a text every item holds at `field` (the currency of every invoice): no count, no sum

    def writings(self) -> Iterator[str]:
        """How a sentence may write it: a count as it is, a sum with up to three decimals (a whole one with none)."""
        if self.shared:
            yield self.shared
            return
        if not self.field:
            yield str(self.items)
            return
        whole = abs(self.total - round(self.total)) <= _WHOLE
        for decimals in range(0 if whole else 1, _DECIMALS + 1):
            yield f"{self.total:.{decimals}f}"
            if abs(self.total) >= _GROUPED:
                yield f"{self.total:,.{decimals}f}"

    def code(self, decimals: int, grouped: bool = False) -> str:
        if not self.field:
            return "export default function(input) {\n  return String(input.list.length);\n}\n"
        path = json.dumps(list(self.field))
        at = f"  const at = (x) => {path}.reduce((v, k) => (v === null || v === undefined ? v : v[k]), x);\n"
        if self.shared:
            return "export default function(input) {\n" + at + "  return String(at(input.list[0]));\n}\n"
        return (
            "export default function(input) {\n"
            + at
            + "  const total = input.list.reduce((a, x) => a + Number(at(x)), 0);\n"
            f"  const fixed = total.toFixed({decimals});\n" + (_GROUPING if grouped else "  return fixed;\n") + "}\n"
        )

    @property
    def what(self) -> str:
        if self.shared:
            return f"the `{'.'.join(map(str, self.field))}` every item holds in"
        return f"the sum of `{'.'.join(map(str, self.field))}` over" if self.field else "the number of items of"


@dataclass(frozen=True, slots=True)
class _Found:
    step: str
    keys: Keys
    piece: str
    tally: _Tally

    @property
    def decimals(self) -> int:
        return len(self.piece.partition(".")[2])

    @property
    def grouped(self) -> bool:
        return "," in self.piece


def propose_tallies(
    template: Template, kept: Sequence[StepRecord], runs: Sequence[Run]
) -> tuple[Template, tuple[Inference, ...]]:
    """The template with each number a sentence tallies read from its list on each run (see the module)."""
    specs = {step.name: step for step in template.steps}
    tallies: dict[str, list[_Tally]] = {}  # by the number as written: one look-up per number, linear in the session
    shared: dict[str, list[_Tally]] = {}  # by the list: the texts every item of it holds
    found: list[_Found] = []
    records = {record.name: record for record in kept}
    for spec in template.steps:
        record = records.get(spec.name)
        if record is not None and spec.tool is not None and tallies:
            for keys, leaf in walk(spec.input):
                if isinstance(leaf, str) and not is_ref(leaf) and " " in leaf:
                    here = [f for f in _in_text(record, keys, leaf, tallies) if _reproduces(f, runs)]
                    found += here + [f for f in _beside(record.name, keys, leaf, here, shared) if _reproduces(f, runs)]
        # (a select step's elements are listed too: the hosts a filter kept, counted as the read's own)
        source = record or (_source(spec, specs, records) if spec.name.startswith("select_") else None)
        if source is not None and spec.name in runs[0].outputs:
            named = _named_words(source.tool or source.name, source.input)
            for tally in _tallies_of(spec.name, named, runs[0].outputs[spec.name]):
                if tally.shared:
                    shared.setdefault(tally.source, []).append(tally)
                    continue
                for written in tally.writings():
                    tallies.setdefault(written, []).append(tally)
    if not found:
        return template, ()
    return with_code_steps(template, [_read(item) for item in found], _placed)


def _source(spec: StepSpec, specs: Mapping[str, StepSpec], records: Mapping[str, StepRecord]) -> StepRecord | None:
    """The recorded call a code step's list comes from, through the code steps between (a view of its text)."""
    seen: set[str] = set()
    while spec.name not in records and spec.name not in seen:
        seen.add(spec.name)
        roots = [ref.root for ref in refs_in(spec.input)]
        if not roots or roots[0] not in specs:
            return None
        spec = specs[roots[0]]
    return records.get(spec.name)


def _named_words(tool: str, given: JSON) -> frozenset[str]:
    """What a call's answer lists, by the tool's name and the plain words it was asked with (`collection:
    "products"`, `doctype: "Sales Invoice"`)."""
    asked = (
        [v for v in given.values() if isinstance(v, str) and _WORDS_ONLY_RE.fullmatch(v)]
        if isinstance(given, dict)
        else []
    )
    return entity_words(tool).union(*(entity_words(v.lower().replace(" ", "_")) for v in asked))


_WORDS_ONLY_RE: Final = re.compile(r"[A-Za-z]+(?: [A-Za-z]+)?")
_COUNTED_WITHIN: Final = 4  # "5 out-of-stock products": the noun may follow a few words on


def _tallies_of(step: str, named: frozenset[str], output: JSON) -> Iterator[_Tally]:
    for keys, node in walk(output):
        if isinstance(node, list) and len(node) >= 2 and not any(isinstance(key, int) for key in keys):
            source = f"@{step}{json_path(keys)[1:]}"
            words = named.union(*(entity_words(key) for key in keys if isinstance(key, str)))
            yield _Tally(source, len(node), words=words)
            for field in _numeric_fields(node):
                total = sum(float(get_at(item, field)[1]) for item in node)  # (numbers: `_numeric_fields`)
                yield _Tally(source, len(node), field, total)
            for field, value in _shared_fields(node):
                yield _Tally(source, len(node), field, shared=value)


def _beside(
    step: str, keys: Keys, leaf: str, found: Sequence[_Found], shared: Mapping[str, list[_Tally]]
) -> Iterator[_Found]:
    """A text every item of a list holds, written beside that list's sum (`11,925.25 EUR`: every invoice's
    currency): read from the list on each run, as the sum is."""
    own = " ".join(_REF_PART_RE.split(leaf)[::2])
    for source in dict.fromkeys(f.tally.source for f in found if f.tally.field):
        for tally in shared.get(source, ()):
            if re.search(rf"(?<![\w-]){re.escape(tally.shared)}(?![\w-])", own):
                yield _Found(step, keys, tally.shared, tally)


def _shared_fields(items: list[JSON]) -> Iterator[tuple[Keys, str]]:
    """The fields every item holds the same code or name at (`currency: "EUR"`), no plain lower-case word."""
    first = items[0]
    if not isinstance(first, dict) or not all(isinstance(item, dict) for item in items):
        return
    for path in record_paths(first):
        value = get_at(first, path)[1]
        coded = isinstance(value, str) and len(value) >= 2 and not value.islower() and not value.isdigit()
        if coded and all(get_at(item, path)[1] == value for item in items):
            yield path, value


def _numeric_fields(items: list[JSON]) -> Iterator[Keys]:
    """The paths of the fields every item holds a number at (inside a record's envelope too: `fields.Amount`)."""
    first = items[0]
    if not isinstance(first, dict) or not all(isinstance(item, dict) for item in items):
        return
    for path in record_paths(first):
        values = [get_at(item, path)[1] for item in items]
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            yield path


def _in_text(record: StepRecord, keys: Keys, leaf: str, tallies: Mapping[str, list[_Tally]]) -> Iterator[_Found]:
    """Each number of the text's own words that exactly one tally gives, with the evidence rules of the module."""
    own = " ".join(_REF_PART_RE.split(leaf)[::2])
    matches: list[tuple[re.Match[str], list[_Tally]]] = []
    for match in _NUMBER_RE.finditer(own):
        explained = {(t.source, t.field): t for t in tallies.get(match.group(1), ())}
        matches.append((match, list(explained.values())))
    summed = {found[0].source for m, found in matches if len(found) == 1 and found[0].field and _sum_like(m.group(1))}
    for match, found in matches:
        if len(found) != 1:
            continue  # none, or two lists (or two fields) give it: no single explanation
        tally, number = found[0], match.group(1)
        if not tally.field:
            after = {w.lower().rstrip("s") for w in _WORD_RE.findall(own[match.end() :])[:_COUNTED_WITHIN]}
            if not after & {w.rstrip("s") for w in tally.words} and tally.source not in summed:
                continue  # "3 days", "top 5": a count only where it says what it counts, or beside its sum
        elif not _sum_like(number):
            continue
        yield _Found(record.name, keys, number, tally)


def _sum_like(number: str) -> bool:
    return "." in number or len(number) >= _SUM_DIGITS


def _reproduces(found: _Found, runs: Sequence[Run]) -> bool:
    """The script, run on each recording's outputs, gives a number that recording's text holds."""
    code = found.tally.code(found.decimals, found.grouped)

    def holds(got: JSON, sent: JSON, _: Run) -> bool:
        if found.tally.shared:
            return isinstance(sent, str) and isinstance(got, str) and _word_at(sent, got) is not None
        return isinstance(sent, str) and got in {m.group(1) for m in _NUMBER_RE.finditer(sent)}

    return reproduced(found.step, found.keys, runs, script_on(code, {"list": found.tally.source}), holds)


def _placed(text: str, piece: str, step: str) -> str | None:
    """`text` with the first `piece` standing alone as a number outside any `{{...}}` as `{{@step}}`."""
    parts = _REF_PART_RE.split(text)
    for i in range(0, len(parts), 2):
        if not _NUMBER_RE.fullmatch(piece):
            match = _word_at(parts[i], piece)
        else:
            match = next((m for m in _NUMBER_RE.finditer(parts[i]) if m.group(1) == piece), None)
        if match is not None:
            parts[i] = parts[i][: match.start(1)] + "{{@" + step + "}}" + parts[i][match.end(1) :]
            return "".join(parts)
    return None


def _word_at(text: str, word: str) -> re.Match[str] | None:
    return re.search(rf"(?<![\w-])({re.escape(word)})(?![\w-])", text)


def _read(item: _Found) -> CodeRead:
    tally = item.tally

    def why(name: str) -> str:
        return (
            f"{item.piece!r} in the text is {tally.what} {tally.source} as written; "
            f"the code step {name} reproduces it from the recording"
        )

    code = tally.code(item.decimals, item.grouped)
    return CodeRead(item.step, item.keys, item.piece, code, {"list": tally.source}, "tally", why, piece=True)
