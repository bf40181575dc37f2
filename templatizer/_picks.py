"""Picks by identity: an element taken from a list by its position becomes the element that has its name.

`@list_channels_1.channels[4].id` posts to another channel as soon as one is added before it. When the
element has a name-like field whose value no other element shares, a `code` step picks the element by that
value (or by the input whose value it is) and the ref reads from it: `@pick_triage.id`. It fails, naming
what it looked for, where no element or several match: better than a side effect on the wrong one. The
first element (`[0]`) stays positional, "the first result" is usually what was meant, unless the call that
listed the elements searched for that element's name (the exact match among partial ones).
"""

from __future__ import annotations

import itertools
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final

from toolreel.core.errors import RefError
from toolreel.core.model import JSON
from toolreel.core.refs import resolve
from toolreel.core.template import Template
from toolreel.templatizer._candidates import id_key
from toolreel.templatizer._codesteps import drop_unread
from toolreel.templatizer._inside import anchored_core
from toolreel.templatizer._listed import flag_before, listed_name, whole
from toolreel.templatizer._pieces import bounded_finds
from toolreel.templatizer._result import LikelyInput, Pick
from toolreel.templatizer._select import leaves
from toolreel.templatizer._values import ENVELOPES, free_name, record_paths, same, snake, strength, walk

if TYPE_CHECKING:
    from toolreel.templatizer._result import Unit
    from toolreel.templatizer._runs import Run

__all__ = ["PICK_CODE", "Pick", "drop_unused_picks", "pick_by_identity", "pick_inputs"]

# A plain step ref indexing a list with a literal position from 1 on: `@step.a.b[4]` (then anything).
_POSITIONAL_RE: Final = re.compile(
    r"(?<![@\w])(@(?!input\b|item\b|index\b)[A-Za-z_]\w*(?:\.[A-Za-z_][\w-]*)*)\[(\d+)\]"
)
# (a display name before a slug: a person names a collection "Blog Posts", its URL says `blog-posts`)
_NAME_KEYS: Final = (
    "name",
    "title",
    "heading",
    "display_name",
    "slug",
    "key",
    "label",
    "login",
    "username",
    "user",  # (a session's, a stream's user: `sam` beside `sam.k`, the login the user named, not its display name)
    "handle",
    "email",
    "domain",  # (a DNS entry, a block-list entry, a mail domain: named by the domain itself)
    "hostname",
)
_INNER_KEYS: Final = ("name", "ref", "slug", "key")  # what names an object inside the element (`head.ref`)
_KEY_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ANCHORED_INPUT_RE: Final = re.compile(r"\^\{\{@input\.(\w+)\}\}\$?|\{\{@input\.(\w+)\}\}\$")  # a pattern on an input
# a path of object keys only: `_at` (and the pick's code, as the check replays it) reads no list inside the element
_KEY_PATH_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_GIVEN_STRENGTH: Final = 0.7  # a text strong enough that an equal field is no accident (`How do I ...?`, an email)
_RELATION_RE: Final = re.compile(r"(author|committer|creator|owner|assignee|user|sender|reporter|parent)")
PICK_CODE: Final = """export default function(input) {
  const at = (item, k) =>
    k === "" ? item : k.split(".").reduce((v, key) => (v === null || v === undefined ? v : v[key]), item);
  const where = [[input.key, input.value], ...(input.also || [])];
  const found = input.items.filter((item) => item !== null && where.every(([k, v]) => at(item, k) === v));
  if (found.length === 0 && input.optional) return null;
  if (found.length !== 1) {
    const what = where.map(([k, v]) => k + " = " + JSON.stringify(v)).join(" and ");
    throw new Error(found.length + " elements have " + what + ", not exactly one");
  }
  return found[0];
}
"""


