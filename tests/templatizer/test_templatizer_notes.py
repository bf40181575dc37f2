"""Notes, twelfth pass: the words after a label the agent wrote (`Closing wishlist items: out of scope for 2027`) are
a reason the user gave, even where a loop writes them on every item: an input, and the text is built on it."""

from __future__ import annotations

from typing import Any

from tests.recorded import Session, saved
from toolreel.core.template_io import template_to_dict
from toolreel.templatizer._pieces import labelled_note


def _tasks() -> list[dict[str, Any]]:
    return [
        {"phid": "PHID-TASK-00004410x45", "name": "Support SEPA instant", "priority": "Wishlist"},
        {"phid": "PHID-TASK-00004402x37", "name": "Fix rounding in refunds", "priority": "High"},
        {"phid": "PHID-TASK-00004390x25", "name": "Dark mode for receipts", "priority": "Wishlist"},
    ]


def test_a_note_after_a_label_written_on_every_item_is_the_user_s_reason() -> None:
    s = Session()
    s.call("maniphest_search", {"statuses": ["open"]}, {"data": _tasks()})
    for task in (_tasks()[0], _tasks()[2]):
        comment = {"type": "comment", "value": "Closing wishlist items: out of scope for 2027"}
        s.call("maniphest_edit", {"objectIdentifier": task["phid"], "transactions": [comment]}, {"ok": True})
    result = saved(s)
    assert list(result.input_values.values()) == ["out of scope for 2027"]
    (name,) = result.input_values
    (edit,) = [step for step in template_to_dict(result.template)["steps"] if step.get("for_each")]
    assert edit["input"]["transactions"][0]["value"] == f"Closing wishlist items: {{{{@input.{name}}}}}"


def test_what_follows_a_label_is_a_note_only_when_it_is_words_in_lower_case() -> None:
    assert labelled_note("Refund order #1043: arrived damaged") == "arrived damaged"
    assert labelled_note("Closed: done") is None  # one word: a state
    assert labelled_note("Onboarding: Brightpath Labs") is None  # a name: its own evidence decides
    assert labelled_note("see https://x.example: not a label") is None


def test_the_words_after_a_ref_and_a_dash_are_the_user_s_note() -> None:
    s = Session()
    s.call("fetch_person", {"email": "dana.weiss@nordwind.example"}, {"id": 41900011, "company_name": "Nordwind GmbH"})
    s.call("create_opportunity", {"name": "Nordwind GmbH - Fleet tracking", "contact_id": 41900011}, {"id": 7})
    result = saved(s)
    assert "Fleet tracking" in result.input_values.values()
    (name,) = [key for key, value in result.input_values.items() if value == "Fleet tracking"]
    steps = {step["name"]: step for step in template_to_dict(result.template)["steps"]}
    assert (
        steps["create_opportunity_1"]["input"]["name"]
        == f"{{{{@fetch_person_1.company_name}}}} - {{{{@input.{name}}}}}"
    )
