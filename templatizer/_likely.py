"""Likely inputs: the literals no output explains, weighed from evidence (`_evidence`: the tool's schema, the
value's shape, where it recurs). The chosen ones are applied when the caller saves without naming inputs,
those with thin evidence are proposed unticked, and the rest stay literal (the summary says why).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Final

from toolreel.core.model import JSON
from toolreel.templatizer._evidence import (
    CHOSEN,
    THIN,
    Judgement,
    filed_under,
    is_contact,
    is_machine_id,
    is_query,
    is_remark,
    judge_text,
    names_scope,
    param_schema,
)
from toolreel.templatizer._fields import naming_field, scope_field, state_field
from toolreel.templatizer._inputs import Names, Schemas, Unexplained
from toolreel.templatizer._inside import (
    PART_MIN,
    STAMP_DIGITS,
    argv_operands,
    built_on_others,
    carried_value,
    command_flags,
    holds_word,
    inside_urls,
    key_parts,
    path_roots,
    plain_word,
    query_values,
    regex_core,
    segments,
    versions_in_built,
    versions_inside,
    writes,
)
from toolreel.templatizer._result import LikelyInput, StayedLiteral
from toolreel.templatizer._values import (
    Keys,
    is_trivial,
    json_path,
    key_tokens,
    last_key,
    snake,
    strength,
    type_name,
)
from toolreel.templatizer._wording import OutputWords

__all__ = ["likely_inputs"]

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
    lists, literals = _whole_lists(argv_operands(literals, built), schemas or {})
    literals = [flag for lit in literals for flag in command_flags(lit)]
    literals += [part for lit in literals for part in (*key_parts(lit), *regex_core(lit))]
    # (a mutation built on a ref still sets the user's text: `_set: {cancel_reason: "…"}` beside `{{@pick.id}}`)
    literals += [value for lit in [*literals, *filter(writes, built)] for value in query_values(lit)]
    by_value: dict[tuple[str, str], list[Unexplained]] = {}
    for literal in literals:
        by_value.setdefault((type(literal.value).__name__, str(literal.value)), []).append(literal)
    judged: dict[tuple[str, str], Judgement] = {}
    stayed: list[StayedLiteral] = []
    texts_by_step = _texts_by_step([*literals, *built])  # a text built on outputs still carries a value
    composed = _composed(texts_by_step, {text for kind, text in by_value if kind == "str" and plain_word(text)})
    weighed = {
        key: _in_context(_read(_judge(uses, schemas or {}, produced), uses, words), uses, texts_by_step, composed)
        for key, uses in by_value.items()
    }
    weighed.update(_records(weighed, by_value))
    weighed.update(_inner_scopes(weighed, by_value))
    weighed.update(_periods(weighed, by_value))
    for key, uses in list(by_value.items()):
        judgement = weighed[key]
        if judgement.score < THIN:
            del by_value[key]
            if judgement.score >= _LOOKED_VARIABLE or judgement.reasons[0].startswith("the tool"):
                stayed += [_stayed(lit, judgement.why) for lit in uses]
        else:
            judged[key] = judgement
    names = Names(taken)
    found = [_likely_list(names.fresh(snake(last_key(u[0].keys[:-1]) or "values")), v, u, why) for v, u, why in lists]
    texts = [text for kind, text in by_value if kind == "str"]
    made = {text for (kind, text), uses in by_value.items() if kind == "str" and any(map(_creates, uses))}
    for root, members in path_roots(texts, made).items():
        uses = [lit for value in members for lit in by_value.pop(("str", value))]
        found.append(_likely(names.fresh("root_dir"), root, uses, f"the common directory of {len(members)} paths"))
    for key in [*built_on_others(by_value, judged), *inside_urls(by_value)]:
        by_value.pop(key, None)
    # (a remark the user asked to post on each item is theirs whole, its build number too)
    parts_of = {key: uses for key, uses in by_value.items() if not judged[key].whole}
    for key, version, holders in versions_inside(parts_of, produced):
        by_value.pop(key, None)
        if version is None:  # an output gave it: the text is read out of that output, not typed
            stayed += [
                _stayed(lit, "it holds a version an earlier output gave: built on that output") for lit in holders
            ]
            continue
        why = f"a version number inside {holders[0].value!r} that no output gave: the text is built on it"
        found.append(_likely(names.fresh("version"), version, holders, why))
    known = {str(item.value) for item in found} | {text for _, text in by_value}
    for version, holders in versions_in_built(built, produced):
        if version not in known:
            known.add(version)
            why = f"a version number inside {holders[0].value!r} that no output gave: the text is built on it"
            found.append(_likely(names.fresh("version"), version, holders, why))
    for key, uses in by_value.items():
        judgement = judged[key]
        # Named by a key of its own; an element of a list (`tags[1]`) is better named by a query's field.
        named_by = next((lit for lit in uses if isinstance(lit.named[-1:] and lit.named[-1], str)), uses[0])
        name = names.fresh(snake(last_key(named_by.named) or "value"))
        value = uses[0].value
        if (
            isinstance(value, str)
            and value.isdigit()
            and len(value) < STAMP_DIGITS  # (`before:1795700000`: a time stamp stays text)
            and value[0] != "0"
            and all(lit.in_query or lit.flag for lit in uses)
        ):
            value = int(value)  # (`year:2025`, `--team 3`: a number the user gives, written into the text)
        found.append(_likely(name, value, uses, _why(uses, judgement), ticked=judgement.chosen))
    return found, stayed


def _records(
    weighed: Mapping[tuple[str, str], Judgement], by_value: Mapping[tuple[str, str], Sequence[Unexplained]]
) -> dict[tuple[str, str], Judgement]:
    """The other text fields of a record the user gave: an object of a call's arguments (an address, a contact)
    at least three of whose text fields, and at least half, are chosen. Its short codes and numbers-as-text
    (`state: "CA"`, `zip: "94104"`) are the user's too, whatever they look like alone."""
    fields: dict[tuple[str, Keys], list[tuple[str, str]]] = {}
    for key, uses in by_value.items():
        for lit in uses:
            if key[0] == "str" and not lit.flag and len(lit.keys) >= 2 and isinstance(lit.keys[-1], str):
                fields.setdefault((lit.step, lit.keys[:-1]), []).append(key)
    raised: dict[tuple[str, str], Judgement] = {}
    for (step, at), members in fields.items():
        chosen = [key for key in members if weighed[key].chosen]
        if len(chosen) < _RECORD_CHOSEN or 2 * len(chosen) < len(members):
            continue
        why = (
            f"a field of the record {json_path(at)} of {step}, {len(chosen)} of whose {len(members)} fields are chosen"
        )
        for key in members:
            if not weighed[key].chosen:
                raised[key] = Judgement(CHOSEN, (*weighed[key].reasons, why))
    return raised


