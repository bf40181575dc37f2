"""Values in templates: read out of text, taken from a clock, interpolated into sentences, chosen by the user
(from evidence, not key names), and the generalization check that replays a template on a changed world.

Sessions are shaped like what published MCP servers return: mcp-server-git's sentences, mcp-server-time's
datetimes, GitHub's and Linear's JSON, Sentry's markdown tables, Stripe objects inside text.
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.recorded import Session, applied, inputs_of
from toolreel.core.model import JSON
from toolreel.core.template import Template
from toolreel.templatizer import TemplatizeResult, propose_fixes, summary, templatize, verify


def code_steps(template: Template) -> dict[str, str]:
    return {step.name: step.code or "" for step in template.steps if step.kind == "code"}


def saved(s: Session, inputs: dict[str, JSON] | None = None) -> TemplatizeResult:
    result = templatize([s.steps], name="t", inputs=inputs)
    assert verify(result, [s.steps]).verified
    return result


# --------------------------------------------------------------------------- values read out of text


def test_a_hash_cut_out_of_a_commit_sentence_is_extracted_not_stale() -> None:
    s = Session()
    sha = "cd42d7e59a39c173644cad96f25767e7123eaa71"
    s.call(
        "git_commit",
        {"repo_path": "/srv/web", "message": "Raise timeout"},
        f"Changes committed successfully with hash {sha}",
    )
    s.call("git_show", {"repo_path": "/srv/web", "revision": sha}, f"commit {sha}\nAuthor: dev")
    result = saved(s)
    revision = inputs_of(result)["git_show_1"]
    assert isinstance(revision, dict) and revision["revision"] == "@extract_1"
    assert "hash" in code_steps(result.template)["extract_1"]  # anchored on the words before the value
    assert "revision" not in {item.name for item in result.likely_inputs}


def test_an_issue_key_read_out_of_a_url_in_prose_is_extracted() -> None:
    s = Session()
    s.call(
        "create_issue",
        {"team": "ENG", "title": "Login times out"},
        "Created issue ENG-1423: Login times out (https://linear.app/acme/issue/ENG-1423/login-times-out)",
    )
    s.call("update_issue", {"id": "ENG-1423", "priority": 2}, {"ok": True})
    result = saved(s)
    assert applied(result)[("update_issue_1", "$.id")] == "@extract_1"


def test_a_number_printed_in_prose_is_extracted_as_a_number() -> None:
    s = Session()
    s.call("query", {"sql": "select count(*) from invoices where status = 'open'"}, "Open invoices: 18342 rows counted")
    s.call("set_metric", {"name": "open_invoices", "value": 18342}, {"ok": True})
    result = saved(s)
    assert applied(result)[("set_metric_1", "$.value")] == "@extract_1"
    assert "Number(" in code_steps(result.template)["extract_1"]


def test_an_id_inside_json_written_into_text_is_extracted() -> None:
    s = Session()
    s.call(
        "create_customer",
        {"email": "ana@example.com"},
        'Customer created: {"id":"cus_Q8x7LmN2vR","object":"customer","email":"ana@example.com"}',
    )
    s.call("create_invoice", {"customer": "cus_Q8x7LmN2vR", "amount": 4900}, {"id": "in_1"})
    result = saved(s)
    assert applied(result)[("create_invoice_1", "$.customer")] == "@extract_1"


def test_a_cell_of_a_markdown_table_is_extracted_from_its_row() -> None:
    s = Session()
    table = (
        "| Issue | Title | Events |\n|---|---|---|\n"
        "| WEB-4F2 | TypeError in checkout | 1203 |\n| WEB-4F3 | Timeout on login | 87 |"
    )
    s.call("list_issues", {"project": "web", "query": "is:unresolved"}, table)
    s.call("resolve_issue", {"issue_id": "WEB-4F3"}, {"status": "resolved"})
    result = saved(s)
    # the table reads as rows; the row is the one with its title, wherever it sits in another world
    assert applied(result)[("resolve_issue_1", "$.issue_id")] == "@list_issues_1_rows[1].Issue"
    assert result.template.step("resolve_issue_1").input == {"issue_id": "@pick_timeout_on_login.Issue"}
    assert result.template.step("pick_timeout_on_login").input == {
        "items": "@list_issues_1_rows",
        "key": "Title",
        "value": "Timeout on login",
    }


def test_the_date_of_a_time_tools_datetime_is_extracted_and_a_whole_datetime_is_a_ref() -> None:
    s = Session()
    now = {"timezone": "Europe/Paris", "datetime": "2026-11-26T10:14:49+01:00", "is_dst": False}
    s.call("get_current_time", {"timezone": "Europe/Paris"}, now)
    s.call("list_events", {"date": "2026-11-26"}, {"events": []})
    s.call("list_changes", {"since": "2026-11-26T10:14:49+01:00"}, {"changes": []})
    result = saved(s)
    found = applied(result)
    assert found[("list_events_1", "$.date")] == "@extract_1"
    assert found[("list_changes_1", "$.since")] == "@get_current_time_1.datetime"


def test_a_value_the_user_sent_first_and_the_server_echoed_is_not_read_from_the_echo() -> None:
    s = Session()
    s.call("echo", {"message": "Deploy build 7f3a9c21e4 to staging"}, "Echo: Deploy build 7f3a9c21e4 to staging")
    s.call("deploy", {"build": "7f3a9c21e4"}, {"ok": True})
    result = saved(s)
    assert not code_steps(result.template)


def test_a_short_value_glued_inside_a_token_is_not_read_from_it() -> None:
    s = Session()
    s.call("get_current_time", {"timezone": "Asia/Tokyo"}, {"datetime": "2026-11-22T16:05:41+09:00"})
    s.call("convert_time", {"source_timezone": "Asia/Tokyo", "time": "09:00"}, {"ok": True})
    result = saved(s)
    assert not code_steps(result.template)


# --------------------------------------------------------------------------- the generalization check


def _with_input(result: TemplatizeResult, step: str, key: str, value: JSON) -> TemplatizeResult:
    """The result with one argument of one step rewritten (a ref or a literal a person might have saved)."""
    steps = tuple(
        dataclasses.replace(spec, input={**spec.input, key: value})
        if spec.name == step and isinstance(spec.input, dict)
        else spec
        for spec in result.template.steps
    )
    return dataclasses.replace(result, template=dataclasses.replace(result.template, steps=steps))


def _issue_session() -> Session:
    s = Session()
    s.call(
        "list_issues",
        {"project": "Web Platform"},
        {"items": [{"id": "ISS-88123", "state": "open", "amount": 45.5}, {"id": "ISS-88124", "state": "open"}]},
    )
    s.call("assign", {"issue_id": "ISS-88123", "amount": 45.5, "state": "open"}, {"ok": True})
    return s


def test_a_template_whose_refs_carry_the_data_generalizes() -> None:
    s = _issue_session()
    result = templatize([s.steps], name="t", inputs={"project": "Web Platform"})
    found = applied(result)
    assert found[("assign_1", "$.issue_id")] == "@list_issues_1.items[0].id"
    assert found[("assign_1", "$.amount")] == "@list_issues_1.items[0].amount"  # it sits beside its item's id
    checked = verify(result, [s.steps])
    assert checked.verified and checked.generalization == ()
    assert "Generalizes" in summary(result, checked, saved="Saved", note=None)


def test_a_stale_literal_id_is_found_by_the_changed_world_and_named() -> None:
    s = _issue_session()
    good = templatize([s.steps], name="t", inputs={"project": "Web Platform"})
    stale = _with_input(good, "assign_1", "issue_id", "ISS-88123")
    checked = verify(stale, [s.steps])
    assert checked.verified  # the recording alone cannot tell
    [finding] = checked.generalization
    assert (finding.step, finding.field, finding.kind) == ("assign_1", "$.issue_id", "stale literal")
    text = summary(stale, checked, saved="Saved", note=None)
    assert "assign_1 $.issue_id: stale literal" in text and "make it an input" in text
    [fix] = propose_fixes(stale, checked)  # offered in the confirmation form, unticked
    assert (fix.name, fix.value, fix.ticked, fix.used_at) == (
        "issue_id",
        "ISS-88123",
        False,
        (("assign_1", "$.issue_id"),),
    )


def test_a_coincidental_ref_to_a_common_value_is_found_by_the_changed_world() -> None:
    s = _issue_session()
    good = templatize([s.steps], name="t", inputs={"project": "Web Platform"})
    assert inputs_of(good)["assign_1"]["state"] == "open"  # a common word: literal
    linked = _with_input(good, "assign_1", "state", "@list_issues_1.items[1].state")
    checked = verify(linked, [s.steps])
    assert checked.verified
    [finding] = checked.generalization
    assert (finding.field, finding.kind) == ("$.state", "coincidental ref")


def test_an_input_left_literal_in_a_sentence_is_a_stale_literal() -> None:
    s = Session()
    s.call("create_team", {"name": "Team Falcon"}, {"id": "team_5f3a9c"})
    s.call("post", {"text": "lead of Team Falcon"}, {"ok": True})
    good = templatize([s.steps], name="t", inputs={"name": "Team Falcon"})
    assert inputs_of(good)["post_1"] == {"text": "lead of {{@input.name}}"}
    assert verify(good, [s.steps]).generalization == ()
    stale = _with_input(good, "post_1", "text", "lead of Team Falcon")
    [finding] = verify(stale, [s.steps]).generalization
    assert (finding.step, finding.kind) == ("post_1", "stale literal")


# --------------------------------------------------------------------------- the right producer


def test_an_id_in_a_one_element_list_is_linked_to_the_output_that_listed_it() -> None:
    s = Session()
    services = {"services": [{"id": "PX7Q2RA", "name": "checkout-api", "status": "active"}]}
    s.call("list_services", {"query": "checkout"}, services)
    s.call("list_oncalls", {"service_ids": ["PX7Q2RA"]}, {"oncalls": [{"user": {"id": "PU8VZ3K"}}]})
    result = saved(s)
    assert applied(result)[("list_oncalls_1", "$.service_ids[0]")] == "@list_services_1.services[0].id"


def test_arguments_from_one_list_item_take_that_item_not_an_equal_value_on_another_page() -> None:
    s = Session()
    first = [{"id": "in_1Pq7", "amount_due": 4500}, {"id": "in_1Pq8", "amount_due": 1200}]
    s.call("list_invoices", {"status": "open"}, {"data": first, "has_more": True})
    s.call(
        "list_invoices",
        {"status": "open", "starting_after": "in_1Pq8"},
        {"data": [{"id": "in_1Pq9", "amount_due": 1200}]},
    )
    s.call("send_reminder", {"invoice": "in_1Pq8", "amount": 1200}, {"ok": True})
    found = applied(saved(s))
    assert found[("send_reminder_1", "$.invoice")] == "@list_invoices_1.data[1].id"
    assert found[("send_reminder_1", "$.amount")] == "@list_invoices_1.data[1].amount_due"


def test_a_common_value_with_no_key_in_common_never_becomes_a_confident_ref() -> None:
    s = Session()
    s.call("get_issue", {"key": "WEB-311"}, {"key": "WEB-311", "status": "open", "watchers": 1, "archived": True})
    s.call("list_prs", {"state": "open", "per_page": 1, "draft": True}, {"items": []})
    result = saved(s)
    assert not [i for i in result.applied if i.step == "list_prs_1"]


# --------------------------------------------------------------------------- inputs from evidence


def likely(result: TemplatizeResult) -> dict[str, tuple[JSON, bool]]:
    return {item.name: (item.value, item.ticked) for item in result.likely_inputs}


def test_slugs_the_user_chose_are_inputs_whatever_their_key_and_query_syntax_is_only_proposed() -> None:
    s = Session()
    s.call("get_pods", {"namespace": "payments-prod"}, {"items": []})
    s.call(
        "list_issues", {"organization_slug": "acme-corp", "project_slug": "web-frontend", "query": "is:unresolved"}, []
    )
    found = likely(templatize([s.steps], name="t"))
    assert found["namespace"] == ("payments-prod", True)
    assert found["organization_slug"][1] is False and found["project_slug"][1] is False  # thin: no key says so
    assert found["query"] == ("is:unresolved", False)


def test_slugs_a_first_read_sends_are_what_the_user_asked_for() -> None:
    # Before any output, the agent had only the user's words: a slug it looks up first is the user's; a setting
    # is not, nor is a slug a first write sends (a channel to post to is as likely the task's own).
    s = Session()
    s.call(
        "list_issues",
        {
            "organization_slug": "acme-corp",
            "project_slug": "web-frontend",
            "query": "is:unresolved",
            "sort": "created_at",
        },
        [],
    )
    s.call("get_pods", {"namespace": "payments-prod"}, {"items": []})
    written = likely(templatize([s.steps], name="t"))
    assert written["organization_slug"][1] is False and written["project_slug"][1] is False
    result = templatize([s.steps], name="t", read_only={"svc__list_issues", "svc__get_pods"})
    found = likely(result)
    assert found["organization_slug"] == ("acme-corp", True) and found["project_slug"] == ("web-frontend", True)
    reason = next(item.reason for item in result.likely_inputs if item.name == "project_slug")
    assert "sent by the first call" in reason
    assert found["query"] == ("is:unresolved", False)
    assert found.get("sort", (None, False))[1] is False  # a field name to sort by: a setting, first call or not


def test_the_tools_schema_is_evidence_for_and_against_an_input() -> None:
    s = Session()
    s.call(
        "search_issues",
        {"organization_slug": "acme-corp", "query": "is:unresolved", "sort": "date", "environment": "production"},
        [],
    )
    schema = {
        "type": "object",
        "properties": {
            "organization_slug": {"type": "string", "description": "The organization's slug"},
            "query": {"type": "string", "default": "is:unresolved"},
            "sort": {"type": "string", "enum": ["date", "freq", "new"]},
            "environment": {"type": "string", "description": "Filter by environment name"},
        },
    }
    result = templatize([s.steps], name="t", schemas={"svc__search_issues": schema})
    found = likely(result)
    assert found["organization_slug"] == ("acme-corp", True)  # the description says it is a slug
    assert "query" not in found and "sort" not in found  # the tool's default; one of its enum settings
    why = {item.input_path: item.why for item in result.stayed_literal}
    assert "default" in why["$.query"]
    assert "enum" in why["$.sort"]
    text = summary(result, verify(result, [s.steps]), saved=None, note=None)
    assert "Kept literal although it looked variable" in text and "is:unresolved" in text


def test_keywords_and_constants_stay_literal_and_the_summary_says_why() -> None:
    s = Session()
    s.call("list_issues", {"assignee": "me", "state": "OPEN", "title": "Checkout fails on Safari"}, [])
    result = templatize([s.steps], name="t")
    assert {item.value for item in result.likely_inputs if item.ticked} == {"Checkout fails on Safari"}
    assert not any(item.value in ("me", "OPEN") for item in result.likely_inputs)


def test_a_sentence_holding_a_chosen_name_is_interpolated_not_a_second_input() -> None:
    s = Session()
    s.call("create_team", {"name": "Team Falcon"}, {"id": "team_5f3a9c", "name": "Team Falcon"})
    s.call("set_role", {"team_id": "team_5f3a9c", "role_title": "lead of Team Falcon"}, {"ok": True})
    first = templatize([s.steps], name="t")
    assert {item.value for item in first.likely_inputs} == {"Team Falcon"}
    result = saved(s, first.ticked_inputs)
    assert inputs_of(result)["set_role_1"] == {
        "team_id": "@create_team_1.id",
        "role_title": "lead of {{@input.name}}",
    }


def test_thin_candidates_are_left_out_of_a_plain_save() -> None:
    s = Session()
    s.call("post_message", {"channel": "ops-alerts", "text": "Deploy finished for checkout"}, {"ts": "1732615200.1"})
    first = templatize([s.steps], name="t")
    assert first.ticked_inputs == {"text": "Deploy finished for checkout"}
    assert [item.name for item in first.likely_inputs if not item.ticked] == ["channel"]


def test_an_id_a_server_gave_made_an_input_is_a_missed_ref_in_the_changed_world() -> None:
    s = _issue_session()
    as_input = templatize([s.steps], name="t", inputs={"project": "Web Platform", "issue_id": "ISS-88123"})
    assert inputs_of(as_input)["assign_1"]["issue_id"] == "@input.issue_id"
    checked = verify(as_input, [s.steps])
    assert checked.verified
    assert [(f.field, f.kind) for f in checked.generalization] == [("$.issue_id", "missed ref")]


def test_a_file_name_read_out_of_a_search_result_is_interpolated_into_the_path_it_is_moved_to() -> None:
    s = Session()
    s.call("search_files", {"path": "/home/ana/work", "pattern": "*.csv"}, "/home/ana/work/exports/sales-2026q3.csv")
    move = {
        "source": "/home/ana/work/exports/sales-2026q3.csv",
        "destination": "/home/ana/work/archive/sales-2026q3.csv",
    }
    s.call("move_file", move, "Moved")
    result = saved(s, {"root": "/home/ana/work"})
    assert inputs_of(result)["move_file_1"] == {
        "source": "@search_files_1",
        "destination": "{{@input.root}}/archive/{{@extract_1}}",
    }
    assert verify(result, [s.steps]).generalization == ()


def test_an_extraction_that_only_fits_the_recorded_text_is_reported_as_failing_on_other_data() -> None:
    s = Session()
    sha = "cd42d7e59a39c173644cad96f25767e7123eaa71"
    s.call("git_commit", {"message": "Raise timeout"}, f"Changes committed successfully with hash {sha}")
    s.call("git_show", {"revision": sha}, f"commit {sha}")
    good = saved(s, {"message": "Raise timeout"})
    brittle = "export default function(input) {\n  return input.text.match(/(cd42d7e5[0-9a-f]+)/)[1];\n}\n"
    steps = tuple(
        dataclasses.replace(spec, code=brittle) if spec.name == "extract_1" else spec for spec in good.template.steps
    )
    result = dataclasses.replace(good, template=dataclasses.replace(good.template, steps=steps))
    checked = verify(result, [s.steps])
    assert checked.verified  # on the recording itself it extracts the right hash
    assert ("extract_1", "$", "fails") in {(f.step, f.field, f.kind) for f in checked.generalization}


@pytest.mark.parametrize(
    ("written", "fmt"),
    [("26/11/2026", "%d/%m/%Y"), ("November 26", "%B %e"), ("Thursday 26 November", "%A %e %B")],
)
def test_a_clocks_date_written_in_another_format_is_reformatted_from_the_clock(written: str, fmt: str) -> None:
    s = Session()
    s.call("get_current_time", {"timezone": "Europe/Berlin"}, {"datetime": "2026-11-26T11:02:13+01:00"})
    s.call("post", {"channel": "standup", "text": written}, {"ok": True})
    result = saved(s, {"timezone": "Europe/Berlin"})
    [inference] = [i for i in result.applied if i.step == "post_1" and i.input_path == "$.text"]
    assert inference.ref == "@format_date_1" and fmt in inference.evidence
    assert verify(result, [s.steps]).generalization == ()  # on another day it writes that day


def test_the_end_of_the_clock_s_day_in_its_zone_is_computed_from_the_clock() -> None:
    s = Session()
    s.call("get_current_time", {"timezone": "Europe/Berlin"}, {"datetime": "2026-11-26T11:02:13+01:00"})
    window = {"min_start_time": "2026-11-26T11:02:13+01:00", "max_start_time": "2026-11-26T23:59:59+01:00"}
    s.call("list_events", window, {"collection": []})
    result = saved(s, {"timezone": "Europe/Berlin"})
    [inference] = [i for i in result.applied if i.step == "list_events_1" and i.input_path == "$.max_start_time"]
    assert inference.ref == "@format_date_1" and "%Y-%m-%dT23:59:59%z" in inference.evidence
    assert verify(result, [s.steps]).generalization == ()  # on another day it ends that day


def test_a_date_the_user_typed_before_any_clock_is_not_reformatted() -> None:
    s = Session()
    s.call("book", {"day": "26/11/2026"}, {"id": "bk_5f3a9c", "at": "2026-11-26T09:00:00Z"})
    s.call("confirm", {"day": "26/11/2026", "booking": "bk_5f3a9c"}, {"ok": True})
    result = saved(s)
    assert not code_steps(result.template)


def test_the_form_shows_thin_candidates_unticked_and_applies_them_only_when_ticked() -> None:
    from toolreel.gateway.save_form import form_schema, read_answer

    s = Session()
    s.call("post_message", {"channel": "ops-alerts", "text": "Deploy finished for checkout"}, {"ts": "1732615200.1"})
    candidates = templatize([s.steps], name="t").likely_inputs
    fields = form_schema(candidates)["properties"]
    assert fields["use_text"]["default"] is True
    assert fields["use_channel"]["default"] is False and "thin" in fields["use_channel"]["description"]
    assert read_answer(candidates, {}) == {"text": "Deploy finished for checkout"}
    assert read_answer(candidates, {"use_channel": True}) == {
        "text": "Deploy finished for checkout",
        "channel": "ops-alerts",
    }
