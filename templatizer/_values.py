"""Small pure helpers over JSON values: paths, interning, strength, key names and exact equality.

Everything here is per value or per key and runs in time linear in what it is given, so the
templatizer as a whole stays linear in the size of a recording.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Final, TypeAlias

from toolreel.core.model import JSON

Key: TypeAlias = str | int
Keys: TypeAlias = tuple[Key, ...]

_IDENTIFIER_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL_RE: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SPLIT_RE: Final = re.compile(r"[^a-z0-9]+")
# Single-digit integers are counts, indexes, page numbers and flags everywhere: two of them being
# equal says nothing. Ids minted by servers have more digits (or are strings).
SMALL_INT: Final = 10
# A substring shorter than this matches by accident too easily ("id", "src", "tmp").
MIN_SUBSTRING: Final = 4
# ... except a decimal number ("5.7"): a computed amount copied into a sentence is rarely a coincidence.
MIN_DECIMAL: Final = 3
_DECIMAL_RE: Final = re.compile(r"-?[0-9]+\.[0-9]+")
# ... and a two- or three-digit number ("33 degrees"), found only to back or be backed by another value
# of the same output in the same string: alone it is chance.
MIN_PIECE: Final = 2


# --------------------------------------------------------------------------- paths


def json_path(keys: Keys) -> str:
    """`$.a.b[0]["odd key"]` — the same form `core.secrets` uses for redacted paths."""
    out = ["$"]
    for key in keys:
        if isinstance(key, int):
            out.append(f"[{key}]")
        elif _IDENTIFIER_RE.fullmatch(key):
            out.append(f".{key}")
        else:
            out.append(f"[{json.dumps(key, ensure_ascii=False)}]")
    return "".join(out)


def free_name(base: str, taken: set[str]) -> str:
    """`base`, or `base_2`, `base_3`, ... : the first name not in `taken` (a step the templatizer adds)."""
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    return name


def get_at(value: JSON, keys: Keys) -> tuple[bool, JSON]:
    """(True, the value at `keys`) or (False, None) when the path does not exist."""
    for key in keys:
        if isinstance(key, int):
            if not isinstance(value, list) or not 0 <= key < len(value):
                return False, None
        elif not isinstance(value, Mapping) or key not in value:
            return False, None
        value = value[key]
    return True, value


def put_at(value: JSON, keys: Keys, new: JSON) -> JSON:
    """A copy of `value` with `new` at `keys` (the path exists); the rest shared, nothing mutated."""
    if not keys:
        return new
    head, rest = keys[0], keys[1:]
    if isinstance(value, dict) and isinstance(head, str):
        return {**value, head: put_at(value[head], rest, new)}
    if isinstance(value, list) and isinstance(head, int):
        return [put_at(v, rest, new) if i == head else v for i, v in enumerate(value)]
    return value


def last_key(keys: Keys) -> str | None:
    """The nearest object key on the path (`items[0]` -> `items`)."""
    return next((key for key in reversed(keys) if isinstance(key, str)), None)


def walk(value: JSON, keys: Keys = ()) -> Iterator[tuple[Keys, JSON]]:
    """Every node of `value` (containers before their children) with its path."""
    stack: list[tuple[Keys, JSON]] = [(keys, value)]
    while stack:
        where, node = stack.pop()
        yield where, node
        if isinstance(node, Mapping):
            stack.extend(((*where, k), v) for k, v in reversed(list(node.items())) if isinstance(k, str))
        elif isinstance(node, list):
            stack.extend(((*where, i), v) for i, v in reversed(list(enumerate(node))))


# --------------------------------------------------------------------------- equality and interning


def same(a: JSON, b: JSON) -> bool:
    """JSON equality that keeps types apart: 1, 1.0 and True are three different values."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


