"""Flow rules of saved templates, in-process: rows read out of text outputs (an aligned CLI table, markdown
sections) are a list like any JSON output's, so a loop walks them and a filter keeps the rows the agent
handled; text listing every element of a list becomes a join that follows the list; a write made only
because a list had elements is skipped where it is empty; a short id under a key naming the listed entity is
a ref; the listing call of a tool is no member of the loop over its own output; picks no step reads go."""

from __future__ import annotations

from typing import Any

from tests.recorded import Session
from toolreel.core.sandbox import run_code
from toolreel.templatizer import summary, templatize, verify
from toolreel.templatizer._conditions import JOIN_CODE
from toolreel.templatizer._views import VIEW_CODE

PODS = """NAME                        READY   STATUS             RESTARTS      AGE
api-7d9f8b6c4-2xkqp         1/1     Running            0             3d2h
worker-5f6d7c8b9-8hjkl      0/1     CrashLoopBackOff   14 (2m ago)   3d2h
cron-28871230-vx9rt         1/1     Running            0             41m
webhooks-6c8d9f7b5-mt4ls    0/1     CrashLoopBackOff   9 (1m ago)    1d5h
"""

ISSUES = """# Issues in **acme/checkout**

## CHECKOUT-2A

**Description**: AttributeError: 'NoneType' object has no attribute 'iso_code'
**Culprit**: totals in checkout.tax

## CHECKOUT-2C

**Description**: KeyError: 'shipping_zone'
**Culprit**: quote in checkout.shipping

# Using this information

- Reference the issue id in a commit message.
"""


def _view(text: str, shape: str, level: int = 0) -> Any:
    return run_code(VIEW_CODE, {"text": text, "shape": shape, "level": level})


def test_an_aligned_table_reads_as_rows_by_column_and_other_text_as_no_rows() -> None:
    rows = _view(PODS, "table")
    assert [r["NAME"] for r in rows] == [
        "api-7d9f8b6c4-2xkqp",
        "worker-5f6d7c8b9-8hjkl",
        "cron-28871230-vx9rt",
        "webhooks-6c8d9f7b5-mt4ls",
    ]
    assert rows[1]["RESTARTS"] == "14 (2m ago)" and rows[1]["STATUS"] == "CrashLoopBackOff"
    assert _view("No resources found in ns namespace.", "table") == []


def test_markdown_sections_and_tables_read_as_rows() -> None:
    rows = _view(ISSUES, "sections", 2)
    assert rows == [
        {"heading": "CHECKOUT-2A", "Description": "AttributeError: 'NoneType' object has no attribute 'iso_code'",
         "Culprit": "totals in checkout.tax"},
        {"heading": "CHECKOUT-2C", "Description": "KeyError: 'shipping_zone'", "Culprit": "quote in checkout.shipping"},
    ]  # fmt: skip
    assert _view("# Issues\n\nNo issues found.\n", "sections", 2) == []
    table = "| id | name |\n|---|---|\n| 7 | triage |\n| 9 | ops |\n"
    # a column of whole numbers holds numbers (an id a call sends as one); leading zeros keep a column text
    assert _view(table, "pipes") == [{"id": 7, "name": "triage"}, {"id": 9, "name": "ops"}]
    zips = "| zip | city |\n|---|---|\n| 02139 | Cambridge |\n| 10001 | New York |\n"
    assert _view(zips, "pipes") == [{"zip": "02139", "city": "Cambridge"}, {"zip": "10001", "city": "New York"}]


def test_a_loop_walks_the_rows_of_a_text_table_the_agent_handled() -> None:
    s = Session()
    s.call("pods_list", {"namespace": "payments"}, PODS)
    for name in ("worker-5f6d7c8b9-8hjkl", "webhooks-6c8d9f7b5-mt4ls"):
        s.call("pods_delete", {"name": name, "namespace": "payments"}, "Pod deleted")
    result = templatize([s.steps], name="t", inputs={"namespace": "payments"})
    rows = result.template.step("pods_list_1_rows")
    assert rows.kind == "code" and rows.input == {"text": "@pods_list_1", "shape": "table", "level": 0}
    loop = result.template.step("pods_delete_each")
    # the field that says why (a status word), not one that happens to match too (READY 0/1)
    assert loop.for_each == '@pods_list_1_rows[?(@.STATUS == "CrashLoopBackOff")]'
    assert loop.input == {"name": "@item.NAME", "namespace": "@input.namespace"}
    verification = verify(result, [s.steps])  # the rows come from the same script at replay time
    assert verification.verified, verification.to_json()


