"""Per-step inference: each literal of a step's input becomes a ref, an input, or stays literal.

For every node of the recorded arguments, in order of precedence: a ref the agent wrote
itself; a redacted value (a secret input); a value the caller named (an input); a whole
value produced by an earlier step (typed exact or whole subtree); pieces of a string
produced earlier (`{{@ref}}`); otherwise a literal. With several recordings, a mapping must
hold in every one of them, and a value that differs between them becomes an input.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Final

from toolreel.core.errors import RefError
from toolreel.core.model import JSON, StepRecord
from toolreel.core.refs import refs_in, resolve
from toolreel.core.secrets import REDACTED
from toolreel.templatizer._candidates import (
    CONFIRMABLE_PIECE,
    NAMED_BY_TOOL,
    Cand,
    backed,
    entity_places,
    id_key,
    in_version,
    is_number,
    item_of,
    may_be_chosen,
    names_entity,
    occurrence_evidence,
    searched_for,
    uniqueness,
    value_at,
)
from toolreel.templatizer._copies import copied_flag
from toolreel.templatizer._index import Bucket, Occurrence, OutputIndex
from toolreel.templatizer._inputs import InputTable, Unexplained
from toolreel.templatizer._inside import after_flag
from toolreel.templatizer._pieces import (
    Piece,
    bounded_finds,
    interpolate,
    labelled_keys,
    labelled_note,
    literal,
    non_overlapping,
    note_after,
    quoted_finds,
    written_twice,
)
from toolreel.templatizer._result import HIGH, MEDIUM, Inference, InferenceKind
from toolreel.templatizer._runs import Run
from toolreel.templatizer._segments import changing
from toolreel.templatizer._siblings import row_siblings, sibling_pieces
from toolreel.templatizer._values import (
    Keys,
    get_at,
    is_cursor_key,
    is_decimal,
    is_trivial,
    json_path,
    key_similarity,
    key_tokens,
    last_key,
    number_text,
    numeric_strength,
    outer_item,
    same,
    same_field,
    snake,
    strength,
    text_strength,
    value_strength,
    walk,
)

__all__ = ["StepInferrer", "StepResult"]

_NAMED_MIN: Final = 3  # a named input is found inside strings from this length on
_NAMED_NUMBER_MIN: Final = 2
_SECRET_KEY_MATCH: Final = 0.7  # a redacted argument links to a redacted output only under a matching key name
# A piece this weak (a word, "33") becomes a ref only beside another piece of the same output.
_BACKED_PIECE: Final = 0.3
_MIXED_ID_RE: Final = re.compile(r"(?=.*[A-Za-z])(?=.*\d)[A-Za-z0-9_-]{5,}")  # `1qa2ws1`, `sess_9f2`
_ALIGNED_WORD: Final = 0.55  # a weaker string (`open`, `high`) is vocabulary, in many items by design
_ELSEWHERE_WORD: Final = 0.8  # below: a value that may sit in another element by chance (not an id)
_Sourced = tuple[Keys, JSON, Bucket]  # an argument's leaf, and the earlier outputs holding it whole
_ENTITY_KEY: Final = 0.9  # key similarity of `<entity>_id` to `id` in the output of a tool about <entity>


@dataclass
class StepResult:
    name: str
    template_input: JSON
    applied: list[tuple[Keys, Inference]] = field(default_factory=list)
    candidates: list[Inference] = field(default_factory=list)
    literals: list[Unexplained] = field(default_factory=list)


class StepInferrer:
    """Infers one consumer step against the index of everything produced before it."""

    def __init__(self, record: StepRecord, index: OutputIndex, inputs: InputTable, runs: Sequence[Run]) -> None:
        self.record = record
        self.index = index
        self.inputs = inputs
        self.runs = runs  # runs[0] is the primary recording
        self.redacted = set(record.redacted)
        self.ids: dict[Keys, int] = {}
        self.backers: set[str] = set()  # steps whose one output holds two or more of these arguments
        self.homes: dict[tuple[str, Keys], int] = {}  # (step, list item) -> how many of these arguments it holds
        self.lead: dict[tuple[str, Keys], tuple[Keys, float]] = {}  # (step, list) -> the item of its strongest value
        self.result = StepResult(record.name, None)

    def infer(self) -> StepResult:
        resolved = self.record.resolved_input if self.record.resolved_input is not None else {}
        written = self.record.input if self.record.input is not None else resolved
        self.ids = self.index.interner.intern_tree(resolved)
        sourced = self._sourced(resolved)
        self.backers = self._joint_sources(sourced)
        self.homes = self._item_homes(sourced)
        self.lead = self._leading_items(sourced)
        self.result.template_input = self._node((), resolved, written)
        self._siblings()
        return self.result

    def _siblings(self) -> None:
        """Small numbers read off the row another argument came from (`_siblings.row_siblings`)."""
        args = self.result.template_input
        if not isinstance(args, dict) or len(self.runs) > 1:
            return
        for key, ref, why in row_siblings(args, self.runs[0].scope()):
            args[key] = self._apply((key,), Cand(ref, "exact", HIGH, why))
            self.result.literals = [lit for lit in self.result.literals if lit.keys != (key,)]

    # ------------------------------------------------------------------ walking

    def _node(self, keys: Keys, value: JSON, written: JSON) -> JSON:
        if isinstance(written, str) and not same(written, value) and refs_in(written):
            return self._apply(keys, Cand(written, "explicit", 1.0, "written as a ref by the agent"))
        if isinstance(value, str) and REDACTED in value and value != REDACTED:
            return self._partial_secret(keys, value)
        if json_path(keys) in self.redacted or value == REDACTED:
            return self._secret(keys, value)
        if keys and "_meta" in keys:
            return literal(value)
        named = self._named_exact(value, keys)
        if named is not None:
            return self._apply(keys, named)
        if isinstance(value, dict | list) and value:
            return self._container(keys, value, written)
        return self._leaf(keys, value)

    def _container(self, keys: Keys, value: dict[str, JSON] | list[JSON], written: JSON) -> JSON:
        if keys:  # the arguments themselves stay an object: a tool call's shape is not a coincidence to find
            per_run = self._per_run(keys, value)
            chosen = self._decide(keys, value, self._exact(keys, value), per_run, allow_input=False)
            if chosen is not None:
                return chosen
        if isinstance(value, dict):
            w = written if isinstance(written, dict) else {}
            return {k: self._node((*keys, k), v, w.get(k, v)) for k, v in value.items()}
        wl = written if isinstance(written, list) and len(written) == len(value) else value
        return [self._node((*keys, i), v, wl[i]) for i, v in enumerate(value)]

    def _leaf(self, keys: Keys, value: JSON) -> JSON:
        per_run = self._per_run(keys, value)
        cands = self._exact(keys, value) + self._coerced(keys, value)
        if isinstance(value, str):
            # An earlier output holding the whole value (`dlq.orders` in a listing) says where it was read from;
            # an input inside it (`dlq.`, the prefix the user named) only says which ones were picked.
            whole = any(c.kind == "exact" and c.confidence == "high" for c in cands)
            cands += [c for c in self._substrings(keys, value) if not (whole and c.kind == "input")]
        chosen = self._decide(keys, value, cands, per_run, allow_input=True)
        tool = f"{self.record.server}__{self.record.tool}" if self.record.server else self.record.tool or ""
        if chosen is not None:
            note = note_after(value, chosen) if isinstance(value, str) and isinstance(chosen, str) else None
            if note is not None:  # `Call with {{first}} {{last}}: <note>`: the note may be the user's
                self.result.literals.append(Unexplained(self.record.name, keys, note, tool, note=True))
            elif isinstance(value, str) and isinstance(chosen, str) and "{{" in chosen:  # a version inside may be
                self.result.literals.append(Unexplained(self.record.name, keys, value, tool, built=True))
            return chosen
        if may_be_chosen(value, cands):
            self.result.literals.append(Unexplained(self.record.name, keys, value, tool, self._list_size(keys)))
            if isinstance(value, str) and (note := labelled_note(value)) is not None:
                self.result.literals.append(Unexplained(self.record.name, keys, note, tool, note=True))
                for key in labelled_keys(value):  # (the ticket the note is about: the user's too)
                    self.result.literals.append(Unexplained(self.record.name, keys, key, tool))
        return literal(value)

    def _list_size(self, keys: Keys) -> int:
        """The length of the list holding `keys` as an element (0 when it is no list element)."""
        if not keys or not isinstance(keys[-1], int):
            return 0
        _, parent = get_at(self.record.resolved_input if self.record.resolved_input is not None else {}, keys[:-1])
        return len(parent) if isinstance(parent, list) else 0

    # ------------------------------------------------------------------ deciding

    def _decide(
        self, keys: Keys, value: JSON, cands: list[Cand], per_run: list[tuple[bool, JSON]], *, allow_input: bool
    ) -> JSON | None:
        """Apply the best candidate (or a new input when runs disagree); report medium ones; None: literal."""
        varies = any(found and not same(other, value) for found, other in per_run[1:])
        if len(self.runs) > 1:
            holding = [c for c in cands if self._holds(c.value, keys, per_run)]
            if varies:
                return self._varying(keys, value, holding, per_run, allow_input)
            cands = holding
        cands.sort(key=lambda c: c.key, reverse=True)
        best = cands[0] if cands else None
        if best is not None and best.confidence == "high":
            more = [c for c in cands[1:] if c.kind == "substring" and c.confidence == "medium"]
            self.result.candidates += [self._inference(keys, c) for c in more[:1]]
            return self._apply(keys, best)
        if best is not None and best.confidence == "medium":
            self.result.candidates.append(self._inference(keys, best))
        return None

    def _varying(
        self, keys: Keys, value: JSON, holding: list[Cand], per_run: list[tuple[bool, JSON]], allow_input: bool
    ) -> JSON | None:
        confirmable = [c for c in holding if c.kind != "coerced" or c.value.startswith("{{")]
        if confirmable:
            best = max(confirmable, key=lambda c: c.key)
            runs = sum(1 for found, _ in per_run if found)
            evidence = f"{best.why}; holds in all {runs} recordings, whose values differ"
            return self._apply(keys, Cand(best.value, "confirmed", max(best.score, 0.95), evidence))
        if not allow_input:
            return None
        return self._apply(keys, changing(self.record.name, keys, value, per_run, self.runs, self.inputs))

    def _holds(self, template_value: str, keys: Keys, per_run: list[tuple[bool, JSON]]) -> bool:
        """True unless some other recording, where the step has this argument, resolves it differently."""
        for run, (found, recorded) in zip(self.runs[1:], per_run[1:], strict=True):
            if not found:
                continue
            try:
                if not same(resolve(template_value, run.scope()), recorded):
                    return False
            except RefError:
                return False
        return True

    def _per_run(self, keys: Keys, value: JSON) -> list[tuple[bool, JSON]]:
        """The argument at `keys` of this step in each recording (found?, value); [0] is this one."""
        out: list[tuple[bool, JSON]] = [(True, value)]
        for run in self.runs[1:]:
            record = run.steps.get(self.record.name)
            out.append(get_at(record.resolved_input, keys) if record is not None else (False, None))
        return out

    def _apply(self, keys: Keys, cand: Cand) -> str:
        self.result.applied.append((keys, self._inference(keys, cand)))
        return cand.value

    def _inference(self, keys: Keys, cand: Cand) -> Inference:
        return Inference(
            step=self.record.name,
            input_path=json_path(keys),
            ref=cand.value,
            confidence=cand.confidence,
            score=cand.score,
            evidence=cand.why,
            kind=cand.kind,
        )

    # ------------------------------------------------------------------ inputs

    def _secret(self, keys: Keys, value: JSON) -> JSON:
        produced = self._produced_secret(keys) if value == REDACTED else None
        if produced is not None:
            return self._apply(keys, produced)
        name = self.inputs.secret(keys, value if isinstance(value, str) else REDACTED)
        return self._apply(keys, Cand(f"@input.{name}", "secret", 1.0, "redacted when recorded: always an input"))

    def _produced_secret(self, keys: Keys) -> Cand | None:
        """A ref to the latest earlier output holding a redacted value under a matching key (a login's token
        passed on): the ref carries the value at replay time and is no secret itself."""
        key = last_key(keys)
        best: tuple[float, int, Occurrence] | None = None
        for occ in self.index.secrets:
            sim = key_similarity(key, occ.key, occ.tool)
            if sim >= _SECRET_KEY_MATCH and (best is None or (sim, occ.order) > best[:2]):
                best = (sim, occ.order, occ)
        if best is None:
            # `auth_token` <- `session_token`: the same kind of secret, when only one step produced one
            tail = key_tokens(key or "")[-1:]
            same_kind = [occ for occ in self.index.secrets if tail and key_tokens(occ.key or "")[-1:] == tail]
            if len({(occ.step, occ.keys) for occ in same_kind}) == 1:
                best = (_SECRET_KEY_MATCH, same_kind[0].order, same_kind[0])
        if best is None:
            return None
        sim, _, occ = best
        evidence = (
            f"output {json_path(occ.keys)} of step {occ.step} -> input {json_path(keys)}: a secret the step "
            f"produced (both redacted when recorded); key similarity {sim:.2f}"
        )
        return Cand(occ.ref, "exact", min(1.0, 0.7 + 0.3 * sim), evidence)

    def _partial_secret(self, keys: Keys, value: str) -> JSON:
        """A string holding a redacted value: the secret becomes an input, high pieces around it refs."""
        name = self.inputs.secret(keys, REDACTED)
        secrets: list[Piece] = []
        start = value.find(REDACTED)
        while start >= 0:
            secrets.append(Piece(start, start + len(REDACTED), f"@input.{name}", 2.0))
            start = value.find(REDACTED, start + len(REDACTED))
        pieces, evidence = self._output_pieces(keys, value)
        pieces += self._input_pieces(value, derived=len(self.runs) > 1)
        chosen = non_overlapping(secrets + [p for p in pieces if p.score >= HIGH])
        why = "; ".join(["holds a redacted value: always an input", *evidence])
        return self._apply(keys, Cand(interpolate(value, chosen), "secret", 1.0, why))

    def _named_exact(self, value: JSON, keys: Keys) -> Cand | None:
        if value is None:
            return None
        for name, named in self.inputs.named.items():
            if same(named, value):
                return Cand(f"@input.{name}", "input", 1.0, f"the value of input {name!r}")
        # a number input passed as its text: "4521903", however short after a vector's flag (`["--team", "3"]`)
        if isinstance(value, str) and (len(value) >= _NAMED_MIN or after_flag(self.record.resolved_input or {}, keys)):
            for name, named in self.inputs.named.items():
                if number_text(named) == value:
                    return Cand(f"{{{{@input.{name}}}}}", "input", 1.0, f"the text of input {name!r}")
        return None

    def _input_pieces(self, value: str, *, derived: bool) -> list[Piece]:
        """Inputs found inside `value`: the named ones, and (several recordings) the derived ones."""
        pieces: list[Piece] = []
        for name, known in self.inputs.values[0].items():
            if (name not in self.inputs.named and not derived) or self.inputs.specs[name].secret:
                continue
            text = known if isinstance(known, str) else number_text(known)
            # a number the user named (a threshold: `> 30`) is found from two digits on, as a whole word
            shortest = _NAMED_MIN if isinstance(known, str) or name not in self.inputs.named else _NAMED_NUMBER_MIN
            if text is not None and (len(text) >= shortest or (isinstance(known, str) and name in self.inputs.named)):
                # (shorter: only quoted whole, a query's value `u.country == "DE"`, never letters of a word)
                finds = bounded_finds(value, text) if len(text) >= shortest else quoted_finds(value, text)
                pieces += [Piece(s, e, f"@input.{name}", 1.0) for s, e in finds]
        return pieces

    # ------------------------------------------------------------------ candidates from outputs

    def _exact(self, keys: Keys, value: JSON) -> list[Cand]:
        if value is None or isinstance(value, bool):
            copied = copied_flag(self.runs[0], self.record, keys, value)
            return [Cand(copied, "exact", HIGH, f"{copied}, the one of two reads that disagree")] if copied else []
        # A cursor links only to a cursor: a cursor equal to anything else is chance.
        bucket = self.index.exact(self.ids.get(keys), is_cursor_key(last_key(keys)))
        if not bucket.seen:
            return self._own_stamp(keys)
        kind: InferenceKind = "subtree" if isinstance(value, dict | list) else "exact"
        weight = value_strength(value)
        places = entity_places(bucket)
        scored = [(occ.step, self._scored(keys, occ, kind, weight, places, occ.ref)) for occ in bucket.sample()]
        # Numbers only: a word such as `person` or `high` is vocabulary, shared by outputs and calls by design.
        if is_number(value) and bucket.seen <= 2 and not is_trivial(value):
            return backed(scored, self.backers, floor=0.0)
        return [cand for _, cand in scored]

    def _own_stamp(self, keys: Keys) -> list[Cand]:
        """A record's own timestamp passed back under its own key beside the record's id (`updated_at` of the post
        being edited: optimistic locking). Timestamps are no producers otherwise: they equal others by chance."""
        key = last_key(keys)
        out: list[Cand] = []
        for occ in self.index.stamp(self.ids.get(keys)):
            home = item_of(occ.keys)
            same_key = key is not None and occ.key is not None and snake(occ.key) == snake(key)
            if same_key and home is not None and self.homes.get((occ.step, home), 0) >= 1:
                why = f"the {occ.key} of the element of {occ.step} whose other values this call sends"
                out.append(Cand(occ.ref, "exact", HIGH + 0.05, why))
        return out[:1] if len(out) == 1 else []  # (two such elements: no telling which)

    def _sourced(self, arguments: JSON) -> list[_Sourced]:
        """Each non-trivial leaf of the call's arguments with the earlier outputs that hold it whole: looked up once
        for the questions below (which outputs back two arguments, which items the arguments come from)."""
        return [
            (keys, node, self.index.exact(self.ids.get(keys), is_cursor_key(last_key(keys))))
            for keys, node in walk(arguments)
            if not (isinstance(node, dict | list | bool) or node is None or is_trivial(node) or "_meta" in keys)
        ]

    def _joint_sources(self, sourced: Sequence[_Sourced]) -> set[str]:
        """Steps whose output is the only source of two or more distinct non-trivial argument values.

        Each equality alone may be chance (`36` and `82` are common numbers); both arguments of one call
        equal to two fields of one earlier output (a city's temperature and humidity) are not."""
        found: dict[str, set[int]] = {}
        for keys, _, bucket in sourced:
            if 0 < bucket.seen <= 2:
                for occ in bucket.sample():
                    found.setdefault(occ.step, set()).add(self.ids[keys])
        return {step for step, values in found.items() if len(values) >= 2}

    def _item_homes(self, sourced: Sequence[_Sourced]) -> dict[tuple[str, Keys], int]:
        """For each list item of an earlier output, how many distinct argument values of this call it holds.

        Arguments that came from one item take the same item (structural alignment): the amount of the
        invoice whose id sits in the neighbouring argument, not an equal amount on another page."""
        found: dict[tuple[str, Keys], set[int]] = {}
        for keys, node, bucket in sourced:
            if isinstance(node, str) and value_strength(node) < _ALIGNED_WORD:
                continue  # a word such as `open` sits in many items by design
            for occ in bucket.sample():
                home = item_of(occ.keys)
                if home is not None:
                    found.setdefault((occ.step, home), set()).add(self.ids[keys])
        return {home: len(values) for home, values in found.items()}

    def _leading_items(self, sourced: Sequence[_Sourced]) -> dict[tuple[str, Keys], tuple[Keys, float]]:
        """For each list of an earlier output that this call takes values from, the item holding the strongest of
        them (an id found in one item only): the element the call acts on."""
        lead: dict[tuple[str, Keys], tuple[Keys, float]] = {}
        for _, node, bucket in sourced:
            homes = {(occ.step, home) for occ in bucket.sample() if (home := outer_item(occ.keys)) is not None}
            weight = value_strength(node)
            for step, home in homes:
                if sum(1 for s, h in homes if s == step and h[:-1] == home[:-1]) == 1:
                    known = lead.get((step, home[:-1]))
                    if known is None or weight > known[1]:
                        lead[(step, home[:-1])] = (home, weight)
        return lead

    def _lead_of(self, occ: Occurrence) -> tuple[bool, float] | None:
        """Whether the occurrence sits in the element this call's strongest value comes from (the element it acts
        on), and that value's strength; None outside a list the call takes values from."""
        home = outer_item(occ.keys)
        lead = self.lead.get((occ.step, home[:-1])) if home is not None else None
        return (lead[0] == home, lead[1]) if lead is not None else None

    def _elsewhere(self, occ: Occurrence, weight: float) -> bool:
        """A weak value found in another element of the list this call's strongest value comes from (a tag of
        the first device, beside the id of the third): the call acts on that element, this value is chance."""
        lead = self._lead_of(occ) if weight < _ELSEWHERE_WORD else None
        return lead is not None and not lead[0] and lead[1] > weight

    def _beside_lead(self, occ: Occurrence) -> bool:
        """Found in the element the call's strongest value comes from (its id, its email)."""
        lead = self._lead_of(occ)
        return lead is not None and lead[0] and lead[1] >= _ELSEWHERE_WORD

    def _sought(self, occ: Occurrence) -> bool:
        producer = self.runs[0].steps.get(occ.step)
        return producer is not None and searched_for(producer.resolved_input, self.runs[0].outputs[occ.step], occ.keys)

    def _aligned(self, occ: Occurrence) -> int:
        """How many other arguments of this call come from the same list item as this occurrence."""
        home = item_of(occ.keys)
        return self.homes.get((occ.step, home), 1) - 1 if home is not None else 0

    def _holding(self, occ: Occurrence) -> int:
        """How many arguments of this call come whole from the list item an id inside a text sits in (the session
        whose recording link is the description: its id in the title is that session's, however short). Only an
        id of letters and digits: a word or a number is as often the text's own (`releases`, `#104`)."""
        home, (_, piece) = item_of(occ.keys), get_at(self.runs[0].outputs.get(occ.step), occ.keys)
        mixed = isinstance(piece, str) and _MIXED_ID_RE.fullmatch(piece) is not None
        return self.homes.get((occ.step, home), 0) if home is not None and mixed else 0

    def _coerced(self, keys: Keys, value: JSON) -> list[Cand]:
        if value is None or isinstance(value, bool) or is_trivial(value) or is_cursor_key(last_key(keys)):
            return []
        bucket = self.index.coerced(value)
        if not bucket.seen:
            return []
        numeric = numeric_strength(value) if isinstance(value, str) else None
        weight = numeric if numeric is not None else strength(value)
        # A number into a string interpolates (`{{@x}}` is text); text into a number has no ref syntax.
        wrap = "{{%s}}" if isinstance(value, str) else "%s"
        places = entity_places(bucket)
        return [self._scored(keys, o, "coerced", weight, places, wrap % o.ref) for o in bucket.sample()]

    def _scored(
        self, keys: Keys, occ: Occurrence, kind: InferenceKind, weight: float, places: int, ref: str, piece: float = 0.9
    ) -> Cand:
        """`piece`: what a match inside a longer string is worth against a whole-value match."""
        sim = 1.0 if occ.cursor else key_similarity(last_key(keys), occ.key, occ.tool)
        base = weight * uniqueness(places, weight)
        if kind == "coerced":
            # A number passed on as its text interpolates exactly (`{{@x}}`); text passed on as a number
            # has no ref syntax (a ref keeps the string type): only ever a reported candidate.
            score = base + 0.25 * sim if ref.startswith("{{") else min(0.79, 0.85 * base + 0.15 * sim)
        elif kind == "substring":
            score = piece * base + 0.15 * sim
        else:
            score = base + 0.25 * sim
        aligned = self._aligned(occ) if kind in ("exact", "coerced") else self._holding(occ) if places == 1 else 0
        named_id = kind in ("exact", "coerced") and places == 1 and sim >= NAMED_BY_TOOL and id_key(occ.key)
        if named_id:
            # `board_id: "42"` and the only `id` "42" is that of a board the boards' tool listed: not chance,
            # even when the id is as small as 5 (a template, a feed, a host group of a small installation).
            score = max(score, HIGH)
        if aligned and weight >= _ALIGNED_WORD:
            score = max(score, HIGH) + 0.05  # beside values of the same item: that item, not an equal one
        elif (
            kind == "exact"
            and places == 1
            and (self._beside_lead(occ) or same_field(last_key(keys), occ.key))
            and _named(value_at(self.record.resolved_input, keys))
        ):
            # a name ("Nora") found only in the element whose id or email the call sends, or only under the very
            # field it is passed on as (`first_name: "Noor"`), however short
            score = max(score, HIGH)
        elif (
            kind == "exact"
            and places == 1
            and names_entity(last_key(keys))
            and (sim >= _ENTITY_KEY or self._sought(occ))
        ):
            # `board_id` <- the `id` of a board listed by get_agile_boards (or of the query its search named), found
            # nowhere else: the key names the entity the producer lists, so even a short id ("42") is that entity
            score = max(score, HIGH)
        if is_trivial(value_at(self.record.resolved_input, keys)) and kind != "subtree" and not named_id:
            score = min(score, MEDIUM - 0.01)  # small numbers: only several recordings can confirm them
        elif kind in ("exact", "coerced") and self._elsewhere(occ, weight):
            score = min(score, MEDIUM - 0.01)
        indexes = sum(1 for key in occ.keys if isinstance(key, int))
        evidence = partial(occurrence_evidence, occ, keys, kind, places, sim, aligned)
        return Cand(ref, kind, min(score, 1.0), evidence, rank=(aligned, -indexes, occ.order, -len(occ.keys)))

    def _substrings(self, keys: Keys, value: str) -> list[Cand]:
        """The string with earlier outputs and inputs found inside it as `{{@ref}}` pieces.

        At most two candidates: with the high-confidence pieces only (applied if any is from an
        output or input), and with the medium ones too (only ever reported).
        """
        pieces, evidence = self._output_pieces(keys, value)
        pieces += self._input_pieces(value, derived=len(self.runs) > 1)
        chosen = non_overlapping(pieces)
        if not chosen:
            return []
        high = [p for p in chosen if p.score >= HIGH]
        from_inputs = [p.ref for p in chosen if p.ref.startswith("@input.")]
        if from_inputs:
            evidence.append(f"contains the value of {', '.join(sorted(set(from_inputs)))}")
        why = "; ".join(evidence)
        out: list[Cand] = []
        if high:
            kind: InferenceKind = "input" if all(p.ref.startswith("@input.") for p in high) else "substring"
            out.append(Cand(interpolate(value, high), kind, min(p.score for p in high), why))
        if len(high) < len(chosen):
            out.append(Cand(interpolate(value, chosen), "substring", min(p.score for p in chosen), why))
        return out

    def _output_pieces(self, keys: Keys, value: str) -> tuple[list[Piece], list[str]]:
        found: list[tuple[int, int, str, list[tuple[str, Cand]]]] = []
        for start, end, text in self.index.substrings(value):
            if is_decimal(text) and in_version(value, start, end):
                continue  # "5.7" inside "5.7.1" is a version, not an amount
            buckets = self.index.texts(text)
            places = sum(b.seen for b in buckets)
            numeric = numeric_strength(text)
            weight = numeric if numeric is not None else text_strength(text)
            # A decimal delimited in a sentence is as telling as the number itself; other pieces count less.
            piece = 1.0 if is_decimal(text) else 0.9
            scored = [
                (o.step, self._scored(keys, o, "substring", weight, places, o.ref, piece))
                for b in buckets
                for o in b.sample()
            ]
            found.append((start, end, text, scored))
        siblings = sibling_pieces(
            value, [(s, e, [c.value for _, c in sc]) for s, e, _, sc in found], self.runs[0].scope()
        )
        paired = {start for start, _, _ in siblings}
        by_step: dict[str, set[str]] = {}
        given = {value for value in self.runs[0].inputs.values() if isinstance(value, str)}
        for _, _, text, scored in found:
            if text in given:
                continue  # the user's text, in an output too (`mweber`, a handler in the table): it backs no other
            for step, _ in scored:
                by_step.setdefault(step, set()).add(text)
        pieces: list[Piece] = [Piece(start, end, ref, HIGH) for start, end, ref in siblings]
        evidence: list[str] = [
            f"{value[start:end]!r} at [{start}:{end}] is {ref}, beside another field of the same record"
            for start, end, ref in siblings
        ]
        twice = written_twice(self.record.resolved_input, keys, [text for _, _, text, _ in found])
        for start, end, text, scored in found:
            if start in paired:
                continue
            backers = {step for step, texts in by_step.items() if texts - {text}}
            if text in twice:  # the same number written in two texts of this call: copied from one output
                backers |= {step for step, _ in scored}
            best = max(backed(scored, backers, floor=_BACKED_PIECE), key=lambda c: c.key)
            # With several recordings a weak piece (`#311`) is kept as a candidate: only one that gives every
            # recording's text is ever applied (`_varying`), which chance does not do when the texts differ.
            if best.score >= (MEDIUM if len(self.runs) == 1 else CONFIRMABLE_PIECE):
                pieces.append(Piece(start, end, best.value, best.score))
                evidence.append(f"{text!r} at [{start}:{end}] is {best.why}")
        return pieces, evidence


def _named(value: JSON) -> bool:
    """A capitalized name (`Nora`, `Feld`), not a lower-case word of the vocabulary (`user`, `source`)."""
    return isinstance(value, str) and value[:1].isupper() and not value.isupper()
