"""Tallies, thirteenth pass: the number of items a sentence reports and the sum of their amounts, as written
(`5 unpaid invoices, balance 4445.00`), are counted and added up on each run; chance numbers stay literal."""

from __future__ import annotations

from typing import Any

from tests.recorded import Session, reproduces, saved
from toolreel.core.sandbox import run_code
from toolreel.templatizer import TemplatizeResult


def _invoices(*balances: float) -> list[dict[str, Any]]:
    return [{"id": f"inv_{n}", "number": f"INV-04{n}", "balance": b} for n, b in enumerate(balances, start=10)]


def _reported(message: str, balances: tuple[float, ...], tool: str = "list_invoices") -> TemplatizeResult:
    s = Session()
    s.call(tool, {"client_id": "Wpmbk5ezJn", "status": "unpaid"}, {"data": _invoices(*balances)})
    s.call("send_message", {"message": message, "priority": 0}, {"status": 1})
    result = saved(s)
    reproduces(result, s.steps)
    return result


def test_a_count_and_a_sum_in_a_sentence_are_worked_out_on_each_run() -> None:
    result = _reported("Acme Ltd: 3 unpaid invoices, balance 1729.25", (1200.0, 430.25, 99.0))
    message = result.template.step("send_message_1").input["message"]
    assert message == "Acme Ltd: {{@tally_1}} unpaid invoices, balance {{@tally_2}}"
    count, total = result.template.step("tally_1"), result.template.step("tally_2")
    assert count.code is not None and total.code is not None
    other = _invoices(10.5, 4.5)  # the next run: two invoices, 15 owed, written as the recording wrote it
    assert run_code(count.code, {"list": other}) == "2"
    assert run_code(total.code, {"list": other}) == "15.00"


def test_a_small_count_beside_the_sum_of_the_same_list_is_its_count() -> None:
    result = _reported("3 open ones, total 1729.25", (1200.0, 430.25, 99.0), tool="run_sql")
    assert result.template.step("send_message_1").input["message"] == "{{@tally_1}} open ones, total {{@tally_2}}"


def test_a_number_that_does_not_say_what_it_counts_stays_literal() -> None:
    result = _reported("Top 3 for today, all 60 of them paid", (20.0, 30.0, 10.0))
    assert result.template.step("send_message_1").input["message"] == "@input.message"  # the user's words, whole
    assert result.input_values["message"] == "Top 3 for today, all 60 of them paid"
    assert not [step for step in result.template.steps if step.name.startswith("tally_")]
