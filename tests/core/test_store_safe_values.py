"""A value the database cannot take as it is (a lone surrogate, a NUL in text) is stored in a safe,
escaped form and never fails the rows written with it: real SQLite and PostgreSQL."""

from __future__ import annotations

from tests.store_helpers import T0, execution, step
from toolreel.core.model import Execution, ExecutionMode, ExecutionStatus, StepStatus
from toolreel.core.store import open_store
from toolreel.recorder._rows import ExecutionEntry, StepEntry, write_entries

BAD = "caf\u00e9 \ud800 end"


def test_a_lone_surrogate_is_stored_escaped_and_its_batch_is_written(store_url: str) -> None:
    with open_store(store_url) as store:
        store.create_execution(execution("e1"))
        batch = [
            step("a_1", 1, input={"x": "fine"}),
            step(
                "a_2", 2, input={"x": BAD, BAD: 1}, resolved_input={"x": BAD}, output=BAD,
                result={"content": [{"type": "text", "text": BAD}]}, error=f"nul \x00 and {BAD}",
                status=StepStatus.FAILED, is_error=True,
            ),
            step("a_3", 3, output="after", input={"x": "fine"}),
        ]  # fmt: skip
        store.put_steps(batch)
        stored = {s.name: s for s in store.get_steps("e1")}
    assert sorted(stored) == ["a_1", "a_2", "a_3"]
    bad = stored["a_2"]
    # JSON values come back as they were (the JSON escape is lossless)
    assert bad.input == {"x": BAD, BAD: 1} and bad.output == BAD and bad.result == batch[1].result
    # plain text is backslash-escaped: readable, and encodable everywhere
    assert bad.error == "nul \\x00 and caf\u00e9 \\ud800 end"
    assert stored["a_3"].output == "after"


def test_a_recorded_call_with_a_lone_surrogate_does_not_stop_the_recording(store_url: str) -> None:
    """What the recorder process writes: an execution, then calls; one holds a lone surrogate."""
    entries: list[ExecutionEntry | StepEntry] = [ExecutionEntry("execution", "rec1", T0, "s")]
    for n in range(1, 6):
        text = BAD if n == 2 else f"n{n}"
        result = {"content": [{"type": "text", "text": text}], "isError": False}
        arguments = {"text": text}
        call = StepEntry("step", "rec1", f"echo_{n}", n, "feat", "echo", arguments, arguments, result, None, T0, T0)
        entries.append(call)
    with open_store(store_url) as store:
        write_entries(store, entries, set())
        steps = store.get_steps("rec1")
    assert [s.name for s in steps] == [f"echo_{n}" for n in range(1, 6)]
    assert steps[1].input == {"text": BAD} and steps[1].output == BAD


def test_an_execution_error_with_a_lone_surrogate_is_stored_escaped(store_url: str) -> None:
    with open_store(store_url) as store:
        record = Execution(
            id="x1", mode=ExecutionMode.AUTO, status=ExecutionStatus.FAILED, created_at=T0, updated_at=T0,
            error=BAD, inputs={"v": BAD},
        )  # fmt: skip
        store.create_execution(record)
        store.update_execution("x1", error=f"again {BAD}")
        got = store.get_execution("x1")
    assert got.inputs == {"v": BAD} and got.error == "again caf\u00e9 \\ud800 end"
