"""The engine's group commit of step rows (`replayer._journal.Journal`): rows land in order, a commit
returns once its rows are durable, and the loop writes small batches itself when the store can."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Sequence
from functools import partial

import anyio
import pytest

from tests.store_helpers import step
from toolreel.core.errors import StaleClaimError
from toolreel.core.model import StepRecord
from toolreel.replayer._journal import NOW_CHARS, NOW_ROWS, Journal, small_rows

pytestmark = pytest.mark.anyio


class Sink:
    """Where the journal's batches go, and on which thread each was written."""

    def __init__(self, *, now: bool) -> None:
        self.now = now
        self.batches: list[tuple[str, list[str]]] = []
        self.loop_thread = threading.get_ident()

    def write(self, rows: Sequence[StepRecord]) -> None:
        assert threading.get_ident() != self.loop_thread
        self.batches.append(("thread", [row.name for row in rows]))

    def write_now(self, rows: Sequence[StepRecord]) -> bool:
        assert threading.get_ident() == self.loop_thread
        if self.now:
            self.batches.append(("now", [row.name for row in rows]))
        return self.now


async def run_journal(journal: Journal, body: Callable[[], Awaitable[None]]) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(journal.run)
        await body()
        journal.close()


@pytest.mark.parametrize("now", [True, False])
async def test_a_commit_returns_once_its_rows_and_all_before_are_written(now: bool) -> None:
    sink = Sink(now=now)
    journal = Journal(sink.write, write_now=sink.write_now)

    async def body() -> None:
        journal.submit([step("a", 1)])
        await journal.commit([step("b", 2)])
        names = [name for _, batch in sink.batches for name in batch]
        assert names[:2] == ["a", "b"]

    await run_journal(journal, body)
    assert {where for where, _ in sink.batches} == {"now" if now else "thread"}


async def test_a_declined_write_goes_to_a_worker_thread() -> None:
    sink = Sink(now=False)
    journal = Journal(sink.write, write_now=sink.write_now)
    await run_journal(journal, partial(journal.commit, [step("a", 1)]))
    assert sink.batches == [("thread", ["a"])]


async def test_a_failed_write_now_fails_the_commit_and_every_later_one() -> None:
    def refuse(rows: Sequence[StepRecord]) -> bool:
        raise StaleClaimError("execution e1 is now driven by B")

    journal = Journal(Sink(now=False).write, write_now=refuse)
    with pytest.raises(StaleClaimError, match="driven by B"):
        await journal.commit([step("a", 1)])
    with pytest.raises(StaleClaimError):
        await journal.commit([step("b", 2)])


def test_small_rows_counts_rows_and_characters() -> None:
    assert small_rows([step("a", 1, output={"text": "x" * 100})])
    assert not small_rows([step("a", 1, output={"text": "x" * (NOW_CHARS + 1)})])
    assert not small_rows([step("a", 1, output=[[0] * (NOW_CHARS // 4)])])
    assert not small_rows([step(f"s{i}", i) for i in range(NOW_ROWS + 1)])
    assert small_rows([step(f"s{i}", i) for i in range(NOW_ROWS)])
