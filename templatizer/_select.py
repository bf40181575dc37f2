"""Which elements of a list the calls of a loop handled: a `select_*` step keeping them.

One top-level value the handled elements share and no other element has is `_evident`'s: a JSONPath filter, or a
select on that one condition where the value is the user's choice.

When the handled elements of a list share no single field value that sets them apart (the machines of
one region that are started, the web services whose names start with `checkout-`), two conditions
together may: each holds for every handled element, and every other element fails one of them. The
loop then walks the output of a `select_*` code step that keeps the elements meeting every condition.
Its condition values are what the user chose (a region, a name prefix): each is proposed as an input,
ticked, unless it is a state of the task (`state: "started"`, `type: "web_service"`), which stays
proposed unticked. A condition holding for every element, or setting them all apart alone, is no
evidence here: `evident_filter` handles the latter.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final, Literal

from toolreel.core.model import JSON
from toolreel.templatizer._evidence import is_machine_id, names_scope
from toolreel.templatizer._inputs import Names
from toolreel.templatizer._pieces import literal
from toolreel.templatizer._result import LikelyInput
from toolreel.templatizer._values import json_path, same, snake, walk

__all__ = [
    "HEADING_FIELD",
    "KEY_RE",
    "SELECT_CODE",
    "Condition",
    "Select",
    "conditions_of",
    "leaves",
    "select_inputs",
    "selected",
    "separating",
    "value_at",
]

SELECT_CODE: Final = r"""export default function(input) {
  const at = (item, key) =>
    key === "" ? item : key.split(".").reduce((v, k) => (v === null || v === undefined ? v : v[k]), item);
  const holds = (item, c) => {
    const v = at(item, c.key);
    if (c.op === "starts with") return typeof v === "string" && v.startsWith(c.value);
    if (c.op === "has") return Array.isArray(v) && v.includes(c.value);
    if (c.op === "is set") return v !== null && v !== undefined && v !== "";
    if (c.op === "equals, case aside") return typeof v === "string" && v.toLowerCase() === c.value.toLowerCase();
    if (c.op === "ends with") {
      if (typeof v !== "string") return false;
      const low = v.toLowerCase(), end = c.value.toLowerCase(), at = low.length - end.length;
      return low.endsWith(end) && (at === 0 || "@.-_/".includes(low[at - 1]));
    }
    if (c.op === "at domain") {
      const domain = typeof v === "string" && v.includes("@") ? v.slice(v.lastIndexOf("@") + 1) : "";
      return domain !== "" && domain.toLowerCase() === c.value.toLowerCase();
    }
    if (c.op === "has words") {
      const words = c.value.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      return typeof v === "string" && new RegExp("(?<![A-Za-z0-9_])" + words + "(?![A-Za-z0-9_])", "i").test(v);
    }
    if (c.op === "at most") return typeof v === "number" && v <= c.value;  // a rating at or under the user's limit
    if (c.op === "at least") return typeof v === "number" && v >= c.value;
    if (c.op === "among") return Array.isArray(c.value) && c.value.includes(v);  // what another output lists
    return c.op === "in" ? c.value.includes(v) : v === c.value;
  };
  return input.items.filter((item) => item !== null && input.where.every((c) => holds(item, c)));
}
"""

KEY_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
HEADING_FIELD: Final = "section"  # the field of a checklist view's rows naming the heading above the item
_SEPARATORS: Final = "-_./:"
_STATE_WORD_RE: Final = re.compile(r"^[A-Za-z][A-Za-z_-]{1,23}$")  # `started`, `OutOfSync`
# A flag's value, after the emoji a text listing may put before it (`✅ enabled`)
_FLAG_WORD_RE: Final = re.compile(r"^\W{0,3}(?:yes|no|true|false|on|off|enabled|disabled|active|inactive)$", re.I)
# A field naming a state or a category of the element: its value is the task's own condition
# ("stop the started machines", "close the wishlist items"), unlike a region or a name prefix the user named
# for this run.
_STATE_KEY_RE: Final = re.compile(
    r"(?:^|_)(state|status|phase|type|kind|mode|priority|severity|urgency|level|conclusion|health|lifecycle)$", re.I
)
_LONGEST: Final = 64  # longer values are texts, not categories


@dataclass(frozen=True, slots=True)
class Condition:
    key: str  # "" for the element itself (a list of names)
    op: Literal[
        "==",
        "starts with",
        "ends with",
        "at domain",
        "in",
        "has words",
        "has",
        "is set",
        "equals, case aside",
        "among",
        "at most",
        "at least",
    ]
    value: (
        str | int | float | bool | tuple[JSON, ...]
    )  # a tuple for `in` (the states handled elements were in), `among`
    among: str | None = None  # `among`: the ref to the values another output lists (`@devices_1.devices[*].id`)

    def holds(self, element: JSON) -> bool:
        got = value_at(element, self.key)
        if self.op == "starts with":
            return isinstance(got, str) and isinstance(self.value, str) and got.startswith(self.value)
        if self.op == "in":
            return isinstance(got, str) and isinstance(self.value, tuple) and got in self.value
        if self.op == "among":
            return isinstance(self.value, tuple) and any(same(got, v) and type(got) is type(v) for v in self.value)
        if self.op == "has words":
            return isinstance(got, str) and isinstance(self.value, str) and _has_words(got, self.value)
        if self.op == "has":  # a tag among the element's tags
            return isinstance(got, list) and self.value in got
        if self.op == "ends with":
            return isinstance(got, str) and isinstance(self.value, str) and _ends_with(got, self.value)
        if self.op == "at domain":
            return isinstance(got, str) and isinstance(self.value, str) and _domain(got) == self.value.lower()
        if self.op == "is set":
            return got is not None and got != ""
        if self.op in ("at most", "at least"):
            if not _number(got) or not _number(self.value):
                return False
            assert isinstance(got, int | float) and isinstance(self.value, int | float)
            return got <= self.value if self.op == "at most" else got >= self.value
        if self.op == "equals, case aside":
            return isinstance(got, str) and isinstance(self.value, str) and got.lower() == self.value.lower()
        return same(got, self.value) and type(got) is type(self.value)

    @property
    def state(self) -> bool:
        """A condition of the task (a state or category), not a choice the user made for this run."""
        if isinstance(self.value, bool) or self.op in ("in", "among") or self.key == HEADING_FIELD or self.value == 0:
            return True  # (the heading a checklist item sits under, `Action items`: where the task looks; none left)
        if self.op in ("has words", "has"):  # `blocked` in a message: the task's word; `Offer letter`, a choice
            if self.op == "has" and names_scope(self.key.rsplit(".", 1)[-1]):
                return False  # the label or tag the user named (`labels` has `spam`)
            return isinstance(self.value, str) and self.value.isalpha() and self.value.islower()
        if self.op == "==" and isinstance(self.value, str) and _FLAG_WORD_RE.match(self.value):
            return True  # `stale: yes`, `production: ✅ enabled`: a flag's state, whatever the field's name
        return (
            self.op == "=="
            and isinstance(self.value, str)
            and bool(_STATE_WORD_RE.match(self.value))
            and _state_key(self.key)
        )

    @property
    def given(self) -> JSON:
        """The value as the select step is given it (the states of `in` as a list)."""
        return list(self.value) if isinstance(self.value, tuple) else self.value

    def valued(self, value: JSON) -> Condition:
        """This condition with the value an input has in another recording."""
        return replace(self, value=value) if isinstance(value, str | int | float | bool) else self

    def listing(self, listed: JSON) -> Condition:
        """This `among` condition with what its list holds in another recording."""
        return replace(self, value=tuple(listed) if isinstance(listed, list) else ())

    def describe(self) -> str:
        if self.among is not None:
            return f"{self.key} is among {self.among}"
        return f"{self.key or 'the element'} {self.op} {self.given!r}"


@dataclass(frozen=True, slots=True)
class Select:
    step: str  # the code step added
    base: str  # the list it selects from
    where: tuple[Condition, ...]
    refs: tuple[str | None, ...] = ()  # per condition, the named input that gives its value

    @property
    def input(self) -> JSON:
        """The code step's input: the list, and each condition with its value (or the input giving it)."""
        where: list[JSON] = []
        for i, condition in enumerate(self.where):
            ref = self.refs[i] if i < len(self.refs) else None
            value = f"@input.{ref}" if ref is not None else condition.among or literal(condition.given)
            where.append({"key": condition.key, "op": condition.op, "value": value})
        return {"items": self.base, "where": where}


