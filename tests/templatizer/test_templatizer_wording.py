"""Inputs weighed from evidence, third pass: words read before the call, machine-made ids sent by writes,
phone numbers, parameters the tool does not require, and format phrases in a parameter's description."""

from __future__ import annotations

from typing import Any

from tests.recorded import Session, inputs_of
from toolreel.core.model import JSON
from toolreel.core.sandbox import CodeLimits, run_code
from toolreel.templatizer import TemplatizeResult, templatize
from toolreel.templatizer._evidence import is_machine_id, judge_text, other_examples
from toolreel.templatizer._wording import OutputWords

_SNAPSHOT = (
    '- textbox "Subject" [ref=e9]\n- textbox "Describe the problem" [ref=e13]\n- button "Submit request" [ref=e17]'
)


def ticked(result: TemplatizeResult) -> dict[str, JSON]:
    return {likely.name: likely.value for likely in result.likely_inputs if likely.ticked}


def proposed(result: TemplatizeResult) -> dict[str, JSON]:
    return {likely.name: likely.value for likely in result.likely_inputs if not likely.ticked}


def test_an_element_label_composed_of_words_read_in_a_snapshot_is_no_input() -> None:
    s = Session()
    s.call("browser_navigate", {"url": "https://partners.example/support/new"}, _SNAPSHOT)
    s.call("browser_type", {"element": "Subject textbox", "ref": "e9", "text": "Invoice 4471 is overdue"}, "ok")
    result = templatize([s.steps], name="t")
    assert "Subject textbox" not in ticked(result).values()
    assert "Subject textbox" in proposed(result).values()  # thin: proposed, never applied by a plain save
    assert "Invoice 4471 is overdue" in ticked(result).values()  # words the user typed stay an input


def test_a_name_searched_for_and_found_is_still_the_user_s_choice() -> None:
    s = Session()
    s.call("list_projects", {}, [{"name": "web"}, {"name": "platform tools"}])
    s.call("search_teams", {"query": "Web Platform"}, [{"id": "t-1", "name": "Web Platform"}])
    assert "Web Platform" in ticked(templatize([s.steps], name="t")).values()


def test_a_name_written_as_is_in_an_earlier_listing_is_not_capped() -> None:
    outputs: dict[str, JSON] = {"a": "Teams:\n- Web Platform\n- Billing", "b": None}
    words = OutputWords(outputs, {"a": 1, "b": 2})
    assert not words.read_before("Web Platform", "b")  # a pick among what was read
    assert words.read_before("Platform Web", "b")  # the same words, composed
    assert not words.read_before("Platform Web", "a")  # not before the output that holds them


def test_words_are_read_from_keys_and_values_not_from_escapes() -> None:
    words = OutputWords({"a": {"Status": "Ready\nNot started"}, "b": None}, {"a": 1, "b": 2})
    assert words.read_before("Status Not started", "b")
    assert not words.read_before("nnot", "b")


def test_a_uuid_a_write_sends_is_where_it_goes_the_same_uuid_a_read_sends_may_be_chosen() -> None:
    db = "c7d8e9f0-1a2b-4c3d-8e4f-5a6b7c8d9e0f"
    write = judge_text(db, ("parent", "database_id"), None, 1, writes=True)
    read = judge_text(db, ("database_id",), None, 1, writes=False)
    assert write.thin and not write.chosen
    assert read.score > write.score


def test_a_machine_made_key_a_read_sends_first_is_the_user_s_one_only_writes_send_is_where_they_go() -> None:
    key = "Xk2fQ9LmVt7aB3cRw1Pq"
    s = Session()
    s.call("get_file", {"fileKey": key, "depth": 1}, "nodes: []")
    s.call("download_images", {"fileKey": key, "localPath": "/srv/img"}, "ok")
    assert ticked(templatize([s.steps], name="t", read_only={"svc__get_file"}))["file_key"] == key
    s = Session()
    s.call("download_images", {"fileKey": key, "localPath": "/srv/img"}, "ok")
    s.call("export_images", {"fileKey": key, "format": "png"}, "ok")
    assert key not in ticked(templatize([s.steps], name="t", read_only={"svc__get_file"})).values()


