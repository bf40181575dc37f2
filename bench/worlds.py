"""Held-out sessions written blind, judged on text and on behaviour: `.venv/bin/python bench/worlds.py [-v]`.

For each session of fixtures/recordings/blind/ (`--set worlds`/`worlds2`…`worlds19`: the once-blind sessions of
fixtures/recordings/worlds*/,
`--set tuned`: the tuned top-level sessions that have a `world2`):
- refs: templatized with the inputs a careful person names (none for several recordings), every value holding a
  ref compared with the expected ones (bench/templatize.py's scoring, extended: a `for_each` is scored under its
  first recorded step, `{"derived_from": [...]}` accepts a value computed from those steps, `{"item": true}` any
  `@item` ref; refs in steps of a per-item group loop are left to the replays; an expected value that is no ref is
  a constant, scored apart: kept when the template puts no ref at its path);
- inputs: templatized naming nothing, the likely inputs compared with the expected input values;
- a plain save, as `toolreel__save_template(name)` does it: the likely inputs applied, then verification;
- replays: the saved template run by the real replayer against `fixtures/world.py` servers playing each changed
  world (`world2`, `world3`), with the world's inputs mapped to the template's input names by recorded value;
  a replay is exact when the servers got exactly the calls a correct agent makes there (writes in order);
- parallel: groups of independent read-only steps must not depend on one another in the saved template.
Prints a table, the figures per kind, then the bars as [PASS]/[FAIL] lines; exits 1 if a bar is missed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _world_replay import Replay, canonical, input_schemas, map_inputs, read_only_tools, replay_in_world
from templatize import ratio, score_inputs, template_refs

from fixtures.recordings import (
    BLIND_DIR,
    CORPUS_DIR,
    WORLDS2_DIR,
    WORLDS3_DIR,
    WORLDS4_DIR,
    WORLDS5_DIR,
    WORLDS6_DIR,
    WORLDS7_DIR,
    WORLDS8_DIR,
    WORLDS9_DIR,
    WORLDS10_DIR,
    WORLDS11_DIR,
    WORLDS12_DIR,
    WORLDS13_DIR,
    WORLDS14_DIR,
    WORLDS15_DIR,
    WORLDS16_DIR,
    WORLDS17_DIR,
    WORLDS18_DIR,
    WORLDS19_DIR,
    WORLDS_DIR,
    CorpusEntry,
    load_entry,
)
from toolreel.core.errors import TemplateError
from toolreel.core.refs import refs_in
from toolreel.core.template import StepSpec, Template
from toolreel.templatizer import TemplatizeResult, templatize, verify

__all__ = ["RefScore", "Session", "SessionReport", "judge", "load_sessions", "score_refs"]

REFS_P, REFS_R = 0.98, 0.95
INPUTS_P, INPUTS_R = 0.95, 0.90
REPLAY_BAR = 0.95
KINDS = (
    "loops",
    "refs",
    "values-from-text",
    "producer-choice",
    "constants",
    "conditions",
    "parallel",
    # kinds the second blind set brought (fixtures/recordings/blind/README.md)
    "pagination",
    "computed",
    "query-syntax",
    "secret-ref",
    "several-recordings",
)
Found = set[tuple[str, str, str]]
_POSITIONAL = re.compile(r"\[-?\d+\]")


@dataclass(frozen=True, slots=True)
class Session:
    path: Path
    entry: CorpusEntry
    data: Mapping[str, Any]

    @property
    def worlds(self) -> dict[str, Mapping[str, Any]]:
        return {key: self.data[key] for key in sorted(self.data) if re.fullmatch(r"world\d+", key)}

    @property
    def expected(self) -> Mapping[str, Any]:
        return self.data["expected"]  # type: ignore[no-any-return]

    @property
    def read_only(self) -> set[str]:
        return set().union(*(read_only_tools(w) for w in self.worlds.values()))

    @property
    def schemas(self) -> dict[str, dict[str, Any]]:
        """The tools' input schemas, as the gateway knows them at save time (the session's own, else its worlds')."""
        known: dict[str, dict[str, Any]] = {}
        for world in self.worlds.values():
            known.update(input_schemas(world))
        known.update(self.entry.tools)
        return known


@dataclass(slots=True)
class SessionReport:
    name: str
    refs: tuple[int, int, int] = (0, 0, 0)
    inputs: tuple[int, int, int] = (0, 0, 0)
    constants: tuple[int, int] = (0, 0)  # (kept literal, expected)
    verified: bool = False
    replays: dict[str, Replay] = field(default_factory=dict)
    parallel_ok: bool | None = None
    problems: list[str] = field(default_factory=list)


