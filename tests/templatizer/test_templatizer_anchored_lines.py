"""Fourteenth pass: an id read off the line of a text list that opens with what the user gave (`- Packing list
(id: …)` among `- Packing list (old) (id: …)`) is read, on the next run, off the line the input then names; a name
no input gave that opens the line among look-alikes (`Anna Schulz` beside `Anna Schulze`) becomes the user's."""

from __future__ import annotations

import pytest

from tests.recorded import Session, saved
from toolreel.core.errors import CodeError
from toolreel.core.sandbox import CodeLimits, run_code

LIMITS = CodeLimits(timeout=2.0, memory_mb=32)


def _listing(titles: list[tuple[str, str]]) -> str:
    lines = [f"- {title} (id: {note_id}, updated 2026-12-10)" for title, note_id in titles]
    return f"Found {len(lines)} notes matching:\n" + "\n".join(lines)


def _session() -> Session:
    s = Session()
    titles = [
        ("Packing list (old)", "a1b2c3d4e5f60718293a4b5c6d7e8f90"),
        ("Packing list", "0f9e8d7c6b5a49382716a5b4c3d2e1f0"),
        ("Packing list – ski trip", "1234abcd5678ef901234abcd5678ef90"),
    ]
    s.call("search_notes", {"query": "Packing list", "limit": 10}, _listing(titles))
    s.call("get_note", {"note_id": "0f9e8d7c6b5a49382716a5b4c3d2e1f0"}, "# Packing list\n\n- [ ] Phone charger\n")
    return s


def test_the_line_the_input_opens_is_read_on_the_next_run() -> None:
    result = saved(_session())
    extract = next(step for step in result.template.steps if step.code is not None and step.name.startswith("extract"))
    assert extract.input == {"text": "@search_notes_1", "anchor": "@input.query"}
    assert result.template.step("get_note_1").input == {"note_id": f"@{extract.name}"}
    assert extract.code is not None
    other = _listing(
        [("Moving day", "ffeeddccbbaa99887766554433221100"), ("Moving day budget", "00112233445566778899")]
    )
    assert run_code(extract.code, {"text": other, "anchor": "Moving day"}, LIMITS) == "ffeeddccbbaa99887766554433221100"
    # the input's text is matched as text, not as a pattern: `(old)` is no group, `.` no wildcard
    listing = _listing([("Packing list (old)", "a1b2c3d4e5f6"), ("Packing list", "0f9e8d7c6b5a")])
    assert run_code(extract.code, {"text": listing, "anchor": "Packing list (old)"}, LIMITS) == "a1b2c3d4e5f6"
    with pytest.raises(CodeError, match="no match"):
        run_code(extract.code, {"text": _listing([("Packing lists", "deadbeef1")]), "anchor": "Packing list."}, LIMITS)


def _contacts(names: list[tuple[str, int]]) -> str:
    return 'Found contacts matching "Schulz":\n' + "\n".join(f"- {name} (id {n}) — note" for name, n in names)


def _reminder(listing: str, contact_id: int) -> Session:
    s = Session()
    s.call("search_contacts", {"query": "Schulz"}, listing)
    s.call("create_reminder", {"contact_id": contact_id, "title": "Ask Anna about the flat"}, {"data": {"id": 9141}})
    return s


def test_a_name_no_input_gave_that_opens_the_line_among_look_alikes_becomes_the_users() -> None:
    listing = _contacts([("Anna Schulze", 517), ("Anna Schulz", 482), ("Annika Schulz", 611)])
    result = saved(_reminder(listing, 482))
    assert result.input_values["contact"] == "Anna Schulz"  # named after `contact_id`, ticked
    extract = next(step for step in result.template.steps if step.name.startswith("extract"))
    assert extract.input == {"text": "@search_contacts_1", "anchor": "@input.contact"}
    assert result.template.step("create_reminder_1").input == {
        "contact_id": f"@{extract.name}",
        "title": "@input.title",
    }
    assert extract.code is not None
    other = _contacts([("Hans Schulz", 702), ("Hans Schulze", 703)])
    assert run_code(extract.code, {"text": other, "anchor": "Hans Schulz"}, LIMITS) == 702  # a number, as sent


def test_a_line_with_no_look_alike_names_no_input() -> None:
    listing = _contacts([("Anna Schulz", 482), ("Bernd Maier", 517), ("Carla Ruiz", 611)])
    result = saved(_reminder(listing, 482))
    assert "Anna Schulz" not in result.input_values.values()
