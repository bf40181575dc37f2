"""Values the user named, twelfth pass: two days a read is bounded by are a period the user named; a markdown table
whose rule row has short cells (`| -- | ---- |`) is still read as rows; and the item with the largest (smallest)
amount written for people (`-$86.40`, `$1,204.00`) is picked by that amount."""

from __future__ import annotations

import json

from tests.recorded import Session, saved
from toolreel.core.sandbox import CodeLimits, run_code
from toolreel.core.template_io import template_to_dict
from toolreel.templatizer import TemplatizeResult, templatize

_OPTIONAL = {
    "type": "object",
    "properties": {key: {"type": "string"} for key in ("startDate", "endDate", "category")},
    "required": ["category"],
}


def _period(start: str, end: str) -> TemplatizeResult:
    s = Session()
    s.call("get_accounts", {}, [{"id": "c07d4a2e-6f1b-4c3d-9e8f-7a6b5c4d3e21", "name": "Joint checking"}])
    s.call("get_transactions", {"startDate": start, "endDate": end, "category": "Dining"}, [])
    reads = {"svc__get_accounts", "svc__get_transactions"}
    return templatize([s.steps], name="t", schemas={"svc__get_transactions": _OPTIONAL}, read_only=reads)


def test_two_days_a_read_is_bounded_by_are_a_period_the_user_named() -> None:
    # optional parameters: a date alone there is thin evidence, proposed unticked; two bounding days are a period
    ticked = set(_period("2026-11-01", "2026-11-30").ticked_inputs.values())
    assert {"2026-11-01", "2026-11-30"} <= ticked


_ACCOUNTS = """# Accounts

| ID | Name | Type | Balance | Closed |
| -- | ---- | ---- | ------- | ------ |
| 5e2b7c1a-90aa-4f11-b1de-1f0e2d3c4b5a | Joint checking (old) | checking | $0.00 | true |
| a81f3e9c-2b4d-4e6f-8a0b-9c8d7e6f5a41 | Savings | savings | $12,400.00 | false |
| c07d4a2e-6f1b-4c3d-9e8f-7a6b5c4d3e21 | Joint checking | checking | $3,118.52 | false |
"""

_SPENT = """| ID | Payee | Amount |
| -- | ----- | ------ |
| b1f0c2d3-0001-4a5b-8c7d-111111111111 | Pho Saigon | -$32.10 |
| b1f0c2d3-0002-4a5b-8c7d-222222222222 | Restaurant refund | $120.00 |
| b1f0c2d3-0003-4a5b-8c7d-333333333333 | Sushi Go | -$86.40 |
| b1f0c2d3-0004-4a5b-8c7d-444444444444 | Coffee Lab | -$6.80 |
"""


def test_a_table_with_short_rule_cells_is_rows_and_its_row_is_picked_by_name() -> None:
    s = Session()
    s.call("get_accounts", {}, _ACCOUNTS)
    s.call("get_transactions", {"accountId": "c07d4a2e-6f1b-4c3d-9e8f-7a6b5c4d3e21"}, [])
    result = saved(s)
    steps = {step["name"]: step for step in template_to_dict(result.template)["steps"]}
    assert steps["get_transactions_1"]["input"]["accountId"] == "@pick_joint_checking.ID"


def test_the_item_with_the_smallest_amount_written_for_people_is_picked_by_it() -> None:
    s = Session()
    s.call("get_transactions", {"accountId": "c07d4a2e"}, _SPENT)
    s.call("update_transaction", {"id": "b1f0c2d3-0003-4a5b-8c7d-333333333333", "notes": "#review"}, "ok")
    result = saved(s)
    steps = template_to_dict(result.template)["steps"]
    update = next(step for step in steps if step["name"] == "update_transaction_1")
    picker = next(step for step in steps if step["name"] == update["input"]["id"].lstrip("@"))
    assert "replace(/[^0-9.-]/g" in picker["code"] and " < " in picker["code"]


_LIMITS = CodeLimits(timeout=5.0, memory_mb=32)


def _since(clock_key: str, since: str) -> TemplatizeResult:
    s = Session()
    s.call("get_current_time", {"timezone": "Europe/Madrid"}, {"timezone": "Europe/Madrid", clock_key: _THURSDAY})
    s.call("get_time_entries", {"userId": "5f9e8d7c6b5a4f3e2d1c0b9a", "start": since}, [])
    return saved(s)


_THURSDAY = "2026-12-03T17:45:10+01:00"


def test_the_monday_of_the_clock_s_week_is_worked_out_on_each_run() -> None:
    result = _since("datetime", "2026-11-30T00:00:00Z")
    steps = {step["name"]: step for step in template_to_dict(result.template)["steps"]}
    start = steps["get_time_entries_1"]["input"]["start"]
    assert start.startswith("@") and "2026-11-30" not in json.dumps(result.input_values)
    code = steps[start[1:]]["code"]
    assert run_code(code, {"text": "2026-12-17T09:00:00+01:00"}, _LIMITS) == "2026-12-14T00:00:00Z"  # a Thursday
    assert run_code(code, {"text": "2027-01-03T23:00:00+01:00"}, _LIMITS) == "2026-12-28T00:00:00Z"  # a Sunday


def test_the_first_of_the_clock_s_month_too_but_no_record_s_date_is_moved() -> None:
    result = _since("datetime", "2026-12-01")
    steps = {step["name"]: step for step in template_to_dict(result.template)["steps"]}
    code = steps[steps["get_time_entries_1"]["input"]["start"][1:]]["code"]
    assert run_code(code, {"text": "2027-02-17T09:00:00Z"}, _LIMITS) == "2027-02-01"
    s = Session()
    s.call("list_invoices", {"status": "open"}, [{"id": "in_7Hq2", "created_at": _THURSDAY}])
    s.call("get_time_entries", {"userId": "5f9e8d7c6b5a4f3e2d1c0b9a", "start": "2026-11-30"}, [])
    moved = templatize([s.steps], name="t")
    assert not any(step.code for step in moved.template.steps)  # a record's own date says nothing of "this week"
