"""Inputs and values from evidence, second pass: query languages, repeated wording, list inputs, a value read once
and passed on twice, ids named by the tool that listed them, marker words in listings, numbers and versions in text.

Sessions are shaped like what published MCP servers return: mcp-atlassian's JQL and boards, GitHub comments,
mcp-server-git's commit sentence, Box upload sessions, Google Drive's search listing, the filesystem server's
file info, Slack release notes. In-process: no server is started.
"""

from __future__ import annotations

import pytest

from tests.recorded import Session, applied, inputs_of
from toolreel.core.errors import TemplateError
from toolreel.core.model import JSON
from toolreel.core.refs import MappingScope, resolve
from toolreel.core.sandbox import CodeLimits, run_code
from toolreel.core.template_io import parse_template, tool_input_schema
from toolreel.templatizer import TemplatizeResult, templatize, verify
from toolreel.templatizer._evidence import is_query, judge_text


def ticked(result: TemplatizeResult) -> dict[str, JSON]:
    return {item.name: item.value for item in result.likely_inputs if item.ticked}


def saved(s: Session, inputs: dict[str, JSON] | None = None) -> TemplatizeResult:
    result = templatize([s.steps], name="t", inputs=inputs)
    assert verify(result, [s.steps]).verified
    return result


def code_of(result: TemplatizeResult, name: str) -> str:
    return next(step.code or "" for step in result.template.steps if step.name == name)


def replayed_input(result: TemplatizeResult, step: str, outputs: dict[str, JSON], inputs: JSON = None) -> JSON:
    """What the saved template passes to `step` when its tool steps answer `outputs`: its code steps run on
    those answers in order, whichever steps (an extraction, rows and a join) the rules chose to read them."""
    steps = dict(outputs)
    scope = MappingScope(steps=steps, inputs=inputs if isinstance(inputs, dict) else {})
    limits = CodeLimits(timeout=5.0, memory_mb=32)
    for spec in result.template.steps:
        if spec.name == step:
            return resolve(spec.input, scope)
        if spec.code is not None:
            steps[spec.name] = run_code(spec.code, resolve(spec.input, scope), limits)
    raise AssertionError(f"no step {step}")


# --------------------------------------------------------------------------- constants of the task


@pytest.mark.parametrize(
    "text",
    [
        'project = PAY AND status = "To Do" ORDER BY Rank ASC',
        "SELECT id, name, email FROM customers WHERE plan = 'pro' ORDER BY id",
        "select * from users",
        "is:unresolved assignee:me",
        'status:"Trial" created > "2026-11-19"',  # clauses compared by an order or a SCIM/OData word operator
        'profile.email eq "maya.ortiz@kettle.coffee"',
        "isRead eq false and importance eq 'high'",
        'state = "OPEN" AND updated_on < 2026-10-01T00:00:00Z',
        "created_at ge 2026-11-01",
    ],
)
def test_query_languages_are_recognized(text: str) -> None:
    assert is_query(text)


@pytest.mark.parametrize(
    "text",
    [
        "https://acme.sentry.io/issues/4506012345/",
        "select the best from the list",
        "Tom and Jerry <tom@example.com>",
        "Fix rounding in VAT totals",
    ],
)
def test_prose_and_links_are_not_queries(text: str) -> None:
    assert not is_query(text)


def test_a_query_statement_stays_literal_and_the_project_key_in_it_becomes_the_input() -> None:
    s = Session()
    jql = 'project = PAY AND status = "To Do" AND labels = carry-over ORDER BY Rank ASC'
    s.call("jira_search", {"jql": jql}, {"issues": [{"key": "PAY-101"}]})
    s.call("jira_get_agile_boards", {"project_key": "PAY"}, [{"id": "42", "name": "PAY board"}])
    first = templatize([s.steps], name="t")
    assert ticked(first) == {"project_key": "PAY"}  # an upper-case word, but carried into the JQL
    assert jql not in {item.value for item in first.likely_inputs if item.ticked}
    named = saved(s, {"project": "PAY"})
    assert inputs_of(named)["jira_search_1"] == {"jql": jql.replace("PAY", "{{@input.project}}")}