def pick_by_identity(
    units: Sequence[Unit], runs: Sequence[Run], inputs: Mapping[str, JSON]
) -> tuple[list[Unit], list[Pick]]:
    """The units with each positional element ref read from a pick step (added before its first user)."""
    taken = {u.name for u in units}
    picks: dict[str, Pick] = {}
    users: dict[str, tuple[str, str]] = {}  # pick step -> (the list it picks from, the tool of its first user)
    given = {u.name: u.input for u in units}  # each call's arguments as templatized so far
    out: list[Unit] = []
    for unit in units:
        heads = {m.group(0): (m.group(1), int(m.group(2))) for m in _POSITIONAL_RE.finditer(json.dumps(unit.input))}
        for head, (base, n) in heads.items():
            if head not in picks and (pick := _pick(head, base, n, runs, inputs, taken, given)) is not None:
                if not pick.key:
                    label = flag_before(unit.input, head)
                    if not label and not whole(unit.input, head):
                        continue  # a name inside a text or a query (a column of a result's schema): where it stands
                    pick = replace(pick, label=label)
                taken.add(pick.step)
                picks[head] = pick
                users[pick.step] = (base, unit.tool)
                out.append(_pick_unit(unit, pick, base))
        mine = {head: pick for head, pick in picks.items() if head in heads}
        unit = replace(unit, input=_rewritten(unit.input, mine)) if mine else unit
        for head, (base, n, outer) in _inside_picks(unit.input, picks).items():
            # `@pick_sales.stages[1]`: a list inside the picked element, its element taken by position too (by the
            # pick an earlier call's ref made, where there is one: the app read, then redeployed)
            if head in picks:
                unit = replace(unit, input=_rewritten(unit.input, {head: picks[head]}))
            elif pick := _pick(f"{outer}[{n}]", outer, n, runs, inputs, taken, given):
                pick = replace(pick, replaces=head)
                taken.add(pick.step)
                picks[head] = pick
                users[pick.step] = (base, unit.tool)
                out.append(_pick_unit(unit, pick, base))
                unit = replace(unit, input=_rewritten(unit.input, {head: pick}))
        out.append(unit)
    walked = Counter(users.values())
    return out, [replace(p, walked=walked[users[p.step]] >= 2) for p in picks.values()]


def _inside_picks(value: JSON, picks: Mapping[str, Pick]) -> dict[str, tuple[str, int, str]]:
    """Each positional ref into a list inside a picked element (`@pick_sales.stages[1]`): head -> (the list as the
    template reads it, `@pick_sales.stages`; the position; the list as the recording holds it,
    `@list_pipelines_1[2].stages`)."""
    by_step = {f"@{pick.step}": pick.replaces for pick in picks.values()}
    found: dict[str, tuple[str, int, str]] = {}
    for m in _POSITIONAL_RE.finditer(json.dumps(value)):
        root, _, rest = m.group(1).partition(".")
        if root in by_step and rest:
            found[m.group(0)] = (m.group(1), int(m.group(2)), f"{by_step[root]}.{rest}")
    return found


def drop_unused_picks(template: Template, picks: Sequence[Pick]) -> tuple[Template, list[Pick]]:
    """The template without the pick steps no step reads any more (a later rule, such as a join of the whole
    list, replaced the positional refs they stood for): a pick nobody reads would still fail the replay
    where its element is gone."""
    template, gone = drop_unread(template, {pick.step for pick in picks})
    return template, [pick for pick in picks if pick.step not in gone]


def _pick(
    head: str,
    base: str,
    n: int,
    runs: Sequence[Run],
    inputs: Mapping[str, JSON],
    taken: set[str],
    given: Mapping[str, JSON],
) -> Pick | None:
    try:
        elements = resolve(base, runs[0].scope())
    except RefError:
        return None
    if not isinstance(elements, list) or not n < len(elements):
        return None
    if n and isinstance(elements[n], str) and all(isinstance(e, str) for e in elements):
        named = listed_name([str(e) for e in elements], n, inputs)
        return Pick(free_name(f"pick_{_slug(elements[n]) or 'name'}", taken), head, "", named) if named else None
    if not isinstance(elements[n], dict):
        return None
    element = elements[n]
    terms = _searched(base, given, inputs)
    searched = terms if n == 0 else set()
    state = _state_key(elements, n) if n else None
    if state is not None and all(_same_pick(base, n, state, run, element[state]) for run in runs):
        step = free_name(f"pick_{_slug(state) or 'state'}", taken)
        return Pick(step, head, state, str(element[state]), state=True)
    identity = _identity_keys(element)
    quoted = _quoted_keys(head, element, given) if identity else []  # (an entity's other name, not a metric's)
    where = _Where(head, base, n, elements, runs, inputs, taken, searched)
    # a name the user gave first; then the one largest (smallest) number the agent quotes, the superlative it
    # acted on, before a name that merely sets the element apart (the slowest trace's service, `frontend`)
    return (
        _by_keys(_input_keys(element, inputs, terms), where)
        or _best(head, base, n, elements, runs, given, taken)
        or _ranked(head, base, n, elements, runs, taken, nameless=not identity)
        or _by_keys([*quoted, *identity], where)
        or _pair(head, elements, n, [*quoted, *identity], runs, inputs, taken)
    )