def test_text_listing_every_element_joins_the_list_and_the_write_waits_for_elements() -> None:
    s = Session()
    s.call("find_issues", {"project": "checkout"}, ISSUES)
    s.call("create_incident", {"title": "Regressions: CHECKOUT-2A, CHECKOUT-2C", "service": "PX7Q2RA"}, {"id": "Q1"})
    result = templatize([s.steps], name="t", read_only={"svc__find_issues"})
    join = result.template.step("join_1")
    assert join.code == JOIN_CODE
    assert join.input == {"list": "@find_issues_1_rows", "path": ["heading"], "sep": ", "}
    incident = result.template.step("create_incident_1")
    assert incident.input == {"title": "Regressions: {{@join_1}}", "service": "PX7Q2RA"}
    assert incident.when is not None and incident.when.ref == "@find_issues_1_rows" and incident.when.op is None
    assert result.conditions and result.conditions[0][0] == "create_incident_1"
    assert run_code(JOIN_CODE, {"list": [{"heading": "A-1"}], "path": ["heading"], "sep": ", "}) == "A-1"
    verification = verify(result, [s.steps])
    assert verification.verified, verification.to_json()


def test_a_read_that_lists_every_element_gets_no_condition() -> None:
    s = Session()
    s.call("find_issues", {"project": "checkout"}, ISSUES)
    s.call("search", {"q": "CHECKOUT-2A CHECKOUT-2C"}, {"hits": 0})
    result = templatize([s.steps], name="t", read_only={"svc__find_issues", "svc__search"})
    assert result.template.step("search_1").when is None


def test_a_short_id_under_a_key_naming_the_listed_entity_is_a_ref() -> None:
    s = Session()
    s.call("get_boards", {"project": "PAY"}, [{"id": "42", "name": "PAY board"}])
    s.call("get_sprints", {"board_id": "42", "state": "future"}, [{"id": "318", "name": "Sprint 49"}])
    result = templatize([s.steps], name="t")
    assert result.template.step("get_sprints_1").input == {"board_id": "@get_boards_1[0].id", "state": "future"}


def test_a_short_value_under_a_key_naming_no_entity_stays_literal() -> None:
    s = Session()
    s.call("get_boards", {"project": "PAY"}, [{"id": "42", "name": "PAY board"}])
    s.call("resize", {"width": "42"}, "ok")
    result = templatize([s.steps], name="t")
    assert result.template.step("resize_1").input == {"width": "42"}


def test_the_listing_call_of_a_tool_is_no_member_of_the_loop_over_its_output() -> None:
    s = Session()
    keys = ["nightly/build-1181.tar.gz", "nightly/build-1190.tar.gz", "nightly/build-1203.tar.gz"]
    s.call("call_aws", {"cli": "aws s3api list-objects-v2 --bucket b1"}, {"Contents": [{"Key": k} for k in keys]})
    for key in keys:
        s.call("call_aws", {"cli": f"aws s3api delete-object --bucket b1 --key {key}"}, {"DeleteMarker": False})
    result = templatize([s.steps], name="t")
    loop = result.template.step("call_aws_each")
    assert loop.for_each == "@call_aws_1.Contents"
    assert loop.input == {"cli": "aws s3api delete-object --bucket b1 --key {{@item.Key}}"}
    assert [step.name for step in result.template.steps] == ["call_aws_1", "call_aws_each"]


def test_a_pick_no_step_reads_any_more_is_dropped() -> None:
    s = Session()
    issues = [{"key": f"PAY-{n}", "summary": f"Issue {n}"} for n in (101, 104, 107)]
    s.call("search", {"jql": "project = PAY"}, {"issues": issues})
    s.call("add_to_sprint", {"sprint": "S1", "keys": "PAY-101,PAY-104,PAY-107"}, {"ok": True})
    result = templatize([s.steps], name="t")
    names = [step.name for step in result.template.steps]
    assert not [n for n in names if n.startswith("pick_")] and not result.picks
    assert verify(result, [s.steps]).verified