def test_a_search_query_keeps_its_syntax_whatever_the_description_says() -> None:
    s = Session()
    s.call("find_issues", {"org": "nimbus-labs", "query": "is:regressed"}, "# Issues\n\n## WEB-3KQ\n")
    schema = {"properties": {"query": {"type": "string", "description": "Sentry search query, e.g. is:unresolved"}}}
    result = templatize([s.steps], name="t", schemas={"svc__find_issues": schema})
    assert "is:regressed" not in ticked(result).values()
    assert "is:regressed" in {item.value for item in result.likely_inputs if not item.ticked}  # proposed unticked


def test_the_same_comment_posted_on_each_issue_is_what_the_user_asked_to_say() -> None:
    # (the blind sets' authors wrote such a remark as the user's seven times in eight: a repeated command is the one
    # that stayed the task's)
    s = Session()
    body = "Thanks for the report! This is queued for Thursday's triage meeting."
    s.call("list_issues", {"repo": "warehouse-ui"}, {"issues": [{"number": 41}, {"number": 44}, {"number": 47}]})
    for number in (41, 44, 47):
        s.call("add_issue_comment", {"repo": "warehouse-ui", "issue_number": number, "body": body}, {"id": number})
    result = templatize([s.steps], name="t")
    assert ticked(result) == {"repo": "warehouse-ui", "body": body}


def test_a_build_number_inside_such_a_remark_is_the_user_s_with_the_rest() -> None:
    s = Session()
    body = "Please retest on build 3.2.0-rc2 before closing."
    s.call("query_issues", {"query": "open"}, [{"id": 2201}, {"id": 2205}])
    for issue in (2201, 2205):
        s.call("add_issue_comment", {"issueId": issue, "content": body}, {"id": issue})
    result = templatize([s.steps], name="t")
    assert body in ticked(result).values() and "3.2.0-rc2" not in ticked(result).values()


def test_the_same_command_run_on_each_host_is_the_task_s_own() -> None:
    s = Session()
    s.call("list_hosts", {"group": "web"}, {"hosts": [{"name": "web-1"}, {"name": "web-2"}, {"name": "web-3"}]})
    for host in ("web-1", "web-2", "web-3"):
        s.call("run_command", {"host": host, "command": "systemctl restart nginx"}, {"exit": 0})
    assert "systemctl restart nginx" not in ticked(templatize([s.steps], name="t")).values()


def test_a_commit_message_written_once_is_still_the_user_s() -> None:
    s = Session()
    s.call("git_commit", {"repo_path": "/srv/app", "message": "Fix rounding in VAT totals"}, "Changes committed")
    assert "Fix rounding in VAT totals" in ticked(templatize([s.steps], name="t")).values()


# --------------------------------------------------------------------------- list inputs


def test_files_the_user_listed_become_one_list_input_with_an_items_schema() -> None:
    s = Session()
    s.call("git_add", {"repo_path": "/srv/app", "files": ["src/vat.py", "tests/test_vat.py"]}, "Files staged")
    first = templatize([s.steps], name="t")
    assert ticked(first)["files"] == ["src/vat.py", "tests/test_vat.py"]
    named = saved(s, {"files": ["src/vat.py", "tests/test_vat.py"], "repo_path": "/srv/app"})
    assert inputs_of(named)["git_add_1"] == {"repo_path": "@input.repo_path", "files": "@input.files"}
    prop = tool_input_schema(named.template)["properties"]["files"]
    assert prop["type"] == "array" and prop["items"] == {"type": "string"}


def test_an_items_schema_must_fit_an_array_input() -> None:
    base = {"name": "t", "steps": [{"name": "a", "tool": "s__x", "input": {"f": "@input.files"}}]}
    ok = parse_template({**base, "inputs": {"files": {"type": "array", "items": {"type": "string"}}}})
    assert ok.inputs["files"].items == {"type": "string"}
    with pytest.raises(TemplateError, match="items"):
        parse_template({**base, "inputs": {"files": {"type": "string", "items": {"type": "string"}}}})
    with pytest.raises(TemplateError, match="items"):
        parse_template({**base, "inputs": {"files": {"type": "array", "items": {"type": "nonsense"}}}})


# --------------------------------------------------------------------------- ids and numbers


def test_an_opaque_folder_id_and_a_file_s_size_are_the_user_s_a_page_size_is_not() -> None:
    s = Session()
    s.call(
        "create_upload_session",
        {"folder_id": "238904127731", "file_name": "q3-ledger.parquet", "file_size": 5242880, "page_size": 250},
        {"id": "F9E8D7C6B5A4"},
    )
    chosen = ticked(templatize([s.steps], name="t"))
    assert chosen["folder_id"] == "238904127731" and chosen["file_size"] == 5242880
    assert 250 not in chosen.values()


