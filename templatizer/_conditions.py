"""Text that lists every element of a list, and the steps done only because a list had elements.

An agent writes "Regressions in checkout-api: CHECKOUT-API-2A, CHECKOUT-API-2C" out of a list of two issues:
the templatized string takes `{{@rows[0].heading}}, {{@rows[1].heading}}`, which breaks where the list has
one element or five. When the pieces are every element of one list (or every element an evident filter of
it keeps), in order, with one separator between them (a comma, a semicolon, a bar, a slash, a line break),
they become one `code` step that joins that field of every element (`join_1`), so the text follows the
list. A call that may write and reads a whole list that way (a join, a `[*]` of every element) is one the
agent made because the list had elements: in a world where it is empty, a careful agent does nothing, so
the step gets `when: {ref: <the list>}` (an empty list is false: the step is skipped).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final

from toolreel.core.errors import RefError
from toolreel.core.model import JSON
from toolreel.core.refs import MappingScope, refs_in, resolve
from toolreel.core.template import StepSpec, Template, When, WhenOp
from toolreel.core.template_io import parse_template, template_to_dict
from toolreel.templatizer._codesteps import values_read
from toolreel.templatizer._fields import named_read
from toolreel.templatizer._select import value_at
from toolreel.templatizer._values import strength, walk

if TYPE_CHECKING:
    from toolreel.templatizer._result import Pick, Unit

__all__ = [
    "JOIN_CODE",
    "Guard",
    "guard_on_absence",
    "guard_on_checks",
    "guard_on_copies",
    "guard_on_picks",
    "guard_on_state",
    "guard_on_transitions",
    "guard_reads_for",
    "guard_sequels",
    "guard_writes",
    "join_texts",
]

JOIN_CODE: Final = """export default function(input) {
  const at = (value) => input.path.reduce((v, key) => (v === null || v === undefined ? v : v[key]), value);
  return input.list.map((item) => String(at(item))).join(input.sep);
}
"""
# `{{@base[0].a.b}}`: a plain step ref that takes an element by its position, then a path of keys.
_PIECE_RE: Final = re.compile(
    r"\{\{(@(?!input\b|item\b|index\b)[A-Za-z_]\w*(?:\.[A-Za-z_][\w-]*)*)\[(\d+)\]((?:\.[A-Za-z_][\w-]*)*)\}\}"
)
# What separates the elements of a list written out: "A, B", "A; B", lines, "A | B"; "A and B" says two things.
_SEPARATORS: Final = frozenset({",", ";", "|", "/", ""})
_KEY_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_EVERY_RE: Final = re.compile(r"^@(?!input\b|item\b|index\b)([A-Za-z_]\w*(?:\.[A-Za-z_][\w-]*)*)\[\*\]")


@dataclass(frozen=True, slots=True)
class Guard:
    """A step made conditional: it runs only when `over` has elements."""

    step: str
    over: str
    value: JSON = None  # a state the element had (`ERROR`), when the step runs only in that state
    picked: bool = False  # `over` is a pick by a state: the step runs only when an element is in it
    op: WhenOp = "eq"  # `neq`: it runs only while `over` differs from `value` (a ref: the value it copies there)
    because: str = "the element it acts on was the only one in that state when recorded"

    @property
    def when(self) -> When:
        return When(ref=self.over) if self.value is None else When(ref=self.over, op=self.op, value=self.value)

    @property
    def why(self) -> str:
        if self.value is not None:
            test = "is" if self.op == "eq" else "differs from"
            return f"{self.step} runs only when {self.over} {test} {json.dumps(self.value)} ({self.because})"
        if self.picked:
            return (
                f"{self.step} runs only when {self.over} finds an element (it acts on the one in that state: where "
                "none is, a careful agent does nothing)"
            )
        return f"{self.step} runs only when {self.over} has elements (it lists every one of them)"


# (list ref, the indexes a text took of it) -> the list those elements are (the list itself, or a filter of
# it that keeps exactly them), or None.
Select = Callable[[str, list[int]], str | None]


def join_texts(units: Sequence[Unit], select: Select, taken: set[str]) -> list[Unit]:
    """The units with each string listing every element of a list (or of an evident filter of it) replaced by
    a join step's output."""
    out: list[Unit] = []
    for unit in units:
        joins: list[Unit] = []
        value = _joined(unit.input, unit, select, taken, joins) if unit.code is None else unit.input
        out += joins
        out.append(replace(unit, input=value) if joins else unit)
    return out