@dataclass(frozen=True, slots=True)
class _Where:
    """The positional ref a pick replaces, and what it is judged against."""

    head: str
    base: str
    n: int
    elements: list[JSON]
    runs: Sequence[Run]
    inputs: Mapping[str, JSON]
    taken: set[str]
    searched: set[str]


def _by_keys(keys: Sequence[str], where: _Where) -> Pick | None:
    """The pick by the first of `keys` whose value the element alone has, in every recording."""
    for key in dict.fromkeys(keys):
        value = _at(where.elements[where.n], key)
        if sum(1 for e in where.elements if same(_at(e, key), value)) != 1 or (
            where.n == 0 and not _partial(where.elements, key, where.searched)
        ):
            continue
        named = next((name for name, v in where.inputs.items() if same(v, value)), None)
        # picked by an input, the element may sit elsewhere in another recording (the dry replay checks the call)
        at = None if named is not None else where.n
        picked = [value if named is None else run.inputs.get(named) for run in where.runs]
        if not all(_same_pick(where.base, at, key, run, v) for run, v in zip(where.runs, picked, strict=True)):
            continue
        slug = _slug(str(value))
        step = free_name(f"pick_{slug}" if slug[:1].isalpha() else f"pick_{_slug(key) or 'item'}", where.taken)
        return Pick(step, where.head, key, f"@input.{named}" if named is not None else str(value))
    return None


def _pair(
    head: str,
    elements: list[JSON],
    n: int,
    keys: Sequence[str],
    runs: Sequence[Run],
    inputs: Mapping[str, JSON],
    taken: set[str],
) -> Pick | None:
    """Two names that say together which element it is, where neither does alone: a track's title and its
    artist (the same title by a tribute band), a page's title and its space. One recording only: which two
    fields the user named is the first recording's guess."""
    if len(runs) > 1 or n == 0:
        return None
    element = elements[n]
    assert isinstance(element, dict)
    # the second: any text field of the element but an id, a link or the same text again (the album named as
    # the track is no second name)
    # (or the year of a title: `Doctor Who` of 2005, beside those of 1963 and 2023)
    others = [
        k
        for k, v in element.items()
        if (isinstance(v, str) and not id_key(k) and "://" not in v) or (type(v) is int and _YEAR_RE.search(k))
    ]
    for a, b in itertools.product(keys, others):
        values = (_at(element, a), _at(element, b))
        if a == b or not all(
            (isinstance(v, str) and v and _digits(v) < _PAIR_DIGITS) or type(v) is int for v in values
        ):
            continue  # names, not stamps: a date or a version names no element the user chose
        if same(values[0], values[1]):
            continue
        if any(all(same(_at(e, k), v) for e in elements) for k, v in zip((a, b), values, strict=True)):
            continue  # a value every element has (a time zone, a type) names none of them
        if sum(1 for e in elements if same(_at(e, a), values[0]) and same(_at(e, b), values[1])) != 1:
            continue
        named = [next((f"@input.{name}" for name, v in inputs.items() if same(v, value)), value) for value in values]
        slug = _slug(str(values[0]))
        step = free_name(f"pick_{slug}" if slug[:1].isalpha() else f"pick_{_slug(a) or 'item'}", taken)
        return Pick(step, head, a, str(named[0]), also=((b, named[1]),))
    return None


