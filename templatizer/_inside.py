"""Values inside other values: a command line's flags, a query's values and bounds, a version in a sentence, an
id in a URL, a name a selector or a sentence is built on, the directory several paths share."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Final

from toolreel.core.model import JSON
from toolreel.templatizer._evidence import (
    CLAUSE_FILTER_RE,
    CRITERION_RE,
    FUNCTION_FILTER_RE,
    Judgement,
    filter_terms,
    is_query,
    is_search,
    is_statement,
    search_terms,
)
from toolreel.templatizer._fields import naming_field, state_field
from toolreel.templatizer._inputs import Unexplained
from toolreel.templatizer._pieces import occurrences
from toolreel.templatizer._values import Keys, get_at

__all__ = [
    "PART_MIN",
    "STAMP_DIGITS",
    "after_flag",
    "anchored_core",
    "argv_operands",
    "built_on_others",
    "carried_value",
    "command_flags",
    "holds_word",
    "inside_urls",
    "key_parts",
    "path_roots",
    "plain_word",
    "query_values",
    "regex_core",
    "segments",
    "versions_in_built",
    "versions_inside",
    "writes",
]


# A command line for a CLI-wrapping tool (`aws s3api list-objects-v2 --bucket acme --prefix nightly/`).
_COMMAND_RE: Final = re.compile(r"^[a-z][\w.-]*(?: [a-z][\w.-]*)* --[a-z]")
_ARGV_FLAG_RE: Final = re.compile(r"^--([a-z][\w-]*)=([^\s\"']+)$")
_FLAG_RE: Final = re.compile(r"(?<!\S)--([a-z][\w-]*)(?:=| +)(?!-)(\"[^\"]*\"|'[^']*'|[^\s\"']+)")


def command_flags(literal: Unexplained) -> list[Unexplained]:
    """A command line stands for its flags' values: each is a candidate of its own under the flag's name (the
    bucket, the prefix), and the command is built on the chosen ones, like a sentence. So does one `--flag=value`
    element of an argument vector (a CLI-wrapping tool taking `args: [...]`)."""
    value = literal.value
    # one element of an argument vector (`["run", "revisions", "list", "--service=checkout"]`)
    argv = isinstance(value, str) and bool(literal.keys) and isinstance(literal.keys[-1], int)
    if argv and (m := _ARGV_FLAG_RE.match(str(value))):
        return [replace(literal, value=m.group(2), flag=m.group(1))]
    if isinstance(value, str) and (operands := _positional(literal, value)):
        return operands
    if not isinstance(value, str) or "\n" in value or not _COMMAND_RE.match(value):
        return [literal]
    flags = [
        Unexplained(
            literal.step, literal.keys, m.group(2).strip("\"'"), literal.tool, flag=m.group(1), reads=literal.reads
        )
        for m in _FLAG_RE.finditer(value)
    ]
    return flags or [literal]


# A word of a command's name in an argument vector (`user-find`, `group`, `describe`), and a bare flag (`--team`).
_SUBCOMMAND_RE: Final = re.compile(r"^[a-z]+(?:-[a-z]+)*$")
_BARE_FLAG_RE: Final = re.compile(r"^--?([a-z][\w-]*)$")
_FLAG_START_RE: Final = re.compile(r"^--?[a-z]")


def argv_operands(literals: Sequence[Unexplained], built: Sequence[Unexplained] = ()) -> list[Unexplained]:
    """An argument vector (`args: ["user-find", "--manager=jdoe"]`, `flags: ["--team", "3"]`) stands for its
    operands, not for a list the user gave: its first word names the command (and the plain words after it:
    `group describe`), a bare `--flag` names the element after it, a candidate under the flag's name. A vector
    is a list of texts one of which is a flag (`built`: elements already built on refs count); the rest of
    `literals` is returned as it is."""
    vectors: dict[tuple[str, Keys], dict[int, Unexplained]] = {}
    for lit in literals:
        if lit.of >= 2 and lit.keys and isinstance(lit.keys[-1], int) and isinstance(lit.value, str):
            vectors.setdefault((lit.step, lit.keys[:-1]), {})[lit.keys[-1]] = lit
    # (a tool taking a vector anywhere takes one everywhere: `["group-show", "vpn-users"]` has no flag of its own)
    flags = [lit for lit in [*literals, *built] if lit.keys and isinstance(lit.keys[-1], int) and _flag_like(lit.value)]
    flagged = {(lit.tool, lit.keys[:-1]) for lit in flags}
    vectors = {at: ms for at, ms in vectors.items() if (next(iter(ms.values())).tool, at[1]) in flagged}
    out = [lit for lit in literals if not (lit.keys and (lit.step, lit.keys[:-1]) in vectors)]
    for at, members in vectors.items():
        built_flags = {f.keys[-1] for f in flags if (f.step, f.keys[:-1]) == at and isinstance(f.keys[-1], int)}
        out += _operands(members, built_flags)
    return out


def after_flag(given: JSON, keys: Keys) -> bool:
    """The value at `keys` is an element of an argument vector right after a bare flag (`["--team", "3"]`)."""
    if not keys or not isinstance(keys[-1], int) or keys[-1] == 0:
        return False
    _, before = get_at(given, (*keys[:-1], keys[-1] - 1))
    _, value = get_at(given, keys)
    return isinstance(before, str) and bool(_BARE_FLAG_RE.match(before)) and not _flag_like(value)


def _flag_like(value: str | int | float) -> bool:
    return isinstance(value, str) and bool(_FLAG_START_RE.match(value))


def _operands(members: Mapping[int, Unexplained], flagged: Collection[int] = ()) -> Iterator[Unexplained]:
    """The vector's flags' values under their flags' names, and its last positional element (what the command
    works on, named by the command's first word: `group-show vpn-users` a group); the words before it name the
    command (`run services update-traffic`). Elements a ref took are positional too, but for flags (`flagged`)."""
    size = next(iter(members.values())).of
    flags = {at for at, lit in members.items() if _flag_like(lit.value)} | set(flagged)
    # a bare flag names the element after it, unless that is a flag too: `--gen-access-key --gen-secret` are switches
    valued = {
        at + 1: m.group(1)
        for at, lit in members.items()
        if (m := _BARE_FLAG_RE.match(str(lit.value))) and at + 1 not in flags
    }
    positional = [at for at in range(size) if at not in valued and at not in flags]
    last = positional[-1] if len(positional) >= 2 else None
    noun = str(members[0].value).split("-")[0] if 0 in members and "-" in str(members[0].value) else ""
    for at, lit in sorted(members.items()):
        if at in valued:
            yield replace(lit, flag=valued[at], of=0)
        elif at in flags and at + 1 not in valued:
            yield replace(lit, of=0)  # (`--manager=jdoe`: `command_flags` reads it)
        elif at == last:
            yield replace(lit, flag=lit.flag or noun, of=0)


# A command line of words and operands under a key that says so (`args: "group describe billing-consumers"`).
_COMMAND_KEYS: Final = frozenset({"args", "arguments", "argv", "command", "cmd", "command_line", "cli"})
_OPERANDS_RE: Final = re.compile(r"^((?:[a-z]+ )+)([^\s\-\"'][^\s\"']*(?: [^\s\-\"'][^\s\"']*)*)$")


def _positional(literal: Unexplained, value: str) -> list[Unexplained]:
    """The operands of a command line without flags: the words before them name the command, the first of them
    what the operands are (`group describe billing-consumers`: a group)."""
    key = literal.keys[-1] if literal.keys else None
    if not isinstance(key, str) or key.lower() not in _COMMAND_KEYS or not (m := _OPERANDS_RE.match(value)):
        return []
    words, operands = m.group(1).split(), m.group(2).split(" ")
    if any(_SUBCOMMAND_RE.fullmatch(o) and "-" not in o for o in operands):
        return []  # (a plain word among them: no telling the command's words from its operands)
    sole = len(operands) == 1
    return [replace(literal, value=o, flag=words[0], in_query=True, sole=sole) for o in operands]


# A composite key of a single-table design (DynamoDB): `CUSTOMER#C-20417`, the customer `C-20417` under a prefix.
_KEY_PART_RE: Final = re.compile(r"^([A-Z][A-Z0-9_]*)#([^#\s]{2,64})$")


def key_parts(literal: Unexplained) -> list[Unexplained]:
    """The value inside a composite key (`C-20417` of `CUSTOMER#C-20417`), a candidate the key is built on, as the
    one value a query selects by; none for a key that is all prefix or all upper case (`ORDER#PENDING`)."""
    match = _KEY_PART_RE.match(literal.value) if isinstance(literal.value, str) else None
    if match is None or (match.group(2).isupper() and match.group(2).isalpha()):
        return []
    flag = match.group(1).lower()
    return [replace(literal, value=match.group(2), flag=flag, in_query=True, sole=True)]


# An anchored pattern around a plain value (`^year-in-review-2026`, `checkout$`): a prefix or an exact match of it.
_ANCHORED_RE: Final = re.compile(r"^\^([^^$.*+?()\[\]{}|\\\s]{3,})\$?$|^([^^$.*+?()\[\]{}|\\\s]{3,})\$$")


def anchored_core(text: object) -> str | None:
    """The value an anchored pattern matches from its start or to its end (`year-in-review-2026` of
    `^year-in-review-2026`); None for anything else."""
    match = _ANCHORED_RE.match(text) if isinstance(text, str) else None
    return (match.group(1) or match.group(2)) if match is not None else None


def regex_core(literal: Unexplained) -> list[Unexplained]:
    """The value an anchored pattern matches (a Mango `$regex`: `^year-in-review-2026`), a candidate the pattern is
    built on, named by the field it matches (`slug`)."""
    core = anchored_core(literal.value)
    if core is None:
        return []
    field = next((k for k in reversed(literal.keys) if isinstance(k, str) and not k.startswith("$")), literal.flag)
    return [replace(literal, value=core, flag=field, in_query=True, sole=True)]


# `field:"value"`, `field = 'value'`, `field:value` inside a query (Lucene, KQL, CQL, JQL, a search syntax);
# `[System.AreaPath] UNDER 'Kettle\\Checkout'` (WIQL).
# (not a GraphQL variable's declared type, `$id: Int!`; a quoted value may sit in a list, `tags: ["runbook"]`)
_QUERY_VALUE_RE: Final = re.compile(
    r"(?<![\w.$])\[?([A-Za-z_][\w.]*)\]?(?:\s*(?::|=|==|~)\s*|\s+(?:eq|ne|co|sw|ew|UNDER|under|contains|CONTAINS)\s+)"
    r"(?:\[?\"([^\"]{2,60})\"|\[?'([^']{2,60})'|([^\s\"'()\[\]{},:=+]{2,60}))"
)


def _field_values(query: str) -> Iterator[tuple[str, str, bool, bool]]:
    """(field, value, quoted, searched) of each `field:value` clause; quoted: a value, not a word of the query's
    own; searched: a tag or words a search looks for (none here)."""
    for match in _QUERY_VALUE_RE.finditer(query):
        found = next(group for group in match.groups()[1:] if group is not None)
        field = match.group(1).split(".")[-1]
        if field.startswith("_") and (outer := _OPERAND_OF_RE.search(query, 0, match.start())):
            field = outer.group(1)  # Hasura's `email: {_eq: "…"}`: the value is the email, `_eq` its operator
        yield field, found, match.group(4) is None, False
    for match in _SQL_DAY_RE.finditer(query):  # `__time >= TIMESTAMP '2026-11-20 00:00:00'`: the day
        yield match.group(1).split(".")[-1], match.group(2), True, False


_DAY_RE: Final = re.compile(r"\d{4}-\d\d-\d\d")
# SQL's bound on a day, which `_QUERY_VALUE_RE` does not read (the midnight around it stays the query's).
_SQL_DAY_RE: Final = re.compile(
    r"(?<![\w.$])([A-Za-z_][\w.]*)\s*(?:>=|<=|>|<)\s*(?:TIMESTAMP\s+|DATE\s+)?"
    r"'(\d{4}-\d\d-\d\d)(?:[ T]00:00(?::00)?)?'",
    re.IGNORECASE,
)


def _filter_values(text: str) -> list[tuple[str, str, bool, bool]] | None:
    """(field, value, quoted, searched) of each comparison of a filter list in JSON text (`filter_terms`): its texts
    are quoted values; its numbers and booleans are the task's (`["docstatus", "=", 1]`)."""
    terms = filter_terms(text)
    if terms is None:
        return None
    return [(field, found, True, False) for field, found in terms if isinstance(found, str) and found]


