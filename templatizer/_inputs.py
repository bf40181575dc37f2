"""Template inputs: named by the caller, made from redacted values, or from values that vary between runs.

Also weighs the literals that no output explains (`_evidence`: the tool's schema, the value's shape,
where it recurs): the likely inputs are applied when the caller saves without naming inputs, those
with thin evidence are proposed unticked, and the rest stay literal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from toolreel.core.model import JSON
from toolreel.core.secrets import is_secret_key
from toolreel.core.template import InputSpec
from toolreel.templatizer._evidence import CHOSEN, THIN, Judgement, is_query, is_statement, judge_text, param_schema
from toolreel.templatizer._result import LikelyInput, StayedLiteral
from toolreel.templatizer._values import (
    Keys,
    is_trivial,
    items_schema,
    json_path,
    key_tokens,
    last_key,
    scalar_text,
    snake,
    strength,
    type_name,
)
from toolreel.templatizer._wording import OutputWords

_SETTING_RE: Final = re.compile(r"^[a-z0-9]+(?:[_.:-][a-z0-9]+)*$")
# Keys whose numbers tune how a tool works (how many, how long, which page, how deep) rather than
# say what the task is about: `limit: 50` is the same on every run, `amount: 1250` is not.
_KNOB_TOKENS: Final = frozenset(
    {
        *("limit", "max", "min", "count", "size", "page", "per", "offset", "top", "skip", "first", "last"),
        *("depth", "timeout", "retries", "retry", "attempts", "interval", "delay", "duration", "ttl", "wait"),
        *("seconds", "secs", "sec", "ms", "millis", "milliseconds", "minutes", "mins"),
        *("width", "height", "length", "len", "lines", "line", "column", "col", "start", "end", "index", "idx"),
        *("level", "priority", "port", "version", "temperature", "tokens", "batch", "concurrency", "threads"),
        *("workers", "precision", "scale", "zoom", "radius", "context", "head", "tail", "n", "k", "step"),
    }
)


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
        self._names = _Names(set())
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

    def derived(self, keys: Keys, per_run: Sequence[tuple[bool, JSON]]) -> str:
        """The input for a value that differs between runs; reused where the same values recur."""
        identity = json.dumps(per_run, sort_keys=True, default=str)
        name = self._derived.get(identity)
        if name is not None:
            return name
        name = self._derived[identity] = self._names.fresh(snake(last_key(keys) or "value"))
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
    built: bool = False  # a text already built on earlier outputs: only a value inside it may be an input

    @property
    def named(self) -> Keys:
        return (self.flag,) if self.flag else self.keys


Schemas = Mapping[str, Mapping[str, Any]]  # listed tool name -> its inputSchema


def likely_inputs(
    literals: Sequence[Unexplained],
    taken: set[str],
    schemas: Schemas | None = None,
    produced: Callable[[str, str], bool] = lambda text, step: False,
    words: OutputWords | None = None,
) -> tuple[list[LikelyInput], list[StayedLiteral]]:
    """Group unexplained literals by value and weigh each from evidence (`_evidence`): the chosen ones are
    likely inputs, the thin ones likely inputs proposed unticked, the rest stay literal (and those that
    looked variable are said so). Paths are grouped by their common root.

    A sentence holding another likely input's value (`"Adding 1250 and 4380"` beside the numbers, `"lead
    of Team Falcon"` beside `"Team Falcon"`) is not proposed itself: with those inputs named it becomes a
    string built on them. So is a sentence holding a version number no output gave (`Release 2026.11.3 is
    live`): the version is the input (`produced(text, step)`: some output before that step holds the text).
    A word or a text of words that were all in outputs before the call (`words`: an element's label read out of
    a snapshot) was composed from what the servers said; a field name of the call's own answer names the data.
    """
    built = [lit for lit in literals if lit.built]
    literals = [lit for lit in literals if not lit.built]
    lists, literals = _whole_lists(literals, schemas or {})
    literals = [flag for lit in literals for flag in _command_flags(lit)]
    literals += [value for lit in literals for value in _query_values(lit)]
    by_value: dict[tuple[str, str], list[Unexplained]] = {}
    for literal in literals:
        by_value.setdefault((type(literal.value).__name__, str(literal.value)), []).append(literal)
    judged: dict[tuple[str, str], Judgement] = {}
    stayed: list[StayedLiteral] = []
    texts_by_step = _texts_by_step(literals)
    for key, uses in list(by_value.items()):
        judged_alone = _read(_judge(uses, schemas or {}), uses, words)
        judgement = _in_context(judged_alone, uses, texts_by_step)
        if judgement.score < THIN:
            del by_value[key]
            if judgement.score >= _LOOKED_VARIABLE or judgement.reasons[0].startswith("the tool"):
                stayed += [_stayed(lit, judgement.why) for lit in uses]
        else:
            judged[key] = judgement
    names = _Names(taken)
    found = [_likely_list(names.fresh(snake(last_key(u[0].keys[:-1]) or "values")), v, u, why) for v, u, why in lists]
    texts = [text for kind, text in by_value if kind == "str"]
    made = {text for (kind, text), uses in by_value.items() if kind == "str" and any(map(_creates, uses))}
    for root, members in _path_roots(texts, made).items():
        uses = [lit for value in members for lit in by_value.pop(("str", value))]
        found.append(_likely(names.fresh("root_dir"), root, uses, f"the common directory of {len(members)} paths"))
    for key in [*_built_on_others(by_value, judged), *_inside_urls(by_value)]:
        by_value.pop(key, None)
    for key, version, holders in _versions_inside(by_value, produced):
        by_value.pop(key, None)
        if version is None:  # an output gave it: the text is read out of that output, not typed
            stayed += [
                _stayed(lit, "it holds a version an earlier output gave: built on that output") for lit in holders
            ]
            continue
        why = f"a version number inside {holders[0].value!r} that no output gave: the text is built on it"
        found.append(_likely(names.fresh("version"), version, holders, why))
    known = {str(item.value) for item in found} | {text for _, text in by_value}
    for version, holders in _versions_in_built(built, produced):
        if version not in known:
            known.add(version)
            why = f"a version number inside {holders[0].value!r} that no output gave: the text is built on it"
            found.append(_likely(names.fresh("version"), version, holders, why))
    for key, uses in by_value.items():
        judgement = judged[key]
        # Named by a key of its own; an element of a list (`tags[1]`) is better named by a query's field.
        named_by = next((lit for lit in uses if isinstance(lit.named[-1:] and lit.named[-1], str)), uses[0])
        name = names.fresh(snake(last_key(named_by.named) or "value"))
        found.append(_likely(name, uses[0].value, uses, _why(uses, judgement), ticked=judgement.chosen))
    return found, stayed


_LOOKED_VARIABLE: Final = 0.25  # below THIN but above this: the summary says why it stayed literal


def _judge(uses: Sequence[Unexplained], schemas: Schemas) -> Judgement:
    first = uses[0]
    schema = param_schema(schemas.get(first.tool), first.keys)
    steps = len({lit.step for lit in uses})
    if first.in_query and (not isinstance(first.value, str) or _DATE_RE.match(first.value)):
        why = f"a number or a date the query compares {first.flag!r} with: a bound picked per run"
        return Judgement(CHOSEN + 0.1, (why,))
    if isinstance(first.value, str):
        writes = not all(lit.reads for lit in uses)
        tool_schema = schemas.get(first.tool) if not first.flag else None
        optional = _optional(tool_schema, first.keys)
        judged = judge_text(
            first.value, first.named, schema if not first.flag else None, steps, writes=writes, optional=optional
        )
        if first.in_query and all(lit.in_query for lit in uses) and judged.score < _CONTACT:
            # a slug, a code, a name: chosen only if carried elsewhere (_in_context); an email, a path stay chosen
            why = f"a value the query selects by ({first.flag})"
            return Judgement(min(judged.score, _BOILERPLATE_CAP), (*judged.reasons, why))
        if first.flag and not first.in_query and not _plain_word(first.value) and 0 < judged.score < CHOSEN:
            return Judgement(min(CHOSEN, judged.score + 0.1), (*judged.reasons, f"the value of --{first.flag}"))
        return judged
    tokens = set(key_tokens(last_key(first.keys) or ""))
    if schema is not None and ("const" in schema or schema.get("default") == first.value):
        return Judgement(0.0, ("the tool's schema gives this value as its default or const",))
    if _number_chosen(first.value, tokens):
        return Judgement(0.8, ("a number no output holds, not a count or a setting",))
    return Judgement(0.0, ("a count, a round setting or a knob",))


_CONTACT: Final = 0.75  # the shape alone says whom or what (an email address, a path, a URL)
_DATE_RE: Final = re.compile(r"^\d{4}-\d\d-\d\d$")


def _optional(schema: Mapping[str, Any] | None, keys: Keys) -> bool:
    """A top-level parameter the tool's schema leaves out of the `required` list it gives."""
    if schema is None or len(keys) != 1 or not isinstance(keys[0], str):
        return False
    required = schema.get("required")
    return isinstance(required, list) and bool(required) and keys[0] not in required