def _joined(value: JSON, unit: Unit, select: Select, taken: set[str], joins: list[Unit]) -> JSON:
    if isinstance(value, dict):
        return {k: _joined(v, unit, select, taken, joins) for k, v in value.items()}
    if isinstance(value, list):
        return [_joined(v, unit, select, taken, joins) for v in value]
    if not isinstance(value, str):
        return value
    for run in _runs(value):
        base, path, sep, start, end = run
        listed = select(base, [int(m.group(2)) for m in _PIECE_RE.finditer(value[start:end])])
        if listed is None:
            continue  # some elements no field tells apart: a pick of some, by position
        name = _free("join", taken)
        taken.add(name)
        code_input = {"list": listed, "path": [key for key in path.split(".") if key], "sep": sep}
        joins.append(replace(unit, name=name, tool="", input=code_input, for_each=None, members=(), code=JOIN_CODE))
        whole = value[:start] + f"{{{{@{name}}}}}" + value[end:]
        return _joined(whole, unit, select, taken, joins)
    return value


def _runs(text: str) -> list[tuple[str, str, str, int, int]]:
    """(list ref, path in each element, separator, start, end) of each run of `{{@l[i]p}}SEP{{@l[j]p}}...`
    taking elements of one list in increasing order with one separator, two elements at least."""
    pieces = list(_PIECE_RE.finditer(text))
    found: list[tuple[str, str, str, int, int]] = []
    i = 0
    while i < len(pieces):
        first = pieces[i]
        base, path = first.group(1), first.group(3)
        j, sep = i, None
        while j + 1 < len(pieces):
            nxt = pieces[j + 1]
            between = text[pieces[j].end() : nxt.start()]
            if (nxt.group(1), nxt.group(3)) != (base, path) or int(nxt.group(2)) <= int(pieces[j].group(2)):
                break
            if "{{" in between:
                break
            if sep is None:
                sep = between
            elif between != sep:
                break
            j += 1
        if j > i and sep is not None and sep.strip() in _SEPARATORS:
            found.append((base, path, sep, first.start(), pieces[j].end()))
        i = j + 1
    return found


def guard_writes(template: Template, read_only: Collection[str]) -> tuple[Template, list[Guard]]:
    """Each call that may write and reads every element of a list (through a join step, or `[*]`) gets
    `when: {ref: <the list>}`; a step that has a `when` already keeps it."""
    joins = {s.name: s.input["list"] for s in template.steps if s.code == JOIN_CODE and isinstance(s.input, dict)}

    def guard(step: StepSpec) -> Guard | None:
        over = _whole_list(step.input, joins)
        return Guard(step.name, over) if over is not None else None

    return _guarded(template, read_only, guard)


def guard_reads_for(template: Template, read_only: Collection[str]) -> Template:
    """A read whose answer only conditional calls use (the clock read for a `published_at` written only while the
    post is a draft), with the code steps between them, runs under the same condition: where the write is skipped,
    a careful agent does not read for it either. Not where the condition reads what the read gives."""
    by_name = {step.name: step for step in template.steps}
    readers: dict[str, set[str]] = {}
    for step in template.steps:
        for root in {ref.root for ref in refs_in(values_read(step))}:
            readers.setdefault(root, set()).add(step.name)
    guarded: dict[str, When] = {}
    for step in template.steps:
        if step.tool is None or step.tool not in read_only or step.when is not None or step.for_each is not None:
            continue
        between, ends = _downstream(step.name, readers, by_name)
        whens = [by_name[end].when for end in sorted(ends)]
        when = whens[0] if whens and all(w == whens[0] for w in whens) else None
        if when is None or {ref.root for ref in refs_in([leaf.ref for leaf in when.leaves()])} & {step.name, *between}:
            continue  # (a call no condition holds back, several conditions, or a condition on this very read)
        guarded |= dict.fromkeys((step.name, *between), when)
    if not guarded:
        return template
    steps = tuple(replace(step, when=guarded[step.name]) if step.name in guarded else step for step in template.steps)
    return parse_template(template_to_dict(replace(template, steps=steps)))


