"""`code` steps (SPEC §7): JavaScript in a QuickJS sandbox, its output addressable by refs, its limits,
its errors, under for_each, when and retries, and after a crash (a finished code step is not re-run)."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.callers import harness, saved, template, wait_until
from tests.replayer.test_replayer_durability import (
    counts,
    finished_steps,
    only_execution,
    replayer_process,
    stop,
    write_config,
)
from toolreel.core.errors import CodeError, CodeMemoryError, CodeTimeout, TemplateError
from toolreel.core.model import ExecutionStatus, StepKind, StepStatus
from toolreel.core.sandbox import CodeLimits, run_code
from toolreel.core.store import open_store

pytestmark = pytest.mark.anyio

SUM = "export default function(input) {\n  return input.values.reduce((a, b) => a + b, 0);\n}\n"


def steps_of(h: Any, execution_id: str) -> dict[str, Any]:
    return {record.name: record for record in h.store.get_steps(execution_id)}


# ---------------------------------------------------------------------- the sandbox itself


def test_the_default_export_gets_the_input_and_returns_json() -> None:
    source = "export default function(input) {\n  return {n: input.items.length, up: input.name.toUpperCase()};\n}"
    assert run_code(source, {"items": [1, 2, 3], "name": "ada"}) == {"n": 3, "up": "ADA"}
    assert run_code("export default (input) => undefined", {}) is None
    assert run_code("export default (input) => new Date(input).getTime()", "2024-01-01T00:00:00Z") == 1704067200000


@pytest.mark.parametrize("call", ["Date.now()", "Math.random()", "new Date()"])
def test_no_clock_and_no_randomness_unless_passed_in(call: str) -> None:
    with pytest.raises(CodeError, match=r"not available in a code step.*\(line 3\)"):
        run_code(f"export default function(input) {{\n\n  return {call};\n}}", {})


def test_an_endless_loop_is_stopped_by_the_timeout() -> None:
    with pytest.raises(CodeTimeout, match="code_timeout"):
        run_code("export default function(input) { while (true) {} }", {}, CodeLimits(timeout=0.2))


def test_a_growing_allocation_is_stopped_by_the_memory_limit() -> None:
    source = "export default function(input) { const a = []; while (true) a.push('x'.repeat(1000) + a.length); }"
    with pytest.raises(CodeMemoryError, match=r"code_memory_limit.*8 MiB"):
        run_code(source, {}, CodeLimits(timeout=5.0, memory_mb=8))


def test_a_thrown_null_is_the_scripts_own_not_the_memory_limit() -> None:
    with pytest.raises(CodeError, match="the script threw null") as caught:
        run_code("export default function(input) { if (!input.x) throw null; }", {}, CodeLimits(memory_mb=8))
    assert not isinstance(caught.value, CodeMemoryError)


def test_an_async_function_is_refused() -> None:
    with pytest.raises(CodeError, match="returned a Promise"):
        run_code("export default async function(input) { return 1; }", {})


def test_a_thrown_error_gives_the_javascript_message_and_line() -> None:
    with pytest.raises(CodeError, match=r"Error: no items \(line 3\)") as caught:
        run_code("export default function(input) {\n  if (!input.items)\n    throw new Error('no items');\n}", {})
    assert caught.value.line == 3


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("import fs from 'fs'\nexport default function(input) {}", "imports are not available"),
        ("function main(input) { return 1 }", "one `export default function"),
        ("export default function(input) {\n  return (\n}", r"SyntaxError.*\(line 3\)"),
    ],
)
def test_a_script_that_cannot_run_is_refused_when_the_template_is_saved(source: str, message: str) -> None:
    data = {"name": "bad", "steps": [{"name": "calc", "code": source}]}
    with pytest.raises(TemplateError, match=message) as caught:
        template(data)
    assert caught.value.step == "calc" and caught.value.field == "code"


def test_refs_in_a_code_steps_input_are_checked_when_saved() -> None:
    with pytest.raises(TemplateError, match="step 'nowhere', which does not exist"):
        template({"name": "bad", "steps": [{"name": "calc", "code": SUM, "input": {"values": "@nowhere.list"}}]})
    with pytest.raises(TemplateError, match="memory_mb"):
        template({"name": "bad", "steps": [{"name": "t", "tool": "features__echo", "memory_mb": 8}]})


# ---------------------------------------------------------------------- in a run


@pytest.mark.slow
async def test_a_code_steps_output_is_addressable_by_refs(tmp_path: Path) -> None:
    t = template(
        {
            "name": "code-refs",
            "steps": [
                {"name": "a", "tool": "features__add", "input": {"a": 1, "b": 2}},
                {"name": "b", "tool": "features__add", "input": {"a": 10, "b": 20}},
                {"name": "total", "code": SUM, "input": {"values": ["@a.sum", "@b.sum"]}},
                {
                    "name": "label",
                    "code": "export default (input) => ({text: `total=${input.t}`, parts: [input.t, 1]})",
                    "input": {"t": "@total"},
                },
                {"name": "say", "tool": "features__echo", "input": {"text": "{{@label.text}} / {{@label.parts[0]}}"}},
            ],
        }
    )
    async with harness(tmp_path) as h:
        execution = await h.engine.run_template(t, {})
        assert execution.status == ExecutionStatus.SUCCEEDED, execution.error
        steps = steps_of(h, execution.id)
        assert steps["total"].output == 33 and steps["total"].kind == StepKind.CODE
        assert steps["total"].resolved_input == {"values": [3.0, 30.0]}
        assert steps["say"].output == "total=33 / 33"


@pytest.mark.slow
async def test_code_runs_under_for_each_and_when(tmp_path: Path) -> None:
    t = template(
        {
            "name": "code-loop",
            "inputs": {"names": {"type": "array"}, "shout": {"type": "boolean"}},
            "steps": [
                {"name": "each", "for_each": "@input.names", "code": "export default (i) => i.n.toUpperCase()",
                 "input": {"n": "@item"}},
                {"name": "skipped", "when": {"ref": "@input.shout"}, "code": "export default () => 'loud'"},
                {"name": "joined", "code": "export default (i) => i.all.join(',') + '|' + i.s",
                 "input": {"all": "@each", "s": "@skipped"}},
            ],
        }
    )  # fmt: skip
    async with harness(tmp_path) as h:
        execution = await h.engine.run_template(t, {"names": ["ada", "bob"], "shout": False})
        assert execution.status == ExecutionStatus.SUCCEEDED, execution.error
        steps = steps_of(h, execution.id)
        assert steps["each"].output == ["ADA", "BOB"]
        assert steps["skipped"].status == StepStatus.SKIPPED
        assert execution.output == "ADA,BOB|null"


@pytest.mark.slow
async def test_a_throwing_or_endless_script_fails_its_step_with_a_named_error(tmp_path: Path) -> None:
    t = template(
        {
            "name": "code-fails",
            "steps": [
                {"name": "loop", "code": "export default function(input) {\n  while (true) {}\n}", "timeout": "200ms",
                 "retry": {"max_attempts": 2, "initial_delay": "10ms"}},
            ],
        }
    )  # fmt: skip
    async with harness(tmp_path) as h:
        with anyio.fail_after(30):
            execution = await h.engine.run_template(t, {})
        assert execution.status == ExecutionStatus.FAILED
        assert "code_timeout" in (execution.error or "")
        rows = [r for r in h.store.get_steps(execution.id, all_attempts=True) if r.name == "loop"]
        assert [r.attempt for r in rows] == [1, 2]  # a timeout is retried when retry_on has it (the default)
        thrown = template({"name": "thrown", "steps": [{"name": "t", "code": "export default () => {\n  null.x\n}"}]})
        execution = await h.engine.run_template(thrown, {})
        assert execution.status == ExecutionStatus.FAILED
        assert "TypeError" in (execution.error or "") and "(line 2)" in (execution.error or "")


@pytest.mark.slow
async def test_a_busy_script_does_not_block_other_steps(tmp_path: Path) -> None:
    busy = "export default function(input) { let s = 0; for (let i = 0; i < 3e8; i++) { s += i; } return s; }"
    t = template(
        {
            "name": "busy",
            "steps": [
                {"name": "spin", "code": busy, "timeout": "2s", "retry": {"max_attempts": 1}, "include_failed": True},
                {"name": "quick", "tool": "features__echo", "input": {"text": "done"}},
            ],
        }
    )
    async with harness(tmp_path) as h:
        execution = await h.engine.run_template(t, {})
        steps = steps_of(h, execution.id)
        assert steps["quick"].ended_at < steps["spin"].ended_at  # the tool call went on while the script ran


@pytest.mark.slow
async def test_scripts_take_turns_so_one_does_not_spend_anothers_time_limit(tmp_path: Path) -> None:
    # The sandbox's limit counts the process's CPU time. Each script gets twice what it costs alone here and
    # now (measured, so a busy machine that slows every script slows the budget too); four run side by side,
    # so on one shared clock each would see about four times its cost spent and time out.
    work = "export default function(input) { let s = 0; for (let i = 0; i < 1e7; i++) { s += i; } return input.k; }"
    began = time.process_time()
    assert run_code(work, {"k": "alone"}, CodeLimits(timeout=60.0)) == "alone"
    budget_ms = max(100, round(2000 * (time.process_time() - began)))
    keys = ["a", "b", "c", "d"]
    t = template(
        {
            "name": "turns",
            "steps": [
                {"name": "each", "for_each": "@input.keys", "concurrency": 4, "code": work, "input": {"k": "@item"},
                 "timeout": f"{budget_ms}ms"},
            ],
            "inputs": {"keys": {"type": "array"}},
        }
    )  # fmt: skip
    async with harness(tmp_path) as h:
        execution = await h.engine.run_template(t, {"keys": keys})
        assert execution.status == ExecutionStatus.SUCCEEDED, (budget_ms, execution.error)
        assert execution.output == keys
        rows = sorted((r for r in h.store.get_steps(execution.id) if r.name.startswith("each[")), key=lambda r: r.seq)
        assert [r.attempt for r in rows] == [1, 1, 1, 1]


# ---------------------------------------------------------------------- crash recovery


@pytest.mark.slow
async def test_a_killed_run_resumes_without_rerunning_a_finished_code_step(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    config = write_config(tmp_path)
    store = open_store(db)
    saved(
        store,
        {
            "name": "code-crash",
            "steps": [
                {"name": "c1", "tool": "features__counter", "input": {"key": "c1"}},
                {"name": "calc", "code": "export default (i) => i.n * 2", "input": {"n": "@c1.count"}},
                {"name": "wait", "tool": "features__slow", "input": {"seconds": 1.5}, "depends_on": ["calc"]},
                {"name": "c2", "tool": "features__counter", "input": {"key": "c2"}, "depends_on": ["wait"]},
            ],
            "output": "@calc",
        },
    )
    common = ["--config", str(config), "--db", db, "--lease-seconds", "1.0"]
    with replayer_process(tmp_path, "run", "run", "code-crash", "--json", *common) as runner:
        await wait_until(
            lambda: (e := only_execution(store)) is not None and "calc" in finished_steps(store, e.id), timeout=60
        )
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=30)
    execution = only_execution(store)
    assert execution is not None
    before = finished_steps(store, execution.id)["calc"]
    with replayer_process(tmp_path, "worker", "worker", "--poll", "0.1", *common) as worker:
        await wait_until(lambda: store.get_execution(execution.id).status.finished, timeout=60)
        stop(worker)
    final = store.get_execution(execution.id)
    assert final.status == ExecutionStatus.SUCCEEDED, final.error
    assert final.output == 2
    rows = [r for r in store.get_steps(execution.id, all_attempts=True) if r.name == "calc"]
    assert len(rows) == 1 and rows[0].seq == before.seq and rows[0].started_at == before.started_at  # not re-run
    assert counts(tmp_path)["c1"] == 1
    store.close()


def test_code_steps_and_data_approvals_round_trip_and_are_in_the_schema() -> None:
    from toolreel.core.template_io import parse_template, template_json_schema, template_to_dict, to_mermaid

    form = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]}
    t = template(
        {
            "name": "shapes",
            "inputs": {"who": {"type": "string", "enum": ["ada", "bob"]}},
            "steps": [
                {"name": "ask", "approve": {"message": "How many for {{@input.who}}?", "schema": form}},
                {"name": "calc", "code": SUM, "input": {"values": ["@ask.n"]}, "memory_mb": 8, "timeout": "250ms"},
            ],
        }
    )
    assert parse_template(template_to_dict(t)) == t
    assert template_to_dict(t)["steps"][0]["approve"] == {"message": "How many for {{@input.who}}?", "schema": form}
    assert "calc[/" in to_mermaid(t)  # a code step has its own shape
    step = template_json_schema()["$defs"]["StepModel"]
    assert {"code", "memory_mb"} <= set(step["properties"]) and {"required": ["code"]} in step["oneOf"]