_RECORD_CHOSEN: Final = 3


def _inner_scopes(
    weighed: Mapping[tuple[str, str], Judgement], by_value: Mapping[tuple[str, str], Sequence[Unexplained]]
) -> dict[tuple[str, str], Judgement]:
    """The project (repository, app, service) a call works in, beside an organization (workspace, owner, team) the
    user chose: proposed, it is ticked too. Whoever picks the organization for this run picks the project in it."""
    outer = {
        lit.step for key, uses in by_value.items() if weighed[key].chosen for lit in uses if _scope(lit, _OUTER_SCOPE)
    }
    raised: dict[tuple[str, str], Judgement] = {}
    for key, uses in by_value.items():
        judged = weighed[key]
        inner = next((lit for lit in uses if lit.step in outer and _scope(lit, _INNER_SCOPE)), None)
        if inner is not None and THIN <= judged.score < CHOSEN and key[0] == "str":
            why = f"the {last_key(inner.keys)} of {inner.step}, inside an organization chosen for the run"
            raised[key] = Judgement(CHOSEN, (*judged.reasons, why))
    return raised


def _scope(literal: Unexplained, words: frozenset[str]) -> bool:
    key = last_key(literal.keys)
    tokens = [t for t in key_tokens(key) if t not in _ID_WORDS] if key and not literal.flag else []
    return len(tokens) == 1 and tokens[0] in words