def _downstream(
    name: str, readers: Mapping[str, set[str]], by_name: Mapping[str, StepSpec]
) -> tuple[set[str], set[str]]:
    """(the code steps that, one after another, pass `name`'s answer on; the calls that use it at the end)."""
    between: set[str] = set()
    ends: set[str] = set()
    todo = list(readers.get(name, ()))
    while todo:
        reader = by_name[todo.pop()]
        if reader.code is not None and reader.tool is None and reader.when is None and reader.for_each is None:
            if reader.name not in between:
                between.add(reader.name)
                todo += readers.get(reader.name, ())
        else:
            ends.add(reader.name)
    return between, ends


def _guarded(
    template: Template, read_only: Collection[str], guard_of: Callable[[StepSpec], Guard | None]
) -> tuple[Template, list[Guard]]:
    """The template with the `when` of the guard `guard_of` finds for each call that may write and has no `when`
    or `for_each` of its own yet."""
    guards: list[Guard] = []
    steps: list[StepSpec] = []
    for step in template.steps:
        if step.tool is not None and step.tool not in read_only and step.when is None and step.for_each is None:
            guard = guard_of(step)
            if guard is not None:
                guards.append(guard)
                step = replace(step, when=guard.when)
        steps.append(step)
    if not guards:
        return template, []
    return parse_template(template_to_dict(replace(template, steps=tuple(steps)))), guards


def _whole_list(value: JSON, joins: dict[str, JSON]) -> str | None:
    text = json.dumps(value)
    if "[*]" not in text and not any(f"@{name}" in text for name in joins):
        return None  # most steps: no whole list read (a cheap test before parsing refs)
    for ref in refs_in(value):
        if ref.root in joins and isinstance(joins[ref.root], str):
            return str(joins[ref.root])
    texts = [value] if isinstance(value, str) else re.findall(r'"(@[^"]*)"', json.dumps(value))
    for text in texts:
        m = _EVERY_RE.match(text)
        if m is not None:
            return f"@{m.group(1)}"
    return None


def _free(base: str, taken: set[str]) -> str:
    n = 1
    while f"{base}_{n}" in taken:
        n += 1
    return f"{base}_{n}"


# `@step.path[n]` then the field read of that element (`.uid`): a step ref taking one element by position.
_ELEMENT_RE: Final = re.compile(r"^(@(?!input\b|item\b|index\b)[A-Za-z_]\w*(?:\.[A-Za-z_][\w-]*)*)\[(\d+)\]\.")
_INDEXED_RE: Final = re.compile(r"@[A-Za-z_][\w.-]*\[\d+\]\.")
_MIN_STATE: Final = 0.4  # a state is a word (`strength` of `ERROR`, `failed`: 0.45), not an empty or one-letter flag


def guard_on_state(
    template: Template, read_only: Collection[str], outputs: Mapping[str, JSON]
) -> tuple[Template, list[Guard]]:
    """A call that may write and acts on one element of a list (`@l.items[0].uid`) whose category field sets
    it apart from every other element, while those share a value there (one `ERROR` among `READY`s), gets
    `when: {ref: <that field>, eq: <its value>}`: the agent acted because of that state; where the element
    is in the others' state, a careful agent leaves it alone. One element, or no field that sets it apart:
    no condition (nothing tells why the agent acted)."""
    scope = MappingScope(steps=dict(outputs), inputs={})  # once: a copy per step would grow with the recording

    def guard(step: StepSpec) -> Guard | None:
        found = _state_of(step.input, scope)
        return Guard(step.name, found[0], found[1]) if found is not None else None

    return _guarded(template, read_only, guard)


def guard_on_picks(
    template: Template, read_only: Collection[str], picks: Sequence[Pick]
) -> tuple[Template, list[Guard]]:
    """A call that may write and acts on the element a pick by state found (`@pick_status.id`, the `authorized`
    payment) gets `when: {ref: <the pick>}`: where no element is in that state the pick gives null, and the
    call is skipped, as a careful agent would leave it."""
    by_state = [f"@{pick.step}" for pick in picks if pick.state and not pick.best]

    def guard(step: StepSpec) -> Guard | None:
        text = json.dumps(step.input)
        over = next((ref for ref in by_state if re.search(re.escape(ref) + r"(?![\w])", text)), None)
        return Guard(step.name, over, picked=True) if over is not None else None

    return _guarded(template, read_only, guard) if by_state else (template, [])