def _best(
    head: str, base: str, n: int, elements: list[JSON], runs: Sequence[Run], given: Mapping[str, JSON], taken: set[str]
) -> Pick | None:
    """The element a sentence quotes a number of (`{{@metrics[1].x}} ({{@metrics[1].y}} visitors)`) when that
    number is the largest (or smallest) of the list's, alone: the top referrer, the cheapest plan. Not the first
    element (a sorted list's first is its first) nor the last (a page's last is where the next page starts), not an
    id, and the same holds in every recording."""
    if not 0 < n < len(elements) - 1 or len(elements) < _BEST_MIN:
        return None
    quoted = re.findall(re.escape("{{" + head) + r"\.([A-Za-z_][A-Za-z0-9_]*)\}\}", json.dumps(list(given.values())))
    for key in dict.fromkeys(quoted):
        if id_key(key):
            continue
        for best in ("max", "min"):
            # (another recording's call is checked by the dry replay: its element must be its list's best too)
            if _best_at(base, key, best, runs[0]) == n and all(_best_at(base, key, best, r) is not None for r in runs):
                step = free_name(f"pick_{best}_{_slug(key) or 'item'}", taken)
                return Pick(step, head, key, best, state=True, best=best)
    return None


def _ranked(
    head: str, base: str, n: int, elements: list[JSON], runs: Sequence[Run], taken: set[str], *, nameless: bool
) -> Pick | None:
    """The element with the one largest number a list ranks by (`view_count`, `score`, `downloads`), or the one
    smallest price, cost or duration, when no input named it: the most viewed clip, the cheapest rate, whatever
    its name on the next run. An element with no name at all (a SQL row: `Donor`, `Amount`) is the largest of its
    one number that sets it apart so. Not the first element nor the last, as `_best`; the same in every recording."""
    element = elements[n] if n < len(elements) else None
    if not 0 < n < len(elements) - 1 or len(elements) < _BEST_MIN or not isinstance(element, dict):
        return None
    keys = [".".join(map(str, path)) for path in record_paths(element)]
    found: list[tuple[str, str]] = []
    for key in keys:
        best = "max" if _RANK_RE.search(key) else "min" if _LOW_RE.search(key) else "max" if nameless else None
        if best is None or id_key(key.rsplit(".", 1)[-1]):
            continue
        if _best_at(base, key, best, runs[0]) == n and all(_best_at(base, key, best, r) is not None for r in runs):
            found.append((key, best))
    ranked = [(key, best) for key, best in found if _RANK_RE.search(key) or _LOW_RE.search(key)]
    chosen = ranked[:1] or (found if nameless and len(found) == 1 else [])
    if not chosen:
        return None
    key, best = chosen[0]
    return Pick(free_name(f"pick_{best}_{_slug(key) or 'item'}", taken), head, key, best, state=True, best=best)


# What "the most …" ranks by: engagement (`viewCount`, `view_count`, `downloads`, `score`), not any count an element
# carries (a project's `fault_count` describes it; the user named the project)
_RANK_RE: Final = re.compile(
    r"(?i)(?:^|_)(?:view|play|download|vote|star|like|follower|subscriber|install|visit|click)s?(?:_?count)?$"
    r"|(?:^|_)(?:score|popularity|rating)$"
)
_LOW_RE: Final = re.compile(r"(?i)(?:^|_)(?:price|cost|fee)$")


def _best_at(base: str, key: str, best: str, run: Run) -> int | None:
    """Where the one largest (smallest) number at `key` sits in the list; None if any element has none, or a tie."""
    try:
        elements = resolve(base, run.scope())
    except RefError:
        return None
    if not isinstance(elements, list):
        return None
    numbers = [_at(e, key) for e in elements]
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in numbers):
        return None
    top = max(numbers) if best == "max" else min(numbers)
    at = [i for i, x in enumerate(numbers) if x == top]
    return at[0] if len(at) == 1 else None


_BEST_MIN: Final = 3
_PAIR_DIGITS: Final = 4
_YEAR_RE: Final = re.compile(r"(?i)year$")
BEST_CODE: Final = """export default function(input) {
  const at = (item) => input.key.split(".").reduce((v, key) => (v === null || v === undefined ? v : v[key]), item);
  let found = null;
  for (const item of input.items) {
    const x = item === null ? undefined : at(item);
    if (typeof x !== "number") continue;
    if (found === null || (input.best === "max" ? x > at(found) : x < at(found))) found = item;
  }
  if (found === null) throw new Error("no element has a number at " + input.key);
  return found;
}
"""