# The field an operator object compares (`email: {` before `_eq: "…"`), GraphQL's filter arguments.
_OPERAND_OF_RE: Final = re.compile(r"([A-Za-z][\w]*)\s*:\s*\{\s*$")
# A query that writes (a GraphQL mutation, SQL's UPDATE and INSERT): a sentence in it is text set, not selected by.
_WRITES_RE: Final = re.compile(r"^\s*(?:mutation\b|update\s+\S+\s+set\b|insert\s+into\b)", re.IGNORECASE)


_BOUND_FIELD_RE: Final = re.compile(r"(?i)^(?:before|after|since|until|from|to)$|created|updated|modified|due|date")
STAMP_DIGITS: Final = 9  # an epoch in seconds (or milliseconds): not a count or a small id
_CONNECTIVES: Final = frozenset({"AND", "OR", "NOT", "and", "or", "not", "TO"})
_OPERATOR_RE: Final = re.compile(r"^(?:[<>!=]=?|==|~)$")
_RANGE_RE: Final = re.compile(r"^\[\s*(\S+)\s+(?:to|TO)\s+(\S+)\s*\]$|^(\S+?)\.\.(\S+)$")


def _search_values(query: str) -> Iterator[tuple[str, str, bool, bool]]:
    """The values of a search box's terms: each field's value (both bounds of a range), a tag's name and the words
    searched for, which are what the search is about (as a search's whole text is the user's); a flag (`!unread`)
    is the syntax's own."""
    words: list[str] = []
    compared = False  # `created > "2026-11-19"`: an expression's words are its fields and values, not a search
    for kind, field, found, quoted in search_terms(query):
        if kind == "word":
            if not any(c.isalnum() for c in found):
                compared = compared or bool(_OPERATOR_RE.match(found))
            elif quoted or (found not in _CONNECTIVES and not any(c in "<>=" for c in found)):
                words.append(found)
            continue
        bounds = _RANGE_RE.match(found)
        for bound in [b for b in bounds.groups() if b] if bounds else [found]:
            yield field.split(".")[-1], bound, quoted or kind == "tag" or found != bound, kind == "tag"
    if words and not compared:
        yield "text", " ".join(words), True, True


