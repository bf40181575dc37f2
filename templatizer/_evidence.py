"""Is a literal the user's choice for this run, or a constant of the task? Weighed from evidence.

The evidence, strongest first: the tool's input schema (`const` and a `default` equal to the value are
constants, an `enum` is a setting, a `format` such as email or uri and the parameter's description say
what the value is), the value's shape (free text, a name, an email, a path or URL, an identifier or slug;
query syntax such as `is:unresolved`, a short word such as `me`, an upper-case constant), and where else
the value is used. Key names count as a weak signal only. A `Judgement` at or above `CHOSEN` is applied
by a plain save; between `THIN` and `CHOSEN` it is proposed unticked; below, it stays literal (and the
summary says why when it looked variable).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from toolreel.core.model import JSON
from toolreel.templatizer._inputs import Unexplained
from toolreel.templatizer._values import Keys, key_tokens, last_key

__all__ = [
    "CHOSEN",
    "CLAUSE_FILTER_RE",
    "CRITERION_RE",
    "FUNCTION_FILTER_RE",
    "THIN",
    "Judgement",
    "filed_under",
    "filter_terms",
    "is_contact",
    "is_machine_id",
    "is_query",
    "is_remark",
    "is_search",
    "is_statement",
    "judge_text",
    "names_operation",
    "names_scope",
    "other_examples",
    "param_schema",
    "search_terms",
]

CHOSEN: Final = 0.6
THIN: Final = 0.35

# `is:unresolved assignee:me`; `status:draft+tag:news` (NQL, Ghost's filters, joins clauses with `+`)
_QUERY_RE: Final = re.compile(r"^[A-Za-z_.]+:[^\s:+]+(?:(?:\s+|\+)-?[A-Za-z_.]+:[^\s:+]+)*$")
# AQL (`FOR u IN users FILTER u.country == "DE" RETURN u`) and Cypher (`MATCH (s:Service) WHERE ... RETURN s`):
# statements as SQL's are, their unquoted right-hand sides a document's or a node's fields
_GRAPH_QUERY: Final = r"FOR\s+\w+\s+IN\s+\S+\s.*\bRETURN\b|(?:OPTIONAL\s+)?MATCH\s*\(.*\bRETURN\b"
# A statement of a query language (SQL, JQL, a search DSL): its clauses are how the task selects, part of the
# task like code; a chosen value inside it (a project key) is an input of its own, interpolated.
_QUERY_LANG_RE: Final = re.compile(
    r"^\s*(?:SELECT\s.+?\sFROM\s+[\w.\"`-]+(?:\s*;?\s*$|(?:\s+(?:AS\s+)?\w+)?\s+(?:WHERE|JOIN|LEFT|INNER|ORDER|GROUP|LIMIT)\b)"
    r"|INSERT\s+INTO\s|UPDATE\s+[\w.\"]+\s+SET\s|DELETE\s+FROM\s|WITH\s+\w+\s+AS\s*\("
    r"|(?:SET|REMOVE)\s+[\w.#]+\s*=\s*[:#\w])"  # a DynamoDB update expression (`SET pending = :n`)
    rf"|{_GRAPH_QUERY}",
    re.IGNORECASE | re.DOTALL,
)
_STATEMENT_RE: Final = re.compile(
    r"^\s*(?:(?:SELECT|WITH)\s.+?\sFROM\s|INSERT\s+INTO\s|UPDATE\s+\S+\s+SET\s|DELETE\s+FROM\s)"
    rf"|^\s*(?:{_GRAPH_QUERY})",
    re.IGNORECASE | re.DOTALL,
)
# Upper-case connectives beside a comparison (`project = PAY AND status = "To Do"`): JQL, Lucene, a filter.
_FILTER_RE: Final = re.compile(
    r"\w\s*(?:=|!=|~|<=?|>=?)\s*\S.*\s(?:AND|OR|ORDER BY)\s|\s(?:AND|OR)\s.*\w\s*(?:=|!=|~)\s*\S"
    r"|[\w.]+:\S.*\s(?:AND|OR|NOT)\s|\s(?:AND|OR|NOT)\s.*[\w.]+:\S"  # Lucene, KQL: `service:"api" AND code:500`
)
# Clauses comparing a field with a value, at least one of them by an order or a word operator: `created >
# "2026-11-19"` after `status:"Trial"` (Close), `profile.email eq "a@b.c"` (SCIM: Okta; OData: Graph, Dynamics),
# `updated_on < 2026-10-01T00:00:00Z`. A `field: value` with a space after the colon is prose (`Note: hi`).
_CLAUSE: Final = (
    r"\(?-?[A-Za-z_][\w.]*(?::(?!\s)|\s*(?:==?|!=|~|<=?|>=?)\s*|\s+(?:eq|ne|gt|ge|lt|le|co|sw|ew)\s+)"
    r"(?:\"[^\"]*\"|'[^']*'|[^\s\"'()]+)\)?"
)
_CLAUSES_RE: Final = re.compile(rf"^{_CLAUSE}(?:\s+(?:(?:and|or|not|AND|OR|NOT)\s+)?{_CLAUSE})*$")
_JOINED_CLAUSES_RE: Final = re.compile(r"\s(?:and|or|AND|OR)\s")
_COMPARED_RE: Final = re.compile(r"\w[\"']?\s*(?:<=?|>=?|!=|==)\s*\S|\w\s+(?:eq|ne|gt|ge|lt|le|co|sw|ew)\s+\S")
# A search piped into commands (`search index=web host="api-07" | stats count by uri`: SPL; `T | where x == 1`:
# KQL), or a filter expression joined by `&&`/`||` (GROQ, JavaScript-like filters) with a comparison in it.
_PIPED_RE: Final = re.compile(
    r"[\w.]+\s*(?:=|==|!=|>=?|<=?)\s*\S.*\|\s*(?:stats|where|sort|head|tail|table|fields|summarize|project|top|"
    r"limit|eval|rex|timechart|count|dedup|rename|extend|order)\b",
    re.DOTALL,
)
_JOINED_RE: Final = re.compile(
    r"[\w.>-]+\s*(?:==?|!=|>=?|<=?)\s*[\"'\w].*\s(?:&&|\|\|)\s|\s(?:&&|\|\|)\s.*[\w.>-]+\s*==\s*[\"']"
)
# One term of a search box's syntax (Kanboard, Paperless, BookStack, linkding, GitHub): a field compared with a
# value (`assignee:"Ines Duarte"`, `due:<2026-11-27`, `brand:=Moccamaster`, `created:[2026-07-01 to 2026-09-30]`),
# maybe braced (`{type:page}`, `[owner=platform]`); a tag or a flag (`#rust`, `!unread`); or a word searched for.
_SEARCH_TERM_RE: Final = re.compile(
    r"(?:-?[{\[]?(?P<field>[A-Za-z_][\w.]*)(?P<op>:[<>]=?|:=|:|[<>!]?=)(?!\s)"
    r"(?P<value>\"[^\"]*\"|'[^']*'|\[[^\]]*\]|[^\s\"'\]}]+)[\]}]?"
    r"|(?P<mark>[#!]\w[\w.-]*)|(?P<word>\"[^\"]*\"|[^\s\"':]+))(?:\s+|$)"
)
# A criterion `(field:operator:value)`, joined by `and`/`or` (Zoho CRM's search criteria, and APIs like it).
CRITERION_RE: Final = re.compile(
    r"\(\s*([A-Za-z_][\w.$]*):(?:equals|not_equal|starts_with|ends_with|contains|not_contains|in|not_in|"
    r"greater_than|greater_equal|less_than|less_equal|between|like):([^()]+?)\s*\)"
)
# A label selector (`{service="api",code=~"5.."}`) of PromQL, LogQL (a stream selector opens the query), or a metrics
# query.
_SELECTOR_RE: Final = re.compile(r"(?:\w|^\s*)\{\s*\w+\s*(?:=|!=|=~|!~)\s*\"[^\"]*\"")
# A filter written as functions (`greater-than(created,2026-11-01T00:00:00Z)`, `and(equals(status,"open"),...)`): the
# JSON:API filter syntax of Klaviyo and APIs like it.
FUNCTION_FILTER_RE: Final = re.compile(
    r"\b(?:equals|greater-than|less-than|greater-or-equal|less-or-equal|contains|contains-any|contains-all|"
    r"starts-with|ends-with|any|has)\(\s*([A-Za-z_][\w.]*)\s*,\s*(\"[^\"]*\"|'[^']*'|[^(),\s]+)\s*\)"
)
# NocoDB's `where`: `(Field,op,value)` clauses joined by `~and`/`~or`, a date's sub-operator before its value
# (`(TrialEnds,lt,exactDate,2026-12-01)`).
CLAUSE_FILTER_RE: Final = re.compile(
    r"\(\s*([A-Za-z_][\w ]*?)\s*,\s*(?:eq|neq|not|gt|ge|lt|le|gte|lte|like|nlike|in|btw|nbtw|is|isnot|allof|anyof)"
    r"\s*,\s*(?:(?:exactDate|daysAgo|daysFromNow|pastNumberOfDays|nextNumberOfDays)\s*,\s*)?([^(),~]+?)\s*\)"
)
_CLAUSES_JOINED_RE: Final = re.compile(r"^\(.*\)(?:~(?:and|or|not)\(.*\))*$")
_FUNCTIONS_RE: Final = re.compile(r"^[\w(),.:'\"@+\-\s\[\]]+$")
# A GraphQL document: code, not a value.
_GRAPHQL_RE: Final = re.compile(r"^\s*(?:(?:query|mutation|subscription)\b[^{]*)?\{\s*[A-Za-z_]\w*\s*[({]")
# An API version (`kustomize.toolkit.fluxcd.io/v1`, `apps/v1beta1`): which schema the call speaks, not a choice.
_API_VERSION_RE: Final = re.compile(r"^(?:[a-z0-9.-]+/)?v\d+(?:(?:alpha|beta)\d+)?$")
# A time relative to the run (`now-1h`, `-24h`, `14d`, `in 2 days`, `tomorrow`): the same words every run.
_RELATIVE_RE: Final = re.compile(
    r"^(?:now(?:[+-]\d+[smhdwMy])*(?:/[smhdwMy])?|[+-]?\d+(?:s|m|h|d|w|mo|y)|in \d+ (?:minute|hour|day|week|month)s?|"
    r"(?:tomorrow|yesterday|tonight)|(?:next|last|this) (?:week|month|year|monday|tuesday|wednesday|thursday|friday))$",
    re.IGNORECASE,
)
# Examples a parameter's description gives (`Two-letter US state code (e.g. CA, NY)`): the parameter takes values
# from an open set the caller picks from; a value that is not one of them is the caller's pick for this run.
_EXAMPLES_RE: Final = re.compile(r"\b(?:e\.\s?g\.|for example|such as)[,:]?\s*(.+?)(?:\)|$|\.\s)", re.IGNORECASE)
_EXAMPLE_SPLIT_RE: Final = re.compile(r"\s*(?:,|\bor\b|\band\b|\betc\b\.*)\s*")
_EXAMPLES_FLOOR: Final = 0.7
_QUERY_CAP: Final = 0.45  # whatever the key or the description says: proposed unticked at most
_CERTAIN: Final = 0.95  # free text the tool describes as a subject is the user's, required or not
_WORD_RE: Final = re.compile(r"^[a-z]+$")
_UPPER_RE: Final = re.compile(r"^[A-Z][A-Z0-9_]*#?$")  # (`ORDER#`: a key prefix of a single-table design)
_EMAIL_RE: Final = re.compile(r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$")
_URL_RE: Final = re.compile(r"^[a-z][a-z0-9+.-]*://\S+$")
_PHONE_RE: Final = re.compile(r"^\+[1-9]\d{6,14}$")
_SLUG_RE: Final = re.compile(r"^[A-Za-z0-9]+(?:[-_./:][A-Za-z0-9]+)+$")
_SUBJECT_FORMATS: Final = frozenset({"email", "uri", "url", "date", "date-time", "hostname", "uuid", "idn-email"})
# What a parameter's description says a value is (weak: descriptions are written for models, loosely).
_SUBJECT_WORDS: Final = re.compile(
    r"\b(?:name|title|id|identifier|slug|owner|organi[sz]ation|org|project|repo(?:sitory)?|namespace|"
    r"channel|team|path|file|directory|query|search|text|body|message|content|email|user|customer|account)\b",
    re.IGNORECASE,
)
_SHAPE_PHRASE_RE: Final = re.compile(r"\b(?:in|as|using)\s+(?:an?\s+|the\s+)?[\w.:+-]+(?:\s+[\w.:+-]+)?\s+format\b")
_SETTING_WORDS: Final = re.compile(
    r"\b(?:one of|sort|order|format|mode|direction|state|status|type|kind|level|default)\b", re.IGNORECASE
)
# Key names: a weak signal, never the deciding rule.
# (A channel or a label is left out: where a workflow posts is usually part of the task.)
_SUBJECT_KEYS: Final = frozenset(
    {"name", "title", "query", "q", "search", "keyword", "term", "text", "body", "message", "content", "contents"}
    | {"subject", "observation", "observations", "note", "comment", "description", "summary", "email", "path"}
    | {"owner", "repo", "repository", "org", "organization", "project", "namespace", "team", "user", "customer"}
)
_SCOPE_KEYS: Final = frozenset(
    {"category", "categories", "tag", "tags", "label", "labels", "environment", "subreddit", "department", "region"}
)
# Words servers read as keywords rather than values: `assignee: "me"`, `state: "all"`, `sort: "desc"`.
_KEYWORDS: Final = frozenset(
    {"me", "self", "mine", "all", "any", "none", "today", "now", "yes", "no", "true", "false", "null", "asc", "desc"}
    | {"utc", "gmt"}  # the zone of no place: the same on every run
    | {"current", "latest"}  # a revision, a version, a tag a server resolves itself (`revision: current`)
)
_TIME_RE: Final = re.compile(r"^\d{1,4}[-:/.]\d{1,2}(?:[-:/.T ]\d{1,4})*(?:[+-]\d{2}:?\d{2}|Z)?$")
_FILE_RE: Final = re.compile(r"^[\w./-]*\w\.[A-Za-z0-9]{1,5}$")
_PATTERN_RE: Final = re.compile(r"[*?\[\]]")
_ID_KEYS: Final = frozenset({"id", "ids", "key", "uid", "uuid", "gid"})
_OPAQUE_ID_RE: Final = re.compile(r"^(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{6,}$")  # digits in it, six or more characters
_UUID_RE: Final = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")
_RANDOM_KEY_RE: Final = re.compile(r"^(?=[^_-]*[0-9])(?=[^_-]*[A-Za-z])[A-Za-z0-9]+(?:[_-][A-Za-z0-9]+)?$")
_MACHINE_ID_MIN: Final = 16
# Keys naming what a call does (`tool_name` of a tool that calls others, `action`, `op` of a patch): its operation.
_OPERATION_KEYS: Final = frozenset({"tool", "method", "operation", "operations", "action", "op", "verb"})
_SETTING_KEYS: Final = frozenset(
    {"type", "kind", "mode", "format", "sort", "order", "status", "state", "role", "level", "unit", "encoding"}
)


@dataclass(frozen=True, slots=True)
class Judgement:
    score: float
    reasons: tuple[str, ...]
    whole: bool = False  # the user's whole: a version inside it is no input of its own

    @property
    def chosen(self) -> bool:
        return self.score >= CHOSEN

    @property
    def thin(self) -> bool:
        return THIN <= self.score < CHOSEN

    @property
    def why(self) -> str:
        return "; ".join(self.reasons)


def param_schema(schema: Mapping[str, Any] | None, keys: Keys) -> Mapping[str, Any] | None:
    """The JSON Schema of the argument at `keys` in a tool's `inputSchema` (properties and items followed)."""
    node: Any = schema
    for key in keys:
        if not isinstance(node, Mapping):
            return None
        if isinstance(key, int):
            node = node.get("items")
        else:
            properties = node.get("properties")
            node = properties.get(key) if isinstance(properties, Mapping) else None
    return node if isinstance(node, Mapping) else None


