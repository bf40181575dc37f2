"""Seventeenth pass: a write on a picked element runs only in the state it moves the element out of (a flag it
sets at the element's own path, the state its verb names); a mend named in an argument (`signal: "start"`) of what
a read showed offline runs only then, and the write that follows it on the same thing, too. A dated line keeps its
day from the clock and its note is the user's; one tag a write files its thing under is the user's."""

from __future__ import annotations

from typing import Any

from tests.recorded import Session, saved, steps_of
from toolreel.templatizer import TemplatizeResult

READS = frozenset({"svc__list_members", "svc__search_applications", "svc__list_servers", "svc__get_resources"})


def _member(node: str, name: str, authorized: bool) -> dict[str, Any]:
    return {"nodeId": node, "name": name, "config": {"authorized": authorized, "ipAssignments": []}}


def _authorized(was: bool) -> TemplatizeResult:
    s = Session()
    members = [
        _member("a1b2", "laptop-ana-old", False),
        _member("f0e1", "nas", True),
        _member("c3d4", "laptop-ana", was),
    ]
    s.call("list_members", {"networkId": "8056c2e2"}, members)
    s.call("update_member", {"networkId": "8056c2e2", "memberId": "c3d4", "config": {"authorized": True}}, {})
    return saved(s, READS)


def test_a_flag_set_at_the_picked_elements_own_path_is_set_only_while_it_differs() -> None:
    update = steps_of(_authorized(False))["update_member_1"]
    assert update["input"]["memberId"].startswith("@pick_")
    pick = update["input"]["memberId"].split(".")[0]
    assert update["when"] == {"ref": f"{pick}.config.authorized", "eq": False}


def test_no_condition_where_the_flag_was_already_what_the_call_sets() -> None:
    assert "when" not in steps_of(_authorized(True))["update_member_1"]


def _published(verb: str) -> TemplatizeResult:
    s = Session()
    apps = [
        {"_id": "app_7f3a", "name": "Expense approvals (v1)", "status": "published"},
        {"_id": "app_0e9d", "name": "Expense approvals", "status": "development"},
        {"_id": "app_1a2b", "name": "Expense approvals demo", "status": "development"},
    ]
    s.call("search_applications", {"name": "Expense approvals"}, {"data": apps})
    s.call(verb, {"appId": "app_0e9d"}, {"ok": True})
    return saved(s, READS)


def test_a_write_whose_verb_names_a_state_others_are_in_runs_only_in_the_elements_own() -> None:
    publish = steps_of(_published("publish_application"))["publish_application_1"]
    pick = publish["input"]["appId"].split(".")[0]
    assert publish["when"] == {"ref": f"{pick}.status", "eq": "development"}


def test_no_condition_where_the_verb_names_no_state_of_the_list() -> None:
    assert "when" not in steps_of(_published("export_application"))["export_application_1"]


def _started(state: str) -> dict[str, Any]:
    s = Session()
    servers = [
        {"attributes": {"identifier": i, "name": n}} for i, n in [("1a7c", "Survival (test)"), ("5b2d", "Survival")]
    ]
    s.call("list_servers", {}, {"object": "list", "data": servers})
    s.call("get_resources", {"server": "5b2d"}, {"object": "stats", "attributes": {"current_state": state}})
    s.call("send_power_action", {"server": "5b2d", "signal": "start"}, {})
    s.call("send_console_command", {"server": "5b2d", "command": "say Back online!"}, {})
    return steps_of(saved(s, READS))


def test_a_start_named_in_an_argument_after_a_read_showed_it_offline_and_what_follows_run_only_then() -> None:
    steps = _started("offline")
    offline = {"ref": "@get_resources_1.attributes.current_state", "eq": "offline"}
    assert steps["send_power_action_1"]["when"] == offline
    assert steps["send_console_command_1"]["when"] == offline


def test_no_condition_where_the_read_showed_it_running() -> None:
    steps = _started("running")
    assert "when" not in steps["send_power_action_1"] and "when" not in steps["send_console_command_1"]


def test_a_dated_line_keeps_its_day_from_the_clock_and_its_note_is_the_users() -> None:
    s = Session()
    clock = {"timezone": "Asia/Tokyo", "datetime": "2026-11-28T18:40:00+09:00", "day_of_week": "Saturday"}
    s.call("get_current_time", {"timezone": "Asia/Tokyo"}, clock)
    s.call("append_paragraph", {"docId": "doc_Ij90Kl12", "text": "2026-11-28: Agreed to move standup to 10:00."}, "ok")
    result = saved(s)
    text = result.template.step("append_paragraph_1").input["text"]
    assert isinstance(text, str) and text.startswith("{{@") and text.endswith(": {{@input.text}}")
    assert result.input_values["text"] == "Agreed to move standup to 10:00."


def test_one_tag_a_write_files_its_thing_under_is_the_users_a_reads_filter_is_not() -> None:
    s = Session()
    for url in ("https://sqlite.org/wal.html", "https://jvns.ca/blog/", "https://go.dev/blog/loopvar"):
        s.call("create_link", {"url": url, "collection": {"id": 9}, "tags": [{"name": "to-read"}]}, {"id": 1})
    assert "to-read" in saved(s).input_values.values()
    s = Session()
    s.call("list_links", {"tag": "to-read", "limit": 50}, [{"id": "c1a2b3", "url": "https://sqlite.org/wal.html"}])
    s.call("archive_link", {"id": "c1a2b3"}, "ok")
    assert "to-read" not in saved(s).input_values.values()
    s = Session()  # one alert's tag: as often the agent's own style
    s.call("create_alert", {"message": "Ledger export stuck since 09:40", "tags": ["manual-page"]}, {"id": "a1"})
    assert "manual-page" not in saved(s).input_values.values()