def _periods(
    weighed: Mapping[tuple[str, str], Judgement], by_value: Mapping[tuple[str, str], Sequence[Unexplained]]
) -> dict[tuple[str, str], Judgement]:
    """Two days a call is bounded by (`startDate: 2026-11-01`, `endDate: 2026-11-30`): a period the user named,
    both proposed ticked. Days only: a range with times of day (`…T00:00:00Z`) is more often worked out from now."""
    bounds: dict[str, list[tuple[str, str]]] = {}
    for key, uses in by_value.items():
        for lit in uses:
            bound = last_key(lit.keys)
            if key[0] == "str" and _DAY_RE.match(key[1]) and bound and _BOUND_RE.search(bound) and not lit.in_query:
                bounds.setdefault(lit.step, []).append(key)
    raised: dict[tuple[str, str], Judgement] = {}
    for step, keys in bounds.items():
        if len(set(keys)) != 2:
            continue
        for key in keys:
            judged = weighed[key]
            if THIN <= judged.score < CHOSEN:
                raised[key] = Judgement(
                    CHOSEN, (*judged.reasons, f"one of the two days {step} is bounded by: a period")
                )
    return raised


_DAY_RE: Final = re.compile(r"^\d{4}-\d\d-\d\d$")
_BOUND_RE: Final = re.compile(r"(?i)start|end|from|to$|^to|since|until|after|before|begin")


_OUTER_SCOPE: Final = frozenset({"org", "organization", "organisation", "workspace", "owner", "team", "account"})
_INNER_SCOPE: Final = frozenset({"project", "repo", "repository", "app", "application", "service", "site", "board"})
_ID_WORDS: Final = frozenset({"id", "slug", "name", "key"})


_LOOKED_VARIABLE: Final = 0.25  # below THIN but above this: the summary says why it stayed literal


def _judge(
    uses: Sequence[Unexplained], schemas: Schemas, produced: Callable[[str, str], bool] = lambda text, step: False
) -> Judgement:
    first = uses[0]
    schema = param_schema(schemas.get(first.tool), first.keys)
    steps = len({lit.step for lit in uses})
    # (digits a query holds are a time stamp only: `_inside.query_values` lets no other through)
    if first.in_query and (not isinstance(first.value, str) or _DATE_RE.match(first.value) or first.value.isdigit()):
        why = f"a number or a date the query compares {first.flag!r} with: a bound picked per run"
        return Judgement(CHOSEN + 0.1, (why,))
    if isinstance(first.value, str):
        writes = not any(lit.reads for lit in uses)
        tool_schema = schemas.get(first.tool) if not first.flag else None
        optional = _optional(tool_schema, first.keys)
        judged = judge_text(
            first.value, first.named, schema if not first.flag else None, steps, writes=writes, optional=optional
        )
        if first.in_query and all(lit.in_query for lit in uses) and judged.score < _CONTACT:
            # The one slug, code or name a query selects by is what the query is about: the user's choice for
            # this run. Beside others (`cat:cs.DB AND abs:"..."`), or under a field naming a state or a category
            # (`status = 'Running'`), it is the task's: chosen only if carried elsewhere (_in_context). An email,
            # a path stay chosen.
            why = f"a value the query selects by ({first.flag})"
            # (one an earlier output's text holds was read out of it: no more the user's than any such value)
            read = first.sole and produced(first.value, first.step)
            # (beside others, a value under a subject's field, `owner:`, `project:`, is the user's all the same)
            alone = first.sole or (
                (scope_field(first.flag) or naming_field(first.flag)) and not _PATTERN_CHARS_RE.search(first.value)
            )
            if not alone or read or state_field(first.flag) or judged.score < THIN - 0.2:
                return Judgement(min(judged.score, _BOILERPLATE_CAP), (*judged.reasons, why))
            return Judgement(max(judged.score, CHOSEN), (*judged.reasons, f"{why}: what the query is about"))
        if first.flag and not first.in_query and scope_field(first.flag):
            # `--manager=jdoe`, `--team 3`: whose or where the command works, the user's as in a query
            return Judgement(
                max(judged.score, CHOSEN), (*judged.reasons, f"the value of --{first.flag}: whose or where")
            )
        if first.flag and not first.in_query and not plain_word(first.value) and 0 < judged.score < CHOSEN:
            return Judgement(min(CHOSEN, judged.score + 0.1), (*judged.reasons, f"the value of --{first.flag}"))
        opening = first.opening and first.reads and not first.in_query  # a first look at what the user named
        if opening and THIN <= judged.score < CHOSEN and _opening_word(first.value, last_key(first.keys)):
            why = "sent by the first call, a read, before any output was seen: from what the user asked"
            return Judgement(judged.score + _OPENING, (*judged.reasons, why))
        return judged
    tokens = set(key_tokens(last_key(first.keys) or ""))
    if schema is not None and ("const" in schema or schema.get("default") == first.value):
        return Judgement(0.0, ("the tool's schema gives this value as its default or const",))
    if _number_chosen(first.value, tokens):
        return Judgement(0.8, ("a number no output holds, not a count or a setting",))
    return Judgement(0.0, ("a count, a round setting or a knob",))