def test_machine_ids_are_long_random_keys_not_names_or_short_ids() -> None:
    assert is_machine_id("AC3f5e0a7c9b2d4e6f8a1b3c5d7e9f0a2b")
    assert is_machine_id("5e1b0c3a-7d2f-4e8a-b6c1-0f9a8d7e6c54")
    assert not is_machine_id("cus_Q8x7LmN2vR")  # a customer id a person pastes
    assert not is_machine_id("238904127731")  # digits only: a folder number
    assert not is_machine_id("acme-build-artifacts")


_SMS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "To": {"type": "string", "description": "The recipient's phone number in E.164 format"},
        "From": {"type": "string", "description": "The sender's phone number (E.164)"},
        "Body": {"type": "string", "description": "The text content of the outgoing message."},
    },
    "required": ["To"],
}


def test_a_required_phone_number_is_chosen_an_optional_one_is_proposed() -> None:
    s = Session()
    s.call("send_sms", {"To": "+819012345678", "From": "+14155550142", "Body": "Running late"}, {"sid": "SM1"})
    result = templatize([s.steps], name="t", schemas={"svc__send_sms": _SMS})
    assert ticked(result)["to"] == "+819012345678"
    assert proposed(result)["from"] == "+14155550142"


def test_a_format_phrase_describes_the_value_not_a_setting() -> None:
    schema = {"type": "string", "description": "Time to convert in 24-hour format (HH:MM)"}
    assert judge_text("09:30", ("time",), schema, 1).chosen
    setting = {"type": "string", "description": "The output format"}
    assert not judge_text("markdown", ("output",), setting, 1).chosen


def test_a_field_name_of_the_call_s_own_answer_is_no_input() -> None:
    s = Session()
    s.call(
        "search_objects",
        {"propertyName": "email", "value": "jordan.lee@brightpath.io"},
        {"results": [{"id": "51234001", "properties": {"email": "jordan.lee@brightpath.io", "firstname": "Jordan"}}]},
    )
    result = templatize([s.steps], name="t")
    assert "email" not in ticked(result).values()
    assert "jordan.lee@brightpath.io" in ticked(result).values()


_CONTACT = {"results": [{"id": "51234001", "properties": {"firstname": "Jordan", "lastname": "Lee", "stage": "lead"}}]}


def test_two_fields_of_one_record_side_by_side_are_that_record_and_the_note_after_them_the_user_s() -> None:
    s = Session()
    s.call("search_contacts", {"email": "jordan.lee@brightpath.io"}, _CONTACT)
    body = "Call with Jordan Lee: renewal moves to Q1, wants SSO quote"
    s.call("create_note", {"contact": "51234001", "body": body}, {"id": 9})
    first = templatize([s.steps], name="t")
    assert ticked(first).get("body") == "renewal moves to Q1, wants SSO quote"
    saved = templatize([s.steps], name="t", inputs=ticked(first))
    written = inputs_of(saved)["create_note_1"]
    assert isinstance(written, dict)
    assert written["body"] == (
        "Call with {{@search_contacts_1.results[0].properties.firstname}} "
        "{{@search_contacts_1.results[0].properties.lastname}}: {{@input.body}}"
    )


def test_a_lone_short_word_equal_to_a_field_stays_literal() -> None:
    s = Session()
    s.call("search_contacts", {"email": "jordan.lee@brightpath.io"}, _CONTACT)
    s.call("create_note", {"contact": "51234001", "body": "Met Lee at the fair"}, {"id": 9})
    written = inputs_of(templatize([s.steps], name="t"))["create_note_1"]
    assert isinstance(written, dict) and "{{" not in str(written["body"])


_SQL_ANSWER = (
    'Below is the result of the SQL query.\n\n<untrusted-data-1a2b>\n[{"signups": 42}]\n</untrusted-data-1a2b>\n'
)