def selected(elements: JSON, where: Sequence[Condition]) -> JSON:
    """What the select step returns for `elements` (the code's twin, to check other recordings)."""
    if not isinstance(elements, list):
        return None
    return [e for e in elements if e is not None and all(c.holds(e) for c in where)]


def separating(
    elements: Sequence[JSON], at: Sequence[int], outputs: Mapping[str, JSON], own: str
) -> tuple[Condition, ...] | None:
    """The conditions that keep exactly the handled elements `at`: a list another step read (not `own`, the step
    the elements come from) that their field values are in and the others' not says most (the alerts of the
    group's devices: `device_id` among `@get_devices_by_group_1.devices[*].device_id`); else two conditions
    (`conditions_of`); else such a list that holds some others too, which one condition of the handled elements'
    own sets apart (the enabled indexers among those the status list names). One such list only."""
    handled = [elements[i] for i in at]
    others = [e for i, e in enumerate(elements) if i not in set(at)]
    found: list[tuple[Condition, list[JSON]]] = []  # each list holding the handled ones, and the others it holds
    dicts = others and all(isinstance(e, dict) for e in elements)
    for key, value in handled[0].items() if dicts and isinstance(handled[0], dict) else ():
        if not KEY_RE.fullmatch(key) or not isinstance(value, str | int) or isinstance(value, bool):
            continue
        kept = [h.get(key) for h in handled if isinstance(h, dict)]
        for ref, listed in _listed(outputs, own, key):
            if all(k in listed for k in kept):
                rest = [o for o in others if isinstance(o, dict) and o.get(key) in listed]
                found.append((Condition(key, "among", tuple(listed), among=ref), rest))
    alone = [among for among, rest in found if not rest]
    if len(alone) == 1:
        return (alone[0],)
    if (two := conditions_of(elements, at)) is not None or len(found) != 1 or len(found[0][1]) == len(others):
        return two
    among, rest = found[0]
    apart = (
        [c for c in _candidates(handled) if c.op == "==" and not any(c.holds(o) for o in rest)] if len(at) > 1 else []
    )
    return (among, max(apart, key=_weight)) if apart else None