# A call that mends what failed or stopped (`application-redeploy`, `retryBuild`, `restart_container`), and the
# states that ask for it: the agent redeployed *because* the read showed `error`.
_REMEDIES: Final = frozenset(
    {"redeploy", "rerun", "resubmit", "rebuild", "retest", "restart", "requeue", "retrigger", "reprocess", "retry"}
    | {"rollback", "start", "resume", "unpause"}
)
_FAILED_RE: Final = re.compile(
    r"(?i)^(?:error|errored|failed|failure|failing|crashed|broken|unhealthy|dead|exited|stopped|paused|timed_?out"
    r"|offline|down|halted|shut_?off)$"
)
_STATE_KEY_RE: Final = re.compile(r"(?i)status|state|phase|health|conclusion")
_WORD_RE: Final = re.compile(r"[a-z]+|[A-Z][a-z]*")


def guard_on_checks(
    template: Template, read_only: Collection[str], outputs: Mapping[str, JSON]
) -> tuple[Template, list[Guard]]:
    """A call that mends (redeploys, reruns, restarts) what an earlier read of the same thing showed failed or
    stopped (`applicationStatus: "error"` of the app it then redeploys) gets `when: {ref: <that state>, eq:
    <it>}`: where the read shows the thing healthy, a careful agent leaves it alone. The read is of the same
    thing when the call names it the way the read did (the same ref) or reads it from the read."""
    order = {step.name: at for at, step in enumerate(template.steps)}
    reads = [step for step in template.steps if step.tool in read_only]
    because = "a read of the same thing showed it in that state when recorded: it is mended only then"

    def guard(step: StepSpec) -> Guard | None:
        words = {w.lower() for w in _WORD_RE.findall(step.tool.rpartition("__")[2] if step.tool else "")}
        # a generic call names its action in an argument: `send_power_action(signal="start")`
        words |= {v.lower() for v in (step.input.values() if isinstance(step.input, dict) else ()) if _is_word(v)}
        if not words & _REMEDIES:
            return None
        mine = {ref.text for ref in refs_in(step.input)}
        roots = {ref.root for ref in refs_in(step.input)}
        for read in reversed([r for r in reads if order[r.name] < order[step.name]]):
            if read.name in roots or mine & {ref.text for ref in refs_in(read.input)}:
                found = _failed_state(outputs.get(read.name))
                if found is not None:
                    return Guard(step.name, f"@{read.name}.{found[0]}", found[1], because=because)
        return None

    return _guarded(template, read_only, guard)


def guard_on_absence(
    template: Template, read_only: Collection[str], outputs: Mapping[str, JSON]
) -> tuple[Template, list[Guard]]:
    """A call that may write after a read of the same thing that found nothing (the events in the slot it then
    books: `[]`) gets `when: {ref: <that list>, eq: []}`: where something is there already, a careful agent
    writes nothing. The read is of the same thing when the two send two values at least alike (the calendar and
    the slot's start; one shared id could be a parent whose list is merely empty today)."""
    order = {step.name: at for at, step in enumerate(template.steps)}
    # (a server that annotates nothing still names its reads: `list-events`, `get_alias`)
    reads = [step for step in template.steps if step.tool and (step.tool in read_only or named_read(step.tool))]
    empty = [(read, path, _sent(read)) for read in reads if (path := _empty_at(outputs.get(read.name))) is not None]
    because = "the read of the same thing found nothing when recorded: the call is made only then"

    def guard(step: StepSpec) -> Guard | None:
        sent = _sent(step)
        for read, path, theirs in reversed([e for e in empty if order[e[0].name] < order[step.name]]):
            if len(sent & theirs) >= 2:
                return Guard(step.name, f"@{read.name}{path}", [], because=because)
        return None

    return _guarded(template, read_only, guard)


def _empty_at(output: JSON) -> str | None:
    """The path of the empty list a read answered (`[]`, or the one list of an object: `{"events": []}`)."""
    if output == []:
        return ""
    lists = [(k, v) for k, v in output.items() if isinstance(v, list)] if isinstance(output, dict) else []
    if len(lists) == 1 and lists[0][1] == [] and _KEY_RE.fullmatch(lists[0][0]):
        return f".{lists[0][0]}"
    return None


def _sent(step: StepSpec) -> set[str]:
    """The refs and the longer texts a call's arguments send (not its switches and small numbers)."""
    texts = {v for _, v in walk(step.input) if isinstance(v, str) and len(v) >= 3}
    return {r.text for r in refs_in(step.input)} | texts