def test_the_summary_says_which_step_runs_only_when_its_list_has_elements() -> None:
    s = Session()
    s.call("find_issues", {"project": "checkout"}, ISSUES)
    s.call("create_incident", {"title": "Regressions: CHECKOUT-2A, CHECKOUT-2C"}, {"id": "Q1"})
    result = templatize([s.steps], name="t", read_only={"svc__find_issues"})
    text = summary(result, verify(result, [s.steps]), saved=None, note=None)
    assert "Only when there is something to do: create_incident_1 runs only when @find_issues_1_rows has" in text
    assert result.to_json()["conditions"] == [{"step": "create_incident_1", "why": result.conditions[0][1]}]


def test_a_pick_prefers_a_name_without_a_version_inside_the_element() -> None:
    s = Session()
    pulls = [
        {"number": n, "title": title, "head": {"ref": ref, "sha": f"{n}0a1b2c3d4e5f60718293a4b5c6d7e8f90"}}
        for n, title, ref in (
            (1190, "Checkout: remember last shipping method", "feat/remember-shipping"),
            (1187, "chore(deps): update dependency lodash to v4.17.22", "renovate/lodash-4.x"),
        )
    ]
    s.call("list_pulls", {"repo": "shop"}, pulls)
    s.call("approve", {"pull": 1187, "sha": "11870a1b2c3d4e5f60718293a4b5c6d7e8f90"}, {"state": "APPROVED"})
    result = templatize([s.steps], name="t")
    (pick,) = result.picks
    assert (pick.key, pick.value) == ("head.ref", "renovate/lodash-4.x")
    assert result.template.step("approve_1").input == {
        "pull": f"@{pick.step}.number",
        "sha": f"@{pick.step}.head.sha",
    }
    assert verify(result, [s.steps]).verified  # the pick runs in its sandbox and finds the element


def test_the_changing_part_of_a_sentence_in_lockstep_with_an_output_is_interpolated() -> None:
    runs = []
    for execution, number in (("e1", 311), ("e2", 977)):
        s = Session(execution=execution)
        s.call("create_issue", {"title": "Disk full"}, {"number": number, "url": f"https://x.example/{number}"})
        s.call("comment", {"issue": 250, "body": f"Tracking in #{number}; linked from the handover."}, {"id": 1})
        runs.append(s.steps)
    result = templatize(runs, name="t")
    assert result.template.step("comment_1").input == {
        "issue": 250,
        "body": "Tracking in #{{@create_issue_1.number}}; linked from the handover.",
    }
    assert "body" not in result.template.inputs


def test_elements_handled_because_they_lack_a_category_walk_an_excluding_filter() -> None:
    s = Session()
    tickets = [
        {"id": f"T-{n}9f3a2c", "state": state}
        for n, state in enumerate(["closed", "open", "pending", "closed", "open"])
    ]
    s.call("list_tickets", {}, {"tickets": tickets})
    for ticket in tickets:
        if ticket["state"] != "closed":
            s.call("nudge", {"ticket_id": ticket["id"]}, {"ok": True})
    result = templatize([s.steps], name="t")
    loop = result.template.step("nudge_each")
    assert loop.for_each == '@list_tickets_1.tickets[?(@.state != "closed")]'
    assert verify(result, [s.steps]).verified


def test_elements_no_category_tells_apart_stay_unrolled() -> None:
    s = Session()
    tickets = [{"id": f"T-{n}9f3a2c", "state": state} for n, state in enumerate(["a", "b", "c", "d"])]
    s.call("list_tickets", {}, {"tickets": tickets})
    for n in (1, 2):
        s.call("nudge", {"ticket_id": tickets[n]["id"]}, {"ok": True})
    result = templatize([s.steps], name="t")
    assert "nudge_each" not in {step.name for step in result.template.steps}


def test_text_listing_the_elements_a_field_selects_joins_the_filtered_list() -> None:
    s = Session()
    tickets = [
        {"key": f"OPS-{n}", "state": state}
        for n, state in zip(range(11, 16), ["done", "open", "done", "open", "done"], strict=True)
    ]
    s.call("search", {"project": "OPS"}, {"issues": tickets})
    s.call("post", {"text": "Waiting: OPS-12, OPS-14"}, {"ok": True})
    result = templatize([s.steps], name="t", read_only={"svc__search"})
    join = result.template.step("join_1")
    assert join.input == {"list": '@search_1.issues[?(@.state == "open")]', "path": ["key"], "sep": ", "}
    post = result.template.step("post_1")
    assert post.input == {"text": "Waiting: {{@join_1}}"}
    assert post.when is not None and post.when.ref == '@search_1.issues[?(@.state == "open")]'
    assert verify(result, [s.steps]).verified