def _listed(outputs: Mapping[str, JSON], own: str, key: str) -> Iterator[tuple[str, list[JSON]]]:
    """Each list of another step's output, by the field named as `key` (or its `id`, where `key` names it; or,
    for an `id`, the field that names the entity `own` lists: `indexerId` beside `get_indexers`)."""
    names = {snake(key)}
    if snake(key) == "id":
        names |= {f"{word[:-1]}_id" for word in own.lower().split("_") if len(word) > 3 and word.endswith("s")}
    for step, output in outputs.items():
        if step == own:
            continue
        for keys, node in walk(output):
            if not isinstance(node, list) or not node or not all(isinstance(e, dict) for e in node):
                continue
            if any(isinstance(k, int) for k in keys):
                continue
            for field in {f for f in node[0] if snake(f) in names}:
                values = [e.get(field) for e in node if isinstance(e, dict)]
                if all(isinstance(v, str | int) and not isinstance(v, bool) for v in values):
                    yield f"@{step}{json_path(keys)[1:]}[*].{field}", values


def conditions_of(elements: Sequence[JSON], at: Sequence[int]) -> tuple[Condition, ...] | None:
    """Two conditions that keep exactly the elements `at` (or one name prefix); None when none do."""
    handled = [elements[i] for i in at]
    others = [e for i, e in enumerate(elements) if i not in set(at)]
    if len(handled) < 2 or not others:
        return None
    candidates = [c for c in _candidates(handled) if not all(c.holds(o) for o in others)]
    # One condition alone: a name prefix, or a field inside the element (`status.sync.status`; a top-level field
    # is `_loops`' JSONPath filter already).
    alone = [c for c in candidates if not any(c.holds(o) for o in others)]
    # (a bound on a number comes last: any other field that sets them apart says more than an order does)
    if alone:
        return (_rounded(max(alone, key=_alone_order), others),)
    # a word of a text beside another condition is too likely chance; a tag beside a state may pair (`prod`, `active`);
    # a bound on a number beside another condition, too
    fields = [c for c in candidates if c.op != "has words" and c.op not in _BOUNDS]
    if any(_state_key(c.key) and c.op in ("==", "in") for c in fields):
        # (`status: errored` says what `errors` being there only suggests: the state field is the category)
        fields = [c for c in fields if c.op != "is set"]
    pairs = [
        (a, b)
        for a, b in itertools.combinations(fields, 2)
        if a.key != b.key and not any(a.holds(o) and b.holds(o) for o in others)
    ]
    if not pairs:
        return None
    # The pair that says most: a name prefix or a value the user chose before a second state.
    return max(pairs, key=lambda pair: sum(_weight(c) for c in pair))


