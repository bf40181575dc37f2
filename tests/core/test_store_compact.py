"""A step row holds each value once: a `resolved_input` equal to the `input`, and an `output` that SPEC §4 reads
from the stored `result`, are not written a second time, and every reader still gets every field as before.
Real SQLite and PostgreSQL; rows written before (both copies in full) read the same."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from tests.store_helpers import T0, execution, step
from toolreel.core.model import StepKind, StepRecord, StepStatus
from toolreel.core.secrets import REDACTED
from toolreel.core.store import SQLStore, open_store
from toolreel.core.store._rows import dumps, step_to_row
from toolreel.core.store._tables import STEPS
from toolreel.recorder._rows import StepEntry, build


@pytest.fixture
def store(store_url: str) -> Iterator[SQLStore]:
    with open_store(store_url) as opened:
        opened.create_execution(execution("e1"))
        yield opened


def _recorded(name: str, arguments: Any, result: dict[str, Any], *, sent: Any = None) -> StepRecord:
    """A step as the recorder builds it from a finished call (output read from the result by §4)."""
    sent = dict(arguments) if sent is None else sent
    row = build(StepEntry("step", "e1", name, 1, "srv", "t", arguments, sent, result, None, T0, T0 + 1))
    assert isinstance(row, StepRecord)
    return row


def _raw_row(store: SQLStore, name: str) -> dict[str, Any]:
    engine = sa.create_engine(store.url)
    try:
        with engine.connect() as conn:
            return dict(conn.execute(sa.select(STEPS).where(STEPS.c.name == name)).mappings().one())
    finally:
        engine.dispose()


def _count(row: dict[str, Any], needle: str) -> int:
    return sum(value.count(needle) for value in row.values() if isinstance(value, str))


def test_a_large_json_text_result_and_arguments_without_refs_are_stored_once(store: SQLStore) -> None:
    needle, arg = f"needle-{secrets.token_hex(4)}", f"arg-{secrets.token_hex(4)}"
    document = {"rows": [{"id": i, "name": f"{needle} {i}", "score": i / 7} for i in range(5_000)]}
    text = json.dumps(document, indent=2)
    recorded = _recorded("read_1", {"path": arg}, {"content": [{"type": "text", "text": text}], "isError": False})
    assert recorded.output == document and recorded.resolved_input == recorded.input
    store.put_steps([recorded])
    row = _raw_row(store, "read_1")
    assert _count(row, f"{needle} 4999") == 1  # in the result's text only, not again as the output
    assert _count(row, arg) == 1  # in the input only
    assert sum(len(v) for v in row.values() if isinstance(v, str)) < len(json.dumps(text)) + 1_000
    assert store.get_steps("e1") == [recorded]


def test_structured_content_is_stored_once_and_read_back_as_the_output(store: SQLStore) -> None:
    needle = f"needle-{secrets.token_hex(4)}"
    document = {"items": [f"{needle}-{i}" for i in range(1_000)]}
    recorded = _recorded(
        "list_1", {}, {"content": [{"type": "text", "text": "1000 items"}], "structuredContent": document}
    )
    store.put_step(recorded)
    assert _count(_raw_row(store, "list_1"), f"{needle}-999") == 1
    (stored,) = store.get_steps("e1")
    assert stored == recorded and stored.output == document


def test_a_single_text_and_a_preset_read_back_whole(store: SQLStore) -> None:
    echoed = _recorded("echo_1", {"text": "hi"}, {"content": [{"type": "text", "text": "Echo: hi"}]})
    quoted = _recorded("echo_2", {"text": "7"}, {"content": [{"type": "text", "text": "7"}]})
    preset = step("mock_1", 2, output={"a": [1, 2]}, result={"structuredContent": {"a": [1, 2]}}).replace(
        kind=StepKind.PRESET
    )
    store.put_steps([echoed, quoted, preset])
    stored = {s.name: s for s in store.get_steps("e1")}
    assert stored == {"echo_1": echoed, "echo_2": quoted, "mock_1": preset}
    assert stored["echo_1"].output == "Echo: hi" and stored["echo_2"].output == 7


def test_values_that_differ_are_kept_in_full(store: SQLStore) -> None:
    result = {"content": [{"type": "text", "text": '{"n": 1}'}]}
    cases = [
        _recorded("ref_1", {"path": "@input.path"}, result, sent={"path": "/tmp/a"}),  # a ref resolved
        step("other_1", 2, input={"a": 1}, output={"n": 2}, result=result),  # not what §4 reads from the result
        step("child_1", 3, input={"a": 1}, output={"n": 1}, result=result).replace(kind=StepKind.TEMPLATE),  # not §4's
        step("code_1", 4, input={"a": 1}, resolved_input={"a": 1}, output={"sum": 3}).replace(kind=StepKind.CODE),
        step(
            "bad_1",
            5,
            input={},
            resolved_input={},
            result={**result, "isError": True},
            status=StepStatus.FAILED,
            is_error=True,
            error="tool error",
        ),
        step("pending_1", 6, input={"x": "@input.x"}, status=StepStatus.PENDING),  # nothing resolved yet
    ]
    store.put_steps(cases)
    assert store.get_steps("e1") == cases
    assert _raw_row(store, "other_1")["output"] == '{"n":2}'
    assert _raw_row(store, "child_1")["output"] == '{"n":1}'  # equal to §4's reading, but not defined by it
    assert _raw_row(store, "pending_1")["resolved_input"] is None


def test_a_large_json_text_redacted_by_key_still_gives_its_output(store: SQLStore) -> None:
    """JSON text past the redactor's parsing size is redacted by key as its parsed output is: the stored result
    still gives the stored output, which is not written a second time."""
    password = f"pw-{secrets.token_hex(8)}"
    document = {"password": password, "padding": "x" * (1 << 20)}
    recorded = _recorded("big_1", {}, {"content": [{"type": "text", "text": json.dumps(document)}]})
    assert recorded.output == document
    store.put_step(recorded)
    (stored,) = store.get_steps("e1")
    assert stored.output == {"password": REDACTED, "padding": document["padding"]}
    row = _raw_row(store, "big_1")
    assert row["output"] == "=" and _count(row, password) == 0


def test_rows_written_with_both_copies_read_as_before(store: SQLStore) -> None:
    recorded = _recorded("old_1", {"q": "x"}, {"content": [{"type": "text", "text": '{"hits": [1, 2]}'}]})
    row = step_to_row(recorded)
    row.update(resolved_input=dumps(recorded.resolved_input, "r"), output=dumps(recorded.output, "o"))
    engine = sa.create_engine(store.url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.insert(STEPS), [row])
    finally:
        engine.dispose()
    assert store.get_steps("e1") == [recorded]
