"""`wait` steps (a time, a signal) and approval timeouts (SPEC §7): the examples of docs/templates.md run
on the `features` fixture server, whose `counter` counts the calls that really ran. A waiting execution is
`paused` and unclaimed; a `Worker` sharing the store wakes it when its time comes."""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.callers import Harness, harness, saved, wait_until
from tests.replayer.test_control_flow import doc_example
from toolreel.core.errors import SignalError, TemplateError
from toolreel.core.model import ExecutionStatus, StepStatus
from toolreel.core.template_io import load_template_text, parse_template, template_json_schema, template_to_dict
from toolreel.replayer import Worker

pytestmark = pytest.mark.xdist_group("waits")


def _doc(name: str) -> dict[str, Any]:
    import yaml

    data: dict[str, Any] = yaml.safe_load(doc_example(name))
    return data


@asynccontextmanager
async def _worker(h: Harness) -> AsyncIterator[None]:
    """A worker over the harness's engine: it claims paused executions whose wait is due."""
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: Worker(h.engine, poll_interval=0.05).run(stop))
        try:
            yield
        finally:
            stop.set()


def _status(h: Harness, execution_id: str) -> ExecutionStatus:
    return ExecutionStatus(h.store.get_execution(execution_id).status)


# ---------------------------------------------------------------------- the language


@pytest.mark.parametrize("name", ["wait-and-signal", "approve-with-timeout"])
def test_the_documented_forms_round_trip_and_are_in_the_schema(name: str) -> None:
    template = load_template_text(doc_example(name), source="docs/templates.md")
    assert parse_template(template_to_dict(template)) == template
    schema = json.dumps(template_json_schema())
    assert all(f'"{key}"' in schema for key in ("wait", "signal", "until", "on_timeout"))


@pytest.mark.parametrize(
    ("step", "field", "says"),
    [
        ({"wait": {}}, "wait", "exactly one of for, until, signal"),
        ({"wait": {"for": "1m", "signal": "go"}}, "wait", "exactly one of for, until, signal"),
        ({"wait": {"for": "soon"}}, "wait.for", "expected a duration"),
        ({"wait": {"until": "tomorrow"}}, "wait", "ISO 8601"),
        ({"wait": {"until": "2026-12-01T09:00:00"}}, "wait", "with its zone"),
        ({"wait": {"for": "1m", "schema": {"type": "object"}}}, "wait", "goes with `signal`"),
        ({"wait": {"signal": "no spaces"}}, "wait", "signal name"),
        ({"wait": {"until": "@nope.at"}}, "wait.until", "nope"),
        ({"wait": {"for": "1m"}, "tool": "features__echo"}, "wait", "found tool and wait"),
        ({"wait": {"for": "1m"}, "input": {"a": 1}}, "input", "takes no input"),
        ({"approve": {"message": "ok?", "on_timeout": "approve"}}, "approve", "give `timeout` too"),
        ({"approve": {"message": "ok?", "timeout": "1m", "on_timeout": "default"}}, "approve", "default"),
        ({"approve": "ok?", "timeout": "1m"}, "timeout", "on_timeout"),
    ],
)
def test_a_bad_wait_or_approval_timeout_is_refused_naming_step_and_field(
    step: dict[str, Any], field: str, says: str
) -> None:
    data = {"name": "bad", "steps": [{"name": "w", **step}]}
    with pytest.raises(TemplateError, match=re.escape(says)) as refused:
        parse_template(data)
    assert str(refused.value).startswith(f"template 'bad', step 'w', field '{field}")