def load_sessions(directory: Path, only: str | None = None) -> list[Session]:
    sessions = []
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if any(re.fullmatch(r"world\d+", key) for key in data) and (only is None or data["name"] == only):
            sessions.append(Session(path, load_entry(path), data))
    return sessions


# --------------------------------------------------------------------------- refs


def _normal(ref: str) -> str:
    """A ref's text with the spacing and quoting of filters made uniform (`== 'a'` and `=="a"` compare equal)."""
    return re.sub(r"\s+", "", ref).replace("'", '"')


def _path(path: str) -> str:
    """An argument path with its bracketed keys written as dotted ones (`$.flags["service-id"]` is how the product
    writes what a session may write `$.flags.service-id`): one spelling per path on both sides."""
    return re.sub(r"""\[(["'])([^"'\[\].]+)\1\]""", r".\2", path)


def _step_tools(entry: CorpusEntry) -> dict[str, str]:
    return {r.name: f"{r.server}__{r.tool}" for r in entry.steps}


def _loop_names(template: Template, loops: Sequence[Mapping[str, Any]], entry: CorpusEntry) -> dict[str, str]:
    """Template step name -> the name its expectations are under: a `for_each` takes its first recorded step's."""
    tools = _step_tools(entry)
    names: dict[str, str] = {}
    taken: set[str] = set()
    for loop in loops:
        if not loop["steps"] or not isinstance(loop["steps"][0], str):
            continue
        first = loop["steps"][0]
        for step in template.steps:
            if step.for_each and step.tool == tools.get(first) and step.name not in taken:
                names[step.name] = first
                taken.add(step.name)
                break
    return names