def test_a_short_id_is_the_listed_one_when_the_tool_that_listed_it_names_the_key() -> None:
    s = Session()
    s.call("get_agile_boards", {"project_key": "PAY"}, [{"id": "42", "name": "PAY board", "type": "scrum"}])
    s.call("get_sprints_from_board", {"board_id": "42", "state": "future"}, [{"id": "318", "name": "Sprint 49"}])
    s.call("add_issues_to_sprint", {"sprint_id": "318", "issue_keys": "PAY-101"}, {"success": True})
    refs = applied(saved(s))
    assert refs[("get_sprints_from_board_1", "$.board_id")] == "@get_agile_boards_1[0].id"
    assert refs[("add_issues_to_sprint_1", "$.sprint_id")] == "@get_sprints_from_board_1[0].id"


def test_a_short_equal_value_under_an_unrelated_key_stays_literal() -> None:
    s = Session()
    s.call("get_agile_boards", {"project_key": "PAY"}, [{"id": "42", "name": "PAY board"}])
    s.call("set_retention", {"days": "42"}, {"ok": True})
    assert ("set_retention_1", "$.days") not in applied(templatize([s.steps], name="t"))


# --------------------------------------------------------------------------- values read out of text


def test_a_hash_read_once_and_passed_on_twice_comes_from_one_extraction() -> None:
    s = Session()
    sha = "5c22e0f9a4b14d3e8f7a2b6c1d9e0f3a4b5c6d7e"
    s.call(
        "git_commit", {"repo_path": "/srv/l", "message": "Fix VAT"}, f"Changes committed successfully with hash {sha}"
    )
    s.call(
        "git_create_branch",
        {"repo_path": "/srv/l", "branch_name": "release/1.8", "base_branch": sha},
        f"Created branch 'release/1.8' from '{sha}'",
    )
    s.call("git_show", {"repo_path": "/srv/l", "revision": sha}, f"Commit: '{sha}'")
    result = saved(s)
    refs = applied(result)
    assert refs[("git_create_branch_1", "$.base_branch")] == refs[("git_show_1", "$.revision")] == "@extract_1"
    assert [step.name for step in result.template.steps if step.code] == ["extract_1"]
    assert sha not in {item.value for item in result.likely_inputs}


def test_the_id_of_the_file_a_marker_word_names_is_read_from_its_line() -> None:
    s = Session()
    listing = (
        "Found 3 files:\n"
        "Q3 board report (draft) (application/vnd.google-apps.document) - ID: 1d8KxPq2LmN0rS4tUvWxYz_aBcDeFgHiJ\n"
        "Q3 board report FINAL (application/pdf) - ID: 1ZqR7sT9uV1wX3yZ5aB7cD9eF1gH3iJ5k\n"
        "Q3 board report notes (text/plain) - ID: 1Mn0Op2Qr4St6Uv8Wx0Yz2Ab4Cd6Ef8Gh"
    )
    s.call("search", {"query": "Q3 board report"}, listing)
    s.call("share_file", {"fileId": "1ZqR7sT9uV1wX3yZ5aB7cD9eF1gH3iJ5k", "role": "reader"}, "Shared")
    result = saved(s)
    assert applied(result)[("share_file_1", "$.fileId")] == "@extract_1"
    other = (
        "Found 2 files:\n"
        "FY26 budget FINAL (application/vnd.google-apps.spreadsheet) - ID: 1AAaaBBbbCCccDDddEEeeFFffGGggHHhh\n"
        "FY26 budget (v3) (application/vnd.google-apps.spreadsheet) - ID: 1IIiiJJjjKKkkLLllMMmmNNnnOOooPPpp"
    )
    got = run_code(code_of(result, "extract_1"), {"text": other}, CodeLimits(timeout=5.0, memory_mb=32))
    assert got == "1AAaaBBbbCCccDDddEEeeFFffGGggHHhh"