# ---------------------------------------------------------------------- waits and signals


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_time_wait_pauses_holding_nothing_and_a_worker_wakes_it_on_time(tmp_path: Path) -> None:
    """The documented example: a past `until` does not wait, `for: 3s` pauses the execution (unclaimed, its
    lease the wake time), a worker drives it on once due (not before), then it waits for the signal."""
    async with harness(tmp_path) as h:
        template = saved(h.store, _doc("wait-and-signal"))
        started = time.time()
        paused = await h.engine.run_template(template, {})
        assert paused.status == ExecutionStatus.PAUSED, paused.error
        assert paused.prompt["wait"] == "time"
        stored = h.store.get_execution(paused.id)
        assert stored.claimed_by is None and stored.lease_until is not None
        assert started + 3 <= stored.lease_until <= time.time() + 3
        assert h.engine.driving == 0
        rows = {r.name: r for r in h.store.get_steps(paused.id)}
        assert rows["not_before"].status == StepStatus.SUCCEEDED
        assert rows["not_before"].output == {"until": "2020-01-01T00:00:00Z"}
        assert rows["cool_down"].status == StepStatus.RUNNING
        async with _worker(h):
            await wait_until(
                lambda: (h.store.get_execution(paused.id).prompt or {}).get("signal") == "go",
                timeout=30,
                what="the wait to end and the signal step to wait",
            )
        ended = {r.name: r for r in h.store.get_steps(paused.id)}["cool_down"]
        assert ended.status == StepStatus.SUCCEEDED
        assert ended.ended_at is not None and ended.ended_at >= stored.lease_until
        assert h.counts() == {}


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_signal_is_checked_then_delivered_and_its_data_is_the_output(tmp_path: Path) -> None:
    definition = _doc("wait-and-signal")
    definition["steps"][1]["wait"] = {"for": "0s"}
    async with harness(tmp_path) as h:
        template = saved(h.store, definition)
        paused = await h.engine.run_template(template, {})
        assert paused.status == ExecutionStatus.PAUSED
        assert paused.prompt["signal"] == "go"
        with pytest.raises(SignalError, match=r"does not wait for signal 'stop'.*it waits for go") as wrong:
            await h.engine.signal(paused.id, "stop", {"note": "x"})
        assert wrong.value.code == "signal_refused"
        with pytest.raises(SignalError, match="does not match the step's schema"):
            await h.engine.signal(paused.id, "go", {"note": 7})
        assert _status(h, paused.id) == ExecutionStatus.PAUSED  # refused: nothing moved
        assert h.counts() == {}
        with pytest.raises(Exception, match="waits for signal 'go', not for an answer"):
            await h.engine.resume(paused.id, "yes")
        done = await h.engine.signal(paused.id, "go", {"note": "ship"})
        assert done.status == ExecutionStatus.SUCCEEDED, done.error
        rows = {r.name: r for r in h.store.get_steps(paused.id)}
        assert rows["go_ahead"].output == {"note": "ship"}
        assert h.counts() == {"done-ship": 1}
        with pytest.raises(SignalError, match="already succeeded"):
            await h.engine.signal(paused.id, "go", {"note": "again"})