def _is_word(value: JSON) -> bool:
    return isinstance(value, str) and value.isalpha() and value.isascii()


def _failed_state(output: JSON) -> tuple[str, str] | None:
    """The one field of a read's object (or of an object it holds) whose key names a state and whose value is a
    failed or stopped one."""
    if not isinstance(output, dict):
        return None
    found = [
        (f"{outer}.{key}" if outer else key, value)
        for outer, fields in [("", output), *((k, v) for k, v in output.items() if isinstance(v, dict))]
        if isinstance(fields, dict) and (not outer or _KEY_RE.fullmatch(outer))
        for key, value in fields.items()
        if _KEY_RE.fullmatch(key) and _STATE_KEY_RE.search(key) and isinstance(value, str) and _FAILED_RE.match(value)
    ]
    return found[0] if len(found) == 1 else None


def guard_on_transitions(
    template: Template, read_only: Collection[str], picks: Sequence[Pick], outputs: Mapping[str, JSON]
) -> tuple[Template, list[Guard]]:
    """A call that may write a picked element's state (`status: "published"` onto the post picked by its slug,
    a `draft`) to one that another element of its list is in already runs only while the element is in the
    state it was: `when: {ref: <pick>.status, eq: "draft"}`. Where the named post is published already, a careful
    agent leaves it alone ("publish it if it is still a draft")."""
    scope = MappingScope(steps=dict(outputs), inputs={})
    named = {f"@{pick.step}": pick for pick in picks if not pick.state and not pick.best}

    def guard(step: StepSpec) -> Guard | None:
        roots = {f"@{ref.root}" for ref in refs_in(step.input)} & set(named)
        for root in sorted(roots):
            try:
                listed = resolve(named[root].replaces.rsplit("[", 1)[0], scope)
                element = resolve(named[root].replaces, scope)
            except RefError:
                continue
            if isinstance(element, dict) and isinstance(listed, list):
                found = _transition(step, element, [e for e in listed if isinstance(e, dict) and e is not element])
                if found is not None:
                    path, was, written = found
                    because = f"it moves the element out of that state, into {written!r}, where others are already"
                    return Guard(step.name, f"{root}.{path}", was, because=because)
        return None

    return _guarded(template, read_only, guard)


def guard_sequels(
    template: Template, read_only: Collection[str], guards: Sequence[Guard]
) -> tuple[Template, list[Guard]]:
    """A call that may write, ordered after a conditional write and acting on what it acts on (`start` the
    server, then `say` in its console), is the rest of what the agent did because of that state: it gets the
    same `when`. Where the first is skipped, a careful agent does not announce what it did not do."""
    by_step = {guard.step: guard for guard in guards if guard.value is not None}
    specs = {step.name: step for step in template.steps}
    because = "it follows a write made only in that state, on the same thing"

    def guard(step: StepSpec) -> Guard | None:
        mine = {ref.text for ref in refs_in(step.input) if ref.root != "item"}
        for name in step.depends_on:
            first = by_step.get(name)
            if first is not None and mine & {ref.text for ref in refs_in(specs[name].input)}:
                return replace(first, step=step.name, because=because)
        return None

    return _guarded(template, read_only, guard) if by_step else (template, [])


def guard_on_copies(
    template: Template, read_only: Collection[str], outputs: Mapping[str, JSON]
) -> tuple[Template, list[Guard]]:
    """A call that may write and sends a flag copied from one read (`@get_setting_value_1.value`, `_copies`) onto
    what another read of the same tool showed gets `when: {ref: <the other's field>, neq: <the copied one>}`: where
    the two agree already, a careful agent writes nothing. The other read is the one that names what the call names
    and the source does not (the target environment)."""
    scope = MappingScope(steps=dict(outputs), inputs={})
    by_name = {step.name: step for step in template.steps}

    def guard(step: StepSpec) -> Guard | None:
        for ref in refs_in(step.input):
            source = by_name.get(ref.root)
            copied = _resolved(ref.text, scope) if source is not None and ref.path else None
            if source is None or not isinstance(copied, bool):
                continue
            for other in template.steps:
                if other.name in (source.name, step.name) or other.tool != source.tool:
                    continue
                there = _resolved(f"@{other.name}.{ref.path}", scope)
                target = (_named(step) & _named(other)) - _named(source)
                if target and isinstance(there, bool) and there != copied:
                    because = "the value it copies there: where the two agree already, there is nothing to write"
                    return Guard(step.name, f"@{other.name}.{ref.path}", ref.text, op="neq", because=because)
        return None

    return _guarded(template, read_only, guard)