def test_a_short_count_is_read_out_of_text_when_the_sentence_names_its_label() -> None:
    s = Session()
    s.call("execute_sql", {"query": "select count(*) as signups from users"}, _SQL_ANSWER)
    s.call("send_sms", {"to": "+447700900431", "body": "Signups today so far: 42"}, {"sid": "SM1"})
    result = templatize([s.steps], name="t")
    written = inputs_of(result)["send_sms_1"]
    assert isinstance(written, dict) and written["body"] == "Signups today so far: {{@extract_1}}"
    assert "Signups today so far: 42" not in ticked(result).values()


def test_a_short_count_beside_another_label_stays_literal() -> None:
    s = Session()
    s.call("execute_sql", {"query": "select count(*) as signups from users"}, _SQL_ANSWER)
    s.call("send_sms", {"to": "+447700900431", "body": "Answer: 42"}, {"sid": "SM1"})
    written = inputs_of(templatize([s.steps], name="t"))["send_sms_1"]
    assert isinstance(written, dict) and written["body"] == "Answer: 42"


def test_a_short_ref_is_read_off_the_line_the_call_s_other_argument_names() -> None:
    s = Session()
    s.call("browser_navigate", {"url": "https://partners.example/support/new"}, _SNAPSHOT)
    s.call("browser_type", {"element": "Describe the problem textbox", "ref": "e13", "text": "Pallet 7731"}, "ok")
    result = templatize([s.steps], name="t")
    written = inputs_of(result)["browser_type_1"]
    assert isinstance(written, dict) and written["ref"] == "@extract_1"
    code = next(step.code for step in result.template.steps if step.name == "extract_1")
    assert code is not None and "Describe" in code  # the line its label names, not the first textbox's line
    moved = (
        '- button "Submit request" [ref=e21]\n- textbox "Describe the problem" [ref=e30]\n- textbox "Subject" [ref=e9]'
    )
    assert run_code(code, {"text": moved}, CodeLimits()) == "e30"


def test_a_short_value_on_no_line_the_call_names_stays_literal() -> None:
    s = Session()
    s.call("browser_navigate", {"url": "https://partners.example/support/new"}, _SNAPSHOT)
    s.call("browser_type", {"element": "Notes field", "ref": "e13", "text": "Pallet 7731"}, "ok")
    written = inputs_of(templatize([s.steps], name="t"))["browser_type_1"]
    assert isinstance(written, dict) and written["ref"] == "e13"


def test_a_value_a_query_selects_by_and_a_message_repeats_is_the_input_both_are_built_on() -> None:
    s = Session()
    s.call("search", {"index": "logs-http-*", "query": 'service.name:"checkout-api" AND code:[500 TO 599]'}, "23")
    s.call("send_message", {"channel": "ops", "message": "checkout-api failed 23 times"}, "ok")
    first = templatize([s.steps], name="t")
    assert ticked(first) == {"name": "checkout-api"}  # the index pattern and the query stay literal
    written = inputs_of(templatize([s.steps], name="t", inputs=ticked(first)))
    assert written["search_1"] == {
        "index": "logs-http-*",
        "query": 'service.name:"{{@input.name}}" AND code:[500 TO 599]',
    }


def test_a_value_a_query_selects_by_is_proposed_not_applied_beside_another_or_read_out_of_a_text() -> None:
    # beside another value the query selects by, it is as likely the task's own (an arXiv category)
    s = Session()
    s.call("get_products", {"query": "sku:CPS-01 AND vendor:Hario", "limit": 1}, {"products": []})
    result = templatize([s.steps], name="t")
    assert "CPS-01" in proposed(result).values() and "CPS-01" not in ticked(result).values()
    # alone, but written in an earlier output's text (a purchase order's CSV): read out of it, not typed
    s = Session()
    s.call("read_file", {"path": "po.csv"}, {"content": "sku,qty\nCPS-01,24\n"})
    s.call("get_products", {"query": "sku:CPS-01", "limit": 1}, {"products": []})
    assert "CPS-01" not in ticked(templatize([s.steps], name="t")).values()
    # alone and nowhere else: what the query is about, the user's (test_templatizer_queries)
    s = Session()
    s.call("get_products", {"query": "sku:CPS-01", "limit": 1}, {"products": []})
    assert "CPS-01" in ticked(templatize([s.steps], name="t")).values()