def _slug(text: str) -> str:
    """A step name's part made of `text`: ASCII letters and digits (`Café Nord` -> `cafe_nord`), as names must be."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^A-Za-z0-9]+", "_", folded).strip("_").lower()[:24]


def _searched(base: str, given: Mapping[str, JSON], inputs: Mapping[str, JSON]) -> set[str]:
    """The texts the user gave the call that answered with the list (its search term: a literal or an input, not a
    value read out of an earlier output): the first element is taken by its name only when the call searched
    for that name (an exact match among partial ones), else the first result is what was meant."""
    root = re.split(r"[.\[]", base[1:], maxsplit=1)[0]
    callers = [name for name in given if root == name or root.startswith(name + "_")]
    found: set[str] = set()
    # the call itself, and the call whose text a view of rows (`<call>_rows`) read the list out of
    for _, leaf in walk([given[name] for name in callers]):
        if isinstance(leaf, str) and leaf.startswith("@input.") and isinstance(inputs.get(leaf[7:]), str):
            found.add(str(inputs[leaf[7:]]))
        elif isinstance(leaf, str) and not leaf.startswith("@") and "{{" not in leaf:
            found |= {leaf, *filter(None, [anchored_core(leaf)])}  # (what `^year-in-review` matches from its start)
        elif isinstance(leaf, str) and (m := _ANCHORED_INPUT_RE.fullmatch(leaf)) is not None:
            found |= {str(v) for v in [inputs.get(m.group(1) or m.group(2))] if isinstance(v, str)}  # `^{{@input.x}}`
    return found


def _partial(elements: Sequence[JSON], key: str, searched: set[str]) -> bool:
    """The first element's `key` is a searched term and another element's holds it too (`kettle-shop-staging`
    beside `kettle-shop`): the search matches partly, so the exact match may come second in another world. A lone
    result, or results that do not hold the term, are the match by the server's own choosing."""
    value = _at(elements[0], key)
    if not isinstance(value, str) or value not in searched:
        return False
    return any(isinstance(v := _at(e, key), str) and v != value and value in v for e in elements[1:])


def _state_key(elements: Sequence[JSON], n: int) -> str | None:
    """A field that singles the element out by a state rather than a name: short lower-case tokens in every
    element (`conclusion: "failure"`), the element's value its own, and the others' values repeating (two
    `success` beside a `skipped`): the agent took the odd one out, a condition of the task, not a name."""
    if len(elements) < 2 or not all(isinstance(e, dict) for e in elements):
        return None
    element = elements[n]
    if not isinstance(element, dict):
        return None
    if len(elements) == 2:
        return _status_apart(elements, n)
    for key, value in element.items():
        if _name_like(key):
            continue  # `rootServiceName: frontend` among `checkout`s names the element: a name, not a state
        values = [e.get(key) if isinstance(e, dict) else None for e in elements]
        if not all(isinstance(v, str) and _STATE_RE.match(v) for v in values):
            continue
        others = [v for i, v in enumerate(values) if i != n]
        if value not in others and len(set(others)) < len(others):
            return str(key)
    return None


_STATE_RE: Final = re.compile(r"^[a-z][a-z_-]{1,23}$")
_STATUS_KEYS: Final = frozenset({"status", "state", "phase", "conclusion"})


def _status_apart(elements: Sequence[JSON], n: int) -> str | None:
    """Of two elements, the second taken by its status alone (`authorized` beside `failed`): nothing else names it
    apart (no name-like field differs), so the agent took the one in the state the task acts on."""
    element, other = elements[n], elements[1 - n]
    if not isinstance(element, dict) or not isinstance(other, dict):
        return None
    if any(_at(element, key) != _at(other, key) for key in _identity_keys(element)):
        return None
    for key in element:
        value, theirs = element[key], other.get(key)
        words = (
            isinstance(value, str)
            and isinstance(theirs, str)
            and bool(_STATE_RE.match(value) and _STATE_RE.match(theirs))
        )
        if snake(key) in _STATUS_KEYS and words and value != theirs:  # two state words, not a name and a blank
            return str(key)
    return None


