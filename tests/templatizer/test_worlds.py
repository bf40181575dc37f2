"""Replay on a changed world: the world fixture server, and the bench harness on one tuned session.

The harness (bench/worlds.py) judges the held-out sessions; it runs here on a small tuned session so that it
cannot rot, and on a template spoiled on purpose, to show it can say no.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from fixtures._zygote import launch_command
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
    load_entry,
)
from fixtures.world import canonical
from toolreel.templatizer import templatize

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))  # the bench scripts import each other as they run: from bench/
from _world_replay import compare_calls, map_inputs, replay_in_world  # noqa: E402
from worlds import _named_as, judge, load_sessions, plain_save, score_refs  # noqa: E402

TUNED = "ids-order-flow"  # small, tuned (never a blind session), with a world2

pytestmark = pytest.mark.anyio


def _world() -> dict[str, Any]:
    return {
        "inputs": {},
        "tools": {
            "desk": [
                {
                    "name": "find",
                    "description": "Find a ticket.",
                    "inputSchema": {"type": "object"},
                    "annotations": {"readOnlyHint": True},
                },
                {
                    "name": "close",
                    "description": "Close a ticket.",
                    "inputSchema": {"type": "object"},
                    "annotations": {"readOnlyHint": False, "destructiveHint": True},
                },
            ],
            "other": [{"name": "ping", "description": "Ping.", "inputSchema": {"type": "object"}}],
        },
        "responses": [
            {
                "server": "desk",
                "tool": "find",
                "arguments": {"q": "printer", "limit": 1},
                "result": {
                    "content": [{"type": "text", "text": '{"id": "T-7"}'}],
                    "structuredContent": {"id": "T-7"},
                    "isError": False,
                },
            },
            {
                "server": "other",
                "tool": "ping",
                "arguments": {},
                "result": {"content": [{"type": "text", "text": "pong"}]},
            },
        ],
        "expected_calls": [],
    }


@pytest.mark.slow
async def test_world_server_lists_its_tools_answers_known_calls_and_logs_every_call(tmp_path: Path) -> None:
    world, log = tmp_path / "world.json", tmp_path / "calls.jsonl"
    world.write_text(json.dumps(_world()))
    command, *args = launch_command([sys.executable, "-m", "fixtures.world", str(world), "desk", "--log", str(log)])
    params = StdioServerParameters(command=command, args=args, cwd=str(ROOT))
    with anyio.fail_after(60):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            # key order of the arguments does not matter; the recorded result comes back whole
            found = await session.call_tool("find", {"limit": 1, "q": "printer"})
            unknown = await session.call_tool("close", {"id": "T-8"})
    assert set(tools) == {"find", "close"}  # only this server's tools, with their annotations
    assert tools["find"].annotations is not None and tools["find"].annotations.read_only_hint is True
    assert tools["close"].annotations is not None and tools["close"].annotations.destructive_hint is True
    assert not found.is_error and found.structured_content == {"id": "T-7"}
    assert unknown.is_error
    assert "close" in unknown.content[0].text and '"id": "T-8"' in unknown.content[0].text  # type: ignore[union-attr]
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert logged == [
        {"server": "desk", "tool": "find", "arguments": {"limit": 1, "q": "printer"}},
        {"server": "desk", "tool": "close", "arguments": {"id": "T-8"}},
    ]


@pytest.mark.slow
def test_world_server_refuses_a_server_the_world_does_not_declare(tmp_path: Path) -> None:
    import subprocess

    world = tmp_path / "world.json"
    world.write_text(json.dumps(_world()))
    done = subprocess.run(
        launch_command([sys.executable, "-m", "fixtures.world", str(world), "nowhere"]),
        cwd=ROOT,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert "no server 'nowhere'" in done.stderr and "desk" in done.stderr


def test_inputs_of_a_new_world_are_mapped_by_recorded_value() -> None:
    expected = {"owner": "acme", "hires": ["a@x", "b@x", "c@x"], "team": "Team Falcon"}
    world = {"owner": "globex", "hires": ["d@x", "e@x"], "team": "Team Eagle"}
    template_values = {"org": "acme", "email": "a@x", "email_3": "c@x", "text": "lead of Team Falcon", "other": 7}
    assert map_inputs(template_values, expected, world) == {
        "org": "globex",  # same recorded value, whatever the name
        "email": "d@x",  # an element of a list input takes the new list's element
        "email_3": "c@x",  # the new list is shorter: nothing to give, the recorded value stays
        "text": "lead of Team Eagle",  # text holding a recorded input
        "other": 7,
    }


def test_calls_compare_as_a_multiset_with_the_writes_in_order() -> None:
    read_only = {"s__read"}

    def call(tool: str, n: int) -> dict[str, Any]:
        return {"server": "s", "tool": tool, "arguments": {"n": n}}

    expected = [call("read", 1), call("read", 2), call("write", 1), call("write", 2)]
    assert (
        compare_calls([call("read", 2), call("read", 1), call("write", 1), call("write", 2)], expected, read_only) == []
    )
    swapped = compare_calls([call("read", 1), call("read", 2), call("write", 2), call("write", 1)], expected, read_only)
    assert swapped == ["the writes came in another order than a correct agent makes them"]
    short = compare_calls(expected[:3], expected, read_only)
    assert len(short) == 1 and short[0].startswith("missing call") and '"write"' in short[0]


@pytest.mark.parametrize(
    ("directory", "at_least"),
    [
        (WORLDS_DIR, 20),
        (WORLDS2_DIR, 24),
        (WORLDS3_DIR, 24),
        (WORLDS4_DIR, 24),
        (WORLDS5_DIR, 24),
        (WORLDS6_DIR, 24),
        (WORLDS7_DIR, 24),
        (WORLDS8_DIR, 24),
        (WORLDS9_DIR, 24),
        (WORLDS10_DIR, 24),
        (WORLDS11_DIR, 24),
        (WORLDS12_DIR, 24),
        (WORLDS13_DIR, 24),
        (WORLDS14_DIR, 24),
        (WORLDS15_DIR, 24),
        (WORLDS16_DIR, 24),
        (WORLDS17_DIR, 24),
        (WORLDS18_DIR, 24),
        (WORLDS19_DIR, 24),
        (BLIND_DIR, 24),
    ],
    ids=[
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
        "blind",
    ],
)
def test_the_world_sessions_are_loadable_and_each_has_a_changed_world(directory: Path, at_least: int) -> None:
    sessions = load_sessions(directory)
    assert len(sessions) >= at_least
    for session in sessions:
        assert session.worlds, session.entry.name
        # the expectations speak of recorded steps only
        recorded = {step.name for step in session.entry.steps}
        expected = session.expected
        named = {ref["step"] for ref in expected["refs"]} | {m for group in expected.get("parallel", []) for m in group}
        for loop in expected.get("loops", []):
            named |= {s for step in loop["steps"] for s in (step if isinstance(step, list) else [step])}
        assert named <= recorded, (session.entry.name, named - recorded)
        for world in session.worlds.values():
            assert set(world["inputs"]) == set(session.entry.inputs), session.entry.name
            declared = {(s, t["name"]) for s, tools in world["tools"].items() for t in tools}
            assert {(c["server"], c["tool"]) for c in world["expected_calls"]} <= declared, session.entry.name
            # every call a correct agent makes there has its answer in the world
            answered = {canonical(f"{r['server']}__{r['tool']}", r["arguments"]) for r in world["responses"]}
            for call in world["expected_calls"]:
                assert canonical(f"{call['server']}__{call['tool']}", call["arguments"]) in answered, call


@pytest.mark.slow
async def test_harness_judges_a_tuned_session_and_says_no_to_a_stale_template() -> None:
    (session,) = load_sessions(CORPUS_DIR, TUNED)
    assert load_entry(session.path).name == TUNED
    with anyio.fail_after(180):
        report = await judge(session)
    assert report.verified
    assert report.refs[0] == report.refs[1] == report.refs[2] > 0
    replay = report.replays["world2"]
    assert replay.exact, replay.problems
    assert len(replay.calls) == len(session.worlds["world2"]["expected_calls"])
    # The same template with one ref turned back into its recorded literal: the new world sees the stale id.
    saved, _ = plain_save(session)
    steps = list(saved.template.steps)
    index = next(i for i, s in enumerate(steps) if s.name == "get_order_1")
    recorded = next(r for r in session.entry.steps if r.name == "get_order_1").resolved_input
    steps[index] = dataclasses.replace(steps[index], input=recorded)
    stale = dataclasses.replace(saved.template, steps=tuple(steps))
    given = map_inputs(saved.input_values, session.entry.inputs, session.worlds["world2"]["inputs"])
    with anyio.fail_after(120):
        spoiled = await replay_in_world(stale, session.worlds["world2"], given)
    assert not spoiled.exact
    assert any("get_order" in p for p in spoiled.problems), spoiled.problems


def test_a_constant_is_scored_as_kept_literal_not_as_a_missed_ref() -> None:
    """An expectation that is no ref (`"ref": "apple"`) is a value that must stay literal: kept when the template
    puts no ref at its path, and never counted among the refs to find."""
    (session,) = load_sessions(CORPUS_DIR, TUNED)
    refs = [r for r in session.expected["refs"] if r["step"] != "get_order_1"]
    refs += [
        {"step": "create_order_1", "input_path": "$.items[0].sku", "ref": "apple"},  # stays literal
        {"step": "get_order_1", "input_path": "$.order_id", "ref": "ord_a994f9f393d1"},  # made a ref: not kept
    ]
    changed = dataclasses.replace(session, data={**session.data, "expected": {**session.expected, "refs": refs}})
    entry = session.entry
    result = templatize(entry.recordings, name=TUNED.replace("-", "_"), inputs=dict(entry.inputs))
    score = score_refs(changed, result)
    assert score.constants == (1, 2)
    assert score.expected == len(refs) - 2 and score.hits == score.expected  # every ref found, no constant among them
    assert score.found == score.hits + 1  # the constant made a ref counts against precision
    assert any(p.startswith("templated constant get_order_1 $.order_id") for p in score.problems), score.problems
    assert not any(p.startswith("missed") for p in score.problems), score.problems


def test_a_path_scores_the_same_in_either_spelling() -> None:
    """`$.flags.service-id` in a session and `$.flags["service-id"]` from the product name one argument: a ref
    expected under a bracketed key is found where the template writes it dotted, and the other way round."""
    (session,) = load_sessions(CORPUS_DIR, TUNED)
    entry = session.entry
    result = templatize(entry.recordings, name=TUNED.replace("-", "_"), inputs=dict(entry.inputs))
    plain = score_refs(session, result)
    bracketed = [
        {**r, "input_path": re.sub(r"\.([a-z_]+)$", r'["\1"]', r["input_path"])} for r in session.expected["refs"]
    ]
    assert bracketed != session.expected["refs"]
    changed = dataclasses.replace(session, data={**session.data, "expected": {**session.expected, "refs": bracketed}})
    again = score_refs(changed, result)
    assert (again.hits, again.found, again.expected) == (plain.hits, plain.found, plain.expected)
    assert again.hits > 0


def test_an_input_of_several_recordings_is_scored_under_the_expected_name_of_its_recorded_value() -> None:
    """Several recordings name no input: the template's own name (`@input.en`) is read as the expected input whose
    recorded value it has, as the replays map a world's inputs; a name with no such value stays its own."""
    recorded = {"en": "Build 4.2 is ready", "en_2": "Heads up", "segment": "Beta"}
    expected = {"message": "Build 4.2 is ready", "segment": "Beta"}
    assert _named_as("@input.en", recorded, expected) == "@input.message"
    assert _named_as("{{@input.en}} ({{@input.en_2}})", recorded, expected) == "{{@input.message}} ({{@input.en_2}})"
    assert _named_as("@input.segment", recorded, expected) == "@input.segment"