def test_series_selectors_and_relative_times_are_part_of_the_task() -> None:
    assert not judge_text('sum(rate(http_requests_total{service="api",code=~"5.."}[5m]))', ("expr",), None, 1).chosen
    for relative in ("now-1h", "in 2 days", "tomorrow", "14d"):
        assert not judge_text(relative, ("due_string",), None, 1).thin, relative
    assert judge_text("2026-11-27", ("due_date",), None, 1).chosen


def test_a_version_inside_a_text_built_on_an_output_is_the_input() -> None:
    s = Session()
    s.call("query", {"expr": "errors"}, [{"value": [1795400400.0, "0.42"]}])
    s.call("annotate", {"text": "Deploying v2.14.0; 5xx rate before: 0.42/s"}, {"id": 1})
    first = templatize([s.steps], name="t")
    assert ticked(first) == {"version": "v2.14.0"}
    written = inputs_of(templatize([s.steps], name="t", inputs=ticked(first)))["annotate_1"]
    assert written == {"text": "Deploying {{@input.version}}; 5xx rate before: {{@query_1[0].value[1]}}/s"}


_CONVERTED = {
    "source": {"timezone": "America/New_York", "datetime": "2026-11-27T09:30:00-05:00", "day_of_week": "Friday"},
    "target": {"timezone": "Asia/Tokyo", "datetime": "2026-11-27T23:30:00+09:00", "day_of_week": "Friday"},
}


def test_a_weekday_both_clocks_render_is_read_from_the_clock_of_the_time_beside_it() -> None:
    s = Session()
    s.call(
        "convert_time",
        {"source_timezone": "America/New_York", "time": "09:30", "target_timezone": "Asia/Tokyo"},
        _CONVERTED,
    )
    s.call("send_sms", {"to": "+819012345678", "body": "Our call is on Friday at 23:30 your time."}, {"sid": "SM1"})
    result = templatize([s.steps], name="t")
    codes = {step.name: step for step in result.template.steps if step.code}
    assert {str(step.input) for step in codes.values()} == {"{'text': '@convert_time_1.target.datetime'}"}
    written = inputs_of(result)["send_sms_1"]
    assert isinstance(written, dict) and "Friday" not in str(written["body"]) and "23:30" not in str(written["body"])


def test_a_version_named_in_a_title_is_read_from_the_releases_page_that_listed_it() -> None:
    s = Session()
    page = "# Releases\n\n## v3.5.1\n\n2026-11-20\n\n- fixes\n\n## v3.5.0\n\n2026-10-02\n"
    s.call("fetch", {"url": "https://github.com/grafana/loki/releases"}, page)
    s.call("create_page", {"title": "Upgrade loki to v3.5.1"}, {"id": "p1"})
    result = templatize([s.steps], name="t")
    assert "Upgrade loki to v3.5.1" not in ticked(result).values()
    written = inputs_of(result)["create_page_1"]
    assert isinstance(written, dict) and written["title"] == "Upgrade loki to {{@extract_1}}"


def test_a_number_in_prose_is_not_read_by_a_label_elsewhere_on_the_line() -> None:
    s = Session()
    s.call("git_diff", {"repo_path": "/srv/app"}, "-LOGIN_TIMEOUT = 10\n+LOGIN_TIMEOUT = 30")
    s.call("git_commit", {"repo_path": "/srv/app", "message": "Raise the login timeout to 30 s"}, "ok")
    result = templatize([s.steps], name="t")
    assert ticked(result)["message"] == "Raise the login timeout to 30 s"  # longer than a label: someone's wording