def _whole_lists(
    literals: Sequence[Unexplained], schemas: Schemas
) -> tuple[list[tuple[list[JSON], list[Unexplained], str]], list[Unexplained]]:
    """Lists of two or more values the user chose (`files: ["src/vat.py", "tests/test_vat.py"]`): one list input,
    not an input per element that a replay with another number of elements could not fill."""
    by_list: dict[tuple[str, Keys], list[Unexplained]] = {}
    for lit in literals:
        if lit.of >= 2 and lit.keys and isinstance(lit.keys[-1], int):
            by_list.setdefault((lit.step, lit.keys[:-1]), []).append(lit)
    counts: dict[str, int] = {}
    for lit in literals:
        counts[str(lit.value)] = counts.get(str(lit.value), 0) + 1
    lists: list[tuple[list[JSON], list[Unexplained], str]] = []
    taken: set[int] = set()
    for members in by_list.values():
        whole = len(members) == members[0].of and all(counts[str(m.value)] == 1 for m in members)
        judged = [_judge([m], schemas) for m in members] if whole else []
        if judged and all(j.chosen for j in judged):
            why = f"no earlier output explains them, and they look chosen by the user ({judged[0].why}); one list"
            lists.append(([m.value for m in sorted(members, key=lambda m: m.keys)], members, why))
            taken |= {id(m) for m in members}
    return lists, [lit for lit in literals if id(lit) not in taken]