def test_a_byte_count_in_a_message_is_read_out_of_the_file_info() -> None:
    s = Session()
    path = "/data/exports/orders-2026-11.csv"
    s.call("get_file_info", {"path": path}, "size: 48213907\ncreated: Thu Nov 26 2026\nisFile: true")
    s.call("post_message", {"channel": "C02DATAOPS", "text": f"Export ready: {path} (48213907 bytes)"}, {"ok": True})
    result = saved(s, {"path": path})
    text = inputs_of(result)["post_message_1"]
    assert isinstance(text, dict) and text["text"] == "Export ready: {{@input.path}} ({{@extract_1}} bytes)"


def test_a_version_inside_a_release_note_is_the_input_and_fills_the_tag_too() -> None:
    s = Session()
    note = "Release 2026.11.3 is live :rocket: changelog: https://github.com/acme/shop/releases/tag/v2026.11.3"
    s.call("post_message", {"channel": "C0RELEASES", "text": note}, {"ok": True, "message": {"text": note}})
    first = templatize([s.steps], name="t")
    assert ticked(first) == {"version": "2026.11.3"}
    named = saved(s, {"version": "2026.11.3"})
    assert inputs_of(named)["post_message_1"] == {
        "channel": "C0RELEASES",
        "text": "Release {{@input.version}} is live :rocket: changelog: "
        "https://github.com/acme/shop/releases/tag/v{{@input.version}}",
    }


def test_a_version_an_earlier_output_gave_is_no_input() -> None:
    s = Session()
    s.call("latest_release", {"repo": "shop"}, {"tag": "v2026.11.3"})
    s.call("post_message", {"channel": "C0RELEASES", "text": "Release 2026.11.3 is live"}, {"ok": True})
    assert "2026.11.3" not in ticked(templatize([s.steps], name="t")).values()


def test_a_name_read_out_of_one_item_s_title_is_read_from_the_item_that_says_it() -> None:
    s = Session()
    incidents = [
        {"id": "Q0DISK", "title": "Disk above 90% on node ip-10-0-3-17"},
        {"id": "Q1POD", "title": "OOMKilled: pod orders-worker-6b5d8c7f9-k2j4h in namespace shop-prod restarted"},
    ]
    s.call("list_incidents", {"statuses": ["triggered"]}, {"response": incidents})
    s.call("pods_log", {"name": "orders-worker-6b5d8c7f9-k2j4h", "namespace": "shop-prod", "tail": 200}, "ok")
    result = saved(s)
    extract = next(step for step in result.template.steps if step.code)
    assert extract.input == {"text": "@list_incidents_1.response"}  # the list, not the item at [1]
    moved = [
        {"id": "QZZ", "title": "OOMKilled: pod search-indexer-0 in namespace search-prod restarted 3 times"},
        {"id": "QYY", "title": "Node ip-10-1-2-3 NotReady"},
    ]
    assert run_code(extract.code or "", {"text": moved}, CodeLimits(timeout=5.0, memory_mb=32)) == "search-indexer-0"


@pytest.mark.parametrize("found", [["LEDGER-3B"], ["LEDGER-3B", "LEDGER-3C", "LEDGER-40"]])
def test_a_sentence_naming_every_issue_found_names_them_all_on_the_next_run(found: list[str]) -> None:
    s = Session()

    def report(ids: list[str]) -> str:
        return "# Issues\n\n" + "".join(f"## {i}\n\n**Description**: boom\n\n" for i in ids)

    s.call("find_issues", {"project": "checkout-api", "query": "is:regressed"}, report(["CHECKOUT-2A", "CHECKOUT-2C"]))
    s.call("create_incident", {"title": "Regressions: CHECKOUT-2A, CHECKOUT-2C", "urgency": "high"}, {"id": "Q7"})
    result = saved(s)
    title = inputs_of(result)["create_incident_1"]
    assert isinstance(title, dict) and str(title["title"]).startswith("Regressions: {{@")
    replayed = replayed_input(result, "create_incident_1", {"find_issues_1": report(found)})
    assert replayed == {"title": "Regressions: " + ", ".join(found), "urgency": "high"}


