"""The store's part in one recording across gateways, on real SQLite and PostgreSQL: `recording_of` finds a
client's active recording or makes one, once, however many gateways ask at once; `claim_step` hands out seqs in
order and refuses a name another gateway holds."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.store_helpers import T0, run_threads, step
from toolreel.core.model import Execution, ExecutionMode, ExecutionStatus, StepClaim, StepStatus
from toolreel.core.store import SQLStore, open_store

IDLE = 1800.0


@pytest.fixture
def store(store_url: str) -> Iterator[SQLStore]:
    with open_store(store_url) as opened:
        yield opened


def _recording(id: str, session: str = "client:abc", at: float = T0) -> Execution:
    return Execution(
        id=id,
        mode=ExecutionMode.RECORD,
        status=ExecutionStatus.RECORDING,
        created_at=at,
        updated_at=at,
        session=session,
    )


def test_an_active_recording_is_found_and_an_idle_one_is_not(store: SQLStore) -> None:
    made = store.recording_of("client:abc", active_since=T0 - IDLE, new=_recording("r1"))
    assert made.id == "r1" and store.get_execution("r1").session == "client:abc"
    store.put_step(step("echo_1", 1, execution_id="r1", started_at=T0 + 100))
    found = store.recording_of("client:abc", active_since=T0 + 100 - IDLE + 1, new=_recording("r2"))
    assert found.id == "r1"  # its last step started within the idle window, though it was made before it
    other = store.recording_of("client:other", active_since=T0, new=_recording("r3", "client:other"))
    assert other.id == "r3"  # another client never joins it
    later = store.recording_of("client:abc", active_since=T0 + 101, new=_recording("r4", at=T0 + 5000))
    assert later.id == "r4"  # idle longer than the window: a new recording


def test_clients_asking_at_once_get_one_recording(store: SQLStore) -> None:
    found: list[str] = []

    def ask(index: int) -> None:
        with open_store(store.url) as mine:  # each caller its own store, as each gateway has
            found.append(mine.recording_of("client:abc", active_since=T0 - IDLE, new=_recording(f"r{index}")).id)

    run_threads(6, ask)
    assert len(set(found)) == 1
    assert [e.id for e in store.list_executions()[0]] == found[:1]


def test_claims_take_the_next_seq_refuse_a_taken_name_and_return_what_was_missed(store: SQLStore) -> None:
    store.recording_of("client:abc", active_since=T0, new=_recording("r1"))
    running = step("echo_1", 0, execution_id="r1", status=StepStatus.RUNNING, started_at=T0)
    assert store.claim_step(running, after_seq=0) == StepClaim(1)
    # a caller that has not read seq 1 gets its name, and is told what it missed
    missed = store.claim_step(running.replace(name="add_1"), after_seq=0)
    assert missed.seq == 2 and [(s.name, s.seq, s.status) for s in missed.newer] == [("echo_1", 1, StepStatus.RUNNING)]
    taken = store.claim_step(running, after_seq=2)  # another gateway holds echo_1: nothing written
    assert taken == StepClaim(None)
    assert store.claim_step(running.replace(name="echo_2"), after_seq=2) == StepClaim(3)
    assert [(s.name, s.seq) for s in store.get_steps("r1", after_seq=1)] == [("add_1", 2), ("echo_2", 3)]


def test_claims_racing_on_one_execution_get_distinct_seqs_and_one_name_once(store: SQLStore) -> None:
    store.recording_of("client:abc", active_since=T0, new=_recording("r1"))
    claims: list[StepClaim] = []

    def claim(index: int) -> None:
        with open_store(store.url) as mine:  # half of them want the same name
            name = "echo_1" if index % 2 else f"echo_{index + 2}"
            claims.append(mine.claim_step(step(name, 0, execution_id="r1", status=StepStatus.RUNNING), after_seq=0))

    run_threads(8, claim)
    assert sorted(c.seq for c in claims if c.seq is not None) == list(range(1, 6))  # echo_1 once, 4 others
    assert sum(c.seq is None for c in claims) == 3
    for made in claims:  # each was told every step written before its own
        assert [s.seq for s in made.newer] == list(range(1, len(made.newer) + 1))