# A command line for a CLI-wrapping tool (`aws s3api list-objects-v2 --bucket acme --prefix nightly/`).
_COMMAND_RE: Final = re.compile(r"^[a-z][\w.-]*(?: [a-z][\w.-]*)* --[a-z]")
_FLAG_RE: Final = re.compile(r"(?<!\S)--([a-z][\w-]*)(?:=| +)(?!-)(\"[^\"]*\"|'[^']*'|[^\s\"']+)")


def _command_flags(literal: Unexplained) -> list[Unexplained]:
    """A command line stands for its flags' values: each is a candidate of its own under the flag's name (the
    bucket, the prefix), and the command is built on the chosen ones, like a sentence."""
    value = literal.value
    if not isinstance(value, str) or "\n" in value or not _COMMAND_RE.match(value):
        return [literal]
    flags = [
        Unexplained(
            literal.step, literal.keys, m.group(2).strip("\"'"), literal.tool, flag=m.group(1), reads=literal.reads
        )
        for m in _FLAG_RE.finditer(value)
    ]
    return flags or [literal]


# `field:"value"`, `field = 'value'`, `field:value` inside a query (Lucene, KQL, CQL, JQL, a search syntax).
_QUERY_VALUE_RE: Final = re.compile(
    r"(?<![\w.])([A-Za-z_][\w.]*)\s*(?::|=|==|~)\s*(?:\"([^\"]{2,60})\"|'([^']{2,60})'|([^\s\"'()\[\]{},:=]{2,60}))"
)


# A number an inequality compares with (`julianday(...) > 30`, `qty <= 5`, `age >= 18.5`): a threshold.
_THRESHOLD_RE: Final = re.compile(
    r"(?:([A-Za-z_][\w.]*)\)*|\))\s*(?:<=|>=|<|>)\s*[\"']?(\d{4}-\d\d-\d\d(?=T|[\"'\s)]|$)|-?\d+(?:\.\d+)?)"
    r"(?:T[\d:.]+(?:Z|[+-]\d\d:?\d\d)?)?[\"']?"  # a date's time of day is how it is written: the date is the value
    r"(?=\s*(?:$|[);,\]]|(?i:and|or|order|group|limit|having|unless)\b))"  # a whole side: not `0.5 * seats`
)