def pick_inputs(picks: Sequence[Pick], likely: Sequence[LikelyInput], taken: Collection[str]) -> list[LikelyInput]:
    """The likely inputs with the value of each pick by a name no input gave: which member, list or schedule the
    element is, the user's choice (a pick by a state is the task's own). A value already a likely input is
    ticked there, with the pick as its evidence."""
    out = list(likely)
    names = set(taken) | {item.name for item in likely}
    # one element of a walk the agent wrote of by name (`Promoted from Staging`): the elements were named, not walked
    named = any(pick.walked and _written(pick.value, likely) for pick in picks)
    chosen: list[str] = []
    for pick in picks:
        if pick.state:
            continue
        at_pick: list[tuple[str, JSON, str]] = [(pick.key, pick.value, "$.value")]
        at_pick += [(key, value, f"$.also[{i}][1]") for i, (key, value) in enumerate(pick.also)]
        for key, value, path in at_pick:
            if isinstance(value, str) and value.startswith("@input."):
                continue
            why = f"the value {pick.step} picks the element by (its {key}): which one it is, the user's choice"
            walked = pick.walked and not named
            chosen += [value] if isinstance(value, str) and not walked else []
            if walked:
                why = (
                    f"{pick.step} picks one of several elements of a list that the same tool was called on: the"
                    " elements were walked, not named; proposed unticked"
                )
            at = next((i for i, item in enumerate(out) if same(item.value, value)), None)
            if at is not None:
                if not walked:
                    out[at] = replace(out[at], ticked=True, reason=f"{out[at].reason}; {why}")
                continue
            name = free_name(snake(key.split(".")[-1] or pick.label or "name"), names)
            names.add(name)
            kind = "integer" if type(value) is int else "string"
            item = LikelyInput(name=name, value=value, type=kind, used_at=((pick.step, path),), reason=why)
            out.append(replace(item, ticked=not walked))
    # a sentence holding a name a pick takes as the user's is built on that input (`Promoted from {{@input.name}}`)
    return [item for item in out if not (_sentence(item.value) and any(_holds(item.value, c) for c in chosen))]


def _sentence(value: JSON) -> bool:
    return isinstance(value, str) and len(value.split()) >= 3


def _holds(text: JSON, value: str) -> bool:
    return isinstance(text, str) and text != value and bool(bounded_finds(text, value))


def _written(value: JSON, likely: Sequence[LikelyInput]) -> bool:
    """`value` (`Staging`) is a word of a text the agent wrote (`Promoted from Staging`): the element was named."""
    return isinstance(value, str) and any(_holds(item.value, value) for item in likely)


def _same_pick(base: str, n: int | None, key: str, run: Run, value: JSON) -> bool:
    """In this recording too, one element has `value` at `key`: the element the call took (at `n`, when given)."""
    try:
        elements = resolve(base, run.scope())
    except RefError:
        return False
    if not isinstance(elements, list) or (n is not None and not n < len(elements)):
        return False
    matching = [e for e in elements if same(_at(e, key), value)]
    return len(matching) == 1 and (n is None or same(matching[0], elements[n]))


def _identity_keys(element: Mapping[str, JSON]) -> list[str]:
    """Name-like keys holding text (and those of an object inside, `head.ref`), the usual ones first, then
    those whose value carries fewer digits: a title with a version or a count in it ("update lodash to
    v4.17.22") changes from one world to the next, a branch or a slug ("renovate/lodash-4.x") much less."""
    own = _own_names(element)
    for parent in ENVELOPES:  # JSON:API's `attributes`, Airtable's `fields`: the element's own fields, one level in
        if isinstance(inside := element.get(parent), dict):
            own += [f"{parent}.{key}" for key in _own_names(inside)]
    inner = [
        f"{parent}.{key}"
        for parent, value in element.items()
        if isinstance(value, dict) and _KEY_RE.fullmatch(parent) and not _RELATION_RE.match(parent.lower())
        for key in _INNER_KEYS
        if isinstance(value.get(key), str) and value[key]
    ]
    return sorted(own + inner, key=lambda k: _digits(_at(element, k)))