_OPENING: Final = 0.15
_PATTERN_CHARS_RE: Final = re.compile(r"[\^$*\\]")  # `repo:^github\.com/kettle/`: a pattern, the task's
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


def _texts_by_step(literals: Sequence[Unexplained]) -> dict[str, list[str]]:
    """The literal texts of each step that another value may be carried into: a sentence, a query, a URL, a
    command, and any other string (`+orders_daily` carries `orders_daily`, a selector its model)."""
    out: dict[str, list[str]] = {}
    for lit in literals:
        if isinstance(lit.value, str) and len(lit.value.strip()) > PART_MIN:
            out.setdefault(lit.step, []).append(lit.value)
    return out


def _composed(texts: Mapping[str, list[str]], plain: set[str]) -> dict[str, dict[str, str]]:
    """For each word sent alone, the steps whose path has it as a segment beside another such word (`orders` and
    `staging` in `apps/orders/staging`), with that path: one pass over the texts for every word."""
    out: dict[str, dict[str, str]] = {}
    for step, held in texts.items():
        for text in held:
            found = plain.intersection(segments(text))
            if len(found) >= 2:
                for word in found:
                    out.setdefault(word, {}).setdefault(step, text)
    return out


_SENDER_RE: Final = re.compile(r"(?i)^(?:from|sender|reply_?to)(?:_?(?:email|address))?$")