@pytest.mark.anyio
@pytest.mark.slow
async def test_signalling_a_parent_reaches_the_child_step_that_waits(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        saved(h.store, {"name": "child", "steps": [{"name": "gate", "wait": {"signal": "open"}}]})
        parent = saved(
            h.store,
            {
                "name": "parent",
                "steps": [
                    {"name": "sub", "template": "child"},
                    {"name": "after", "tool": "features__counter", "input": {"key": "after"}, "depends_on": ["sub"]},
                ],
            },
        )
        paused = await h.engine.run_template(parent, {})
        assert paused.status == ExecutionStatus.PAUSED
        assert paused.prompt["signal"] == "open"
        done = await h.engine.signal(paused.id, "open", [1, 2])
        assert done.status == ExecutionStatus.SUCCEEDED, done.error
        assert {r.name: r.output for r in h.store.get_steps(paused.id)}["sub"] == [1, 2]
        assert h.counts() == {"after": 1}


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_child_time_wait_wakes_its_root(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        saved(h.store, {"name": "napper", "steps": [{"name": "nap", "wait": {"for": "2s"}}]})
        parent = saved(
            h.store,
            {
                "name": "root",
                "steps": [
                    {"name": "sub", "template": "napper"},
                    {"name": "after", "tool": "features__counter", "input": {"key": "after"}, "depends_on": ["sub"]},
                ],
            },
        )
        paused = await h.engine.run_template(parent, {})
        assert paused.status == ExecutionStatus.PAUSED
        wake = h.store.get_execution(paused.id).lease_until
        assert wake is not None
        async with _worker(h):
            await wait_until(lambda: _status(h, paused.id).finished, timeout=30, what="the root to finish")
        assert _status(h, paused.id) == ExecutionStatus.SUCCEEDED
        assert h.counts() == {"after": 1}


# ---------------------------------------------------------------------- approval timeouts


class _Silent:
    """A person who never answers (what a real client does when nobody is at the keyboard)."""

    def __init__(self) -> None:
        self.asked = anyio.Event()

    async def approve(self, prompt: str, form: Mapping[str, Any] | None = None) -> bool | None:
        self.asked.set()
        await anyio.sleep_forever()
        return None


def _approval(on_timeout: str, *, form: bool = False) -> dict[str, Any]:
    approve: dict[str, Any] = {"message": "Deploy?", "timeout": "2s", "on_timeout": on_timeout}
    if form:
        approve["schema"] = {"type": "object", "properties": {"replicas": {"type": "integer", "default": 2}}}
    return {
        "name": f"timed-{on_timeout}",
        "steps": [
            {"name": "confirm", "approve": approve},
            {"name": "after", "tool": "features__counter", "input": {"key": "after"}, "depends_on": ["confirm"]},
        ],
    }


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.parametrize(
    ("on_timeout", "form", "status", "output"),
    [
        ("reject", False, ExecutionStatus.FAILED, None),
        ("approve", False, ExecutionStatus.SUCCEEDED, {"approved": True, "response": None, "timed_out": True}),
        ("default", True, ExecutionStatus.SUCCEEDED, {"replicas": 2}),
    ],
)
async def test_a_paused_approval_times_out_when_a_worker_wakes_it(
    tmp_path: Path, on_timeout: str, form: bool, status: ExecutionStatus, output: Any
) -> None:
    async with harness(tmp_path) as h:
        template = saved(h.store, _approval(on_timeout, form=form))
        paused = await h.engine.run_template(template, {})
        assert paused.status == ExecutionStatus.PAUSED
        due = h.store.get_execution(paused.id).lease_until
        assert due is not None
        async with _worker(h):
            await wait_until(lambda: _status(h, paused.id).finished, timeout=30, what="the approval to time out")
        execution = h.store.get_execution(paused.id)
        assert execution.status == status, execution.error
        row = {r.name: r for r in h.store.get_steps(paused.id)}["confirm"]
        assert row.ended_at is not None and row.ended_at >= due
        if status == ExecutionStatus.FAILED:
            assert row.error is not None and row.error.startswith("approval_timeout:")
            assert h.counts() == {}
        else:
            assert row.output == output
            assert h.counts() == {"after": 1}


@pytest.mark.anyio
@pytest.mark.slow
async def test_an_approval_asked_of_a_silent_person_times_out_while_asking(tmp_path: Path) -> None:
    silent = _Silent()
    async with harness(tmp_path, approver=silent) as h:
        template = saved(h.store, _approval("reject"))
        with anyio.fail_after(30):
            failed = await h.engine.run_template(template, {})
        assert silent.asked.is_set()
        assert failed.status == ExecutionStatus.FAILED
        assert "approval_timeout: nobody answered 'Deploy?' within 2s" in (failed.error or "")


@pytest.mark.anyio
@pytest.mark.slow
async def test_an_answer_before_the_timeout_wins(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        definition = _approval("reject")
        definition["steps"][0]["approve"]["timeout"] = "1h"
        template = saved(h.store, definition)
        paused = await h.engine.run_template(template, {})
        assert paused.status == ExecutionStatus.PAUSED
        done = await h.engine.resume(paused.id, "yes")
        assert done.status == ExecutionStatus.SUCCEEDED, done.error
        assert h.counts() == {"after": 1}


# ---------------------------------------------------------------------- through a gateway


@pytest.mark.anyio
@pytest.mark.slow
async def test_signals_time_waits_and_approval_timeouts_through_the_management_tools(tmp_path: Path) -> None:
    """One in-process gateway: `toolreel__signal_execution` refuses a bad signal with `signal_refused` and
    delivers a good one; a time wait is woken by the gateway itself; an approval the client is asked and never
    answers times out while it is being asked."""
    from mcp import types

    from tests.callers import fixture_env
    from tests.gw import call, fixture_entry
    from tests.inproc import gateway_in_process
    from toolreel.core.store import open_store

    db = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(db)
    saved(store, {"name": "gate", "steps": [{"name": "go", "wait": {"signal": "go", "schema": {"type": "integer"}}}]})
    saved(store, {"name": "nap", "steps": [{"name": "z", "wait": {"for": "2s"}}], "output": "@z.until"})
    saved(store, _approval("approve"))
    servers = {"features": fixture_entry("features", env=fixture_env(tmp_path))}
    try:
        async with gateway_in_process(servers, db=db) as gw:
            paused = (await call(gw, "toolreel__run_template", {"name": "gate"})).structured_content or {}
            assert paused["status"] == "paused" and paused["prompt"]["signal"] == "go"
            refused = await call(gw, "toolreel__signal_execution", {"id": paused["execution_id"], "name": "go"})
            assert refused.is_error and (refused.structured_content or {})["error"]["code"] == "signal_refused"
            sent = {"id": paused["execution_id"], "name": "go", "data": 42}
            done = (await call(gw, "toolreel__signal_execution", sent)).structured_content or {}
            assert done == {"execution_id": paused["execution_id"], "status": "succeeded", "output": 42}

            napping = (await call(gw, "toolreel__run_template", {"name": "nap"})).structured_content or {}
            assert napping["status"] == "paused" and napping["prompt"]["wait"] == "time"
            await wait_until(
                lambda: store.get_execution(napping["execution_id"]).status == ExecutionStatus.SUCCEEDED,
                timeout=30,
                what="the gateway to wake the nap",
            )
            assert store.get_execution(napping["execution_id"]).output == napping["prompt"]["until"]

            async def never(params: types.ElicitRequestParams) -> types.ElicitResult:
                await anyio.sleep_forever()
                raise AssertionError("unreachable")

            gw.probe.elicit = never
            with anyio.fail_after(30):
                timed = (await call(gw, "toolreel__run_template", {"name": "timed-approve"})).structured_content
            assert (timed or {})["status"] == "succeeded"
            assert gw.probe.elicitations  # it was asked, and nobody answered
    finally:
        store.close()