def test_a_list_ending_in_and_keeps_its_and() -> None:
    s = Session()
    s.call("create_users", {"names": "x"}, "Created user U07ANA1234, user U07BEN5678 and user U07CHE9012.")
    s.call("notify", {"text": "Welcome U07ANA1234, U07BEN5678 and U07CHE9012!"}, {"ok": True})
    result = saved(s)
    assert inputs_of(result)["notify_1"] == {"text": "Welcome {{@extract_1}}!"}
    code = code_of(result, "extract_1")
    limits = CodeLimits(timeout=5.0, memory_mb=32)
    four = "Created user U1AAAA1111, user U2BBBB2222, user U3CCCC3333 and user U4DDDD4444."
    assert run_code(code, {"text": four}, limits) == "U1AAAA1111, U2BBBB2222, U3CCCC3333 and U4DDDD4444"
    assert run_code(code, {"text": "Created user U1AAAA1111."}, limits) == "U1AAAA1111"


def test_a_labelled_line_the_agent_copied_is_read_after_its_label() -> None:
    s = Session()
    report = "# Issue WEB-3KQ\n\n**Description**: TypeError: boom\n**Culprit**: CartSummary in src/components/cart\n"
    s.call("get_issue_details", {"issueId": "WEB-3KQ"}, report)
    s.call("create_issue", {"description": "From Sentry.\n\nCulprit: CartSummary in src/components/cart"}, {"id": "1"})
    result = saved(s, {"issue": "WEB-3KQ"})
    described = inputs_of(result)["create_issue_1"]
    assert isinstance(described, dict) and str(described["description"]).startswith("From Sentry.\n\nCulprit: {{@")
    other = "# Issue API-88B\n\n**Description**: DecimalException\n**Culprit**: convert in api.fx\n"
    replayed = replayed_input(result, "create_issue_1", {"get_issue_details_1": other}, {"issue": "API-88B"})
    assert replayed == {"description": "From Sentry.\n\nCulprit: convert in api.fx"}


def test_a_short_number_copied_with_its_label_is_read_out_of_the_file() -> None:
    s = Session()
    rota = "# On-call rota\n\nWeek 48\n- Primary: Priya Nair\n"
    s.call("read_text_file", {"path": "/srv/team/oncall.md"}, {"content": rota})
    s.call("add_observations", {"name": "Priya Nair", "observations": ["primary on-call in week 48"]}, {"ok": True})
    result = saved(s, {"path": "/srv/team/oncall.md"})
    step = inputs_of(result)["add_observations_1"]
    assert isinstance(step, dict) and step["observations"] == ["primary on-call in week {{@extract_2}}"]


def test_a_short_number_under_another_word_stays_literal() -> None:
    s = Session()
    s.call("read_text_file", {"path": "/srv/team/oncall.md"}, {"content": "Week 48\n- Primary: Priya Nair\n"})
    s.call("add_observations", {"name": "x", "observations": ["escalate after 48 minutes"]}, {"ok": True})
    step = inputs_of(saved(s, {"path": "/srv/team/oncall.md"}))["add_observations_1"]
    assert isinstance(step, dict) and step["observations"] == ["escalate after 48 minutes"]


# --------------------------------------------------------------------------- several recordings, unused steps


def test_a_short_number_in_a_comment_follows_the_issue_it_names_across_recordings() -> None:
    runs = []
    for number, title in ((311, "Rotate the TLS certificate"), (318, "Renew the push certificate")):
        s = Session(execution=f"e{number}")
        s.call("create_issue", {"repo": "infra", "title": title}, {"number": number, "title": title})
        s.call("add_issue_comment", {"issue_number": 250, "body": f"Tracking in #{number}; from the handover."}, {})
        runs.append(s.steps)
    result = templatize(runs, name="t")
    assert verify(result, runs).verified
    step = inputs_of(result)["add_issue_comment_1"]
    assert isinstance(step, dict) and step["body"] == "Tracking in #{{@create_issue_1.number}}; from the handover."


def test_a_short_number_in_one_recording_stays_literal() -> None:
    s = Session()
    s.call("create_issue", {"repo": "infra", "title": "Rotate the TLS certificate"}, {"number": 311})
    s.call("add_issue_comment", {"issue_number": 250, "body": "Tracking in #311; from the handover."}, {})
    step = inputs_of(saved(s))["add_issue_comment_1"]
    assert isinstance(step, dict) and step["body"] == "Tracking in #311; from the handover."