_BOUNDS: Final = ("at most", "at least")
# Numbers that order or count the elements rather than rate them: a bound on them is where the list was cut.
_ORDER_KEY_RE: Final = re.compile(r"(?i)(?:^|_)(?:id|number|num|no|seq|index|position|order|rank|count|total)$|Id$")


def _number(value: JSON) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _bounds(key: str, values: Sequence[JSON]) -> list[Condition]:
    """The handled elements' number at `key` as a bound (`rating` at most 2: the reviews rated at or under the
    user's limit); `conditions_of` keeps one only where no other element is within it."""
    if not all(_number(v) for v in values) or _ORDER_KEY_RE.search(key.rsplit(".", 1)[-1]):
        return []
    numbers = [v for v in values if isinstance(v, int | float)]
    return [Condition(key, "at most", max(numbers)), Condition(key, "at least", min(numbers))]


_ROUND_STEPS: Final = (*(10**k for k in range(9, 0, -1)), 5)


def _rounded(c: Condition, others: Sequence[JSON]) -> Condition:
    """A bound moved to the roundest number between the handled elements and the nearest other one, which keeps the
    same elements (at least 11 minutes beside a 3: the user's 10; 49 beside a 9: the first above the 9, 10)."""
    theirs = [t for o in others if _number(t := value_at(o, c.key))]
    if c.op not in _BOUNDS or type(c.value) is not int or not theirs:
        return c
    for step in _ROUND_STEPS:
        if c.op == "at least" and (m := (max(theirs) // step + 1) * step) <= c.value and m != c.value:
            return replace(c, value=m)
        if c.op == "at most" and (m := -(-c.value // step) * step) < min(theirs) and m != c.value:
            return replace(c, value=m)
    return c


def _alone_order(c: Condition) -> tuple[bool, bool, bool, int, int]:
    return (c.op not in _BOUNDS, c.op == "starts with", c.op != "has words", -c.key.count("."), _size(c))


def _size(condition: Condition) -> int:
    """The longer phrase says more; among fields, the longer value."""
    return len(str(condition.value).split()) if condition.op == "has words" else len(str(condition.value))


def _weight(condition: Condition) -> float:
    if condition.op == "is set":
        return _SET_WEIGHT  # (`date_paid` set: the paid ones, whatever their dates)
    if condition.op == "starts with" and isinstance(condition.value, str) and _DATE_PREFIX_RE.match(condition.value):
        return _DAY_WEIGHT  # dates that share a month or a day: when the recording was made, not what was asked
    lead = condition.op in ("starts with", "ends with", "at domain", "equals, case aside")
    return (1.0 if lead else 0.6) - (0.2 if condition.state else 0.0)


_SET_WEIGHT: Final = 0.8
_DAY_WEIGHT: Final = 0.3
_DATE_PREFIX_RE: Final = re.compile(r"^\d{4}-\d\d(?:-\d\d)?")


def _candidates(handled: Sequence[JSON]) -> list[Condition]:
    """The conditions every handled element meets: a shared field value, or a shared prefix of a name."""
    first = handled[0]
    if isinstance(first, str):
        prefix = _prefix([h for h in handled if isinstance(h, str)] if all(isinstance(h, str) for h in handled) else [])
        return [Condition("", "starts with", prefix)] if prefix else []
    if not all(isinstance(h, dict) for h in handled):
        return []
    assert isinstance(first, dict)
    out: list[Condition] = []
    for key, tags in first.items():  # a list of names (`tags`, `labels`): the ones every handled element carries
        if KEY_RE.fullmatch(key) and isinstance(tags, list) and all(isinstance(t, str) for t in tags):
            carried = [value_at(h, key) for h in handled]
            out += [Condition(key, "has", t) for t in tags if all(isinstance(c, list) and t in c for c in carried)]
    for key, value in leaves(first):
        if isinstance(value, str) and len(value) > _SHORTEST_TEXT:
            out += [
                Condition(key, "has words", phrase) for phrase in _shared_phrases([value_at(h, key) for h in handled])
            ]
        values = [value_at(h, key) for h in handled]
        out += _bounds(key, values)
        if not isinstance(value, bool) and all(v is not None and v != "" for v in values):
            out.append(Condition(key, "is set", True))  # kept only where another element has none
        # (a number shared by chance says nothing, but none left is a state: out of stock, no replicas, unread 0)
        empty = isinstance(value, int | float) and not isinstance(value, bool) and value == 0
        if not (isinstance(value, str | bool) or empty) or len(str(value)) > _LONGEST:
            continue
        cases = {v.lower() if isinstance(v, str) else v for v in values}
        if isinstance(value, str) and len(cases) == 1 and len(set(values)) > 1:
            # `ana.ruiz@…` and `Ana.Ruiz@…`: one address, written two ways
            lower = next((v for v in values if isinstance(v, str) and v == v.lower()), value)
            out.append(Condition(key, "equals, case aside", lower))
        if all(same(v, value) and type(v) is type(value) for v in values):
            if value != "":
                out.append(Condition(key, "==", value))
        elif all(isinstance(v, str) for v in values):
            texts = [v for v in values if isinstance(v, str)]
            prefix, suffix = _prefix(texts), _suffix(texts)
            if prefix:
                out.append(Condition(key, "starts with", prefix))
            if suffix:
                out.append(Condition(key, "ends with", suffix))
            domains = {_domain(text) for text in texts}
            if len(domains) == 1 and (domain := domains.pop()) and "@" in texts[0]:
                out.append(Condition(key, "at domain", domain))  # (`sub.northwind.io` ends with it, but is not it)
            if _state_key(key) and all(_STATE_WORD_RE.match(v) for v in texts):
                # `Failed` and `Error` handled alike: the states the task acts on, in the order first seen
                out.append(Condition(key, "in", tuple(dict.fromkeys(texts))))
    return out


# Phrases inside a text field (a message, a subject) that every handled element has and no other: the words a
# careful person filtered by (`blocked` in a standup message, `Offer letter` in an envelope's subject).
_WORD_RE: Final = re.compile(r"[A-Za-z0-9_]+(?:['-][A-Za-z0-9_]+)*")
_PHRASE_WORDS: Final = 4
_SHORTEST_TEXT: Final = 8  # shorter values are names and codes: `==` and `starts with` say it
_TEXT_READ: Final = 2000  # a long body's opening is where such words sit; the rest costs time for nothing
_STOP_WORDS: Final = frozenset(
    {"the", "and", "for", "with", "from", "this", "that", "was", "are", "has", "have", "not", "but", "you", "our"}
    | {"a", "an", "of", "to", "in", "on", "by", "at", "is", "or", "re"}
)


def _has_words(text: str, phrase: str) -> bool:
    # ASCII word edges and case folding, as the select step's JavaScript reads them
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(phrase)}(?![A-Za-z0-9_])", text, re.IGNORECASE) is not None


def _shared_phrases(texts: Sequence[JSON]) -> list[str]:
    """Runs of up to four words (one space apart) that every text holds, as the first text writes them (lower
    case when the texts write them in different cases); no number, no stop word alone, no word under 3 letters."""
    if not all(isinstance(t, str) and " " in t for t in texts):  # prose, not a URI or a key
        return []
    grams = [_phrases(str(t)[:_TEXT_READ]) for t in texts]
    shared = set(grams[0]).intersection(*grams[1:])
    out: list[str] = []
    for low in sorted(shared, key=lambda g: grams[0][g][0]):
        forms = {grams_of[low][1] for grams_of in grams}
        out.append(grams[0][low][1] if len(forms) == 1 else low)
    return out


def _phrases(text: str) -> dict[str, tuple[int, str]]:
    """Each phrase of the text, lower-cased, with where it first starts and how it is written there."""
    words = list(_WORD_RE.finditer(text))
    out: dict[str, tuple[int, str]] = {}
    for i, first in enumerate(words):
        for j in range(i, min(i + _PHRASE_WORDS, len(words))):
            if j > i and text[words[j - 1].end() : words[j].start()] != " ":
                break
            phrase = text[first.start() : words[j].end()]
            if any(w.group().isdigit() for w in words[i : j + 1]) or first.group().lower() in _STOP_WORDS:
                break
            if (j == i and len(phrase) < 3) or words[j].group().lower() in _STOP_WORDS:
                continue  # (`Offer letter`, not `Offer letter for`)
            out.setdefault(phrase.lower(), (first.start(), phrase))
    return out


def _state_key(key: str) -> bool:
    """A field naming a state or a category, at any depth (`status`, `state.current`, `status.phase`), in any
    case (`albumType`)."""
    return any(_STATE_KEY_RE.search(part) or _STATE_KEY_RE.search(snake(part)) for part in key.split("."))


def leaves(element: dict[str, JSON], depth: int = 3) -> list[tuple[str, JSON]]:
    """The element's fields and those of the objects inside it (`status.sync.status`), as dotted paths; an object
    alone in a list is read through it (`values.stage.0.status.title`: Attio wraps each value in a list)."""
    out: list[tuple[str, JSON]] = []
    for key, value in element.items():
        if not KEY_RE.fullmatch(key):
            continue
        if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict) and depth > 1:
            out += [(f"{key}.0.{inner}", v) for inner, v in leaves(value[0], depth)]  # (the wrapper is no level)
        elif isinstance(value, dict) and depth > 1:
            out += [(f"{key}.{inner}", v) for inner, v in leaves(value, depth - 1)]
        elif not isinstance(value, dict | list):
            out.append((key, value))
    return out


def value_at(element: JSON, key: str) -> JSON:
    """The element's field at a dotted path (`status.sync.status`; "" for the element itself)."""
    if key == "":
        return element
    for part in key.split("."):
        if isinstance(element, list) and part.isdigit() and int(part) < len(element):
            element = element[int(part)]
        elif isinstance(element, dict):
            element = element.get(part)
        else:
            return None
    return element


_END_SEPARATORS: Final = "@.-_/"


def _ends_with(text: str, end: str) -> bool:
    """`text` ends with `end` (case aside) right after a separator: `omar@BrightAgency.io` ends with
    `brightagency.io`, `ana@notbrightagency.io` does not."""
    low, end = text.lower(), end.lower()
    at = len(low) - len(end)
    return low.endswith(end) and (at == 0 or low[at - 1] in _END_SEPARATORS)


def _domain(text: str) -> str:
    """The domain of an email address, lower case (`Tom.Reyes@Northwind.io`: `northwind.io`); "" for no address."""
    return text.rsplit("@", 1)[1].lower() if "@" in text else ""


def _suffix(values: Sequence[str]) -> str | None:
    """The common ending of `values` (case aside) from just after a separator (`brightagency.io` of addresses at
    that domain, `canary` of `api-canary`), four characters at least; None when they share none."""
    if len(values) < 2:
        return None
    lows = [v.lower() for v in values]
    common = lows[0]
    for low in lows[1:]:
        while not low.endswith(common):
            common = common[1:]
    cuts = [i for i, c in enumerate(common) if c in _END_SEPARATORS]
    if not cuts:
        return None
    end = common[cuts[0] + 1 :]
    if len(end) < 4 or any(len(low) <= len(end) + 1 for low in lows):
        return None
    return end


def _prefix(values: Sequence[str]) -> str | None:
    """The common beginning of `values` up to its last separator (`checkout-`, `dlq.`), two characters before
    it at least, or their one common first word (`macOS`, no stop word); None when they share none, or are ids a
    machine made (sharing a beginning by chance: no one filters by it)."""
    if len(values) < 2 or all(is_machine_id(v) for v in values):
        return None
    common = values[0]
    for value in values[1:]:
        while not value.startswith(common):
            common = common[:-1]
    cut = max(common.rfind(s) for s in _SEPARATORS)
    first, space, rest = common.partition(" ")  # (`macOS` of `macOS 14.7.1`, `macOS 15.0`: the family, no space)
    if cut < 2 and len(first) >= 2 and space and " " not in rest and first.lower() not in _STOP_WORDS:
        return first if all(len(v) > len(first) + 1 for v in values) else None
    if cut < 2 or any(len(v) <= cut + 1 for v in values):
        return None
    return common[: cut + 1]


def select_inputs(
    selects: Sequence[Select], likely: Sequence[LikelyInput], taken: Collection[str]
) -> list[LikelyInput]:
    """The likely inputs with each select condition's value no input gave: ticked for a value the user chose,
    unticked for a state of the task."""
    out = list(likely)
    names = Names(set(taken) | {item.name for item in likely})
    for select in selects:
        for i, condition in enumerate(select.where):
            if isinstance(condition.value, bool) or any(select.refs[i : i + 1]) or condition.among is not None:
                continue
            used_at = ((select.step, f"$.where[{i}].value"),)
            at = next((j for j, item in enumerate(out) if same(item.value, condition.value)), None)
            if at is not None:
                out[at] = replace(out[at], used_at=out[at].used_at + used_at)
                continue
            base = snake(condition.key.rsplit(".", 1)[-1]) if condition.key else "value"
            suffix = {"starts with": "_prefix", "at domain": "_domain", "at most": "_max", "at least": "_min"}.get(
                condition.op, ""
            )
            name = names.fresh(f"{base}{suffix}")
            why = f"{select.step} keeps the elements whose {condition.describe()}: which ones, the user's choice"
            if condition.state:
                why = f"{select.step} keeps the elements whose {condition.describe()}: a state, proposed unticked"
            kind = "array" if condition.op == "in" else "number" if _number(condition.value) else "string"
            item = LikelyInput(name, condition.given, kind, used_at, why, ticked=not condition.state)
            out.append(item)
    return out