class Interner:
    """Gives every distinct JSON value (by structure and type) a small int id.

    A container's identity is built from its children's ids, so interning a whole tree is
    linear in its size; equal subtrees anywhere get the same id.
    """

    def __init__(self) -> None:
        self._ids: dict[object, int] = {}
        self._hidden_texts: list[tuple[Keys, JSON, int]] | None = None

    @property
    def size(self) -> int:
        """Ids given so far: they are 0 .. size - 1."""
        return len(self._ids)

    def intern_tree(self, value: JSON) -> dict[Keys, int]:
        """The id of every node of `value`, by path."""
        return {keys: node_id for keys, _, node_id in self.nodes(value)}

    def nodes(
        self,
        value: JSON,
        skip: Callable[[str], bool] | None = None,
        hidden_texts: list[tuple[Keys, JSON, int]] | None = None,
    ) -> list[tuple[Keys, JSON, int]]:
        """(path, node, id) for every node; with `skip`, nodes under an object key it accepts are left
        out of the list (they still count in their parents' ids), their texts listed in `hidden_texts`."""
        out: list[tuple[Keys, JSON, int]] = []
        self._hidden_texts = hidden_texts
        self._intern(value, (), out, skip, False)
        return out

    def _intern(
        self,
        value: JSON,
        keys: Keys,
        out: list[tuple[Keys, JSON, int]],
        skip: Callable[[str], bool] | None,
        hidden: bool,
    ) -> int:
        key: object
        if isinstance(value, str):
            key = value  # the commonest node: its own key (no other key is a str)
        elif isinstance(value, dict):
            flat: list[object] = ["object"]
            for k in sorted(value):
                flat += (k, self._intern(value[k], (*keys, k), out, skip, hidden or (skip is not None and skip(k))))
            key = tuple(flat)
        elif isinstance(value, list):
            key = ("array", *(self._intern(v, (*keys, i), out, skip, hidden) for i, v in enumerate(value)))
        else:
            key = (type(value).__name__, value)  # typed: 1, 1.0 and True are equal as dict keys
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self._ids)
        if not hidden:
            out.append((keys, value, found))
        elif self._hidden_texts is not None and isinstance(value, str):
            self._hidden_texts.append((keys, value, found))
        return found


# --------------------------------------------------------------------------- strength


def is_trivial(value: JSON) -> bool:
    """Values whose equality is never evidence: null, booleans, "", small integers, empty containers."""
    if value is None or isinstance(value, bool) or value in ("", [], {}):
        return True
    if isinstance(value, int | float):
        return not math.isfinite(value) or (float(value).is_integer() and abs(value) < SMALL_INT)
    return False


def strength(value: JSON) -> float:
    """How unlikely it is that a value appears twice by chance, in 0..1."""
    if is_trivial(value):
        return 0.0
    if isinstance(value, str):
        return text_strength(value)
    if isinstance(value, int):
        return number_strength(abs(value))
    if isinstance(value, float):
        return number_strength(abs(value)) if value.is_integer() else (0.8 if len(repr(value)) >= 5 else 0.4)
    leaves = [strength(v) for _, v in walk(value) if not isinstance(v, Mapping | list)]
    if not leaves:
        return 0.0
    return min(1.0, max(leaves) + 0.15 * (sum(1 for s in leaves if s > 0) - 1))


def value_strength(value: JSON) -> float:
    """`strength`, with a number written as text ("101", a vmid) as rare as the number."""
    numeric = numeric_strength(value) if isinstance(value, str) else None
    return numeric if numeric is not None else strength(value)


def number_strength(n: float) -> float:
    if n < 100:
        return 0.4
    if n < 1000:
        return 0.55
    if n < 100000:
        return 0.8
    return 0.95


@lru_cache(maxsize=8192)
def text_strength(text: str) -> float:
    """Long, or mixing digits with letters or separators: an id, a path, a sentence. Short words: weak."""
    size = len(text)
    digits = any(c.isdigit() for c in text)
    letters = any(c.isalpha() for c in text)
    other = any(not c.isalnum() for c in text)
    if size >= 16:
        return 1.0
    if size >= 8:
        return 0.9 if (digits and (letters or other)) or (other and letters) else 0.7
    if size >= 4:
        if digits and letters:
            return 0.75
        return 0.55 if digits or other else 0.45
    return 0.45 if digits and letters else 0.2


# --------------------------------------------------------------------------- key names


@lru_cache(maxsize=4096)
def key_tokens(key: str) -> tuple[str, ...]:
    """`userId`, `user-id`, `USER_ID` -> ("user", "id")."""
    return tuple(t for t in _SPLIT_RE.split(_CAMEL_RE.sub("_", key).lower()) if t)


def same_field(key: str | None, produced: str | None) -> bool:
    """The same key of two words or more (`first_name`, `firstName`): one field passed on, not a chance match."""
    words = key_tokens(key or "")
    return len(words) >= 2 and words == key_tokens(produced or "")


