"""Input constraints (SPEC §7): `enum`, `pattern`, `minimum`, `maximum`, `default` on template inputs,
checked before anything runs (the engine behind `toolreel run`, `toolreel__run_template` and `reel__<name>`),
refused when saved if they cannot hold, and published in the `reel__<name>` input schema."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fixtures._zygote import launch_command
from fixtures.servers import REPO_ROOT, fixture_command
from tests.callers import fixture_env, harness, template
from toolreel.core.errors import ExecutionError, TemplateError
from toolreel.core.model import ExecutionQuery, TemplateDraft
from toolreel.core.store import open_store
from toolreel.core.template_io import parse_template, template_to_dict, tool_input_schema
from toolreel.gateway.tools_templates import reel_tool
from toolreel.replayer import bind_inputs

pytestmark = pytest.mark.anyio

INPUTS: dict[str, Any] = {
    "env": {"type": "string", "enum": ["staging", "production"], "default": "staging"},
    "ticket": {"type": "string", "pattern": "^[A-Z]+-[0-9]+$"},
    "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 2},
}
DEPLOY: dict[str, Any] = {
    "name": "deploy",
    "inputs": INPUTS,
    "steps": [{"name": "count", "tool": "features__counter", "input": {"key": "{{@input.env}}-{{@input.ticket}}"}}],
}


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"ticket": "OPS-1", "env": "prod"}, "input 'env': 'prod' is not one of ['staging', 'production']"),
        ({"ticket": "ops-1"}, "input 'ticket': 'ops-1' does not match '^[A-Z]+-[0-9]+$'"),
        ({"ticket": "OPS-1", "replicas": 0}, "input 'replicas': 0 is less than the minimum of 1"),
        ({"ticket": "OPS-1", "replicas": "11"}, "input 'replicas': 11 is greater than the maximum of 10"),
    ],
)
def test_a_value_outside_the_constraints_is_refused_naming_the_input(given: dict[str, Any], says: str) -> None:
    with pytest.raises(ExecutionError) as caught:
        bind_inputs(template(DEPLOY), given)
    assert says in str(caught.value)


def test_values_inside_the_constraints_are_bound_with_defaults() -> None:
    assert bind_inputs(template(DEPLOY), {"ticket": "OPS-7", "replicas": "10"}) == {
        "env": "staging",
        "ticket": "OPS-7",
        "replicas": 10,
    }


@pytest.mark.parametrize(
    ("spec", "field", "says"),
    [
        ({"type": "string", "enum": ["a"], "default": "b"}, "inputs.x.default", "not one of"),
        ({"type": "integer", "minimum": 5, "default": 1}, "inputs.x.default", "less than the minimum"),
        ({"type": "number", "pattern": "^a"}, "inputs.x.pattern", "applies to string inputs"),
        ({"type": "string", "maximum": 3}, "inputs.x.maximum", "applies to number and integer inputs"),
        ({"type": "string", "pattern": "(unclosed"}, "inputs.x", "is not a regular expression"),
        ({"type": "number", "minimum": 5, "maximum": 1}, "inputs.x", "above `maximum`"),
    ],
)
def test_constraints_that_cannot_hold_are_refused_when_saved(spec: dict[str, Any], field: str, says: str) -> None:
    data = {"name": "t", "inputs": {"x": spec}, "steps": [{"name": "s", "return": "@input.x"}]}
    with pytest.raises(TemplateError, match=says) as caught:
        parse_template(data)
    assert caught.value.field == field


def test_constraints_round_trip_and_are_published_in_the_tool_schema() -> None:
    t = template(DEPLOY)
    assert parse_template(template_to_dict(t)) == t
    for schema in (tool_input_schema(t), (reel_tool(t) or {})["inputSchema"]):
        properties = schema["properties"]
        assert properties["env"] == {"type": "string", "enum": ["staging", "production"], "default": "staging"}
        assert properties["ticket"]["pattern"] == "^[A-Z]+-[0-9]+$"
        assert (properties["replicas"]["minimum"], properties["replicas"]["maximum"]) == (1, 10)
        assert schema["required"] == ["ticket"]


@pytest.mark.slow
async def test_a_run_with_a_bad_input_is_refused_before_anything_runs(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        with pytest.raises(ExecutionError, match="input 'env'"):
            await h.engine.run_template(template(DEPLOY), {"ticket": "OPS-1", "env": "qa"})
        assert h.store.list_executions(ExecutionQuery(limit=5))[0] == []  # no execution was created
        done = await h.engine.run_template(template(DEPLOY), {"ticket": "OPS-1", "env": "production"})
        assert done.output == {"key": "production-OPS-1", "count": 1}
        assert h.counts() == {"production-OPS-1": 1}


@pytest.mark.slow
def test_toolreel_run_refuses_a_bad_input_with_its_name(tmp_path: Path) -> None:
    command, *args = fixture_command("features")
    server = {"command": command, "args": args, "cwd": str(REPO_ROOT), "env": fixture_env(tmp_path)}
    (tmp_path / "config.json").write_text(json.dumps({"mcpServers": {"features": server}}))
    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(db)
    store.save_template(TemplateDraft("deploy", DEPLOY))
    store.close()
    env = {**os.environ, "TOOLREEL_DB": db, "TOOLREEL_CONFIG": str(tmp_path / "config.json")}
    argv = launch_command(
        [sys.executable, "-m", "toolreel.replayer", "run", "deploy", "-i", "ticket=OPS-1", "-i", "replicas=40"]
    )
    done = subprocess.run(
        argv, cwd=REPO_ROOT, env={**env, "PYTHONPATH": str(REPO_ROOT)}, capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "input 'replicas': 40 is greater than the maximum of 10" in done.stderr
    assert not (tmp_path / "counts.json").exists()  # nothing ran
