"""Numbers in a dry replay, twentieth pass: a whole float the agent sent (`240310.0`) that a code step computes
verifies (JavaScript writes it 240310); a number still differs from a string or a boolean."""

from __future__ import annotations

from tests.recorded import Session, saved, steps_of
from toolreel.replayer._differences import diff


def test_a_whole_float_the_agent_sent_verifies_when_a_code_step_computes_it() -> None:
    s = Session()
    rows = [
        {"account": "Northwind", "region": "EMEA", "revenue": 120500.5},
        {"account": "Fabrikam", "region": "EMEA", "revenue": 240310.0},
        {"account": "Contoso", "region": "EMEA", "revenue": 98000.25},
    ]
    s.call("run_query", {"sql": "SELECT account, region, revenue FROM sales WHERE region = 'EMEA'"}, {"rows": rows})
    s.call("create_deal", {"name": "Fabrikam renewal", "amount": 240310.0}, {"id": 77})
    result = saved(s)  # verified, and reproduces the recording
    amount = steps_of(result)["create_deal_1"]["input"]["amount"]
    assert isinstance(amount, str) and amount.startswith("@"), amount
    assert diff({"n": 240310.0}, {"n": 240310}, "$") == []
    assert diff({"n": 1}, {"n": "1"}, "$") == [("$.n", 1, "1")]
    assert diff({"n": 1}, {"n": True}, "$") == [("$.n", 1, True)]