def test_a_slug_inside_a_url_read_out_of_an_output_is_still_the_user_s() -> None:
    s = Session()
    status = "Status: failed\nWorkflow URL: https://app.ci.example/pipelines/gh/acme/ledger-api/1842/workflows/b7e1c2d4"
    s.call("get_latest_pipeline_status", {"projectSlug": "gh/acme/ledger-api"}, status)
    url = "https://app.ci.example/pipelines/gh/acme/ledger-api/1842/workflows/b7e1c2d4"
    s.call("rerun_workflow", {"workflowURL": url}, "ok")
    result = templatize([s.steps], name="t")
    assert {item.value for item in result.likely_inputs} == {"gh/acme/ledger-api"}  # not explained away by the URL
    written = inputs_of(result)["rerun_workflow_1"]
    assert isinstance(written, dict) and written["workflowURL"] == "@extract_1"


def test_a_value_the_description_gives_other_examples_of_is_picked_per_run() -> None:
    schema = {"type": "string", "description": "Two-letter US state code (e.g. CA, NY)"}
    assert judge_text("IL", ("state",), schema, 1).chosen  # an upper-case code, yet the tool names others
    assert not judge_text("CA", ("state",), schema, 1).chosen  # one of the examples: nothing says it varies
    assert not judge_text("IL", ("state",), {"description": "Two-letter US state code"}, 1).chosen
    zones = {"description": "IANA timezone name (e.g., 'America/New_York', 'Europe/London')."}
    assert other_examples("Asia/Tokyo", zones) == ("America/New_York", "Europe/London")
    assert other_examples("Europe/London", zones) == ()
    due = {"description": "Natural language due date, e.g. 'tomorrow', 'next Monday'"}
    assert not judge_text("in 2 days", ("due_string",), due, 1).thin  # relative to the run: the same words


def test_a_number_or_a_date_a_query_compares_with_is_the_input_the_query_is_built_on() -> None:
    s = Session()
    query = "SELECT i.number, c.email FROM invoices i JOIN customers c ON c.id = i.customer_id WHERE i.days > 30"
    s.call("read_query", {"query": query}, [{"number": "INV-1", "email": "a@b.io"}])
    first = templatize([s.steps], name="t")
    assert ticked(first) == {"days": 30}  # the column `i.customer_id` on the right of `=` is no value
    written = inputs_of(templatize([s.steps], name="t", inputs=ticked(first)))
    assert written["read_query_1"] == {"query": query.replace("> 30", "> {{@input.days}}")}
    s = Session()
    s.call("list_pull_requests", {"q": 'state = "OPEN" AND updated_on < 2026-10-01T00:00:00Z'}, {"values": []})
    first = templatize([s.steps], name="t")
    assert ticked(first) == {"updated_on": "2026-10-01"}  # `OPEN` stays the query's own
    written = inputs_of(templatize([s.steps], name="t", inputs=ticked(first)))
    assert written["list_pull_requests_1"] == {"q": 'state = "OPEN" AND updated_on < {{@input.updated_on}}T00:00:00Z'}


def test_a_factor_or_a_zero_in_a_comparison_is_part_of_the_query() -> None:
    s = Session()
    s.call("execute_query", {"query": "SELECT a FROM t WHERE used < 0.5 * paid AND n > 0 ORDER BY a"}, [])
    result = templatize([s.steps], name="t")
    assert ticked(result) == {} and set(proposed(result)) == {"query"}  # the whole query at most, unticked


def test_an_email_a_query_selects_by_is_chosen_a_code_only_proposed() -> None:
    s = Session()
    s.call("search_emails", {"query": "from:billing@acme.net subject:invoice newer_than:7d"}, {"messages": []})
    first = templatize([s.steps], name="t")
    assert ticked(first) == {"from": "billing@acme.net"}  # `7d` is relative to the run, `invoice` a word
    written = inputs_of(templatize([s.steps], name="t", inputs=ticked(first)))
    assert written["search_emails_1"] == {"query": "from:{{@input.from}} subject:invoice newer_than:7d"}
