"""`templates export --as python` of the control-flow steps: a `switch` (its branches inside an if/elif/else),
a join over its branches (`wait_for: any`), a `wait`, an `llm` step and a wait for a signal. The programs make
the calls `toolreel run` makes (the counter fixture's counts file says which) and give the same output; the
llm step asks the same OpenAI-compatible endpoint with the same request; given answers are checked against
the step's schema. Programs of these steps pass ruff and mypy --strict in
tests/templatizer/test_python_export_corpus.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures._zygote import launch_command
from fixtures.llm_endpoint import serving
from tests.gateway.test_skills import store_with, toolreel
from tests.gw import PYTHON, REPO, fixture_entry, gateway_env
from toolreel.core.errors import TemplateError
from toolreel.core.template_io import load_template_text
from toolreel.templatizer.to_python import python_program

pytestmark = pytest.mark.anyio

# the counter fixture counts in the file named by COUNTS: which calls a run made, and how often
FEATURES = fixture_entry("features", env={"FIXTURE_COUNTER_FILE": "${env:COUNTS}"})

ROUTED: dict[str, Any] = {
    "name": "routed",
    "inputs": {"severity": {"type": "string"}},
    "servers": {"feat": FEATURES},
    "steps": [
        {"name": "first", "tool": "feat__counter", "input": {"key": "first"}},
        {"name": "settle", "wait": {"for": 0.2}, "depends_on": ["first"]},
        {
            "name": "route",
            "switch": {
                "ref": "@input.severity",
                "cases": [
                    {
                        "eq": "critical",
                        "steps": [
                            {"name": "page", "tool": "feat__counter", "input": {"key": "page"}},
                            {"name": "page_note", "tool": "feat__echo", "input": {"text": "paged {{@page.count}}"}},
                        ],
                    },
                    {
                        "in": ["major", "minor"],
                        "steps": [
                            {"name": "ticket", "tool": "feat__counter", "input": {"key": "ticket-{{@input.severity}}"}}
                        ],
                    },
                ],
                "default": [{"name": "log_only", "tool": "feat__counter", "input": {"key": "log"}}],
            },
            "depends_on": ["settle"],
        },
        {
            "name": "handled",
            "tool": "feat__counter",
            "input": {"key": "handled-{{@route.case}}"},
            "depends_on": ["page_note", "ticket", "log_only"],
            "wait_for": "any",
        },
    ],
    "output": {"route": "@route", "note": "@page_note", "ticket": "@ticket", "log": "@log_only", "handled": "@handled"},
}


def _run_program(program: Path, *args: str, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    command = [PYTHON, str(program), *args]
    return subprocess.run(command, input=stdin, capture_output=True, text=True, cwd=REPO, env=env, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("severity", ["critical", "minor", "trivial"])
def test_a_switch_and_its_join_export_and_make_the_calls_toolreel_run_makes(tmp_path: Path, severity: str) -> None:
    db = store_with(tmp_path, ROUTED)
    program = tmp_path / "routed.py"
    done = toolreel("templates", "export", "routed", "--as", "python", str(program), db=db)
    assert done.returncode == 0, done.stderr
    assert "if inputs['severity'] == 'critical':" in program.read_text()
    run_counts, program_counts = tmp_path / "run.json", tmp_path / "program.json"
    ran = subprocess.run(
        launch_command([PYTHON, "-m", "toolreel", "run", "routed", "-i", f"severity={severity}", "--json"]),
        capture_output=True,
        text=True,
        env=gateway_env(db, COUNTS=str(run_counts)),
        cwd=REPO,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    expected = json.loads(ran.stdout)["output"]
    exported = _run_program(program, "--severity", severity, env=gateway_env(db, COUNTS=str(program_counts)))
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout) == expected
    calls = json.loads(run_counts.read_text(encoding="utf-8"))
    assert json.loads(program_counts.read_text(encoding="utf-8")) == calls
    branch = {"critical": ("page", 0), "minor": ("ticket-minor", 1), "trivial": ("log", "default")}[severity]
    assert calls == {"first": 1, branch[0]: 1, f"handled-{branch[1]}": 1}, calls
    assert expected["route"] == {"case": branch[1], "value": severity}


def test_a_join_of_steps_that_can_run_at_once_is_refused_naming_it() -> None:
    spread = {
        "name": "spread",
        "servers": {"feat": FEATURES},
        "steps": [
            {"name": "a", "tool": "feat__counter", "input": {"key": "a"}},
            {"name": "b", "tool": "feat__counter", "input": {"key": "b"}},
            {"name": "two", "return": {"a": "@a", "b": "@b"}, "wait_for": {"n_of": 1}},
        ],
    }
    with pytest.raises(TemplateError, match="step 'two' joins \\(wait_for\\) steps that can run at once"):
        python_program(load_template_text(json.dumps(spread)))


SCHEMA = {
    "type": "object",
    "properties": {"label": {"type": "string", "enum": ["bug", "feature"]}, "urgent": {"type": "boolean"}},
    "required": ["label", "urgent"],
}
ASKED: dict[str, Any] = {
    "name": "asked",
    "inputs": {"title": {"type": "string"}},
    "servers": {"feat": FEATURES},
    "steps": [
        {"name": "issue", "tool": "feat__echo", "input": {"text": "@input.title"}},
        {"name": "classify", "llm": {"prompt": "Classify: {{@issue}}", "schema": SCHEMA, "max_tokens": 64}},
        {"name": "label", "tool": "feat__counter", "input": {"key": "{{@classify.label}}-{{@classify.urgent}}"}},
    ],
    "output": {"classify": "@classify", "label": "@label"},
}
SIGNALLED: dict[str, Any] = {
    "name": "signalled",
    "servers": {"feat": FEATURES},
    "steps": [
        {
            "name": "go",
            "wait": {"signal": "go", "schema": {"type": "object", "required": ["note"]}},
        },
        {"name": "done", "tool": "feat__counter", "input": {"key": "done-{{@go.note}}"}},
    ],
    "output": "@done",
}


@pytest.mark.slow
async def test_an_llm_step_asks_the_endpoint_toolreel_asks_and_checks_the_answer(tmp_path: Path) -> None:
    db = store_with(tmp_path, ASKED)
    program = tmp_path / "asked.py"
    done = toolreel("templates", "export", "asked", "--as", "python", str(program), db=db)
    assert done.returncode == 0, done.stderr
    async with serving(['{"label": "bug", "urgent": true}']) as endpoint:
        llm = {"TOOLREEL_LLM_URL": endpoint.url, "TOOLREEL_LLM_MODEL": "small", "TOOLREEL_LLM_KEY": "k-123"}
        ran = await anyio.run_process(
            launch_command([PYTHON, "-m", "toolreel", "run", "asked", "-i", "title=Crash", "--json"]),
            env=gateway_env(db, COUNTS=str(tmp_path / "run.json"), **llm),
            cwd=REPO,
            check=False,
        )
        assert ran.returncode == 0, ran.stderr.decode()
        exported = await anyio.run_process(
            [PYTHON, str(program), "--title", "Crash"],
            env=gateway_env(db, COUNTS=str(tmp_path / "program.json"), **llm),
            cwd=REPO,
            check=False,
        )
        assert exported.returncode == 0, exported.stderr.decode()
    expected = json.loads(ran.stdout)["output"]
    assert expected == {"classify": {"label": "bug", "urgent": True}, "label": {"key": "bug-true", "count": 1}}
    assert json.loads(exported.stdout) == expected
    assert len(endpoint.requests) == 2 and endpoint.requests[0] == endpoint.requests[1]  # the same request
    assert endpoint.keys == ["Bearer k-123", "Bearer k-123"]
    env = gateway_env(db, COUNTS=str(tmp_path / "given.json"))
    given = _run_program(
        program, "--title", "Crash", "--llm-answer", 'classify={"label": "feature", "urgent": false}', env=env
    )
    assert given.returncode == 0, given.stderr
    assert json.loads(given.stdout)["label"] == {"key": "feature-false", "count": 1}
    wrong = _run_program(program, "--title", "Crash", "--llm-answer", 'classify={"label": "maybe"}', env=env)
    assert wrong.returncode == 1 and "llm_answer_invalid: the answer of step classify" in wrong.stderr, wrong.stderr
    assert json.loads((tmp_path / "given.json").read_text(encoding="utf-8")) == {"feature-false": 1}  # nothing after


@pytest.mark.slow
def test_a_wait_for_a_signal_takes_its_data_from_the_option_or_the_terminal_checked_by_its_schema(
    tmp_path: Path,
) -> None:
    program = tmp_path / "signalled.py"
    program.write_text(python_program(load_template_text(json.dumps(SIGNALLED))), encoding="utf-8")
    env = gateway_env("sqlite://", COUNTS=str(tmp_path / "counts.json"))
    given = _run_program(program, "--signal", 'go={"note": "opt"}', env=env)
    assert given.returncode == 0 and json.loads(given.stdout) == {"key": "done-opt", "count": 1}, given.stderr
    typed = _run_program(program, env=env, stdin='{"note": "typed"}\n')
    assert typed.returncode == 0 and json.loads(typed.stdout) == {"key": "done-typed", "count": 1}, typed.stderr
    assert "waits for signal 'go'" in typed.stderr
    refused = _run_program(program, "--signal", 'go={"other": 1}', env=env)
    assert refused.returncode == 1 and "the data of signal 'go' does not match its schema" in refused.stderr
    assert json.loads((tmp_path / "counts.json").read_text(encoding="utf-8")) == {"done-opt": 1, "done-typed": 1}