# A number an inequality compares with (`julianday(...) > 30`, `qty <= 5`, `age >= 18.5`): a threshold.
_THRESHOLD_RE: Final = re.compile(
    r"(?:([A-Za-z_][\w.]*)\)*|\))(?:\s*(?:<=|>=|<|>)\s*|\s+(?:gt|ge|lt|le)\s+)(?:(?i:DATE|TIMESTAMP)\s+)?[\"']?(\d{4}-\d\d-\d\d(?=T|[\"'\s)]|$)|-?\d+(?:\.\d+)?)"
    r"(?:T[\d:.]+(?:Z|[+-]\d\d:?\d\d)?)?[\"']?"  # a date's time of day is how it is written: the date is the value
    # a whole side, not `0.5 * seats` (after it SQL's, AQL's clauses: `SORT`, `RETURN`)
    r"(?=\s*(?:$|[);,\]]|(?i:and|or|order|group|limit|having|unless|sort|filter|return)\b))"
)


def writes(literal: Unexplained) -> bool:
    """The literal is a query that writes (a GraphQL mutation, SQL's UPDATE or INSERT)."""
    return isinstance(literal.value, str) and _WRITES_RE.match(literal.value) is not None


_STATEMENT_WORDS: Final = frozenset(
    {"SELECT", "FROM", "WHERE", "WITH", "INSERT", "UPDATE", "DELETE", "MATCH", "RETURN", "SHOW", "EXPLAIN", "AND"}
)


