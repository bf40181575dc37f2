"""A candidate for a literal of a step's input (a ref, an input, a string with placeholders) and how its evidence
is weighed: how many places produce the value, whether its key names an entity, whether a neighbouring value of
the same output backs it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Final, TypeGuard

from toolreel.core.model import JSON
from toolreel.templatizer._index import Bucket, Occurrence
from toolreel.templatizer._result import HIGH, MEDIUM, Confidence, InferenceKind, confidence_of
from toolreel.templatizer._values import Keys, get_at, is_trivial, json_path, key_tokens

__all__ = [
    "CONFIRMABLE_PIECE",
    "ENTITY_TOKENS",
    "NAMED_BY_TOOL",
    "Cand",
    "backed",
    "entity_places",
    "id_key",
    "in_version",
    "is_number",
    "item_of",
    "may_be_chosen",
    "names_entity",
    "occurrence_evidence",
    "searched_for",
    "uniqueness",
    "value_at",
]

PRIORITY: Final[dict[str, int]] = {"exact": 3, "subtree": 3, "confirmed": 3, "substring": 2, "input": 2, "coerced": 1}
ENTITY_TOKENS: Final = frozenset({"id", "ids", "number", "key", "uuid", "gid"})


@dataclass(frozen=True, slots=True)
class Cand:
    value: str  # what the template holds: a ref or a string with placeholders
    kind: InferenceKind
    score: float
    evidence: str | Callable[[], str]  # a callable: written only for the candidates that are reported
    rank: tuple[float, ...] = ()

    @property
    def why(self) -> str:
        return self.evidence if isinstance(self.evidence, str) else self.evidence()

    @property
    def confidence(self) -> Confidence:
        return confidence_of(self.score)

    @property
    def key(self) -> tuple[float, ...]:
        """Best first (sorted in reverse): score, then a produced whole value over pieces, then rank."""
        return (self.score, PRIORITY.get(self.kind, 0), *self.rank)


WHY: Final = {
    "exact": "same value and type",
    "subtree": "the same whole object/list",
    "coerced": "same digits, different type (number vs string)",
    "substring": "appears inside this string",
}


def backed(scored: Sequence[tuple[str, Cand]], backers: set[str], floor: float = MEDIUM) -> list[Cand]:
    """The candidates, those of a weak match (from `floor`) raised to high when its step is the source of
    another match beside it: values of one output travel together (an order's id and its total `6.0`
    side by side in a sentence, a city's temperature and humidity as two arguments), so the second
    coincidence is not chance."""
    out: list[Cand] = []
    for step, cand in scored:
        if floor <= cand.score < HIGH and step in backers:
            why = f"{cand.why}; backed by another value of step {step} passed on beside it"
            cand = replace(cand, score=HIGH, evidence=why)
        out.append(cand)
    return out


def occurrence_evidence(occ: Occurrence, keys: Keys, kind: str, places: int, sim: float, aligned: int = 0) -> str:
    where = f"output {json_path(occ.keys)} of step {occ.step} -> input {json_path(keys)}"
    beside = f"; the same list item gives {aligned} other argument(s) of this call" if aligned else ""
    return f"{where}: {WHY.get(kind, kind)}; {places} producing place(s); key similarity {sim:.2f}{beside}"


CONFIRMABLE_PIECE: Final = 0.2
NAMED_BY_TOOL: Final = 0.9  # key_similarity: `board_id` against `id` of a step whose tool names boards


def id_key(key: str | None) -> bool:
    """`id`, `user_id`, `issueKey`, `number`, and one word run together with its `id` (`groupid`, `eventid`)."""
    if key is None:
        return False
    last = key_tokens(key)[-1:]
    if last in (("id",), ("key",), ("number",)):
        return True
    word = last[0] if last else ""
    return len(word) >= _RUN_TOGETHER_ID and word.endswith("id") and word not in _WORDS_ENDING_IN_ID


_RUN_TOGETHER_ID: Final = 5  # `hostid`, `groupid`; shorter words ending in "id" (`paid`, `grid`) are words
_WORDS_ENDING_IN_ID: Final = frozenset(
    {"valid", "invalid", "unpaid", "prepaid", "android", "fluid", "liquid", "solid", "hybrid", "rapid", "avoid"}
)


def item_of(keys: Keys) -> Keys | None:
    """The path of the innermost list element holding `keys`; None outside any list."""
    last = max((i for i, key in enumerate(keys) if isinstance(key, int)), default=-1)
    return keys[: last + 1] if last >= 0 else None


def in_version(text: str, start: int, end: int) -> bool:
    before, after = text[max(0, start - 2) : start], text[end : end + 2]
    return (len(after) == 2 and after[0] == "." and after[1].isdigit()) or (
        len(before) == 2 and before[1] == "." and before[0].isdigit()
    )


def names_entity(key: str | None) -> bool:
    """`board_id`, `issue_number`, `projectKey`: a key that names one entity by its identifier."""
    tokens = key_tokens(key) if key else ()
    return len(tokens) >= 2 and tokens[-1] in ENTITY_TOKENS


def searched_for(sent: JSON, listed: JSON, keys: Keys) -> bool:
    """The list element holding `keys` is the one its own call searched for: a field of it is exactly a text the
    call sent (`q: "Weekly signups"`), which no other element of that list holds (the exact match among partial
    ones, `Weekly signups by plan`), so an id read out of it is that element's, however small."""
    home = item_of(keys)
    asked = {leaf for leaf in _texts(sent) if len(leaf) >= 3}
    if home is None or not asked:
        return False
    found, elements = get_at(listed, home[:-1])
    if not found or not isinstance(elements, list):
        return False
    names = [set(_texts(e)) & asked if isinstance(e, dict) else set() for e in elements]
    mine = names[int(home[-1])] if int(home[-1]) < len(names) else set()
    return bool(mine) and not any(mine & other for i, other in enumerate(names) if i != home[-1])


def _texts(value: JSON) -> list[str]:
    """The strings of an object's own fields (not of the objects and lists inside it)."""
    if isinstance(value, dict):
        return [v for v in value.values() if isinstance(v, str)]
    return [value] if isinstance(value, str) else []


def uniqueness(places: int, weight: float) -> float:
    """A value produced in many places is weaker evidence; a strong value (an id) much less so."""
    if weight >= 0.95 and places <= 10:
        return 1.0  # a long id echoed by a few outputs (a user id as `owner_id`) is one entity, not chance
    factor = 1.0 if places <= 2 else 0.9 if places <= 5 else 0.7 if places <= 10 else 0.4
    return max(factor, 0.8) if weight >= 0.9 else factor


def may_be_chosen(value: JSON, cands: Sequence[Cand]) -> TypeGuard[str | int | float]:
    """A literal the user may have chosen: any non-trivial string; a number no earlier output holds at all
    (a number some output holds is a weak ref at worst, never the user's own)."""
    if is_trivial(value):
        return False
    return isinstance(value, str) or (is_number(value) and not cands)


def is_number(value: JSON) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def value_at(value: JSON, keys: Keys) -> JSON:
    return get_at(value, keys)[1]


def entity_places(bucket: Bucket) -> int:
    """Where a value was produced, a record's own `id` and another's reference to it (`parent_id: 23` beside the
    category whose `id` is 23) counted once: the same entity named twice, not two candidates."""
    sample = bucket.sample()
    if len(sample) != bucket.seen or not any(occ.key == "id" for occ in sample):
        return bucket.seen
    # (a project whose id is its name, `{"id": "billing", "name": "billing"}`: one element, named twice)
    homes = {(occ.step, item_of(occ.keys)) for occ in sample if occ.key == "id" and item_of(occ.keys) is not None}
    twice = sum(1 for occ in sample if occ.key != "id" and (occ.step, item_of(occ.keys)) in homes)
    if twice:
        return bucket.seen - twice
    return bucket.seen - sum(1 for occ in sample if occ.key != "id" and occ.key is not None and id_key(occ.key))
