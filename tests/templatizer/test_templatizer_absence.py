"""Nineteenth pass: a write made after a read of the same thing found nothing (the slot it books was free) runs
only where that read finds nothing; a time of day the user gave is found after the `T` of an ISO date-time; the port
a search is about (`port:3389`) is the user's; a table whose column names stand over a rule (`restic snapshots`) is
read as rows."""

from __future__ import annotations

from tests.recorded import Session, steps_of
from toolreel.core.template import When
from toolreel.templatizer import templatize

SLOT = {"start": "2026-05-12T14:00:00+02:00", "end": "2026-05-12T15:00:00+02:00", "calendar": "work"}


def _booking(found: list[object]) -> Session:
    s = Session()
    s.call("list_events", dict(SLOT), found, server="dav")  # no annotation: named a read
    s.call("create_event", {**SLOT, "summary": "Vendor review"}, "8f14e45f-ceea", server="dav")
    return s


def test_a_booking_made_because_the_slot_was_free_runs_only_where_it_is_free() -> None:
    result = templatize([_booking([]).steps], name="t")
    (create,) = [step for step in result.template.steps if step.name == "create_event_1"]
    assert create.when == When(ref="@list_events_1", op="eq", value=[])
    assert any("found nothing" in why for _, why in result.conditions)


def test_a_read_that_shares_one_value_with_the_write_does_not_guard_it() -> None:
    s = Session()
    s.call("list_labels", {"issue": "PAY-1042"}, {"labels": []})
    s.call("add_label", {"issue": "PAY-1042", "label": "needs-triage"}, {"ok": True})
    result = templatize([s.steps], name="t")
    assert all(step.when is None for step in result.template.steps)


def test_a_time_the_user_gave_is_found_inside_an_iso_date_time() -> None:
    result = templatize([_booking([]).steps], name="t", inputs={"day": "2026-05-12", "from": "14:00", "to": "15:00"})
    listed = steps_of(result)["list_events_1"]["input"]
    assert listed["start"] == "{{@input.day}}T{{@input.from}}:00+02:00"
    assert listed["end"] == "{{@input.day}}T{{@input.to}}:00+02:00"


def test_the_port_a_search_is_about_is_the_users() -> None:
    s = Session()
    s.call("search", {"query": 'org:"Acme Corp" port:3389', "max_results": 20}, {"matches": []}, server="shodan")
    first = templatize([s.steps], name="t", read_only=frozenset({"shodan__search"}))
    chosen = {item.value: item.ticked for item in first.likely_inputs}
    assert chosen.get(3389) is True or chosen.get("3389") is True, chosen
    assert chosen.get(20) is not True  # the page size is the call's, not the user's


SNAPSHOTS = """ID        Time                 Host        Tags      Paths
----------------------------------------------------------------
4f0c9a1e  2026-03-01 02:00:03  db01        nightly   /var/lib/postgresql
a9e3b7c2  2026-03-03 02:00:04  db01        nightly   /var/lib/postgresql
77d1e0aa  2026-03-02 02:00:02  db01        nightly   /var/lib/postgresql
----------------------------------------------------------------
3 snapshots
"""


def test_a_table_over_a_rule_is_read_as_rows_and_the_newest_taken_by_its_time() -> None:
    s = Session()
    s.call("restic", {"args": ["snapshots", "--host", "db01"]}, SNAPSHOTS, server="restic")
    s.call("restic", {"args": ["restore", "a9e3b7c2", "--target", "/srv/restore"]}, "restoring", server="restic")
    result = templatize([s.steps], name="t", inputs={"host": "db01"})
    steps = steps_of(result)
    (view,) = [step for step in steps.values() if isinstance(step["input"], dict) and "shape" in step["input"]]
    assert view["input"]["shape"] == "ruled"
    restore = steps["restic_2"]["input"]["args"][1]
    assert restore.startswith("@") and "extract" not in restore, restore
    computing = steps[restore[1:]]
    assert "Time" in computing["code"], computing
