"""Template files an agent (or an attacker) writes are refused quickly and in one line: alias bombs,
aliases that contain themselves, nesting thousands deep, lone surrogates; ordinary anchors still work."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from fixtures._zygote import launch_command
from tests.gw import TOOLREEL, gateway_env
from toolreel.core.errors import TemplateError
from toolreel.core.template_io import load_template_text, parse_template

LAUGHS = (
    "a: &a ["
    + ",".join(['"lol"'] * 9)
    + "]\n"
    + "".join(
        f"{name}: &{name} [{','.join([f'*{previous}'] * 9)}]\n"
        for previous, name in zip("abcdefgh", "bcdefghi", strict=True)
    )
)
BOMB = LAUGHS + "name: bomb\nsteps: [{name: s, tool: x__y, input: {v: *i}}]\n"  # 9^9 = 387 million strings


def test_an_alias_bomb_is_refused_at_once() -> None:
    assert len(BOMB.encode()) < 600
    started = time.perf_counter()
    with pytest.raises(TemplateError, match=r"more than 100,000 values once its aliases are expanded"):
        load_template_text(BOMB, source="bomb.yaml")
    assert time.perf_counter() - started < 2.0


def test_an_alias_that_contains_itself_is_refused() -> None:
    with pytest.raises(TemplateError, match="an alias that contains itself"):
        load_template_text("loop: &l [*l]\nname: x\nsteps: []\n", source="loop.yaml")


def test_anchors_still_load() -> None:
    text = (
        "name: anchored\n"
        "steps:\n"
        "  - {name: a, tool: s__t, input: &shared {v: 1, w: [1, 2]}}\n"
        "  - {name: b, tool: s__t, input: *shared}\n"
    )
    template = load_template_text(text, source="anchored.yaml")
    assert [step.input for step in template.steps] == [{"v": 1, "w": [1, 2]}] * 2


def test_a_lone_surrogate_in_a_template_is_named_not_a_traceback() -> None:
    with pytest.raises(TemplateError, match=r"steps\[0\]\.input\.v holds a lone UTF-16 surrogate \(\\ud800\)"):
        parse_template({"name": "s", "steps": [{"name": "a", "tool": "s__t", "input": {"v": "x\ud800"}}]})


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("deep.yaml", "name: deep\nsteps: " + "[" * 10_000 + "]" * 10_000 + "\n"),
        ("deep.json", '{"name": "deep", "steps": ' + "[" * 10_000 + "]" * 10_000 + "}"),
        ("surrogate.json", '{"name": "s", "steps": [{"name": "a", "tool": "s__t", "input": {"v": "\\ud800"}}]}'),
        ("bomb.yaml", BOMB),
    ],
)
@pytest.mark.slow
def test_the_cli_answers_bad_files_in_one_line(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    env = gateway_env(f"sqlite:///{tmp_path / 's.db'}")
    for command in (["templates", "validate", str(path)], ["templates", "import", str(path)]):
        done = subprocess.run(
            launch_command([str(TOOLREEL), *command]), env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 2, (command, done.returncode, done.stderr[-2000:])
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr[-2000:]


@pytest.mark.parametrize(
    ("definition", "problem"),
    [
        ({"name": "tn\n"}, "a template name is 1-64 characters"),
        ({"inputs": {"x\n": {"type": "string"}}}, "input name 'x\\\\n' must match"),
        (
            {"inputs": {"n": {"type": "integer", "default": "abc"}}},
            "input 'n' is declared integer but its default 'abc'",
        ),
        ({"inputs": {"n": {"type": "integer", "default": True}}}, "declared integer but its default True"),
        ({"inputs": {"f": {"type": "boolean", "default": "no"}}}, "declared boolean but its default 'no'"),
        ({"inputs": {"o": {"type": "object", "default": []}}}, "declared object but its default \\[\\]"),
    ],
)
def test_names_with_a_trailing_newline_and_defaults_of_the_wrong_type_are_refused(
    definition: dict[str, object], problem: str
) -> None:
    data = {"name": "t", "steps": [{"name": "a", "tool": "s__t", "input": {}}], **definition}
    with pytest.raises(TemplateError, match=problem):
        parse_template(data)


def test_defaults_of_the_declared_type_are_kept() -> None:
    inputs = {
        "n": {"type": "integer", "default": 3},
        "r": {"type": "number", "default": 2},
        "s": {"type": "string", "default": ""},
        "maybe": {"type": "string", "default": None},
        "a": {"type": "array", "default": [1]},
    }
    template = parse_template({"name": "t", "inputs": inputs, "steps": [{"name": "a", "tool": "s__t", "input": {}}]})
    assert {name: spec.default for name, spec in template.inputs.items()} == {
        "n": 3, "r": 2, "s": "", "maybe": None, "a": [1]
    }  # fmt: skip
