"""Recording mode end to end (SPEC §3-§6, issue 3): every upstream call through the gateway is a step.

One gateway serves the module in-process (tests/inproc.py), shared by its clients as over HTTP: fixtures
`features` and `ids` over stdio, `features` again over streamable HTTP with a bearer header; every test
opens its own connection, hence its own execution. What the agent sees is checked on the results; what is
stored is read back with `core.store`. What needs a gateway of its own (the HTTP front as a process,
`--annotate`, `--no-record`, a store that cannot be written) is in tests/recorder/test_recording_gateways.py.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures._zygote import launch_command
from tests.gw import (
    TOOLREEL,
    call,
    fixture_entry,
    fixture_http_server,
    gateway_env,
    status,
    text_of,
    unsaved,
    wait_until,
)
from tests.inproc import InProcessGateway, gateway_with_clients
from tests.stored import step_meta, stored_steps
from toolreel.core.errors import NotFoundError
from toolreel.core.model import ExecutionMode, ExecutionStatus, StepKind, StepRecord, StepStatus
from toolreel.core.store import Store, open_store
from toolreel.upstreams.config import parse_config

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("recording")]

ENV_SECRET = "env-secret-Zq8w3L1x"
WEB_TOKEN = "web-token-Pm4k9T2v"


@dataclass
class Rec:
    gateway: InProcessGateway
    store: Store
    db_path: Path
    counter_file: Path
    db_url: str

    def counts(self) -> dict[str, int]:
        return json.loads(self.counter_file.read_text()) if self.counter_file.exists() else {}


@pytest.fixture(scope="module")
async def rec(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Rec]:
    tmp = tmp_path_factory.mktemp("recording")
    counter_file = tmp / "counts.json"
    db_path = tmp / "store.db"
    db_url = f"sqlite:///{db_path}"
    async with fixture_http_server("features") as web_url:
        servers = {
            "feat": fixture_entry(
                "features", env={"FIXTURE_COUNTER_FILE": str(counter_file), "FEAT_SECRET": ENV_SECRET}
            ),
            "ids": fixture_entry("ids"),
            "web": {"url": web_url, "headers": {"Authorization": "Bearer ${env:WEB_TOKEN}"}},
        }
        config = parse_config({"mcpServers": servers}, environ={"WEB_TOKEN": WEB_TOKEN})
        async with gateway_with_clients(config, db=db_url) as gateway:
            store = open_store(db_url)
            try:
                yield Rec(gateway, store, db_path, counter_file, db_url)
            finally:
                store.close()


# The recorder process runs at the lowest CPU priority (SCHED_IDLE): on a busy machine what it writes can trail
# the calls by minutes. A wait for the store ends as soon as the rows are there.
CATCH_UP = 120.0


async def _steps(rec: Rec, execution: str, count: int) -> list[StepRecord]:
    """The stored steps of `execution`, once `count` of them are there (recording is asynchronous)."""
    await wait_until(lambda: len(stored_steps(rec.store, execution)) >= count, CATCH_UP, f"{count} stored steps")
    return rec.store.get_steps(execution)


# --- naming and what is stored ------------------------------------------------------------------------------------


async def test_steps_are_named_tool_n_counting_per_name(rec: Rec) -> None:
    async with rec.gateway.connect() as s:
        results = [
            await call(s, "feat__echo", {"text": "one"}),
            await call(s, "feat__echo", {"text": "two"}),
            await call(s, "feat__add", {"a": 1, "b": 2}),
            await call(s, "ids__create_user", {"name": "Ann", "email": "ann@example.com"}),
            await call(s, "feat__echo", {"text": "three"}),
        ]
        preset = await call(s, "toolreel__set_step_result", {"output": {"x": 1}, "tool": "everything__get-tiny-image"})
        report = await status(s)
    names = [step_meta(r)[0] for r in results]
    assert names == ["echo_1", "echo_2", "add_1", "create_user_1", "echo_3"]
    assert not preset.is_error and (preset.structured_content or {}).get("step") == "get_tiny_image_1"
    execution = step_meta(results[0])[1]
    assert {step_meta(r)[1] for r in results} == {execution} == {report["execution_id"]}
    assert [(st["name"], st["tool"], st["status"]) for st in report["steps"]][:5] == [
        ("echo_1", "feat__echo", "succeeded"),
        ("echo_2", "feat__echo", "succeeded"),
        ("add_1", "feat__add", "succeeded"),
        ("create_user_1", "ids__create_user", "succeeded"),
        ("echo_3", "feat__echo", "succeeded"),
    ]
    stored = await _steps(rec, execution, 6)
    assert [(st.name, st.seq, st.server, st.tool, st.kind) for st in stored] == [
        ("echo_1", 1, "feat", "echo", StepKind.TOOL),
        ("echo_2", 2, "feat", "echo", StepKind.TOOL),
        ("add_1", 3, "feat", "add", StepKind.TOOL),
        ("create_user_1", 4, "ids", "create_user", StepKind.TOOL),
        ("echo_3", 5, "feat", "echo", StepKind.TOOL),
        ("get_tiny_image_1", 6, "everything", "get-tiny-image", StepKind.PRESET),
    ]
    add = stored[2]
    assert add.status is StepStatus.SUCCEEDED and not add.is_error
    assert add.output == {"sum": 3.0, "operands": {"a": 1.0, "b": 2.0}}  # structuredContent (SPEC §4 rule 1)
    assert add.result["structuredContent"] == add.output
    assert add.started_at is not None and add.ended_at is not None and add.ended_at >= add.started_at
    user = stored[3]
    assert user.output["id"].startswith("usr_")
    assert stored[0].output == "one"  # a single non-JSON text (rule 3)


async def test_execution_is_created_at_the_first_upstream_call(rec: Rec) -> None:
    async with rec.gateway.connect() as s:
        before = await status(s)
        await call(s, "toolreel__list_executions", {"limit": 1})
        still_none = await status(s)
        first = await call(s, "feat__echo", {"text": "x"})
    assert before["execution_id"] is None and still_none["execution_id"] is None
    execution_id = step_meta(first)[1]
    await wait_until(lambda: _exists(rec, execution_id), CATCH_UP, "the execution row")
    execution = rec.store.get_execution(execution_id)
    assert execution.mode is ExecutionMode.RECORD and execution.status is ExecutionStatus.RECORDING
    assert execution.session


def _exists(rec: Rec, execution_id: str) -> bool:
    try:
        rec.store.get_execution(execution_id)
    except NotFoundError:  # until the writer caught up
        return False
    return True


async def test_management_tools_are_not_recorded(rec: Rec) -> None:
    async with rec.gateway.connect() as s:
        first = await call(s, "feat__echo", {"text": "x"})
        await call(s, "toolreel__status", {})
        await call(s, "toolreel__list_executions", {})
        last = await call(s, "feat__echo", {"text": "y"})
    assert step_meta(last)[0] == "echo_2"
    assert [st.name for st in await _steps(rec, step_meta(first)[1], 2)] == ["echo_1", "echo_2"]


# --- refs -------------------------------------------------------------------------------------------------------------


async def test_input_is_stored_as_written_and_as_resolved(rec: Rec) -> None:
    async with rec.gateway.connect() as s:
        await call(s, "feat__echo", {"text": "hello"})
        second = await call(s, "feat__echo", {"text": "@echo_1"})
    assert text_of(second) == "hello"
    step = (await _steps(rec, step_meta(second)[1], 2))[1]
    assert step.input == {"text": "@echo_1"}
    assert step.resolved_input == {"text": "hello"}
    assert step.output == "hello"


async def test_whole_string_ref_keeps_the_values_type(rec: Rec) -> None:
    async with rec.gateway.connect() as s:
        await call(s, "feat__add", {"a": 2, "b": 3})
        second = await call(s, "feat__add", {"a": "@add_1.sum", "b": "@add_1.operands.a"})
    assert not second.is_error, text_of(second)
    assert second.structured_content == {"sum": 7.0, "operands": {"a": 5.0, "b": 2.0}}
    step = (await _steps(rec, step_meta(second)[1], 2))[1]
    assert step.resolved_input == {"a": 5.0, "b": 2.0}


async def test_refs_interpolate_inside_longer_strings(rec: Rec) -> None:
    async with rec.gateway.connect() as s:
        await call(s, "feat__add", {"a": 2, "b": 3})
        await call(s, "feat__echo", {"text": "plain"})
        result = await call(s, "feat__echo", {"text": "sum={{@add_1.sum}} ops={{@add_1.operands}} said {{@echo_1}}"})
    text = text_of(result)
    head, _, tail = text.partition(" ops=")
    ops, _, said = tail.partition(" said ")
    assert head == "sum=5.0"
    assert json.loads(ops) == {"a": 2.0, "b": 3.0}
    assert said == "plain"


async def test_escapes_and_literal_at_signs_are_not_refs(rec: Rec) -> None:
    literals = ["alice@example.com", "@channel hi", "mail me @ home", "price@2x", "{{not a ref}}"]
    async with rec.gateway.connect() as s:
        escaped = await call(s, "feat__echo", {"text": "@@handle"})
        plain = [await call(s, "feat__echo", {"text": literal}) for literal in literals]
    assert not escaped.is_error and text_of(escaped) == "@handle"
    assert [text_of(r) for r in plain] == literals
    steps = await _steps(rec, step_meta(escaped)[1], 1 + len(literals))
    assert steps[0].input == {"text": "@@handle"} and steps[0].resolved_input == {"text": "@handle"}


async def test_refs_resolve_at_any_depth_and_address_json_inside_text(rec: Rec) -> None:
    async with rec.gateway.connect() as s:
        user = await call(s, "ids__create_user", {"name": "Bob Stone", "email": "bob@example.com"})
        found = await call(s, "ids__search", {"query": "stone"})
        order = await call(
            s,
            "ids__create_order",
            {
                "user_id": "@create_user_1.id",
                "items": [{"sku": "cheese", "qty": "@search_1.count"}, {"sku": "@search_1.query", "qty": 2}],
            },
        )
    assert not order.is_error, text_of(order)
    assert not found.is_error and json.loads(text_of(found))["count"] == 1
    created = order.structured_content or {}
    assert created["user_id"] == (user.structured_content or {})["id"]
    assert [(line["sku"], line["qty"]) for line in created["lines"]] == [("cheese", 1), ("stone", 2)]
    step = (await _steps(rec, step_meta(order)[1], 3))[2]
    assert step.input["items"][0] == {"sku": "cheese", "qty": "@search_1.count"}
    assert step.resolved_input["items"][0] == {"sku": "cheese", "qty": 1}


async def test_unresolvable_refs_are_tool_errors_and_nothing_is_forwarded(rec: Rec) -> None:
    bad_calls = {
        "@nosuch_1": "names no step",
        "@counter_1.missing": "missing",
        "@counter_1.count[0]": "count",
        "prefix {{@counter_1.count}} and {{@nope_2.x}}": "nope_2",
    }
    async with rec.gateway.connect() as s:
        first = await call(s, "feat__counter", {"key": "refs-k"})
        assert (first.structured_content or {}).get("count") == 1
        errors = {ref: await call(s, "feat__counter", {"key": ref}) for ref in bad_calls}
        after = await call(s, "feat__counter", {"key": "refs-k"})
        report = await status(s)
    for ref, result in errors.items():
        assert result.is_error, ref
        text = text_of(result)
        assert bad_calls[ref] in text, text
        assert "counter_1" in text, text  # what exists: the steps, or the step whose output was addressed
    assert "key" in text_of(errors["@counter_1.missing"])  # the fields that do exist
    assert (after.structured_content or {}).get("count") == 2  # nothing in between reached the server
    counts = rec.counts()
    assert not [key for key in counts if "@" in key or "{{" in key or key.startswith("prefix")], counts
    assert [st["name"] for st in report["steps"] if st["status"] == "succeeded"] == ["counter_1", "counter_2"]


async def test_refs_into_failed_steps_and_out_of_range_indexes_are_explained(rec: Rec) -> None:
    async with rec.gateway.connect() as s:
        failed = await call(s, "feat__fail", {"message": "nope"})
        into_failed = await call(s, "feat__echo", {"text": "@fail_1"})
        await call(s, "toolreel__set_step_result", {"output": {"items": [10, 20]}, "step": "lst"})
        out_of_range = await call(s, "feat__echo", {"text": "{{@lst.items[5]}}"})
        in_range = await call(s, "feat__echo", {"text": "{{@lst.items[1]}}"})
    assert failed.is_error
    assert into_failed.is_error and "fail_1" in text_of(into_failed)
    assert out_of_range.is_error and "2 items" in text_of(out_of_range)
    assert text_of(in_range) == "20"


async def test_ref_to_a_step_still_running_is_refused(rec: Rec) -> None:
    async with rec.gateway.connect() as s:
        async with anyio.create_task_group() as tg:
            tg.start_soon(call, s, "feat__slow", {"seconds": 1.5})

            async def running() -> bool:
                return any(st["name"] == "slow_1" for st in (await status(s))["steps"])

            await wait_until(running, 10, "slow_1 to start")
            early = await call(s, "feat__echo", {"text": "{{@slow_1}}"})
            taken = await call(s, "toolreel__set_step_result", {"output": 1, "step": "slow_1"})
            listed = {st["name"]: st["status"] for st in (await status(s))["steps"]}
        late = await call(s, "feat__echo", {"text": "{{@slow_1}}"})
        after = {st["name"]: st["status"] for st in (await status(s))["steps"]}
    assert early.is_error and "step slow_1, which has not finished yet" in text_of(early)
    assert taken.is_error and "already exists" in text_of(taken)  # a running step's name is taken too
    assert listed == {"slow_1": "running"}  # a call refused for its refs opens no step
    assert text_of(late) == "slept 1.5s"
    assert after == {"slow_1": "succeeded", "echo_1": "succeeded"}


# --- failures, meta, annotations --------------------------------------------------------------------------------


async def test_failed_calls_are_recorded_as_failed_steps(rec: Rec) -> None:
    async with rec.gateway.connect() as s:
        failed = await call(s, "feat__fail", {"message": "the disk is on fire"})
        ok = await call(s, "feat__echo", {"text": "fine"})
        report = await status(s)
    assert failed.is_error and text_of(failed) == "the disk is on fire"
    assert step_meta(failed)[0] == "fail_1"  # the agent sees the step name on failures too
    assert [(st["name"], st["status"]) for st in report["steps"]] == [("fail_1", "failed"), ("echo_1", "succeeded")]
    fail_step, ok_step = await _steps(rec, step_meta(ok)[1], 2)
    assert fail_step.status is StepStatus.FAILED and fail_step.is_error
    assert "the disk is on fire" in (fail_step.error or "")
    assert fail_step.output is None
    assert ok_step.status is StepStatus.SUCCEEDED


async def test_result_reaches_the_agent_unchanged_but_for_the_meta_keys(rec: Rec) -> None:
    async with rec.gateway.connect() as s:
        result = await call(s, "feat__annotated", {})
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    meta = dumped["_meta"]
    assert set(meta) - {"io.modelcontextprotocol/serverInfo"} == {
        "fixtures/result",
        "toolreel/step",
        "toolreel/execution",
    }
    assert [c["type"] for c in dumped["content"]] == ["text"]  # no annotation item without --annotate


async def test_set_step_result_records_a_step_that_refs_can_use(rec: Rec) -> None:
    async with rec.gateway.connect() as s:
        seeded = await call(s, "toolreel__set_step_result", {"output": {"user": {"name": "Zed"}}, "step": "seed"})
        used = await call(s, "feat__echo", {"text": "hi {{@seed.user.name}}"})
        named_by_tool = await call(s, "toolreel__set_step_result", {"output": [1, 2, 3], "tool": "feat__echo"})
        real = await call(s, "feat__echo", {"text": "{{@echo_2}}"})
        reserved = await call(s, "toolreel__set_step_result", {"output": 1, "step": "input"})
        duplicate = await call(s, "toolreel__set_step_result", {"output": 1, "step": "seed"})
    assert not seeded.is_error and (seeded.structured_content or {})["step"] == "seed"
    assert text_of(used) == "hi Zed"
    assert (named_by_tool.structured_content or {})["step"] == "echo_2"
    assert step_meta(real)[0] == "echo_3" and json.loads(text_of(real)) == [1, 2, 3]
    assert reserved.is_error and duplicate.is_error
    steps = await _steps(rec, step_meta(used)[1], 4)
    assert [(st.name, st.kind) for st in steps] == [
        ("seed", StepKind.PRESET),
        ("echo_1", StepKind.TOOL),
        ("echo_2", StepKind.PRESET),
        ("echo_3", StepKind.TOOL),
    ]
    assert steps[0].output == {"user": {"name": "Zed"}}


async def test_get_execution_and_list_executions(rec: Rec) -> None:
    async with rec.gateway.connect() as s:
        first = await call(s, "feat__echo", {"text": "a"})
        await call(s, "feat__fail", {"message": "b"})
        execution_id = step_meta(first)[1]
        got = await call(s, "toolreel__get_execution", {"id": execution_id})
        listed = await call(s, "toolreel__list_executions", {"limit": 500})
        page = await call(s, "toolreel__list_executions", {"limit": 1})
        status_filtered = await call(s, "toolreel__list_executions", {"status": "succeeded", "limit": 500})
        missing = await call(s, "toolreel__get_execution", {"id": "no-such-execution"})
    view = got.structured_content or {}
    assert not got.is_error, text_of(got)
    assert json.dumps(view).count("echo_1") >= 1 and "fail_1" in json.dumps(view)
    assert "recording" in json.dumps(view)
    ids = [e["execution_id"] for e in (listed.structured_content or {})["executions"]]
    assert execution_id in ids
    assert len((page.structured_content or {})["executions"]) == 1
    assert (page.structured_content or {})["next_cursor"]
    assert execution_id not in [e["execution_id"] for e in (status_filtered.structured_content or {})["executions"]]
    assert missing.is_error and "no-such-execution" in text_of(missing)


# --- secrets ----------------------------------------------------------------------------------------------------------


async def test_secrets_are_redacted_in_the_store(rec: Rec) -> None:
    async with rec.gateway.connect() as s:
        by_value = await call(s, "feat__echo", {"text": f"my key is {ENV_SECRET}"})
        by_key = await call(s, "feat__echo", {"text": "keyed", "api_key": "sk-live-Qv7Hn2", "password": "hunter2-Xy"})
        by_header = await call(s, "web__echo", {"text": f"header {WEB_TOKEN}"})
        passed_on = await call(s, "feat__echo", {"text": "{{@echo_1}}!"})
    assert text_of(by_value) == f"my key is {ENV_SECRET}"  # the agent still sees its own data
    assert text_of(by_header) == f"header {WEB_TOKEN}", text_of(by_header)
    assert not by_key.is_error
    steps = await _steps(rec, step_meta(passed_on)[1], 4)
    flat = json.dumps([[st.input, st.resolved_input, st.result, st.output, st.error] for st in steps])
    for secret in (ENV_SECRET, WEB_TOKEN, "sk-live-Qv7Hn2", "hunter2-Xy"):
        assert secret not in flat, secret
    assert steps[1].redacted, "a redacted value is flagged so the templatizer makes it an input"
    # The journal holds a call as it was made until the gateway hears it is saved (then it is emptied):
    # once toolreel__status says nothing is unsaved, no file near the store may hold a secret.
    async with rec.gateway.connect() as s:
        await wait_until(lambda: _all_saved(s), CATCH_UP, "the gateway to hear that every call is saved")
    await anyio.to_thread.run_sync(_assert_not_in_files, rec.db_path, (ENV_SECRET, WEB_TOKEN, "sk-live-Qv7Hn2"))


async def _all_saved(s: Any) -> bool:
    return await unsaved(s) == 0


def _assert_not_in_files(db_path: Path, secrets: tuple[str, ...]) -> None:
    # the database, its -wal and -shm, and the recording journals in <name>.journal/
    near = list(db_path.parent.glob(db_path.name + "*"))
    for path in [*near, *(inner for folder in near if folder.is_dir() for inner in folder.rglob("*"))]:
        if path.is_dir():
            continue
        data = path.read_bytes()
        for secret in secrets:
            assert secret.encode() not in data, f"{secret} found in {path.name}"


# --- concurrency, size, sessions ----------------------------------------------------------------------------------


async def test_concurrent_calls_in_one_session_are_all_recorded(rec: Rec) -> None:
    results: dict[int, Any] = {}
    async with rec.gateway.connect() as s:

        async def one(index: int) -> None:
            results[index] = await call(s, "feat__echo", {"text": f"c{index}"})

        async with anyio.create_task_group() as tg:
            for index in range(20):
                tg.start_soon(one, index)
    names = sorted((step_meta(r)[0] for r in results.values()), key=lambda n: int(n.rsplit("_", 1)[1]))
    assert names == [f"echo_{n}" for n in range(1, 21)]
    executions = {step_meta(r)[1] for r in results.values()}
    assert len(executions) == 1
    steps = await _steps(rec, executions.pop(), 20)
    assert [st.seq for st in steps] == list(range(1, 21))
    assert sorted(st.output for st in steps) == sorted(f"c{i}" for i in range(20))
    by_name = {st.name: st for st in steps}
    for result in results.values():
        name = step_meta(result)[0]
        assert by_name[name].output == text_of(result)  # each step holds its own call's output
    starts = [st.started_at or 0 for st in steps]
    assert starts == sorted(starts)  # ordered by start


async def test_large_result_from_an_http_upstream_passes_through(rec: Rec) -> None:
    text = "y" * (3 * 1024 * 1024)  # above the SDK's default 1 MiB SSE event limit, below its 4 MiB body limit
    async with rec.gateway.connect() as s:
        with anyio.fail_after(60):
            result = await call(s, "web__echo", {"text": text})
    assert not result.is_error, text_of(result)[:300]
    assert text_of(result) == text


async def test_many_sessions_at_once_each_step_stored_once_in_its_own_execution(rec: Rec) -> None:
    clients, calls = 20, 50
    executions: dict[int, str] = {}
    expected: dict[int, list[str]] = {}

    async def session(index: int) -> None:
        outputs: list[str] = []
        async with rec.gateway.connect(probe=None) as s:
            for n in range(1, calls + 1):
                if n % 5 == 0:
                    arguments = {"text": f"{{{{@echo_{n - 1}}}}}+r"}  # "{{@echo_<n-1>}}+r"
                    want = f"{outputs[-1]}+r"
                else:
                    arguments = {"text": f"s{index}-{n}"}
                    want = f"s{index}-{n}"
                result = await call(s, "feat__echo", arguments)
                assert text_of(result) == want, (index, n, text_of(result))
                step, execution = step_meta(result)
                assert step == f"echo_{n}"
                executions.setdefault(index, execution)
                assert executions[index] == execution
                outputs.append(want)
        expected[index] = outputs

    with anyio.fail_after(150):
        async with anyio.create_task_group() as tg:
            for index in range(clients):
                tg.start_soon(session, index)
    assert len(set(executions.values())) == clients
    for index, execution in executions.items():
        steps = await _steps(rec, execution, calls)
        assert len(steps) == calls
        assert [st.name for st in steps] == [f"echo_{n}" for n in range(1, calls + 1)]
        assert [st.output for st in steps] == expected[index]
        assert len(rec.store.get_steps(execution, all_attempts=True)) == calls  # stored exactly once


# --- the CLI ----------------------------------------------------------------------------------------------------


async def _cli(rec: Rec, *args: str) -> subprocess.CompletedProcess[bytes]:
    return await anyio.run_process(launch_command([str(TOOLREEL), *args]), env=gateway_env(rec.db_url), check=False)


async def test_executions_cli_lists_and_shows_recordings(rec: Rec) -> None:
    help_text = (await _cli(rec, "executions", "--help")).stdout.decode()
    if " list " not in help_text and "│ list" not in help_text:
        pytest.skip("`toolreel executions list` is not registered yet")
    async with rec.gateway.connect() as s:
        execution_id = step_meta(await call(s, "feat__echo", {"text": "for the cli"}))[1]
    await _steps(rec, execution_id, 1)
    listed = await _cli(rec, "executions", "list", "--json", "--limit", "500")
    assert listed.returncode == 0, listed.stderr.decode()
    assert execution_id in listed.stdout.decode()
    shown = await _cli(rec, "executions", "show", execution_id, "--json")
    assert shown.returncode == 0, shown.stderr.decode()
    assert "echo_1" in shown.stdout.decode() and "for the cli" in shown.stdout.decode()
    missing = await _cli(rec, "executions", "show", "nope-nope")
    assert missing.returncode != 0 and "nope-nope" in missing.stderr.decode()