def query_values(literal: Unexplained) -> list[Unexplained]:
    """The values a query selects by (`service.name:"checkout-api"`, `space = "ENG"`, `> 30`): each a candidate
    of its own, named by its field and weighed without the query's description; the query stays literal around
    the chosen ones, built on them. Plain lower-case words (`type:ticket`, `is:unresolved`) are the query's
    vocabulary, left in it; in a statement (SQL) an unquoted right-hand side is a column, not a value; 0 and 1
    compared with say "any" and "more than one", not a threshold."""
    value = literal.value
    if not isinstance(value, str):
        return []
    terms = _filter_values(value)
    if terms is None:
        if not is_query(value):
            return []
        terms = list(_search_values(value) if is_search(value) else _field_values(value))
    statement = is_statement(value)
    out: list[Unexplained] = []
    for field, found, quoted, searched in terms:
        if found.isdigit() and _BOUND_FIELD_RE.search(field) and len(found) >= STAMP_DIGITS:
            # `before:1795700000`: a time the search is bounded by, picked per run like a date
            out.append(Unexplained(literal.step, literal.keys, found, literal.tool, flag=field, in_query=True))
            continue
        if found.isdigit() and (
            (_YEAR_FIELD_RE.search(field) and _YEAR_RE.match(found)) or _PORT_FIELD_RE.fullmatch(field)
        ):
            # `year:2025`, `port:3389`: the year or the port a search is about, the user's like a name
            out.append(Unexplained(literal.step, literal.keys, found, literal.tool, flag=field, in_query=True))
            continue
        # a lower-case word is the query's vocabulary (`is:unresolved`), but under a field naming the thing itself
        # (`name_label:gitlab`) the user's; `$pageview`, `@project` are names of the query language's own
        if (plain_word(found) and not quoted and not naming_field(field)) or found.isdigit() or found == value:
            continue
        if found[0] in "$@":
            continue
        if not quoted and found.upper() in _STATEMENT_WORDS:
            continue  # (`Query: SELECT COUNT(*) ...`: a statement quoted after a label, not a value)
        if " " in found and not _named(found, field) and not (quoted and (_WRITES_RE.match(value) or _short(found))):
            continue  # (a sentence a mutation sets, `cancel_reason: "Customer asked by phone"`, is the user's)
        if statement and not quoted:
            continue
        out.append(
            Unexplained(literal.step, literal.keys, found, literal.tool, flag=field, in_query=True, sole=searched)
        )
    for match in CRITERION_RE.finditer(value):  # `(Owner.email:equals:ana@kettle.dev)`
        field, found = match.group(1).split(".")[-1], match.group(2)
        if not plain_word(found) and len(found) >= 2 and not found.isdigit():
            out.append(Unexplained(literal.step, literal.keys, found, literal.tool, flag=field, in_query=True))
    for match in CLAUSE_FILTER_RE.finditer(value):  # `(TrialEnds,lt,exactDate,2026-12-01)`
        field, found = match.group(1).split(".")[-1], match.group(2).strip("\"'")
        if len(found) >= 2 and not found.isdigit():
            out.append(Unexplained(literal.step, literal.keys, found, literal.tool, flag=field, in_query=True))
    for match in FUNCTION_FILTER_RE.finditer(value):  # `greater-than(created,2026-11-01T00:00:00Z)`
        field, found = match.group(1).split(".")[-1], match.group(2).strip("\"'")
        if len(found) >= 2 and not found.isdigit():
            out.append(Unexplained(literal.step, literal.keys, found, literal.tool, flag=field, in_query=True))
    for match in _LIKE_RE.finditer(value):  # `url LIKE '%/checkout%'`: the text the pattern looks for, a plain
        field, found = match.group(1).split(".")[-1], match.group(2)  # word too (`'%orders%'`): what is searched
        if len(found) >= 2:
            out.append(
                Unexplained(literal.step, literal.keys, found, literal.tool, flag=field, in_query=True, sole=True)
            )
    # the query selects by this one text: what it is about; a quoted lower-case word (`plan = 'pro'`) as often names
    # a kind of thing the task works on as a choice: a candidate, never the one
    texts = [
        i
        for i, lit in enumerate(out)
        if isinstance(lit.value, str)
        and not state_field(lit.flag)
        and not plain_word(lit.value)
        and not lit.value.isdigit()
        and not _DAY_RE.fullmatch(lit.value)  # (a day it is bounded by is when, not what)
    ]
    if len(texts) == 1:
        out[texts[0]] = replace(out[texts[0]], sole=True)
    for match in _THRESHOLD_RE.finditer(value):
        found = match.group(2)
        number: str | int | float = found if "-" in found[1:] else float(found) if "." in found else int(found)
        if number not in (0, 1):
            field = (match.group(1) or "threshold").split(".")[-1]
            out.append(Unexplained(literal.step, literal.keys, number, literal.tool, flag=field, in_query=True))
    return out