def _derived(template: Template) -> dict[str, set[str]]:
    """Step -> every step it reads from, directly or through other steps (what a code step computes from)."""
    direct = {s.name: {r.root for r in refs_in(_step_values(s))} - {"input", "item", "index"} for s in template.steps}
    closed: dict[str, set[str]] = {}

    def reach(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        if name in closed:
            return closed[name]
        out = set(direct.get(name, ()))
        for parent in direct.get(name, ()):
            if parent not in seen:
                out |= reach(parent, seen | {name})
        closed[name] = out
        return out

    for name in direct:
        reach(name)
    return closed


def _step_values(step: StepSpec) -> Any:
    return [step.input, step.for_each, *(leaf.ref for leaf in (step.when.leaves() if step.when else ()))]


def _matches(value: str, choice: Any, derived: Mapping[str, set[str]], code: set[str]) -> bool:
    if isinstance(choice, str):
        return _normal(value) == _normal(choice)
    if not isinstance(choice, Mapping):
        return False
    roots = {r.root for r in refs_in(value)}
    if choice.get("item"):
        return bool(roots) and roots <= {"item", "index", "input"} and "item" in roots
    sources = set(choice.get("derived_from", ()))
    # Read straight out of a source: by a path that names what it takes, never by a position in a list
    # (`[2]` is the pick that goes wrong when the list shifts); or through a code step that reads a source.
    direct = {r.root for r in refs_in(value) if r.root in sources and not _POSITIONAL.search(r.path or "")}
    useful = direct | {r for r in roots if r in code and derived.get(r, set()) & sources}
    return bool(useful) and roots <= useful | {"input", "item", "index"} | code


def _constant(choices: Sequence[Any]) -> bool:
    """Whether an expectation is a value that must stay literal (`"ref": 100`, `"ref": "Seeding"`): no choice is a
    ref, a `{{...}}` text, an `item` or a `derived_from`."""
    return not any((isinstance(c, Mapping) and ({"item", "derived_from"} & c.keys())) or refs_in(c) for c in choices)


@dataclass(frozen=True, slots=True)
class RefScore:
    """A session's refs against its expectations, and the constants it kept literal."""

    hits: int
    found: int
    expected: int
    problems: list[str]
    constants: tuple[int, int] = (0, 0)  # (kept literal, expected)


def score_refs(session: Session, result: TemplatizeResult) -> RefScore:
    """The refs found against the refs expected, with loops, derived values and item refs. An expected value that
    is no ref is a constant: not a ref to find (the refs' recall leaves it out), but kept only if the template
    puts no ref at its path or under it; a ref there counts against precision as any unexpected ref does."""
    template, expected_data = result.template, session.expected
    loops = expected_data.get("loops", [])
    rename = _loop_names(template, loops, session.entry)
    grouped = {
        s for loop in loops if loop["steps"] and isinstance(loop["steps"][0], list) for g in loop["steps"] for s in g
    }
    expected: dict[tuple[str, str], list[Any]] = {}
    for ref in expected_data["refs"]:
        expected[ref["step"], _path(ref["input_path"])] = ref["ref"] if isinstance(ref["ref"], list) else [ref["ref"]]
    for loop in loops:
        if loop["steps"] and isinstance(loop["steps"][0], str):
            first = loop["steps"][0]
            expected[first, "for_each"] = loop["over"] if isinstance(loop["over"], list) else [loop["over"]]
            for ref in loop["refs"]:
                expected[first, _path(ref["input_path"])] = ref["ref"] if isinstance(ref["ref"], list) else [ref["ref"]]
    # A paged read is one script step named after its first page, its arguments under `args`: the later pages'
    # arguments are its own work, judged by the replays (as a loop's later calls are).
    paged = {loop.step: loop.members for loop in result.loops if loop.tool == "script" and not loop.over}
    later = {member for members in paged.values() for member in members[1:]}
    expected = {key: choices for key, choices in expected.items() if key[0] not in later}
    found = {
        (step, "$" + path.removeprefix("$.args") if step in paged and path.startswith("$.args") else path, value)
        for step, path, value in _found(template, rename, grouped)
    }
    if len(session.entry.recordings) > 1:
        found = {
            (step, path, _named_as(value, result.input_values, session.entry.inputs)) for step, path, value in found
        }
    derived, code = _derived(template), {s.name for s in template.steps if s.code is not None}
    hits, problems = 0, []
    for step, path, value in sorted(found):
        choices = expected.get((step, path))
        if choices is not None and any(_matches(value, c, derived, code) for c in choices):
            hits += 1
        else:
            want = f" (want {choices[0]!r})" if choices else ""
            problems.append(f"unexpected {step} {path} = {value!r}{want}")
    got = {(step, path) for step, path, _ in found}
    constants = {key: choices for key, choices in expected.items() if _constant(choices)}
    templated = [
        (s, p) for s, p in constants if any(g == s and (q == p or q.startswith((p + ".", p + "["))) for g, q in got)
    ]
    problems += [f"templated constant {s} {p} = {constants[s, p][0]!r}" for s, p in templated]
    refs = {key: choices for key, choices in expected.items() if key not in constants}
    problems += [f"missed {s} {p} = {c[0]!r}" for (s, p), c in refs.items() if (s, p) not in got]
    return RefScore(hits, len(found), len(refs), problems, (len(constants) - len(templated), len(constants)))


def _named_as(value: str, recorded: Mapping[str, Any], expected: Mapping[str, Any]) -> str:
    """Several recordings are templatized with no input named, so an input's name is the template's own
    (`@input.en`): it is written as the expected input whose recorded value it has (`@input.message`), as the
    replays map the worlds' inputs by recorded value."""
    by_value = {canonical(v): k for k, v in expected.items()}
    for name, v in recorded.items():
        known = by_value.get(canonical(v))
        if known is not None and known != name:
            value = re.sub(rf"@input\.{re.escape(name)}(?![\w-])", f"@input.{known}", value)
    return value


def _found(template: Template, rename: Mapping[str, str], grouped: set[str]) -> Found:
    raw = template_refs_of(template)
    found: Found = set()
    for step, path, value in raw:
        spec = next(s for s in template.steps if s.name == step)
        if step in grouped or (grouped and (spec.for_each or spec.script) and step not in rename):
            continue  # a per-item group (two loops, or the script step walking it) is judged by its replays
        if spec.code is not None:
            continue  # a code step's own input is how it computes, not a value of the task
        found.add((rename.get(step, step), _path(path), value))
    return found


def template_refs_of(template: Template) -> Found:
    """bench/templatize.py's refs of the step inputs, plus each `for_each` ref under the path `for_each`."""

    class _Result:  # template_refs reads `.template` only
        def __init__(self, t: Template) -> None:
            self.template = t

    found = template_refs(_Result(template))  # type: ignore[arg-type]
    found |= {(s.name, "for_each", s.for_each) for s in template.steps if s.for_each}
    return found


# --------------------------------------------------------------------------- a session


def template_name(session: str) -> str:
    """The session's name as a template's: at most 64 characters (a session may be named at more length)."""
    return session[:64].rstrip("-_")


def plain_save(session: Session) -> tuple[TemplatizeResult, bool]:
    """What `toolreel__save_template(name)` stores: the likely inputs applied, then verification."""
    recordings, name = session.entry.recordings, template_name(session.entry.name)
    read_only, schemas = session.read_only, session.schemas
    first = templatize(recordings, name=name, read_only=read_only, schemas=schemas)
    chosen = first.ticked_inputs  # thin candidates are proposed unticked and never applied by a plain save
    result = templatize(recordings, name=name, inputs=chosen, read_only=read_only, schemas=schemas) if chosen else first
    return result, verify(result, list(recordings)).verified


def _parallel_ok(session: Session, template: Template) -> bool | None:
    groups = session.expected.get("parallel")
    if not groups:
        return None
    derived = _derived(template)
    depends = {s.name: derived.get(s.name, set()) | set(s.depends_on) for s in template.steps}
    for group in groups:
        members = [m for m in group if m in depends]
        if any(other in depends[m] for m in members for other in members if other != m):
            return False
    return True


async def judge(session: Session) -> SessionReport:
    entry = session.entry
    report = SessionReport(entry.name)
    several = len(entry.recordings) > 1
    named = None if several else dict(entry.inputs)
    with_names = templatize(
        entry.recordings,
        name=template_name(entry.name),
        inputs=named,
        read_only=session.read_only,
        schemas=session.schemas,
    )
    scored = score_refs(session, with_names)
    unnamed = (
        with_names
        if several
        else templatize(
            entry.recordings, name=template_name(entry.name), read_only=session.read_only, schemas=session.schemas
        )
    )
    inputs = score_inputs(entry, unnamed)
    report.refs, report.constants = (scored.hits, scored.found, scored.expected), scored.constants
    report.inputs = inputs[:3]
    report.problems += scored.problems + inputs[3]
    saved, report.verified = plain_save(session)
    report.parallel_ok = _parallel_ok(session, saved.template)
    for key, world in session.worlds.items():
        given = map_inputs(saved.input_values, entry.inputs, world["inputs"])
        report.replays[key] = await replay_in_world(saved.template, world, given)
    return report


# --------------------------------------------------------------------------- report


def _row(report: SessionReport, session: Session) -> str:
    replays = " ".join(
        f"{key[5:]}:{'ok' if r.exact else 'NO'}({len(w['expected_calls'])})"
        for (key, r), w in zip(report.replays.items(), session.worlds.values(), strict=True)
    )
    return (
        f"{report.name:<24} {len(session.entry.recordings):>4} {len(session.entry.steps):>5}  "
        f"{'/'.join(map(str, report.refs)):>10}  {'/'.join(map(str, report.inputs)):>10}  "
        f"{'yes' if report.verified else 'NO':>8}  {replays}"
    )


def _details(report: SessionReport) -> Iterator[str]:
    for problem in report.problems:
        yield f"    {problem}"
    for key, replay in report.replays.items():
        for problem in replay.problems:
            yield f"    {key}: {problem}"


def print_table(pairs: Sequence[tuple[Session, SessionReport]], verbose: bool) -> None:
    print(
        f"{'session':<24} {'runs':>4} {'steps':>5}  {'refs':>10}  {'inputs':>10}  verified  "
        "replays (world:exact(calls))"
    )
    for session, report in pairs:
        print(_row(report, session))
        if verbose:
            for line in _details(report):
                print(line)


def bars(pairs: Sequence[tuple[Session, SessionReport]], part: str) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = []
    for key, (p_bar, r_bar) in (("refs", (REFS_P, REFS_R)), ("inputs", (INPUTS_P, INPUTS_R))):
        ok = sum(getattr(r, key)[0] for _, r in pairs)
        found = sum(getattr(r, key)[1] for _, r in pairs)
        expected = sum(getattr(r, key)[2] for _, r in pairs)
        p, r = ratio(ok, found), ratio(ok, expected)
        print(f"{key:<7} precision {p:.3f} ({ok}/{found})   recall {r:.3f} ({ok}/{expected})")
        out += [
            (f"{part} {key} precision {p:.3f} >= {p_bar}", p >= p_bar),
            (f"{part} {key} recall {r:.3f} >= {r_bar}", r >= r_bar),
        ]
    kept, constants = (sum(r.constants[i] for _, r in pairs) for i in (0, 1))
    if constants:
        print(f"constants kept literal {kept}/{constants}")
    verified = sum(r.verified for _, r in pairs)
    print(f"verified {verified}/{len(pairs)} plain saves")
    replays = [(s, k, rep) for s, r in pairs for k, rep in r.replays.items()]
    exact = sum(rep.exact for _, _, rep in replays)
    share = ratio(exact, len(replays))
    print(f"replays exact {exact}/{len(replays)} ({share:.0%}) in changed worlds")
    for kind in KINDS:
        mine = [rep for s, _, rep in replays if kind in s.data.get("kinds", ())]
        if mine:
            print(f"  {kind:<16} {sum(r.exact for r in mine)}/{len(mine)} exact")
    parallel = [r.parallel_ok for _, r in pairs if r.parallel_ok is not None]
    if parallel:
        print(f"independent reads left parallel in {sum(parallel)}/{len(parallel)} saved templates")
    loops = [rep for s, _, rep in replays if "loops" in s.data.get("kinds", ())]
    out.append((f"{part} replays exact {share:.2f} >= {REPLAY_BAR}", share >= REPLAY_BAR))
    if loops:
        out.append(
            (
                f"{part} loop families exact on other lengths {sum(r.exact for r in loops)}/{len(loops)}",
                all(r.exact for r in loops),
            )
        )
    return out


async def run_all(sessions: Sequence[Session]) -> list[tuple[Session, SessionReport]]:
    return [(session, await _judged(session)) for session in sessions]


async def _judged(session: Session) -> SessionReport:
    """The session's report; a template the templatizer cannot build scores nothing and replays nothing (the
    error is the report's problem), and the other sessions are judged all the same."""
    try:
        return await judge(session)
    except TemplateError as exc:
        problem = f"templatizing failed: {exc}"
        expected = [r["ref"] if isinstance(r["ref"], list) else [r["ref"]] for r in session.expected["refs"]]
        refs = sum(1 for choices in expected if not _constant(choices))
        return SessionReport(
            session.entry.name,
            refs=(0, 0, refs),
            inputs=(0, 0, len(session.entry.inputs)),
            constants=(0, len(expected) - refs),
            replays={key: Replay(False, "not saved", (), (problem,)) for key in session.worlds},
            problems=[problem],
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--set",
        choices=(
            "blind",
            "worlds",
            "worlds2",
            "worlds3",
            "worlds4",
            "worlds5",
            "worlds6",
            "worlds7",
            "worlds8",
            "worlds9",
            "worlds10",
            "worlds11",
            "worlds12",
            "worlds13",
            "worlds14",
            "worlds15",
            "worlds16",
            "worlds17",
            "worlds18",
            "worlds19",
            "tuned",
        ),
        default="blind",
        help="which sessions: blind (default), worlds, worlds2-19 (once blind, tuned now), tuned (with a world2)",
    )
    parser.add_argument("--only", help="one session by name")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every mismatch and every wrong call")
    args = parser.parse_args()
    directory = {
        "blind": BLIND_DIR,
        "worlds": WORLDS_DIR,
        "worlds2": WORLDS2_DIR,
        "worlds3": WORLDS3_DIR,
        "worlds4": WORLDS4_DIR,
        "worlds5": WORLDS5_DIR,
        "worlds6": WORLDS6_DIR,
        "worlds7": WORLDS7_DIR,
        "worlds8": WORLDS8_DIR,
        "worlds9": WORLDS9_DIR,
        "worlds10": WORLDS10_DIR,
        "worlds11": WORLDS11_DIR,
        "worlds12": WORLDS12_DIR,
        "worlds13": WORLDS13_DIR,
        "worlds14": WORLDS14_DIR,
        "worlds15": WORLDS15_DIR,
        "worlds16": WORLDS16_DIR,
        "worlds17": WORLDS17_DIR,
        "worlds18": WORLDS18_DIR,
        "worlds19": WORLDS19_DIR,
        "tuned": CORPUS_DIR,
    }[args.set]
    sessions = load_sessions(directory, args.only)
    if not sessions:
        print(f"no session with a changed world in {directory}", file=sys.stderr)
        return 2
    pairs = anyio.run(run_all, sessions)
    print(f"-- {args.set} sessions ({directory.relative_to(CORPUS_DIR.parents[1])})")
    print_table(pairs, args.verbose)
    print()
    result = bars(pairs, args.set)
    print()
    for label, passed in result:
        print(f"[{'PASS' if passed else 'FAIL'}] {label}")
    return 0 if all(passed for _, passed in result) else 1


if __name__ == "__main__":
    sys.exit(main())
