"""Fourteenth pass: a loop over the elements whose number is within the user's bound (the reviews rated at most 2),
a short name passed on under the very field it was read from (`first_name: "Noor"`), and the ids of a text table
walked as numbers, with the user's text in the note backing no word of the table."""

from __future__ import annotations

from typing import Any

from tests.recorded import Session, applied, saved
from toolreel.core.sandbox import run_code
from toolreel.templatizer._select import SELECT_CODE, Condition, conditions_of

REPLY = "Sorry about this! Please update and write to support if it persists."


def _reviews(ratings: list[int]) -> list[dict[str, Any]]:
    return [{"id": f"rev-{i:03d}", "rating": rating, "title": f"Review {i}"} for i, rating in enumerate(ratings)]


def _respond_to_low(ratings: list[int], limit: int) -> Session:
    s = Session()
    reviews = _reviews(ratings)
    s.call("list_reviews", {"app_id": "1488200000", "limit": 50}, {"data": reviews})
    for review in reviews:
        if review["rating"] <= limit:
            s.call("create_review_response", {"review_id": review["id"], "response_body": REPLY}, {"ok": True})
    return s


def test_the_elements_within_a_bound_are_walked_and_the_bound_is_the_users() -> None:
    result = saved(_respond_to_low([1, 5, 3, 2], limit=2))
    select = result.template.step("select_data").input
    assert isinstance(select, dict)
    assert select["where"] == [{"key": "rating", "op": "at most", "value": "@input.rating_max"}]
    assert result.input_values["rating_max"] == 2
    loop = result.template.step("create_review_response_each")
    assert loop.for_each == "@select_data"


def test_a_bound_is_the_last_resort_and_never_on_an_order() -> None:
    reviews = _reviews([1, 5, 3, 2])
    assert conditions_of(reviews, [0, 3]) == (Condition("rating", "at most", 2),)
    labelled = [{**review, "label": "low" if review["rating"] <= 2 else "ok"} for review in reviews]
    assert conditions_of(labelled, [0, 3]) == (Condition("label", "==", "low"),)  # a field that says it, first
    numbered = [{"number": n, "name": f"build {n}"} for n in (61, 60, 59, 58)]
    assert conditions_of(numbered, [0, 1]) is None  # the newest two: where the list was cut, not a bound


def test_the_select_code_keeps_what_the_bound_keeps() -> None:
    reviews = _reviews([1, 5, 3, 2, 2])
    where = [{"key": "rating", "op": "at most", "value": 2}]
    kept = run_code(SELECT_CODE, {"items": reviews, "where": where})
    assert [item["id"] for item in kept] == [r["id"] for r in reviews if Condition("rating", "at most", 2).holds(r)]
    assert [item["rating"] for item in kept] == [1, 2, 2]


def test_a_short_name_passed_on_under_its_own_field_is_a_ref() -> None:
    s = Session()
    attributes = {"first_name": "Noor", "plan": "Team (annual)", "renews_at": "1798761600"}
    customer = {"id": "cust_40418", "attributes": attributes}
    s.call("get_customer", {"cio_id": "a3f00000c7"}, {"customer": customer})
    data = {"first_name": "Noor", "plan": "Team (annual)", "renewal_date": "2027-01-01"}
    s.call("send_email", {"to": "noor@example.com", "message_data": data}, {"queued": True})
    refs = applied(saved(s))
    assert refs[("send_email_1", "$.message_data.first_name")] == "@get_customer_1.customer.attributes.first_name"


ISSUES_TABLE = """## Issues of project Webshop (4)

| ID | Summary | Status | Handler | Priority |
|---|---|---|---|---|
| 18811 | Checkout button misaligned on iOS | new | - | normal |
| 18802 | VAT rounding in cart | assigned | jkim | high |
| 18790 | Search ignores umlauts | new | - | high |
| 18744 | Footer link 404 | resolved | mweber | low |"""


def test_ids_of_a_text_table_walked_by_two_writes_each_are_numbers_and_the_note_is_the_users() -> None:
    s = Session()
    s.call("get_issues", {"project_id": 9, "page_size": 50}, ISSUES_TABLE)
    for issue in (18811, 18790):
        s.call("update_issue", {"issue_id": issue, "handler": {"name": "mweber"}}, {"issues": [{"id": issue}]})
        s.call("add_note", {"issue_id": issue, "text": "Triage: assigned to mweber"}, {"note": {"id": issue * 10}})
    result = saved(s)
    group = result.template.step("update_issue_add_note_each")
    assert isinstance(group.input, dict) and group.input["items"] == '@get_issues_1_rows[?(@.Status == "new")]'
    handler = next(name for name, value in result.input_values.items() if value == "mweber")
    # `assigned` is the note's own word, not the state of the issue a row of the table happens to be in
    assert group.input["value2"] == f"Triage: assigned to {{{{@input.{handler}}}}}"
    assert not any(step.name.startswith("pick_") for step in result.template.steps)


def _retry_over(totals: list[int], minimum: int) -> Session:
    s = Session()
    invoices: list[dict[str, Any]] = [
        {"lago_id": f"inv-{i}", "total_amount_cents": total} for i, total in enumerate(totals)
    ]
    s.call("list_invoices", {"customer": "cus_acme_42", "payment_status": "failed"}, {"invoices": invoices})
    for invoice, total in zip(invoices, totals, strict=True):
        if total >= minimum:
            s.call("retry_invoice_payment", {"lago_id": invoice["lago_id"]}, "")
    return s


def test_a_lower_bound_is_the_first_round_number_above_the_others() -> None:
    """Kept 4,900 and 12,900 beside a 900: the user's limit is read as 1,000 (the first round number the 900 falls
    short of), not the 4,000 under the smallest kept; a world with a 2,500 invoice then retries it too."""
    result = saved(_retry_over([4900, 900, 12900], minimum=1000))
    assert result.input_values["total_amount_cents_min"] == 1000