_DEFAULT_KEY_RE: Final = re.compile(r"(?i)namespace|space|^org|version|profile|context")


def judge_text(
    value: str,
    keys: Keys,
    schema: Mapping[str, Any] | None,
    steps: int,
    *,
    writes: bool = True,
    optional: bool = False,
) -> Judgement:
    """How likely a literal string is the user's per-run choice, with the evidence that says so. `writes`: only
    calls that may write send it (none annotated read-only: a read sending it first looked at what the user named);
    `optional`: the tool's schema lists the parameters it
    requires, and not this one."""
    text = value.strip()
    if len(text) < 2:
        return Judgement(0.0, ("too short to be a choice",))
    fixed = _schema_fixed(value, schema)
    if fixed is not None:
        return Judgement(0.0, (fixed,))
    if text.lower() == "default" and _DEFAULT_KEY_RE.search(str(last_key(keys) or "")):
        # the namespace, space, org or version there is unless one is chosen (a UniFi `site` may be the user's)
        return Judgement(0.0, ("the word 'default' names the default one, not a choice",))
    score, reasons = _shape(text)
    score, reasons = _schema_hints(score, reasons, value, schema)
    if optional and score < _CERTAIN:  # the tool works without it: as likely a setting the agent added
        score -= 0.15
        reasons.append("the tool does not require it (a weak signal)")
    if is_query(text):  # a description saying "search query" says what it is, not that it varies
        return Judgement(min(score, _QUERY_CAP), (*reasons, "a query's syntax is part of the task"))
    if _PATTERN_RE.search(text) and " " not in text:  # `logs-http-*`: which names the task matches, like a query
        return Judgement(min(score, _QUERY_CAP), (*reasons, "a pattern's wildcards are part of the task"))
    if writes and is_machine_id(text):  # nobody types it: it names where a write goes (a database, an account)
        why = "a machine-made id (a UUID, a long random key) that no output gave, sent by a write: where it goes"
        return Judgement(min(score, _QUERY_CAP), (*reasons, why))
    head = key_tokens(last_key(keys) or "")[-1:]  # the head noun of a compound key: message_type is a type
    tokens = set(head)
    if names_operation(last_key(keys) or ""):  # `tool_name: users_list` names no subject
        score -= 0.2
        reasons.append(f"the key {last_key(keys)!r} names what the call does (a weak signal)")
    elif tokens & _SUBJECT_KEYS:
        score += 0.1
        reasons.append(f"the key {last_key(keys)!r} names a subject (a weak signal)")
    elif tokens & _ID_KEYS and _OPAQUE_ID_RE.match(text):
        score += 0.1  # an opaque id that no output gave: the user's (a folder, a board), unless it is a setting
        reasons.append(f"an opaque id under the key {last_key(keys)!r} (a weak signal)")
    elif tokens & _SETTING_KEYS or any(t.endswith(("type", "kind")) for t in head):  # (`doctype`, `itemtype`)
        score -= 0.2
        reasons.append(f"the key {last_key(keys)!r} names a setting (a weak signal)")
        if " " in text and len(text.split()) <= _TYPE_WORDS:  # `doctype: "Sales Invoice"`: a kind's name, no text
            score = min(score, THIN + 0.1)
    if steps > 1:
        score += 0.15
        reasons.append(f"used by {steps} steps")
    examples = other_examples(text, schema)
    if examples and score < _EXAMPLES_FLOOR and not _RELATIVE_RE.match(text) and text.lower() not in _KEYWORDS:
        score = _EXAMPLES_FLOOR
        reasons.append(
            f"the tool's description gives other examples ({', '.join(examples[:3])}): a value picked per run"
        )
    if _in_enum(value, schema):  # however often it is sent: one of the settings the tool offers
        score = min(score, _ENUM_CAP)
    return Judgement(max(0.0, min(1.0, score)), tuple(reasons))