def _in_context(
    judgement: Judgement,
    uses: Sequence[Unexplained],
    texts: Mapping[str, list[str]],
    composed: Mapping[str, Mapping[str, str]],
) -> Judgement:
    """What the other calls of the session say about a value.

    - Carried into the text of another call (`PAY` as a `project_key` and inside the JQL `project = PAY AND
      ...`; an organization slug inside a link the agent wrote): the value the task is about, so chosen.
    - The same free text sent by several calls of one tool (a comment posted on each issue, an event title for
      each hire): the fixed wording of a repeated action, so a constant (proposed unticked at most).
    """
    value = uses[0].value
    if not isinstance(value, str):
        return judgement
    if all(lit.note for lit in uses) and judgement.score >= THIN:
        # (the same note on each item a loop handled is the one reason the user gave for all: not boilerplate)
        why = "the words after a label the agent wrote (`Closing: <note>`): a reason or a remark the user gave"
        return Judgement(max(judgement.score, CHOSEN), (*judgement.reasons, why))
    if filed_under(uses) and judgement.score >= THIN:
        return Judgement(max(judgement.score, CHOSEN), (*judgement.reasons, "a tag the call files its thing under"))
    whole = {lit.step for lit in uses if not lit.in_query}
    steps = whole or {lit.step for lit in uses}  # beside a whole use, a query holding it is a text it is carried into
    tools = [lit.tool for lit in uses if lit.tool]
    repeated = len(steps) >= 2 and len(set(tools)) == 1 and len(tools) == len(uses)
    wording = len(value.split()) >= 2 or len(steps) >= _REPEATS  # a sentence twice; a date or a name thrice
    if repeated and wording and judgement.score >= THIN:
        if is_remark(value):
            # (a sentence said to each member, posted on each issue: what the user asked to tell them all)
            why = f"the same remark in {len(steps)} calls of {tools[0]}: what the user asked to say to each"
            return Judgement(max(judgement.score, CHOSEN), (*judgement.reasons, why), whole=True)
        key = last_key(uses[0].keys) or ""
        if (is_contact(value) and not _SENDER_RE.search(key)) or scope_field(key):
            # (each bug's assignee, the project each is filed in: the user's for all; a sender is the account's)
            why = f"the same address or scope in {len(steps)} calls of {tools[0]}: whom or where the user chose"
            return Judgement(max(judgement.score, CHOSEN), (*judgement.reasons, why), whole=True)
        why = f"the same value in {len(steps)} calls of {tools[0]}: a fixed part of a repeated action"
        return Judgement(min(judgement.score, _BOILERPLATE_CAP), (*judgement.reasons, why))
    flagged = {lit.step for lit in uses if lit.flag and not lit.in_query}
    if judgement.score >= THIN and flagged and whole - flagged and value.strip() == value and len(value) >= PART_MIN:
        # `--service=checkout` in one call, `checkout` whole in another: the flag names what the value is
        why = f"the value of --{next(lit.flag for lit in uses if lit.flag)}, given again whole to another call"
        return Judgement(CHOSEN, (*judgement.reasons, why))
    if judgement.score >= CHOSEN or is_query(value):
        return judgement
    # `orders` and `staging` sent as a database and a branch, then both segments of `apps/orders/staging`: two words
    # composed into another call's path are what the task is about (one word alone there may be chance)
    paths = [path for step, path in composed.get(value, {}).items() if step not in steps]
    if paths and judgement.score >= THIN:
        why = f"a segment, beside another value sent alone, of the path {paths[0]!r}: carried from call to call"
        return Judgement(CHOSEN, (*judgement.reasons, why))
    if not carried_value(value):
        # a word the agent quotes in another call's text (`tagged \`payments\``) is the value it was given
        quoted = [step for step, held in texts.items() if step not in steps and any(_quotes(t, value) for t in held)]
        if quoted and judgement.score >= THIN and plain_word(value):
            why = f"quoted inside the text of {quoted[0]}: a value the task carries from call to call"
            return Judgement(CHOSEN, (*judgement.reasons, why))
        written = _searched_and_written(value, uses, texts, steps)
        if written is not None and judgement.score >= THIN and plain_word(value):
            why = f"the string a query searches for, written again in the text of {written}: what the task is about"
            return Judgement(CHOSEN, (*judgement.reasons, why))
        looked = _looked_up_and_written(value, uses, texts, steps)
        if looked is not None and judgement.score >= THIN:
            why = f"the {looked[0]} a call looked up, written again in the text of {looked[1]}: the user's choice"
            return Judgement(CHOSEN, (*judgement.reasons, why))
        return judgement
    carriers = [step for step, held in texts.items() if step not in steps and any(holds_word(t, value) for t in held)]
    if carriers:
        why = f"also written inside the text of {carriers[0]}: a value the task carries from call to call"
        return Judgement(CHOSEN, (*judgement.reasons, why))
    return judgement


