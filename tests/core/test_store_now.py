"""`try_put_steps`: the step write an event loop makes itself, on a real SQLite file (and what it
declines: PostgreSQL, an in-memory database, a write lock held by another connection, a large batch)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.store_helpers import T0, execution, step
from toolreel.core.errors import StaleClaimError
from toolreel.core.model import ExecutionStatus
from toolreel.core.store import SQLStore, open_store
from toolreel.core.store._engine import NOW_COMMITS


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "toolreel.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[SQLStore]:
    with open_store(f"sqlite:///{db_path}") as opened:
        opened.create_execution(execution("e1", status=ExecutionStatus.RUNNING))
        yield opened


@contextlib.contextmanager
def write_lock_held(db_path: Path) -> Iterator[None]:
    """Another connection (as another process would) holding SQLite's write lock."""
    other = sqlite3.connect(db_path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        yield
        other.execute("ROLLBACK")
    finally:
        other.close()


def test_a_small_batch_is_written_at_once_and_fenced(store: SQLStore) -> None:
    (claim,) = store.claim_executions("A", lease_seconds=10, limit=1, now=T0)
    assert store.try_put_steps([step("a", 1, output={"n": 1}), step("b", 2)], fence=claim.fence) is True
    assert [(s.name, s.output) for s in store.get_steps("e1")] == [("a", {"n": 1}), ("b", None)]
    assert store.try_put_steps([]) is True
    assert store.writes_now is True


def test_a_stale_fence_is_refused_and_nothing_is_written(store: SQLStore) -> None:
    (old,) = store.claim_executions("A", lease_seconds=10, limit=1, now=T0)
    store.claim_executions("B", lease_seconds=10, limit=1, now=T0 + 11)
    with pytest.raises(StaleClaimError, match=r"driven by B \(claim fence 2, this write carried 1\)"):
        store.try_put_steps([step("a", 1)], fence=old.fence)
    assert store.get_steps("e1") == []


def test_a_held_write_lock_is_declined_without_waiting(store: SQLStore, db_path: Path) -> None:
    with write_lock_held(db_path):
        # The busy timeout of the pool's connections is 10 s: an answer now shows nothing waited for it.
        assert store.try_put_steps([step("a", 1)]) is False
    assert store.get_steps("e1") == []
    assert store.try_put_steps([step("a", 1)]) is True
    assert [s.name for s in store.get_steps("e1")] == ["a"]


def test_a_large_batch_is_left_to_a_worker_thread(store: SQLStore) -> None:
    assert store.try_put_steps([step("big", 1, output="x" * 100_000)]) is False
    assert store.get_steps("e1") == []


def test_postgresql_and_in_memory_stores_always_decline(store_url: str) -> None:
    urls = ["sqlite://"] if store_url.startswith("sqlite") else [store_url]
    for url in urls:
        with open_store(url) as other:
            other.create_execution(execution("e1"))
            assert other.writes_now is False
            assert other.try_put_steps([step("a", 1)]) is False
            assert other.get_steps("e1") == []


def test_the_wal_stays_small_when_the_loop_does_the_writing(store: SQLStore, db_path: Path) -> None:
    # The loop's connection never checkpoints; every NOW_COMMITS-th write is declined so that the pool's
    # connection commits it and checkpoints. Without that, these writes grew the WAL to about 28 MB.
    declined = 0
    for index in range(3000):
        rows = [step(f"s{index}", index, output={"n": index, "text": "x" * 200})]
        if not store.try_put_steps(rows):
            declined += 1
            store.put_steps(rows)
    assert declined == 3000 // (NOW_COMMITS + 1)
    assert len(store.get_steps("e1")) == 3000
    assert db_path.with_name(db_path.name + "-wal").stat().st_size < 10_000_000