_ENUM_CAP: Final = 0.45


def _in_enum(value: str, schema: Mapping[str, Any] | None) -> bool:
    enum = (schema or {}).get("enum")
    return isinstance(enum, list) and value in enum


def names_scope(key: str) -> bool:
    """`category`, `environment_slug`, `subreddit`: a key naming which part of the user's world a call looks at (a
    category, a tag, an environment, a forum), not a state's category (`status_category`: a setting)."""
    tokens = set(key_tokens(key))
    return bool(tokens & _SCOPE_KEYS) and not tokens & _SETTING_KEYS


def names_operation(key: str) -> bool:
    """A key naming what the call does (`tool_name` of a tool that calls others, `action`, a patch's `op`)."""
    return bool(set(key_tokens(key)) & _OPERATION_KEYS)


def other_examples(value: str, schema: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The examples a parameter's description gives (`e.g. CA, NY`, `for example 'aws'`), when the value is none
    of them: empty when there are none or the value is one (a value among the examples may be a fixed choice)."""
    description = str((schema or {}).get("description") or "")
    found = _EXAMPLES_RE.search(description)
    if found is None:
        return ()
    examples = tuple(part.strip("'\"` ") for part in _EXAMPLE_SPLIT_RE.split(found.group(1)) if part.strip("'\"`. "))
    if not examples or value.strip().lower() in {example.lower() for example in examples}:
        return ()
    return examples


def is_machine_id(text: str) -> bool:
    """A UUID, or a random key of 16 characters or more mixing letters and digits (`AC3f5e0a...`)."""
    if _UUID_RE.match(text):
        return True
    return len(text) >= _MACHINE_ID_MIN and bool(_RANDOM_KEY_RE.match(text))


def is_query(text: str) -> bool:
    """Query syntax (`is:unresolved assignee:me`), a statement of a query language (SQL, JQL), or an expression
    selecting series by their labels (PromQL, LogQL: `rate(http_requests_total{service="api"}[5m])`)."""
    if _URL_RE.match(text):
        return False
    if len(text) > 2 and text[0] == text[-1] == '"' and '"' not in text[1:-1]:
        text = text[1:-1]  # a query sent inside quotes of its own (`"primary_email:'a@b.c'"`)
    if _QUERY_RE.match(text) or _SELECTOR_RE.search(text) or CRITERION_RE.search(text) or is_search(text):
        return True
    if "{" in text and _GRAPHQL_RE.match(text):
        return True
    if "(" in text and FUNCTION_FILTER_RE.search(text) and _FUNCTIONS_RE.match(text):
        return True
    if text.startswith("(") and _CLAUSES_JOINED_RE.match(text) and CLAUSE_FILTER_RE.search(text):
        return True
    # (`a = 'x' and b.c = 'y'`: MLflow, OData; or one clause compared by an order or a word operator)
    if _CLAUSES_RE.match(text) and (_COMPARED_RE.search(text) or _JOINED_CLAUSES_RE.search(text)):
        return True
    # (the cheap tests first: both regexes scan the whole text, and most texts have neither `|` nor `&&`)
    piped = "|" in text and bool(_PIPED_RE.search(text))
    if " " in text and (piped or ("&&" in text and bool(_JOINED_RE.search(text)))):
        return True
    return " " in text and bool(_QUERY_LANG_RE.search(text) or _FILTER_RE.search(text))


def is_search(text: str) -> bool:
    """A search box's syntax: every term a field compared with a value, a tag, a flag or a word, with two
    fields, two tags or flags, a field and a tag, or a field whose value is quoted, a range or compared by an order
    (`status:"In Progress"`, `due:<2026-11-27`). One `field:value` among words is prose (`TODO:fix the bug`)."""
    if ":" not in text and "=" not in text and "#" not in text and "!" not in text:
        return False
    fields = marks = 0
    shaped = False
    position = 0
    while position < len(text):
        match = _SEARCH_TERM_RE.match(text, position)
        if match is None or match.end() == position:
            return False
        position = match.end()
        if match["field"]:
            fields += 1
            shaped = shaped or match["value"][0] in "\"'[" or match["op"] not in (":", "=")
        elif match["mark"]:
            marks += 1
    return fields >= 2 or marks >= 2 or (fields >= 1 and (marks >= 1 or shaped))


def search_terms(text: str) -> list[tuple[str, str, str, bool]]:
    """The terms of a search (`is_search`): (kind, field, value, quoted) with kind `field`, `tag` (`#rust`: the tag's
    name) or `word` (searched for), quotes taken off; flags (`!unread`) are the search's vocabulary: left out."""
    out: list[tuple[str, str, str, bool]] = []
    for match in _SEARCH_TERM_RE.finditer(text):
        if match["field"]:
            value = match["value"]
            out.append(("field", match["field"], value.strip("\"'"), value[0] in "\"'"))
        elif match["mark"] and match["mark"][0] == "#":
            out.append(("tag", "tag", match["mark"][1:], False))
        elif match["word"]:
            out.append(("word", "text", match["word"].strip('"'), match["word"][0] == '"'))
    return out


# A comparison of a filter list (`["customer", "=", "Acme"]`, Frappe's and Odoo's domains).
_FILTER_OPS: Final = frozenset(
    {"=", "==", "!=", "<", ">", "<=", ">=", "like", "not like", "in", "not in", "is", "ilike"}
)


def filter_terms(text: str) -> list[tuple[str, JSON]] | None:
    """The (field, value) comparisons of a filter written as JSON text (`[["customer", "=", "Acme"], ...]`: Frappe's
    filters, Odoo's domains), or None for any other text."""
    if not text.startswith("[[") or not text.endswith("]]"):
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    triples = [t for t in parsed if isinstance(t, list) and len(t) in (3, 4)] if isinstance(parsed, list) else []
    terms = [(str(t[-3]), t[-1]) for t in triples if isinstance(t[-3], str) and str(t[-2]).lower() in _FILTER_OPS]
    return terms if terms and len(terms) == len(parsed) else None


def is_statement(text: str) -> bool:
    """A statement of a query language (SQL): its unquoted right-hand sides are columns, not values."""
    return bool(_STATEMENT_RE.search(text))


def _schema_fixed(value: JSON, schema: Mapping[str, Any] | None) -> str | None:
    if schema is None:
        return None
    if "const" in schema:
        return "the tool's schema fixes this value (const)"
    if "default" in schema and schema["default"] == value:
        return "the tool's default value"
    return None


def _schema_hints(
    score: float, reasons: list[str], value: str, schema: Mapping[str, Any] | None
) -> tuple[float, list[str]]:
    if schema is None:
        return score, reasons
    if _in_enum(value, schema):
        count = len(schema["enum"])
        return min(score, _ENUM_CAP), [*reasons, f"one of the tool's {count} allowed values (enum): a setting"]
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in _SUBJECT_FORMATS:
        return score + 0.25, [*reasons, f"the tool's schema says it is a {fmt}"]
    # "in E.164 format", "in 24-hour format (HH:MM)": how the value is written, not a choice of format
    description = _SHAPE_PHRASE_RE.sub(" ", str(schema.get("description") or ""))
    if _SETTING_WORDS.search(description) and not _SUBJECT_WORDS.search(description):
        return score - 0.15, [*reasons, f"the tool describes it as a setting ({description[:60]!r})"]
    if _SUBJECT_WORDS.search(description):
        return score + 0.2, [*reasons, f"the tool describes it as {description[:60]!r}"]
    return score, reasons


# Markdown headings only (`## Wins\n\n## Blockers\n`): the sections a note starts with, not words of the user's
_SKELETON_RE: Final = re.compile(r"\s*(?:#{1,6}[ \t]+[^\n]*\S[ \t]*(?:\n\s*|$))+")


_SORT_RE: Final = re.compile(r"^[\w.]+\s+(?i:asc|desc)(?:\s*,\s*[\w.]+\s+(?i:asc|desc))*$")
_LEVELS: Final = frozenset(
    {"low", "normal", "medium", "high", "urgent", "critical", "highest", "lowest", "minor", "major", "blocker"}
)
_TYPE_WORDS: Final = 3


def is_contact(text: str) -> bool:
    """An email address or a phone number: whom a call reaches, however often it is sent."""
    return bool(_EMAIL_RE.match(text) or _PHONE_RE.match(text))


def _shape(text: str) -> tuple[float, list[str]]:
    """A first score from what the value looks like."""
    if is_query(text) or filter_terms(text):
        return 0.4, ["query syntax (`is:unresolved`, SQL, JQL), usually fixed by the task"]
    if _EMAIL_RE.match(text):
        return 0.8, ["an email address"]
    if _PHONE_RE.match(text):
        return 0.7, ["a phone number (E.164): whom the call reaches"]
    if _URL_RE.match(text) or (text.startswith("/") and " " not in text):
        return 0.75, ["a path or URL"]
    if _RELATIVE_RE.match(text):
        return 0.2, ["a time relative to the run (`now-1h`, `in 2 days`): the same words on every run"]
    if _API_VERSION_RE.match(text):
        return 0.2, ["an API version (`apps/v1`): which schema the call speaks"]
    if _SKELETON_RE.fullmatch(text):
        return 0.25, ["a document's skeleton of headings, the same on every run"]
    if _SORT_RE.match(text):
        return 0.2, ["a sort order (`due_date asc`): how the task lists, not what"]
    if text.lower() in _LEVELS:
        return 0.3, [f"{text!r} is a step on a scale (a priority, a severity): a setting of the task"]
    if " " in text:
        return (0.8, ["free text"]) if len(text.split()) >= 2 else (0.5, ["a short text"])
    if text.lower() in _KEYWORDS:
        return 0.1, [f"{text!r} is a word servers read as a keyword"]
    if _PATTERN_RE.search(text):
        return 0.4, ["a glob or pattern, usually fixed by the task"]
    if _UPPER_RE.match(text) and len(text) <= 12:
        return 0.15, ["an upper-case constant"]
    if _WORD_RE.match(text):
        return 0.5, ["a single lower-case word: a subject or a setting"]
    if _TIME_RE.match(text):
        return 0.65, ["a date or a time"]
    if _FILE_RE.match(text):
        return 0.65, ["a file name"]
    if text[:1].isupper() and (text.isalpha() or _SLUG_RE.match(text)):
        return 0.65, ["a name"]
    if _SLUG_RE.match(text) or any(c.isdigit() for c in text):
        return 0.55, ["an identifier or slug"]
    return 0.5, ["a value of its own"]


def filed_under(uses: Sequence[Unexplained]) -> bool:
    """One word calls that may write file their things under as a tag or a label (`tags[0].name: "to-read"`,
    `labels.env`, `tag`; not one of several tags listed), given to each call of a loop or to a call that tags
    (`add-tag`): the user's, as "tagged to-read" says. On one alert or message, it is as often the agent's style."""
    steps = {lit.step for lit in uses}
    tagging = any(_TAG_TOOL_RE.search(lit.tool.rpartition("__")[2]) for lit in uses)
    return (len(steps) > 1 or tagging) and all(map(_tag, uses))


def _tag(literal: Unexplained) -> bool:
    tagged = any(isinstance(key, str) and _TAG_KEY_RE.fullmatch(key) for key in literal.keys)
    verb = literal.tool.rpartition("__")[2].split("_")[0].lower()  # (`list_checks(tag=…)` reads by it: a filter)
    writes = not literal.reads and verb not in _READ_VERBS
    value = literal.value
    word = isinstance(value, str) and value.split() == [value] and not is_machine_id(value)  # (a label's id: no word)
    return tagged and writes and literal.of < 2 and word


_TAG_TOOL_RE: Final = re.compile(r"(?i)tag|label")
_TAG_KEY_RE: Final = re.compile(r"(?i)tags?|labels?")
_READ_VERBS: Final = frozenset({"list", "get", "search", "find", "query", "fetch", "read", "describe", "show"})


def is_remark(value: str) -> bool:
    """A sentence a person wrote (`PSU swap in rack B4`, `Please retest before closing.`), not a command line."""
    return bool(_REMARK_RE.match(value)) and (len(value.split()) >= _REMARK_WORDS or value.rstrip()[-1:] in ".!?")


_REMARK_RE: Final = re.compile(r"^[A-Z][^{}<>|$`]*$")
_REMARK_WORDS: Final = 4