def _query_values(literal: Unexplained) -> list[Unexplained]:
    """The values a query selects by (`service.name:"checkout-api"`, `space = "ENG"`, `> 30`): each a candidate
    of its own, named by its field and weighed without the query's description; the query stays literal around
    the chosen ones, built on them. Plain lower-case words (`type:ticket`, `is:unresolved`) are the query's
    vocabulary, left in it; in a statement (SQL) an unquoted right-hand side is a column, not a value; 0 and 1
    compared with say "any" and "more than one", not a threshold."""
    value = literal.value
    if not isinstance(value, str) or not is_query(value):
        return []
    statement = is_statement(value)
    out: list[Unexplained] = []
    for match in _QUERY_VALUE_RE.finditer(value):
        found = next(group for group in match.groups()[1:] if group is not None)
        if _plain_word(found) or found.isdigit() or found == value or " " in found:
            continue
        if statement and match.group(4) is not None:
            continue
        field = match.group(1).split(".")[-1]
        out.append(Unexplained(literal.step, literal.keys, found, literal.tool, flag=field, in_query=True))
    for match in _THRESHOLD_RE.finditer(value):
        found = match.group(2)
        number: str | int | float = found if "-" in found[1:] else float(found) if "." in found else int(found)
        if number not in (0, 1):
            field = (match.group(1) or "threshold").split(".")[-1]
            out.append(Unexplained(literal.step, literal.keys, number, literal.tool, flag=field, in_query=True))
    return out


def _texts_by_step(literals: Sequence[Unexplained]) -> dict[str, list[str]]:
    """The literal texts of each step that another value may be carried into: a sentence, a query, a URL, a
    command, and any other string (`+orders_daily` carries `orders_daily`, a selector its model)."""
    out: dict[str, list[str]] = {}
    for lit in literals:
        if isinstance(lit.value, str) and len(lit.value.strip()) > _PART_MIN:
            out.setdefault(lit.step, []).append(lit.value)
    return out


def _in_context(judgement: Judgement, uses: Sequence[Unexplained], texts: Mapping[str, list[str]]) -> Judgement:
    """What the other calls of the session say about a value.

    - Carried into the text of another call (`PAY` as a `project_key` and inside the JQL `project = PAY AND
      ...`; an organization slug inside a link the agent wrote): the value the task is about, so chosen.
    - The same free text sent by several calls of one tool (a comment posted on each issue, an event title for
      each hire): the fixed wording of a repeated action, so a constant (proposed unticked at most).
    """
    value = uses[0].value
    if not isinstance(value, str):
        return judgement
    whole = {lit.step for lit in uses if not lit.in_query}
    steps = whole or {lit.step for lit in uses}  # beside a whole use, a query holding it is a text it is carried into
    tools = [lit.tool for lit in uses if lit.tool]
    repeated = len(steps) >= 2 and len(set(tools)) == 1 and len(tools) == len(uses)
    wording = len(value.split()) >= 2 or len(steps) >= _REPEATS  # a sentence twice; a date or a name thrice
    if repeated and wording and judgement.score >= THIN:
        why = f"the same value in {len(steps)} calls of {tools[0]}: a fixed part of a repeated action"
        return Judgement(min(judgement.score, _BOILERPLATE_CAP), (*judgement.reasons, why))
    if judgement.score >= CHOSEN or not _carried_value(value) or is_query(value):
        return judgement
    carriers = [step for step, held in texts.items() if step not in steps and any(_holds_word(t, value) for t in held)]
    if carriers:
        why = f"also written inside the text of {carriers[0]}: a value the task carries from call to call"
        return Judgement(CHOSEN, (*judgement.reasons, why))
    return judgement


_BOILERPLATE_CAP: Final = 0.45
_REPEATS: Final = 3
# A label is short (`Describe the problem textbox`); a longer text whose words were all read (a commit message
# that sums up a diff) is still someone's wording of it.
_LABEL_WORDS: Final = 4
_WORDS_RE: Final = re.compile(r"^[^\W\d_]+(?:[,:;]?\s+[^\W_]+)*[.!?]?$")  # words only: no id, path or number


def _read(
    judgement: Judgement,
    uses: Sequence[Unexplained],
    words: OutputWords | None,
) -> Judgement:
    """Capped at proposed-unticked: a field name of the call's own answer (`propertyName: "email"` beside
    `properties.email`: which data the call reads), and a word or a text of words all of which were in outputs
    before the call (`OutputWords.read_before`: a label and a role read out of a snapshot), composed out of what
    the servers said, when it is as short as a label. Identifiers with digits or separators (`checkout-api`) are
    left out of the second: a server echoes the entity names the user works on."""
    value = uses[0].value
    if words is None or judgement.score < THIN or not isinstance(value, str):
        return judgement
    if all(words.names_field(value, lit.step) for lit in uses):
        why = "a field name of the call's own answer: it names which data the call reads"
    elif (
        _WORDS_RE.match(value.strip())
        and len(value.split()) <= _LABEL_WORDS
        and all(words.read_before(value, lit.step) for lit in uses)
    ):
        why = "every word of it was in an earlier output: composed from what a server said"
    else:
        return judgement
    return Judgement(min(judgement.score, _BOILERPLATE_CAP), (*judgement.reasons, why))