def _named(step: StepSpec) -> set[str]:
    """What a step's arguments name: their refs and their values."""
    return {r.text for r in refs_in(step.input)} | {json.dumps(v) for _, v in walk(step.input)}


def _resolved(ref: str, scope: MappingScope) -> JSON:
    try:
        return resolve(ref, scope)
    except RefError:
        return None


def _transition(
    step: StepSpec, element: dict[str, JSON], others: list[dict[str, JSON]]
) -> tuple[str, JSON, JSON] | None:
    """(path, the element's value, the value written) of a state the call moves the element out of: a word it
    writes under a state key, a flag it sets at the element's own path (`config.authorized: true` onto a member
    whose `config.authorized` is false), or the state its verb names (`publish` where others are `published`)."""
    for path, written in _written_states(step.input):
        was = value_at(element, path)
        if type(was) is type(written) and was != written and written in [value_at(o, path) for o in others]:
            return path, was, written
    verbs = {w.lower() for w in _WORD_RE.findall(step.tool.rpartition("__")[2] if step.tool else "")}
    past = {f"{v}d" if v.endswith("e") else f"{v}ed" for v in verbs}
    for key, was in element.items():
        if not (isinstance(was, str) and _STATE_KEY_RE.search(key) and _KEY_RE.fullmatch(key)):
            continue
        done = {str(o.get(key)) for o in others} & past
        if done and was not in done and was.lower() not in verbs:
            return key, was, sorted(done)[0]
    return None


def _written_states(value: JSON, at: str | None = "") -> Iterator[tuple[str, JSON]]:
    """(key, value) of each literal word a call's arguments set under a key that names a state (at any depth:
    its key is the element's), and (path, value) of each flag they set (`config.authorized`). `at`: the path of
    objects from the arguments down to `value`; None inside a list, where a flag is no field of the element."""
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{at}.{key}" if at else key
            if isinstance(item, str) and _STATE_KEY_RE.search(key) and _KEY_RE.fullmatch(item.replace("-", "_")):
                yield key, item
            elif isinstance(item, bool) and at is not None and _KEY_RE.fullmatch(key):
                yield path, item
            else:
                yield from _written_states(item, path if isinstance(item, dict) and at is not None else None)
    elif isinstance(value, list):
        for item in value:
            yield from _written_states(item, None)


def _state_of(value: JSON, scope: MappingScope) -> tuple[str, JSON] | None:
    if not any(_INDEXED_RE.search(text) for text in _strings(value)):
        return None  # most steps: no element taken by position (a cheap test before parsing refs)
    for ref in refs_in(value):
        m = _ELEMENT_RE.match(ref.text)
        if m is None:
            continue
        try:
            listed = resolve(m.group(1), scope)
        except RefError:
            continue
        at = int(m.group(2))
        if not isinstance(listed, list) or at >= len(listed) or not isinstance(listed[at], dict):
            continue
        field = _setting_apart(listed[at], [e for i, e in enumerate(listed) if i != at])
        if field is not None:
            return f"{m.group(1)}[{at}].{field}", listed[at][field]
    return None


def _setting_apart(element: dict[str, JSON], others: list[JSON]) -> str | None:
    """The field whose word value is the element's alone, while two other elements at least share one value
    there (a category, not an id); the strongest word when several do."""
    if len(others) < 2 or not all(isinstance(o, dict) for o in others):
        return None
    found: list[tuple[float, str]] = []
    for key, mine in element.items():
        if not isinstance(mine, str) or not _KEY_RE.fullmatch(key) or strength(mine) < _MIN_STATE:
            continue
        theirs = [o.get(key) for o in others if isinstance(o, dict)]
        if not all(isinstance(t, str) for t in theirs) or mine in theirs or len(set(theirs)) == len(theirs):
            continue
        if any(c.isdigit() for c in mine):
            continue  # a version, a date or a count: it changes from one run to the next by itself
        found.append((strength(mine), key))
    return max(found)[1] if found else None


def _strings(value: JSON) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _strings(v)]
    if isinstance(value, list):
        return [t for v in value for t in _strings(v)]
    return []