# Lower-case words searched for as a phrase (`abs:"query optimization"`, `text ~ "payment timeout"`): free text the
# user typed, as a search's whole query is. A capitalized label (`status:"In Progress"`) names a state: left.
_PHRASE_RE: Final = re.compile(r"^[a-z][a-z0-9-]*(?: [a-z0-9][a-z0-9-]*){1,5}$")


def _short(found: str) -> bool:
    """A few words compared whole (`category_s:"Garden tools"`): a name the query selects by, not a sentence (nor
    a title with a number in it: `"Release checklist 2026.11"` is built on the number)."""
    words = found.split()
    return len(words) <= _SHORT_WORDS and not found.endswith((".", "!", "?")) and not any(c.isdigit() for c in found)


_SHORT_WORDS: Final = 3


def _searched_phrase(found: str) -> bool:
    return bool(_PHRASE_RE.match(found))


# A name of a few capitalized words compared whole (`brand = 'Kettle Co'`, `customer:"Acme Corp"`) is what the
# query selects by; under a field naming a state or a category (`status:"In Progress"`) it is a state: left.
_NAME_RE: Final = re.compile(r"^[A-Z][\w&'.-]*(?: [A-Z0-9][\w&'.-]*){1,4}$")


def _named(found: str, field: str) -> bool:
    return _searched_phrase(found) or (bool(_NAME_RE.match(found)) and not state_field(field))