def _carried_value(value: str) -> bool:
    """Specific enough that finding it inside another call's text is no chance: no plain word, no sentence."""
    text = value.strip()
    return len(text) >= _PART_MIN and " " not in text and not _plain_word(text) and not text.isdigit()


def _stayed(literal: Unexplained, why: str) -> StayedLiteral:
    return StayedLiteral(literal.step, json_path(literal.keys), literal.value, why)


def _built_on_others(
    by_value: Mapping[tuple[str, str], Sequence[Unexplained]], judged: Mapping[tuple[str, str], Judgement]
) -> list[tuple[str, str]]:
    """The sentences (text with a space) that hold another candidate's text as a whole word or words: a
    number's text, or a chosen string of its own in a sentence of three words or more.

    A name inside a two-word value ("Ada" in "Ada Lovelace") is often a value of its own: both stay."""
    parts = [text for kind, text in by_value if kind != "str" and len(text) >= _PART_MIN]
    named = [
        text
        for (kind, text) in by_value
        if kind == "str" and len(text) >= _PART_MIN and judged[(kind, text)].chosen and not _plain_word(text)
    ]
    out: list[tuple[str, str]] = []
    for kind, text in by_value:
        if kind != "str":
            continue
        if " " not in text.strip():
            # a selector or a flag around a chosen value (`+orders_daily`, `--service=checkout`): built on it
            if any(n != text and _carried_value(n) and _holds_word(text, n) for n in named):
                out.append((kind, text))
            continue
        sentence = len(text.split()) >= 3
        holds = any(p != text and _holds_word(text, p) for p in parts + (named if sentence else []))
        if holds:
            out.append((kind, text))
    return out


_VERSION_RE: Final = re.compile(r"(?<![\w.])[vV]?(\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?)(?![\w.]*\w)")


def _versions_inside(
    by_value: Mapping[tuple[str, str], Sequence[Unexplained]], produced: Callable[[str, str], bool]
) -> list[tuple[tuple[str, str], str | None, Sequence[Unexplained]]]:
    """Texts (a sentence, a JSON fragment) holding one version number (`x.y.z`): with the version when no earlier
    output holds it (the user's), with None when one does (the text is read out of that output)."""
    out: list[tuple[tuple[str, str], str | None, Sequence[Unexplained]]] = []
    for (kind, text), uses in by_value.items():
        if kind != "str" or not (" " in text.strip() or '"' in text):
            continue
        versions = {m.group(1) for m in _VERSION_RE.finditer(text)}
        if len(versions) == 1:
            version = versions.pop()
            out.append(((kind, text), None if produced(version, uses[0].step) else version, uses))
    return out


def _versions_in_built(
    built: Sequence[Unexplained], produced: Callable[[str, str], bool]
) -> list[tuple[str, list[Unexplained]]]:
    """A version (`v2.14.0`, as written) inside a text that other parts of already come from outputs."""
    out: dict[str, list[Unexplained]] = {}
    for lit in built:
        if not isinstance(lit.value, str):
            continue
        found = {m.group(0): m.group(1) for m in _VERSION_RE.finditer(lit.value)}
        if len(found) == 1:
            written, bare = next(iter(found.items()))
            if not produced(bare, lit.step):
                out.setdefault(written, []).append(lit)
    return list(out.items())


def _inside_urls(by_value: Mapping[tuple[str, str], Sequence[Unexplained]]) -> list[tuple[str, str]]:
    """Values that sit in another candidate's URL (an issue id in the issue's link): read out of that input,
    not a second input that must agree with it."""
    urls = [text for kind, text in by_value if kind == "str" and _URL_RE.match(text)]
    return [
        (kind, text)
        for kind, text in by_value
        if len(text) >= _PART_MIN and any(url != text and _holds_word(_url_path(url), text) for url in urls)
    ]


def _url_path(url: str) -> str:
    """The part after the host: an id there names the resource; the host names where it lives."""
    rest = url.split("://", 1)[-1]
    return rest[rest.find("/") :] if "/" in rest else ""


