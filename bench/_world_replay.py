"""A saved template replayed in a changed world: world servers, the new inputs, the calls compared.

The world's servers are `fixtures/world.py` processes (one per server of the world), started from a config
as `toolreel run` starts a template's servers; the template runs in the real replayer (`Engine`) on a SQLite
store of its own. Every server appends the calls it gets to one log file, so the order of writes across
servers is kept.

Inputs of the new world are mapped to the template's input names by the recorded value
(`map_inputs`): a world's `inputs` are keyed by the expected input names of the session, and a template
input whose recorded value is the recorded value of an expected input gets that input's new value.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from fixtures.world import server_entries
from toolreel.core.model import JSON, TemplateDraft
from toolreel.core.store import open_store
from toolreel.core.template import Template
from toolreel.core.template_io import template_to_dict
from toolreel.replayer import Engine, load_template
from toolreel.upstreams.config import parse_config
from toolreel.upstreams.hub import open_upstreams

__all__ = ["Replay", "canonical", "compare_calls", "map_inputs", "read_only_tools", "replay_in_world"]

ROOT = Path(__file__).resolve().parents[1]
REPLAY_SECONDS = 120.0  # a replay of a few steps on a loaded 2-core machine; a hang is a failure, not a wait
# How long the world servers may take to list their tools. `open_upstreams` stops waiting after the hub's ready
# budget (5 s); on a loaded 2-core machine four Python servers starting at once take longer, and the replay was then
# refused for a tool "not listed", which says nothing of the template. Waiting ends when no server is starting.
START_SECONDS = 90.0


@dataclass(frozen=True, slots=True)
class Replay:
    """What a replay in a world did, judged against the calls a correct agent makes there."""

    exact: bool
    status: str
    calls: tuple[dict[str, Any], ...]
    problems: tuple[str, ...]


def read_only_tools(world: Mapping[str, Any]) -> set[str]:
    """`server__tool` of the world's tools annotated read-only (what a gateway learns from tools/list)."""
    return {
        f"{server}__{tool['name']}"
        for server, tools in world.get("tools", {}).items()
        for tool in tools
        if (tool.get("annotations") or {}).get("readOnlyHint") is True
    }


def input_schemas(world: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """`server__tool` -> inputSchema of the world's tools (what a gateway passes the templatizer at save time)."""
    return {
        f"{server}__{tool['name']}": tool["inputSchema"]
        for server, tools in world.get("tools", {}).items()
        for tool in tools
        if isinstance(tool.get("inputSchema"), dict)
    }


def canonical(value: JSON) -> str:
    """A value's one JSON spelling, to compare values of any type (what a world's inputs are mapped by)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def map_inputs(
    template_values: Mapping[str, JSON], expected: Mapping[str, JSON], world_inputs: Mapping[str, JSON]
) -> dict[str, JSON]:
    """The value of each template input in the new world, as a user who knows that world would type it.

    The rule, in order, for a template input whose recorded value is `v`:
    1. `v` is the recorded value of an expected input `k`: the world's value of `k`;
    2. `v` is element `i` of an expected list input `k`: element `i` of the world's `k` (kept if there is none);
    3. `v` is a string holding the recorded string of expected inputs: each replaced by the world's value;
    4. otherwise `v` itself (nothing tells the user to change it).
    """
    by_value = {canonical(value): key for key, value in expected.items()}
    mapped: dict[str, JSON] = {}
    for name, value in template_values.items():
        mapped[name] = _mapped_value(value, by_value, expected, world_inputs)
    return mapped


def _mapped_value(
    value: JSON, by_value: Mapping[str, str], expected: Mapping[str, JSON], world: Mapping[str, JSON]
) -> JSON:
    key = by_value.get(canonical(value))
    if key is not None and key in world:
        return world[key]
    for key, recorded in expected.items():
        new = world.get(key)
        if isinstance(recorded, list) and isinstance(new, list) and value in recorded:
            index = recorded.index(value)
            return new[index] if index < len(new) else value
    if isinstance(value, str):
        text = value
        for key, recorded in sorted(expected.items(), key=lambda kv: -len(str(kv[1]))):
            if isinstance(recorded, str) and recorded and recorded in text and isinstance(world.get(key), str):
                text = text.replace(recorded, str(world[key]))
        return text
    return value


def compare_calls(
    got: Sequence[Mapping[str, Any]], expected: Sequence[Mapping[str, Any]], read_only: set[str]
) -> list[str]:
    """What differs: the calls as a multiset, and the order of the writes (reads may come in any order)."""

    def key(call: Mapping[str, Any]) -> str:
        return canonical([call["server"], call["tool"], call.get("arguments") or {}])

    problems: list[str] = []
    have, want = Counter(map(key, got)), Counter(map(key, expected))
    problems += [f"unexpected call {k}" + (f" x{n}" if n > 1 else "") for k, n in (have - want).items()]
    problems += [f"missing call {k}" + (f" x{n}" if n > 1 else "") for k, n in (want - have).items()]
    if not problems:

        def writes(calls: Sequence[Mapping[str, Any]]) -> list[str]:
            return [key(c) for c in calls if f"{c['server']}__{c['tool']}" not in read_only]

        if writes(got) != writes(expected):
            problems.append("the writes came in another order than a correct agent makes them")
    return problems


async def replay_in_world(template: Template, world: Mapping[str, Any], inputs: Mapping[str, JSON]) -> Replay:
    """Run `template` with `inputs` against the world's servers; compare the calls they got."""
    with tempfile.TemporaryDirectory(prefix="toolreel-world-") as tmp:
        where = Path(tmp)
        world_file, log = where / "world.json", where / "calls.jsonl"
        world_file.write_text(json.dumps(world), encoding="utf-8")
        log.touch()
        config = parse_config({"mcpServers": server_entries(world, world_file, log)}, source=str(world_file))
        store = open_store(f"sqlite:///{where / 'store.db'}")
        try:
            store.save_template(TemplateDraft(template.name, template_to_dict(template)))
            saved = load_template(store, template.name)
            status, error = await _run(config, store, saved, inputs)
        finally:
            store.close()
        calls = tuple(json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip())
    problems = compare_calls(calls, world["expected_calls"], read_only_tools(world))
    if status != "succeeded":
        problems.insert(0, f"the replay ended {status}: {error}")
    return Replay(exact=not problems, status=status, calls=calls, problems=tuple(problems))


def _leaves(exc: BaseException) -> str:
    """What went wrong, out of any exception groups around it (the task groups of the hub and the engine)."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_leaves(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


async def _run(config: Any, store: Any, template: Template, inputs: Mapping[str, JSON]) -> tuple[str, str | None]:
    try:
        with anyio.fail_after(REPLAY_SECONDS):
            async with open_upstreams(config) as hub:
                await hub.wait_settled(START_SECONDS)
                async with Engine(store, hub) as engine:
                    execution = await engine.run_template(template, dict(inputs))
    except TimeoutError:
        return "timed out", f"no end within {REPLAY_SECONDS:.0f} s"
    except Exception as exc:  # a template the replayer refuses (bad inputs, secrets) is a failed replay
        return "refused", _leaves(exc)
    status = getattr(execution.status, "value", str(execution.status))
    return str(status), None if execution.error is None else str(execution.error)