def outer_item(keys: Keys) -> Keys | None:
    """The path of the outermost list element holding `keys` (`data[0]` of `data[0].values.name[0].first_name`):
    the element a call acts on, whatever lists it holds inside."""
    first = next((i for i, key in enumerate(keys) if isinstance(key, int)), None)
    return keys[: first + 1] if first is not None else None


def snake(key: str) -> str:
    name = "_".join(key_tokens(key))
    if not name:
        return "value"
    return name if _IDENTIFIER_RE.fullmatch(name) else f"v_{name}"


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and (len(word) > 3 or word == "ids") else word


def key_similarity(input_key: str | None, output_key: str | None, producer_tool: str) -> float:
    """1.0 same name; 0.9 `user_id` vs `id` of a step about users; 0.7 one name inside the other; else overlap."""
    if input_key is None or output_key is None:
        return 0.0
    a = _unfiltered(tuple(_singular(t) for t in key_tokens(input_key)))
    b = tuple(_singular(t) for t in key_tokens(output_key))
    if not a or not b:
        return 0.0
    if a == b:
        return 1.0
    if b == ("id",) and len(a) == 1 and a[0] in entity_words(producer_tool):
        return 0.9  # `category: 23`, `categories:in: "23"` <- the `id` of a category get_categories listed
    if b == ("id",) and len(a) >= 2 and a[-1] == "by" and entity_words(producer_tool) & _PEOPLE:
        return 0.9  # `requestedBy: 9`, `created_by` <- the `id` of a person list_users listed
    a, b = _split_id(a, b), _split_id(b, a)
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    if long_[-len(short) :] == short:
        entity = {_singular(t) for t in long_[: -len(short)]}
        plural = {f"{t}s" for t in entity}  # (`vms`: too short for _singular to read as a plural)
        tool = entity_words(producer_tool)
        return 0.9 if entity & tool or plural & tool else 0.7
    overlap = len(set(a) & set(b)) / max(len(set(a)), len(set(b)))
    return 0.5 * overlap


@lru_cache(maxsize=1024)
def entity_words(name: str) -> frozenset[str]:
    """The entity words of a tool's or a key's name (`get_categories` -> category): what it lists."""
    return frozenset(_singular(t) for t in key_tokens(name))


# A record's own fields one level in: JSON:API's `attributes`, Airtable's and Grist's `fields`, Notion's `properties`
ENVELOPES: Final = ("attributes", "fields", "properties")


def record_paths(record: Mapping[str, JSON]) -> list[Keys]:
    """The paths of a record's fields: its own keys, and those inside its envelope (`("fields", "Amount")`)."""
    own: list[Keys] = [(key,) for key in record]
    return own + [(env, key) for env in ENVELOPES if isinstance(record.get(env), Mapping) for key in record[env]]


def producer_words(tool: str, arguments: JSON) -> str:
    """The tool's name and the kinds of thing its arguments ask for: a generic `get_objects` called with
    `object_type: "dcim.site"` lists sites, so a later `site_id` is the `id` of one of them."""
    subjects = [
        value.lower()
        for keys, value in walk(arguments)
        if isinstance(value, str)
        and (
            _SUBJECT_RE.fullmatch(value) is not None
            or (bool(keys) and isinstance(keys[-1], str) and snake(keys[-1]) in _SUBJECT_KEYS and value.isidentifier())
        )
    ]
    return " ".join([tool, *subjects])


_SUBJECT_RE: Final = re.compile(r"[a-z][a-z0-9_]*(?:[./][a-z][a-z0-9_]*)+")  # `dcim.site`, `sale.order`
_SUBJECT_KEYS: Final = frozenset(
    {"object_type", "resource", "resource_type", "entity", "entity_type", "doctype", "collection", "model", "table"}
)
_PEOPLE: Final = frozenset({"user", "member", "account", "person", "people", "staff", "employee", "agent", "contact"})


def _unfiltered(tokens: tuple[str, ...]) -> tuple[str, ...]:
    """A filter's key without its operator (`categories:in`, `name__icontains`, `price[gte]`): the field it filters."""
    return tokens[:-1] if len(tokens) > 1 and tokens[-1] in _OPERATORS else tokens


_OPERATORS: Final = frozenset(
    {"in", "nin", "like", "ilike", "eq", "ne", "neq", "gt", "gte", "lt", "lte", "contains", "icontains", "any"}
)


