"""The Store methods against real SQLite files and a real PostgreSQL cluster: executions, steps, templates,
idempotency, and claims under concurrency (opening, schema versions and file modes: test_store_opening.py)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.to_thread
import pytest

from tests.store_helpers import T0, execution, run_threads, step
from toolreel.core.errors import NotFoundError, StaleClaimError, StoreError
from toolreel.core.model import ExecutionQuery, ExecutionStatus, StepStatus, TemplateDraft
from toolreel.core.secrets import REDACTED
from toolreel.core.store import SQLStore, Store, open_store


@pytest.fixture
def store(store_url: str) -> Iterator[SQLStore]:
    with open_store(store_url) as opened:
        yield opened


# executions -----------------------------------------------------------------------------


def test_sql_store_satisfies_the_store_protocol(store: SQLStore) -> None:
    as_protocol: Store = store
    assert as_protocol.url == store.url


def test_execution_round_trips_every_field(store: SQLStore) -> None:
    inputs = {"repo": "o/r", "limit": 10, "nested": [1, 2.5, None, True, "é"]}
    original = execution("e1", status=ExecutionStatus.PAUSED, template="triage", session="s-1", template_version=3)
    original = original.replace(template_hash="ab" * 32, inputs=inputs, output=[{"a": 1}], error="boom")
    original = original.replace(prompt={"message": "Post?"}, parent_id="p", parent_step="nested", depth=2)
    original = original.replace(deadline=T0 + 60, claimed_by="w1", lease_until=T0 + 5, fence=4)
    store.create_execution(original)
    assert store.get_execution("e1") == original


def test_update_execution_sets_fields_and_returns_the_new_row(store: SQLStore) -> None:
    store.create_execution(execution("e1"))
    updated = store.update_execution("e1", status=ExecutionStatus.SUCCEEDED, output={"count": 3})
    assert updated.status is ExecutionStatus.SUCCEEDED
    assert updated.output == {"count": 3}
    assert updated.updated_at > T0
    assert store.get_execution("e1") == updated


def test_update_execution_refuses_unknown_and_protected_fields(store: SQLStore) -> None:
    store.create_execution(execution("e1"))
    for field in ("colour", "id"):  # (`fence` is the keyword that guards the write, never a field to set)
        with pytest.raises(TypeError, match=field):
            store.update_execution("e1", **{field: 1})


def test_unknown_execution_is_named_in_the_error(store: SQLStore) -> None:
    with pytest.raises(NotFoundError, match=r"no execution 'nope' in store .*(sqlite|postgresql)"):
        store.get_execution("nope")
    with pytest.raises(NotFoundError, match="nope"):
        store.update_execution("nope", error="x")
    with pytest.raises(NotFoundError, match="nope"):
        store.get_steps("nope")


def test_duplicate_execution_id_is_a_store_error(store: SQLStore) -> None:
    store.create_execution(execution("e1"))
    with pytest.raises(StoreError, match="creating execution e1"):
        store.create_execution(execution("e1"))


def test_list_executions_pages_newest_first(store: SQLStore) -> None:
    # Three share a timestamp: the id breaks the tie, so no row is repeated or lost across pages.
    times = [T0 + 1, T0 + 2, T0 + 2, T0 + 2, T0 + 3, T0 + 4, T0 + 5]
    for index, created in enumerate(times):
        store.create_execution(execution(f"e{index}", created))
    stored = [store.get_execution(f"e{i}") for i in range(7)]
    expected = sorted(stored, key=lambda e: (e.created_at, e.id), reverse=True)

    page, cursor = store.list_executions(ExecutionQuery(limit=3))
    pages = [page]
    while cursor is not None:
        page, cursor = store.list_executions(ExecutionQuery(limit=3, cursor=cursor))
        pages.append(page)
    assert [len(page) for page in pages] == [3, 3, 1]
    assert [e.id for page in pages for e in page] == [e.id for e in expected]


def test_list_executions_filters_by_status_and_template(store: SQLStore) -> None:
    store.create_execution(execution("a", T0 + 1, template="t1"))
    store.create_execution(execution("b", T0 + 2, template="t2", status=ExecutionStatus.FAILED))
    store.create_execution(execution("c", T0 + 3, template="t1", status=ExecutionStatus.FAILED))
    store.create_execution(execution("d", T0 + 4, status=ExecutionStatus.RECORDING))

    def ids(**filters: Any) -> list[str]:
        page, cursor = store.list_executions(ExecutionQuery(**filters))
        assert cursor is None
        return [e.id for e in page]

    assert ids() == ["d", "c", "b", "a"]
    assert ids(status=ExecutionStatus.FAILED) == ["c", "b"]
    assert ids(template="t1") == ["c", "a"]
    assert ids(status=ExecutionStatus.FAILED, template="t1") == ["c"]
    page, cursor = store.list_executions(ExecutionQuery(status=ExecutionStatus.FAILED, limit=1))
    assert [e.id for e in page] == ["c"]
    after = ExecutionQuery(status=ExecutionStatus.FAILED, cursor=cursor)
    assert [e.id for e in store.list_executions(after)[0]] == ["b"]


def test_a_cursor_not_from_list_executions_is_refused(store: SQLStore) -> None:
    with pytest.raises(ValueError, match="next cursor"):
        store.list_executions(ExecutionQuery(cursor="not-a-cursor"))


# steps ------------------------------------------------------------------------------------


def test_step_round_trips_every_field(store: SQLStore) -> None:
    store.create_execution(execution("e1"))
    original = step(
        "read_file_1",
        1,
        server="fs",
        tool="read_file",
        input={"path": "@input.path"},
        resolved_input={"path": "/tmp/a", "token": REDACTED},
        result={"content": [{"type": "text", "text": "hi"}], "isError": False},
        output="hi",
        error=None,
        started_at=T0,
        ended_at=T0 + 0.25,
        redacted=("$.token",),
        idempotency_key="k-1",
    )
    store.put_step(original)
    assert store.get_steps("e1") == [original]


def test_latest_attempt_by_default_and_every_attempt_on_request(store: SQLStore) -> None:
    store.create_execution(execution("e1"))
    first = step("fetch", 1, attempt=1, status=StepStatus.FAILED, is_error=True, error="timeout")
    retry = step("fetch", 1, attempt=2, output={"ok": True})
    later = step("notify", 2)
    store.put_steps([later, first])
    store.put_step(retry)
    assert store.get_steps("e1") == [retry, later]
    assert store.get_steps("e1", all_attempts=True) == [first, retry, later]


def test_put_step_replaces_the_same_attempt(store: SQLStore) -> None:
    store.create_execution(execution("e1"))
    store.put_step(step("fetch", 1, status=StepStatus.RUNNING))
    done = step("fetch", 1, output=[1, 2])
    store.put_step(done)
    assert store.get_steps("e1", all_attempts=True) == [done]


def test_put_steps_writes_a_batch_and_the_last_record_of_a_step_wins(store: SQLStore) -> None:
    store.create_execution(execution("e1"))
    batch = [step(f"s{i}", i) for i in range(1, 51)]
    final = step("s1", 1, output="final")
    store.put_steps([*batch, final])
    stored = store.get_steps("e1")
    assert len(stored) == 50
    assert stored[0] == final
    store.put_steps([])


def test_a_step_of_an_unknown_execution_is_refused(store: SQLStore) -> None:
    with pytest.raises(StoreError, match=r"writing step 'x' of execution ghost failed"):
        store.put_step(step("x", 1, execution_id="ghost"))


def test_a_value_that_is_not_json_is_refused_naming_the_step(store: SQLStore) -> None:
    with pytest.raises(StoreError, match=r"step 'x' of execution e1 output: it is not JSON"):
        store.put_step(step("x", 1, output={1, 2}))


def test_a_10_mb_output_round_trips(store: SQLStore) -> None:
    store.create_execution(execution("e1"))
    big = {"items": [{"i": i, "text": "x" * 90} for i in range(100_000)]}
    assert len(json.dumps(big)) > 10_000_000
    store.put_step(step("big", 1, output=big, result={"structuredContent": big}))
    store.update_execution("e1", output=big)
    assert store.get_steps("e1")[0].output == big
    assert store.get_execution("e1").output == big


@pytest.mark.anyio
async def test_async_callers_write_from_worker_threads(store: SQLStore) -> None:
    store.create_execution(execution("e1"))

    async def write(index: int) -> None:
        await anyio.to_thread.run_sync(store.put_step, step(f"s{index}", index))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for index in range(1, 41):
                tg.start_soon(write, index)
    assert [s.name for s in store.get_steps("e1")] == [f"s{i}" for i in range(1, 41)]


# templates --------------------------------------------------------------------------------


def test_template_versions_and_hash(store: SQLStore) -> None:
    definition = {"name": "t", "steps": [{"name": "a", "tool": "fs__read", "input": {"b": 1, "a": "é"}}]}
    v1 = store.save_template(TemplateDraft("t", definition, description="first", source_executions=["e1", "e2"]))
    reordered = {"steps": [{"input": {"a": "é", "b": 1}, "tool": "fs__read", "name": "a"}], "name": "t"}
    v2 = store.save_template(TemplateDraft("t", reordered))
    canonical = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert (v1.version, v2.version) == (1, 2)
    assert v1.hash == v2.hash == hashlib.sha256(canonical.encode()).hexdigest()
    assert v1.source_executions == ("e1", "e2")
    assert store.get_template("t") == v2
    assert store.get_template("t", 1) == v1
    assert store.get_template("t", 1).description == "first"
    assert list(store.get_template("t", 2).definition) == ["steps", "name"]  # stored as given, not re-sorted
    assert store.save_template(TemplateDraft("t", {"name": "t", "steps": []})).hash != v1.hash


def test_list_templates_gives_the_latest_version_of_each_by_name(store: SQLStore) -> None:
    for name in ("zeta", "alpha", "zeta", "mid", "zeta"):
        store.save_template(TemplateDraft(name, {"name": name}))
    assert [(t.name, t.version) for t in store.list_templates()] == [("alpha", 1), ("mid", 1), ("zeta", 3)]


def test_missing_template_messages_say_what_exists(store: SQLStore) -> None:
    with pytest.raises(NotFoundError, match=r"no template named 'ghost' in store .* \(stored templates: none\)"):
        store.get_template("ghost")
    store.save_template(TemplateDraft("alpha", {}))
    store.save_template(TemplateDraft("alpha", {}))
    with pytest.raises(NotFoundError, match=r"stored templates: alpha\)"):
        store.get_template("ghost")
    with pytest.raises(NotFoundError, match=r"'alpha' has no version 7 .*versions 1..2 exist; the latest is 2"):
        store.get_template("alpha", 7)


def test_delete_template_removes_every_version(store: SQLStore) -> None:
    store.save_template(TemplateDraft("t", {"v": 1}))
    store.save_template(TemplateDraft("t", {"v": 2}))
    store.save_template(TemplateDraft("other", {}))
    assert store.delete_template("t") == 2
    assert [t.name for t in store.list_templates()] == ["other"]
    with pytest.raises(NotFoundError, match="no template named 't'"):
        store.delete_template("t")
    assert store.save_template(TemplateDraft("t", {})).version == 1


def test_concurrent_saves_never_share_a_version(store_url: str) -> None:
    stores = [open_store(store_url) for _ in range(4)]
    try:
        run_threads(4, lambda i: [stores[i].save_template(TemplateDraft("t", {"writer": i, "n": n})) for n in range(5)])
        versions = sorted(r.version for r in _all_versions(stores[0], "t"))
        assert versions == list(range(1, 21))
    finally:
        for opened in stores:
            opened.close()


def _all_versions(store: SQLStore, name: str) -> list[Any]:
    latest = store.get_template(name).version
    return [store.get_template(name, v) for v in range(1, latest + 1)]


# idempotency ------------------------------------------------------------------------------


def test_idempotent_results_expire(store: SQLStore) -> None:
    assert store.get_idempotent("k", now=T0) is None
    store.put_idempotent("k", {"sent": True}, expires_at=T0 + 10)
    assert store.get_idempotent("k", now=T0 + 9.9) == {"sent": True}
    assert store.get_idempotent("k", now=T0 + 10) is None
    store.put_idempotent("k", [1, 2], expires_at=None)  # replaces; never expires
    assert store.get_idempotent("k", now=T0 + 1e9) == [1, 2]


# claims -----------------------------------------------------------------------------------


def test_two_owners_claim_disjoint_executions_oldest_first(store: SQLStore) -> None:
    for index in range(4):
        store.create_execution(execution(f"e{index}", T0 + index))
    mine = store.claim_executions("A", lease_seconds=30, limit=2, now=T0)
    assert [e.id for e in mine] == ["e0", "e1"]
    assert {(e.claimed_by, e.lease_until, e.fence) for e in mine} == {("A", T0 + 30, 1)}
    theirs = store.claim_executions("B", lease_seconds=30, limit=10, now=T0)
    assert [e.id for e in theirs] == ["e2", "e3"]
    assert store.claim_executions("A", lease_seconds=30, limit=10, now=T0 + 1) == []


def test_only_pending_and_unheld_running_executions_are_claimable(store: SQLStore) -> None:
    statuses = [ExecutionStatus.RECORDING, ExecutionStatus.PAUSED, ExecutionStatus.SUCCEEDED, ExecutionStatus.RUNNING]
    for index, status in enumerate(statuses):
        store.create_execution(execution(status.value, T0 + index, status=status))
    store.create_execution(execution("held", T0, status=ExecutionStatus.RUNNING, claimed_by="X", lease_until=T0 + 99))
    claimed = store.claim_executions("A", lease_seconds=30, limit=10, now=T0)
    assert [e.id for e in claimed] == ["running"]


def test_concurrent_claimers_never_get_the_same_execution(store_url: str) -> None:
    stores = [open_store(store_url) for _ in range(4)]
    try:
        for index in range(40):
            stores[0].create_execution(execution(f"e{index:02}", T0 + index))
        claimed: list[list[str]] = [[] for _ in stores]

        def claim_until_empty(i: int) -> None:
            while batch := stores[i].claim_executions(f"owner{i}", lease_seconds=60, limit=3, now=T0):
                claimed[i] += [e.id for e in batch]

        run_threads(len(stores), claim_until_empty)
        everything = [execution_id for ids in claimed for execution_id in ids]
        assert sorted(everything) == [f"e{i:02}" for i in range(40)]  # each exactly once
    finally:
        for opened in stores:
            opened.close()


def test_an_expired_lease_is_taken_over_and_the_old_owner_is_fenced_off(store: SQLStore) -> None:
    store.create_execution(execution("e1", status=ExecutionStatus.RUNNING))
    store.put_step(step("done", 1))
    (old,) = store.claim_executions("A", lease_seconds=10, limit=1, now=T0)
    assert store.claim_executions("B", lease_seconds=10, limit=1, now=T0 + 5) == []
    (new,) = store.claim_executions("B", lease_seconds=10, limit=1, now=T0 + 11)
    assert (new.claimed_by, new.fence) == ("B", old.fence + 1)

    with pytest.raises(
        StaleClaimError, match=r"execution e1 is now driven by B \(claim fence 2, this write carried 1\)"
    ):
        store.update_execution("e1", fence=old.fence, status=ExecutionStatus.FAILED)
    with pytest.raises(StaleClaimError, match="driven by B"):
        store.put_step(step("done", 1, output="stale"), fence=old.fence)
    with pytest.raises(StaleClaimError):
        store.put_step(step("fresh", 2), fence=old.fence)

    assert store.get_execution("e1").status is ExecutionStatus.RUNNING
    assert [(s.name, s.output) for s in store.get_steps("e1")] == [("done", None)]
    store.put_step(step("done", 1, output="new"), fence=new.fence)
    assert store.update_execution("e1", fence=new.fence, status=ExecutionStatus.SUCCEEDED).fence == new.fence
    assert [(s.name, s.output) for s in store.get_steps("e1")] == [("done", "new")]


def test_a_fenced_batch_is_written_whole_or_refused_whole(store: SQLStore) -> None:
    store.create_execution(execution("e1", status=ExecutionStatus.RUNNING))
    (old,) = store.claim_executions("A", lease_seconds=10, limit=1, now=T0)
    store.put_steps([step("a", 1), step("b", 2)], fence=old.fence)
    (new,) = store.claim_executions("B", lease_seconds=10, limit=1, now=T0 + 11)
    with pytest.raises(StaleClaimError, match="driven by B"):
        store.put_steps([step("a", 1, output="stale"), step("c", 3)], fence=old.fence)
    assert [(s.name, s.output) for s in store.get_steps("e1")] == [("a", None), ("b", None)]
    store.put_steps([step("c", 3, output="new")], fence=new.fence)
    assert [s.name for s in store.get_steps("e1")] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="one execution"):
        store.put_steps([step("a", 1), step("x", 1, execution_id="other")], fence=new.fence)


def test_a_fenced_write_to_an_unknown_execution_is_not_found(store: SQLStore) -> None:
    with pytest.raises(NotFoundError, match="ghost"):
        store.put_step(step("x", 1, execution_id="ghost"), fence=1)


def test_claim_one_execution(store: SQLStore) -> None:
    store.create_execution(execution("e1", status=ExecutionStatus.PAUSED))
    mine = store.claim_execution("e1", "A", lease_seconds=10, now=T0)
    assert mine is not None and (mine.claimed_by, mine.fence) == ("A", 1)
    assert store.claim_execution("e1", "B", lease_seconds=10, now=T0 + 1) is None
    again = store.claim_execution("e1", "A", lease_seconds=10, now=T0 + 1)
    assert again is not None and again.fence == 2
    store.release_claim("e1", "B")  # not B's: nothing happens
    assert store.get_execution("e1").claimed_by == "A"
    store.release_claim("e1", "A")
    released = store.get_execution("e1")
    assert (released.claimed_by, released.lease_until, released.fence) == (None, None, 2)
    taken = store.claim_execution("e1", "B", lease_seconds=10, now=T0 + 2)
    assert taken is not None and taken.claimed_by == "B"
    with pytest.raises(NotFoundError, match="ghost"):
        store.claim_execution("ghost", "A", lease_seconds=10, now=T0)


def test_renew_claims_extends_only_the_owners_leases(store: SQLStore) -> None:
    for index in range(3):
        store.create_execution(execution(f"e{index}", T0 + index))
    store.claim_executions("A", lease_seconds=10, limit=2, now=T0)
    store.claim_executions("B", lease_seconds=10, limit=1, now=T0)
    assert store.renew_claims("A", lease_seconds=10, now=T0 + 8) == 2
    assert store.claim_executions("C", lease_seconds=10, limit=5, now=T0 + 12) == [store.get_execution("e2")]
    assert [store.get_execution(f"e{i}").lease_until for i in range(2)] == [T0 + 18, T0 + 18]
