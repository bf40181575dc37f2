"""Nineteenth pass: a write made after a read of the same thing found nothing (the slot it books was free) runs
only where that read finds nothing; a time of day the user gave is found after the `T` of an ISO date-time."""

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