_YEAR_FIELD_RE: Final = re.compile(r"(?i)(?:^|_)year$")
_PORT_FIELD_RE: Final = re.compile(r"(?i)(?:\w+[._])?port")
_YEAR_RE: Final = re.compile(r"^(?:19|20)\d\d$")


# `field LIKE '%text%'` (SQL, HogQL): the text between the pattern's wildcards.
_LIKE_RE: Final = re.compile(r"([A-Za-z_$][\w.$]*)\s+I?LIKE\s+'%?([^'%_]{2,60})%?'", re.IGNORECASE)


def carried_value(value: str) -> bool:
    """Specific enough that finding it inside another call's text is no chance: no plain word, no sentence."""
    text = value.strip()
    return len(text) >= PART_MIN and " " not in text and not plain_word(text) and not text.isdigit()


def built_on_others(
    by_value: Mapping[tuple[str, str], Sequence[Unexplained]], judged: Mapping[tuple[str, str], Judgement]
) -> list[tuple[str, str]]:
    """The sentences (text with a space) that hold another candidate's text as a whole word or words: a
    number's text, or a chosen string of its own in a sentence of three words or more; and the paths two of
    whose segments are chosen words (`apps/orders/staging`).

    A name inside a two-word value ("Ada" in "Ada Lovelace") is often a value of its own: both stay."""
    parts = [text for kind, text in by_value if kind != "str" and len(text) >= PART_MIN]
    named = [
        text
        for (kind, text) in by_value
        if kind == "str" and len(text) >= PART_MIN and judged[(kind, text)].chosen and not plain_word(text)
    ]
    words = {text for (kind, text) in by_value if kind == "str" and plain_word(text) and judged[(kind, text)].chosen}
    # (a query holding a chosen value it selects by, `= 'checkout'`, is built on it, however plain the word)
    selecting = {
        (lit.step, lit.keys) for key, uses in by_value.items() if judged[key].chosen for lit in uses if lit.in_query
    }
    out: list[tuple[str, str]] = []
    for kind, text in by_value:
        if kind != "str":
            continue
        if any(not lit.in_query and (lit.step, lit.keys) in selecting for lit in by_value[(kind, text)]):
            out.append((kind, text))
            continue
        if len(words & set(segments(text))) >= 2 and text not in words:
            out.append((kind, text))  # `apps/orders/staging` of the chosen `orders` and `staging`: built on them
            continue
        if " " not in text.strip():
            # a selector or a flag around a chosen value (`+orders_daily`, `--service=checkout`): built on it
            if any(n != text and carried_value(n) and holds_word(text, n) and _affix_of(text, n) for n in named):
                out.append((kind, text))
            continue
        labelled = _LABELLED_RE.match(text)
        if labelled and labelled.group(1) in words | set(named):
            out.append((kind, text))  # `StatusCake: prod`, a title naming the chosen `prod` after a label
            continue
        sentence = len(text.split()) >= 3
        holds = any(p != text and holds_word(text, p) for p in parts + (named if sentence else []))
        if holds:
            out.append((kind, text))
    return out