def _split_id(tokens: tuple[str, ...], other: tuple[str, ...]) -> tuple[str, ...]:
    """`vmid` beside an `id`: one word run together (`vmid`, `userid`) read as `vm` `id`."""
    if other == ("id",) and len(tokens) == 1 and len(tokens[0]) >= _RUN_TOGETHER_MIN and tokens[0].endswith("id"):
        return (tokens[0][:-2], "id")
    return tokens


_RUN_TOGETHER_MIN: Final = 4


_VOLATILE_RE: Final = re.compile(
    # (a trace's, a span's or a transaction's id names what a tracing or payments tool lists: an entity's id)
    r"^_meta$|^(?:request|correlation)_?id$|^etag$"
    r"|(?:^|_)(?:timestamp|time|datetime|date|created|updated|modified|expires|expiry|deadline|now)(?:_at|_on)?$"
    r"|_at$"
)
_CURSOR_RE: Final = re.compile(
    # (`nextPageCursor`: Squarespace's, beside its `nextPageUrl`)
    r"^(?:next_|prev_|previous_)?(?:page_)?(?:cursor|page_token|continuation_token|continuation|marker|start_after)$"
    r"|^(?:next|after|before|next_page|page_cursor|end_cursor|start_cursor)$"
)


@lru_cache(maxsize=4096)
def is_volatile_key(key: str) -> bool:
    """Keys whose values change on every call (timestamps, request ids, `_meta`): never producers."""
    return key == "_meta" or _VOLATILE_RE.search("_".join(key_tokens(key))) is not None


@lru_cache(maxsize=4096)
def is_cursor_key(key: str | None) -> bool:
    """Pagination cursors: they link only to cursors (a cursor equal to anything else is chance)."""
    return key is not None and _CURSOR_RE.match("_".join(key_tokens(key))) is not None


def type_name(value: JSON) -> str | None:
    """The JSON Schema type of a recorded value."""
    kinds: Sequence[tuple[type | tuple[type, ...], str]] = (
        (bool, "boolean"),
        (int, "integer"),
        (float, "number"),
        (str, "string"),
        (list, "array"),
        (Mapping, "object"),
    )
    return next((name for kind, name in kinds if isinstance(value, kind)), None)


def items_schema(value: JSON) -> dict[str, JSON] | None:
    """The element schema of a recorded list: the one type its elements share (`{}` when they mix or it is empty).

    Clients that check tool schemas strictly refuse an array without `items`."""
    if not isinstance(value, list):
        return None
    kinds = {type_name(item) for item in value}
    if len(kinds) != 1 or None in kinds:
        return {}
    kind = kinds.pop()
    return {"type": "number"} if kind == "integer" and any(isinstance(v, float) for v in value) else {"type": kind}


def is_decimal(text: str) -> bool:
    """`5.7`, `-0.25`: a number with a fractional part, as JSON writes it."""
    return len(text) >= MIN_DECIMAL and _DECIMAL_RE.fullmatch(text) is not None


def is_short_piece(text: str) -> bool:
    """A piece shorter than MIN_SUBSTRING still looked for inside strings: a decimal, or 10..999."""
    return is_decimal(text) or (MIN_PIECE <= len(text) < MIN_SUBSTRING and text.isdigit() and text[0] != "0")


def numeric_strength(text: str) -> float | None:
    """How unlikely a number written as text is to recur by chance; None for text that is not a number."""
    if text.lstrip("-").isdigit():
        return strength(int(text))
    if is_decimal(text):
        return 0.9 if len(text.lstrip("-").rstrip("0")) >= MIN_DECIMAL else 0.55  # 5.7 yes; 2.0 hardly
    if _VERSION_RE.fullmatch(text):
        return 0.9  # `0.28.1`: three numbers in a row recur by chance no more than a decimal does
    return None


_VERSION_RE: Final = re.compile(r"[0-9]+(?:\.[0-9]+){2,}")


def scalar_text(value: JSON) -> str | None:
    """The text `{{@x}}` renders a number or boolean as (`4521903`, `5.7`, `true`); None for anything else."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return number_text(value)


def number_text(value: JSON) -> str | None:
    """The text a number interpolates as (`{{@x}}`), or None for non-numbers."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return json.dumps(value)