def _searched_and_written(
    value: str, uses: Sequence[Unexplained], texts: Mapping[str, list[str]], steps: Collection[str]
) -> str | None:
    """The step whose text has the word a query quotes as a value (`service.name = "checkout"`), if any: the
    agent wrote again, in its own words, what it searched for."""
    quoted = (t for lit in uses if lit.in_query and not _category(lit.flag) for t in texts.get(lit.step, ()))
    if not any(_quotes(t, value) for t in quoted):
        return None
    return next(
        (step for step, held in texts.items() if step not in steps and any(holds_word(t, value) for t in held)), None
    )


def _looked_up_and_written(
    value: str, uses: Sequence[Unexplained], texts: Mapping[str, list[str]], steps: Collection[str]
) -> tuple[str, str] | None:
    """(key, step) where a read was given one word whole under a key naming an account or a place (`login:
    "pixelforge"`) and a later text names it again (`Clip of the week from pixelforge: …`): whose things the task
    is about. Not a state nor a tag: those file things by kind."""
    if not plain_word(value) or len(value) < _HANDLE_MIN:
        return None
    keys = [str(lit.keys[-1]) for lit in uses if lit.reads and not lit.in_query and lit.keys and not lit.flag]
    key = next((k for k in keys if snake(k) in _HANDLE_KEYS), None)
    if key is None:
        return None
    again = (step for step, held in texts.items() if step not in steps and any(holds_word(t, value) for t in held))
    step = next(again, None)
    return (key, step) if step is not None else None


_HANDLE_MIN: Final = 4
_HANDLE_KEYS: Final = frozenset(
    {"login", "username", "user_name", "handle", "channel", "account", "owner", "org", "organization", "namespace"}
    | {"project", "repo", "repository", "team", "workspace", "site", "host", "hostname", "user", "slug"}
)


def _category(field: str | None) -> bool:
    """A field that files elements by kind (`importance eq 'high'`, `tag:"refund"`): its value is the task's own."""
    return bool(field) and (state_field(str(field)) or _CATEGORY_RE.search(str(field)) is not None)


_CATEGORY_RE: Final = re.compile(r"(?i)tag|label|importance|severity|level|flag")


def _quotes(text: str, word: str) -> bool:
    return any(f"{mark}{word}{mark}" in text for mark in _QUOTE_MARKS)


_QUOTE_MARKS: Final = ("`", '"', "'", "“")
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


def _stayed(literal: Unexplained, why: str) -> StayedLiteral:
    return StayedLiteral(literal.step, json_path(literal.keys), literal.value, why)


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


def _number_chosen(value: int | float, tokens: set[str]) -> bool:
    """An amount or an id the user typed: not a two-digit count, a round setting, or a knob.

    Round numbers (`50`, `100`, `1000`) are what people pick for limits and sizes, so they count only
    under a key that is not a knob and does not look like one."""
    knob = bool(tokens & _KNOB_TOKENS) and not tokens & _THINGS  # `file_size` is the file's, `page_size` a knob
    if isinstance(value, float) and not value.is_integer() and tokens & _QUANTITY_TOKENS and not knob:
        return True  # `price: 24.5`: an amount with cents, typed, however short
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


def _opening_word(value: str, key: str | None) -> bool:
    """A value shaped as a name of something (`daily-revenue`, `infra/orders`), not one lower-case word (`kv`), an
    upper-case constant (`FAILED`), a snake-case field name (`created_at`), a query or a pattern, a date or a
    machine-made id, which a first call sends as settings or works out itself. A lower-case word is one when its
    key names the part of the user's world the task looks at (`category: network`, `subreddit: selfhosted`)."""
    if plain_word(value):
        return "\n" not in value and names_scope(key or "")
    if value.isupper() or any(c.isspace() or c in "*?" for c in value) or is_query(value):
        return False
    return not (_FIELD_NAME_RE.match(value) or _DATE_RE.match(value) or is_machine_id(value))


_FIELD_NAME_RE: Final = re.compile(r"^[a-z]+(?:_[a-z]+)+$")