_URL_RE: Final = re.compile(r"^[a-z][a-z0-9+.-]*://\S+$")


def _plain_word(text: str) -> bool:
    """One lower-case word ("billing"): inside a sentence it is as likely a word of the sentence as a value."""
    return (text.isalpha() and text.islower()) or "\n" in text


_PART_MIN: Final = 3  # a shorter number inside a sentence is too likely to be chance


def _holds_word(text: str, part: str) -> bool:
    start = text.find(part)
    while start >= 0:
        end = start + len(part)
        left = start == 0 or not (text[start - 1].isalnum() and part[0].isalnum())
        right = end == len(text) or not (text[end].isalnum() and part[-1].isalnum())
        if left and right:
            return True
        start = text.find(part, start + 1)
    return False


def _likely_list(name: str, value: list[JSON], uses: Sequence[Unexplained], reason: str) -> LikelyInput:
    used_at = ((uses[0].step, json_path(uses[0].keys[:-1])),)
    return LikelyInput(name=name, value=value, type="array", used_at=used_at, reason=reason)


def _likely(
    name: str, value: str | int | float, uses: Sequence[Unexplained], reason: str, *, ticked: bool = True
) -> LikelyInput:
    used_at = tuple(dict.fromkeys((lit.step, json_path(lit.keys)) for lit in uses))
    return LikelyInput(name=name, value=value, type=type_name(value), used_at=used_at, reason=reason, ticked=ticked)


def _why(uses: Sequence[Unexplained], judgement: Judgement) -> str:
    base = "no earlier output explains it" + (
        ", and it looks chosen by the user" if judgement.chosen else "; thin evidence, so it is proposed unticked"
    )
    return f"{base} ({judgement.why})"


class _Names:
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


def _number_chosen(value: int | float, tokens: set[str]) -> bool:
    """An amount or an id the user typed: not a two-digit count, a round setting, or a knob.

    Round numbers (`50`, `100`, `1000`) are what people pick for limits and sizes, so they count only
    under a key that is not a knob and does not look like one."""
    knob = bool(tokens & _KNOB_TOKENS) and not tokens & _THINGS  # `file_size` is the file's, `page_size` a knob
    if is_trivial(value) or knob or strength(value) < _NUMBER_STRENGTH:
        return False
    round_number = isinstance(value, int) and abs(value) <= 1000 and value % 10 == 0
    return not round_number or bool(tokens & _QUANTITY_TOKENS)


# What a measure under a knob's name can belong to: then it is that thing's own property, not how the tool works.
_THINGS: Final = frozenset(
    {"file", "image", "photo", "video", "audio", "attachment", "document", "doc", "object", "blob", "upload", "payload"}
)

# Two-digit numbers (`qty: 12`, `days: 30`) are fixed parts of a call about as often as they are chosen.
_NUMBER_STRENGTH: Final = 0.55

# Keys that name an amount or an identifier: a round number under them is still the user's.
_QUANTITY_TOKENS: Final = frozenset(
    {"amount", "price", "total", "sum", "quantity", "qty", "id", "number", "no", "value", "cost", "balance"}
)


_CREATE_TOKENS: Final = frozenset({"create", "make", "mkdir", "new"})


def _creates(literal: Unexplained) -> bool:
    """Used by a step that makes something (`create_directory_1`): the session's own, not the user's."""
    return bool(_CREATE_TOKENS & set(key_tokens(literal.step)))


def _path_roots(values: Sequence[str], made: Collection[str] = ()) -> dict[str, list[str]]:
    """Directories shared by two or more absolute paths (at least two levels deep), by root.

    A directory the session itself makes (`create_directory(".../logs")`) is not where the user works:
    the root is then the folder it was made in."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for value in values:
        parts = _segments(value)
        if parts is not None and len(parts) >= 2:
            groups.setdefault(parts[:2], []).append(value)
    roots: dict[str, list[str]] = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        common = _common_prefix([_segments(value) or () for value in members])
        if "/" + "/".join(common) in made:
            common = common[:-1]
        if len(common) >= 2:
            roots["/" + "/".join(common)] = members
    return roots


def _segments(value: str) -> tuple[str, ...] | None:
    if not value.startswith("/") or "\n" in value or " " in value.strip():
        return None
    return tuple(part for part in value.split("/") if part)


def _common_prefix(paths: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
    first = paths[0]
    size = min(len(p) for p in paths)
    n = 0
    while n < size and all(p[n] == first[n] for p in paths):
        n += 1
    return first[:n]