# A label and what it labels (`StatusCake: prod`, `Zipkin: checkout`): a title of a message about the chosen value.
_LABELLED_RE: Final = re.compile(r"^[A-Z][\w .-]{0,30}:\s+(\S+)$")


def segments(text: str) -> list[str]:
    """The segments of a path or a key (`apps/orders/staging`, `group:default/billing-core`); none of a sentence."""
    return _SEGMENT_RE.split(text) if not any(c.isspace() for c in text) else []


_SEGMENT_RE: Final = re.compile(r"[/:]")


def _affix_of(text: str, value: str) -> bool:
    """`text` is `value` with an operator or a flag around it (`+orders_daily`, `--service=checkout`), not a path
    or a URL of its own whose other segments the user chose too (`/data/exports/q3-ledger.parquet`, an area path
    `Kettle\\Checkout`)."""
    rest = text.replace(value, "", 1)
    if text.startswith(value) and _NAME_SUFFIX_RE.match(rest):
        return False  # `support-intents-v2` beside `support-intents`: another name, not the first one decorated
    return len(rest) <= _AFFIX_MAX and not any(c in "/\\" or c.isspace() for c in rest)


_NAME_SUFFIX_RE: Final = re.compile(r"^[-_.][A-Za-z0-9][\w.-]*$")


_AFFIX_MAX: Final = 16


_VERSION_RE: Final = re.compile(r"(?<![\w.])[vV]?(\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?)(?![\w.]*\w)")


def versions_inside(
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


def versions_in_built(
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


def inside_urls(by_value: Mapping[tuple[str, str], Sequence[Unexplained]]) -> list[tuple[str, str]]:
    """Values that sit in another candidate's URL (an issue id in the issue's link): read out of that input,
    not a second input that must agree with it."""
    urls = [text for kind, text in by_value if kind == "str" and _URL_RE.match(text)]
    return [
        (kind, text)
        for kind, text in by_value
        if len(text) >= PART_MIN and any(url != text and holds_word(_url_path(url), text) for url in urls)
    ]


def _url_path(url: str) -> str:
    """The part after the host: an id there names the resource; the host names where it lives."""
    rest = url.split("://", 1)[-1]
    return rest[rest.find("/") :] if "/" in rest else ""


_URL_RE: Final = re.compile(r"^[a-z][a-z0-9+.-]*://\S+$")


def plain_word(text: str) -> bool:
    """One lower-case word ("billing"): inside a sentence it is as likely a word of the sentence as a value."""
    return (text.isalpha() and text.islower()) or "\n" in text


PART_MIN: Final = 3  # a shorter number inside a sentence is too likely to be chance


def holds_word(text: str, part: str) -> bool:
    return any(left and right for _, left, right in occurrences(text, part))


def path_roots(values: Sequence[str], made: Collection[str] = ()) -> dict[str, list[str]]:
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