def _own_names(element: Mapping[str, JSON]) -> list[str]:
    keys = [k for k in element if isinstance(element[k], str) and element[k] and "." not in k and _name_like(k)]
    usual = [k for usual_key in _NAME_KEYS for k in keys if snake(k) == usual_key]  # `displayName` too
    # `author_name`, `owner_name`: who made or owns the element, shared by design, not what it is
    return usual + [k for k in keys if k not in usual and not _RELATION_RE.match(k.lower())]


def _name_like(key: str) -> bool:
    """A key naming the element: a usual name key (`name`, `slug`, `displayName`) or one ending in name or title."""
    return snake(key) in _NAME_KEYS or re.search(r"(name|title)$", key.lower()) is not None


def _quoted_keys(head: str, element: Mapping[str, JSON], given: Mapping[str, JSON]) -> list[str]:
    """Text fields of the element that a call writes into a sentence of its own (`Top referrer for
    {{@websites.data[1].domain}}`): what the agent calls the element, so most likely the words the user named it
    by (the site `kettle.dev`, beside its display name `Kettle`). Ids are passed on, not quoted."""
    quoted = re.findall(re.escape("{{" + head) + r"\.([A-Za-z_][A-Za-z0-9_]*)\}\}", json.dumps(list(given.values())))
    return [
        key
        for key in dict.fromkeys(quoted)
        if isinstance(element.get(key), str) and not id_key(key) and strength(element[key]) >= _GIVEN_STRENGTH
    ]


def _input_keys(element: Mapping[str, JSON], inputs: Mapping[str, JSON], terms: Collection[str] = ()) -> list[str]:
    """Fields (nested ones too: `properties.question`) holding a text the user gave whole: the element that is
    what the user named (the FAQ entry whose question is the one asked, among near misses a search ranked higher).
    `terms`: what the call that listed the elements searched for, however short (`jdoe`, among `jdoe2` and
    `jdoe.contractor`): the element whose field is that term exactly is the one searched for."""
    given = {v for v in inputs.values() if isinstance(v, str) and strength(v) >= _GIVEN_STRENGTH} | set(terms)
    if not given:
        return []
    return [k for k, v in leaves(dict(element)) if isinstance(v, str) and v in given and _KEY_PATH_RE.match(k)]


def _at(element: JSON, key: str) -> JSON:
    for part in key.split("."):
        if not isinstance(element, dict):
            return None
        element = element.get(part)
    return element


def _digits(value: JSON) -> int:
    return sum(c.isdigit() for c in value) if isinstance(value, str) else 0


def _pick_unit(user: Unit, pick: Pick, base: str) -> Unit:
    if pick.best:
        best = {"items": base, "key": pick.key, "best": pick.best}
        return replace(user, name=pick.step, tool="", input=best, for_each=None, members=(), code=BEST_CODE)
    value: JSON = pick.value if pick.value.startswith("@input.") else _escaped(pick.value)
    picked: dict[str, JSON] = {"items": base, "key": pick.key, "value": value}
    if pick.state:
        picked["optional"] = True  # no element in that state: nothing to act on (`guard_on_picks` skips the users)
    if pick.also:
        picked["also"] = [
            [key, _escaped(v) if isinstance(v, str) and not v.startswith("@input.") else v] for key, v in pick.also
        ]
    return replace(user, name=pick.step, tool="", input=picked, for_each=None, members=(), code=PICK_CODE)


def _escaped(text: str) -> str:
    return "@" + text if text.startswith("@") else text.replace("{{@", "{{@@")


def _rewritten(value: JSON, picks: Mapping[str, Pick]) -> JSON:
    if isinstance(value, str):
        for head, pick in picks.items():
            value = value.replace(head, f"@{pick.step}")
        return value
    if isinstance(value, dict):
        return {k: _rewritten(v, picks) for k, v in value.items()}
    if isinstance(value, list):
        return [_rewritten(v, picks) for v in value]
    return value