def test_no_code_step_is_left_that_nothing_reads() -> None:
    s = Session()
    issues = [{"key": "PAY-101"}, {"key": "PAY-104"}, {"key": "PAY-107"}]
    s.call("jira_search", {"jql": "project = PAY ORDER BY Rank"}, {"issues": issues})
    s.call("add_issues_to_sprint", {"sprint_id": "318", "issue_keys": "PAY-101,PAY-104,PAY-107"}, {"ok": True})
    result = saved(s)
    codes = [step for step in result.template.steps if step.code is not None]
    read = {ref for step in result.template.steps for ref in str(step.input).split("@")[1:]}
    assert codes and all(any(r.startswith(step.name) for r in read) for step in codes)


def test_a_command_line_stands_for_its_flags_values() -> None:
    s = Session()
    command = "aws s3api list-objects-v2 --bucket acme-build-artifacts --prefix nightly/2026-10/ --output json"
    s.call("call_aws", {"cli_command": command}, {"Contents": [{"Key": "nightly/2026-10/a.tgz"}]})
    first = templatize([s.steps], name="t")
    assert ticked(first) == {"bucket": "acme-build-artifacts", "prefix": "nightly/2026-10/"}
    named = saved(s, ticked(first))
    assert inputs_of(named)["call_aws_1"] == {
        "cli_command": "aws s3api list-objects-v2 --bucket {{@input.bucket}} --prefix {{@input.prefix}} --output json"
    }


def test_the_same_time_in_every_call_of_a_repeated_action_is_proposed_unticked() -> None:
    s = Session()
    for email in ("ana@acme.example", "ben@acme.example", "chen@acme.example"):
        s.call("create_event", {"attendees": [email], "start": "2026-12-01T10:00:00+01:00"}, {"id": email[:3]})
    result = templatize([s.steps], name="t")
    assert "2026-12-01T10:00:00+01:00" not in ticked(result).values()
    assert "2026-12-01T10:00:00+01:00" in {item.value for item in result.likely_inputs}


def test_clock_times_inside_a_message_are_each_read_from_their_clock() -> None:
    s = Session()
    for zone, now in (("Europe/London", "2026-11-26T08:15:02+00:00"), ("Asia/Singapore", "2026-11-26T16:15:02+08:00")):
        s.call("get_current_time", {"timezone": zone}, {"timezone": zone, "datetime": now})
    s.call("post_message", {"channel": "C0OPS", "text": "Standup clocks: London 08:15, Singapore 16:15"}, {"ok": True})
    result = saved(s)
    step = inputs_of(result)["post_message_1"]
    assert isinstance(step, dict)
    assert step["text"] == "Standup clocks: London {{@format_date_1}}, Singapore {{@format_date_2}}"
    limits = CodeLimits(timeout=5.0, memory_mb=32)
    assert run_code(code_of(result, "format_date_2"), {"text": "2026-12-02T21:40:00+08:00"}, limits) == "21:40"


def test_a_time_read_from_calls_folded_into_a_loop_never_names_a_step_that_is_gone() -> None:
    s = Session()
    clocks = (
        ("Europe/London", "2026-11-26T08:15:02+00:00"),
        ("America/New_York", "2026-11-26T03:15:02-05:00"),
        ("Asia/Singapore", "2026-11-26T16:15:02+08:00"),
    )
    for zone, now in clocks:
        s.call("get_current_time", {"timezone": zone}, {"timezone": zone, "datetime": now})
    s.call("post_message", {"channel": "C0OPS", "text": "Clocks: 08:15, 03:15, 16:15"}, {"ok": True})
    first = templatize([s.steps], name="t")
    chosen = {item.name: item.value for item in first.likely_inputs if item.ticked}
    result = templatize([s.steps], name="t", inputs=chosen)  # what a plain save does; it used to raise
    assert verify(result, [s.steps]).verified


# --------------------------------------------------------------------------- ninth pass (worlds8)


def test_settings_stay_unticked_however_often_they_are_sent() -> None:
    schema = {"type": "string", "enum": ["get", "update", "delete"], "description": "The action"}
    assert not judge_text("update", ("action",), schema, 4).chosen  # one of the tool's values, sent in a loop
    assert not judge_text("users_update_status", ("tool_name",), None, 2).chosen  # names what the call does
    assert judge_text("UTC", ("timezone",), {"description": "IANA timezone (e.g. Europe/London)"}, 1).score < 0.35
    assert not judge_text("kustomize.toolkit.fluxcd.io/v1", ("api_version",), None, 1).thin  # an API version
    assert judge_text("Europe/Berlin", ("timezone",), {"description": "IANA timezone (e.g. Europe/London)"}, 1).chosen
