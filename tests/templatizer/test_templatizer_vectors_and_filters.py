"""Sixteenth pass: an argument vector stands for its operands (`["--team", "3"]`, `["group-show", "vpn-users"]`), a
command line without flags for the words after its command's, a search's year and its scope beside others
(`project:`) for values, a filter list in JSON text for its comparisons; a sort order, a priority and a kind's name
stay literal; a sum may group its thousands and a text every item holds sits beside it."""

from __future__ import annotations

from typing import Any

from tests.recorded import Session, saved, selected_by, steps_of
from toolreel.core.sandbox import run_code

HOSTS = (
    "+----------+--------+\n| HOSTNAME | STATUS |\n+----------+--------+\n| mbp-jon  | online |\n+----------+--------+"
)


def test_a_flag_and_its_value_in_a_vector_are_the_flag_and_the_users_value() -> None:
    s = Session()
    s.call("fleetctl_get", {"resource": "hosts", "flags": ["--team", "3"]}, HOSTS)
    result = saved(s)
    assert result.input_values == {"team": 3}
    assert steps_of(result)["fleetctl_get_1"]["input"]["flags"] == ["--team", "{{@input.team}}"]


def test_a_vectors_command_words_stay_and_its_operands_are_named_by_them() -> None:
    s = Session()
    s.call("ipa_read", {"args": ["user-find", "--manager=jdoe"]}, "User login: asmith\n")
    s.call("ipa_read", {"args": ["group-show", "vpn-users"]}, "Group name: vpn-users\nMember users: bkim\n")
    result = saved(s)
    assert result.input_values == {"manager": "jdoe", "group": "vpn-users"}
    steps = steps_of(result)
    assert steps["ipa_read_1"]["input"]["args"] == ["user-find", "--manager={{@input.manager}}"]
    assert steps["ipa_read_2"]["input"]["args"] == ["group-show", "@input.group"]


def test_a_command_line_without_flags_is_built_on_its_operand() -> None:
    s = Session()
    s.call("rpk", {"args": "group describe billing-consumers"}, "GROUP billing-consumers\nTOTAL-LAG 15375\n")
    result = saved(s)
    assert result.input_values == {"group": "billing-consumers"}
    assert steps_of(result)["rpk_1"]["input"]["args"] == "group describe {{@input.group}}"
    # plain words among the operands: no telling the command's words from them
    assert selected_by("group describe billing-consumers") == {}


def test_a_searchs_year_and_a_scope_beside_others_are_values() -> None:
    assert selected_by("label:dog year:2025 favorite:true") == {"year": "2025"}
    assert selected_by("status:open owner:bo@corp.example project:platform/infra") == {
        "owner": "bo@corp.example",
        "project": "platform/infra",
    }
    s = Session()
    s.call("search_photos", {"q": "label:dog year:2025 favorite:true", "count": 100}, {"photos": []})
    s.call("query_changes", {"q": "status:open owner:bo@corp.example project:platform/infra"}, {"changes": []})
    result = saved(s)
    # the year a search is about is a number the user gives; a project beside the owner is the user's too
    assert result.input_values == {"year": 2025, "owner": "bo@corp.example", "project": "platform/infra"}
    steps = steps_of(result)
    assert steps["search_photos_1"]["input"]["q"] == "label:dog year:{{@input.year}} favorite:true"
    assert steps["query_changes_1"]["input"]["q"] == "status:open owner:{{@input.owner}} project:{{@input.project}}"


def test_a_few_quoted_words_a_query_compares_are_a_value() -> None:
    assert selected_by('category_s:"Garden tools" AND inStock_b:false') == {"category_s": "Garden tools"}
    assert selected_by('message:"Connection reset by peer." AND level:error') == {}  # a sentence, searched for


def test_a_filter_list_in_json_text_stands_for_its_comparisons() -> None:
    filters = '[["customer", "=", "Brightline Interiors GmbH"], ["status", "=", "Overdue"], ["docstatus", "=", 1]]'
    # (the state is a candidate too, judged the task's by its field: see the saved template below)
    assert selected_by(filters) == {"customer": "Brightline Interiors GmbH", "status": "Overdue"}
    s = Session()
    args = {"doctype": "Sales Invoice", "filters": filters, "order_by": "due_date asc", "limit_page_length": 100}
    s.call("get_list", args, {"data": [{"name": "ACC-1", "due_date": "2026-09-30"}]})
    doc = {"priority": "High", "description": "Call Brightline Interiors GmbH"}
    s.call("insert_doc", {"doctype": "ToDo", "doc": doc}, {"ok": 1})
    result = saved(s)
    assert result.input_values == {"customer": "Brightline Interiors GmbH"}
    steps = steps_of(result)
    assert steps["get_list_1"]["input"]["filters"] == filters.replace(
        "Brightline Interiors GmbH", "{{@input.customer}}"
    )
    # the kind of document, the sort order and the priority are the task's: literal
    assert steps["get_list_1"]["input"]["order_by"] == "due_date asc"
    assert steps["insert_doc_1"]["input"]["doctype"] == "ToDo"
    assert steps["insert_doc_1"]["input"]["doc"]["priority"] == "High"
    constants = ("Sales Invoice", "ToDo", "due_date asc", "High")
    assert not any(item.ticked for item in result.likely_inputs if item.value in constants)


def test_a_sum_grouped_in_thousands_and_the_currency_every_item_holds_are_read_on_each_run() -> None:
    invoices = [
        {"name": "ACC-412", "outstanding_amount": 4820.0, "currency": "EUR"},
        {"name": "ACC-457", "outstanding_amount": 6125.25, "currency": "EUR"},
        {"name": "ACC-503", "outstanding_amount": 980.0, "currency": "EUR"},
    ]
    s = Session()
    s.call("get_list", {"doctype": "Sales Invoice", "limit_page_length": 100}, {"data": invoices})
    text = "Owes 11,925.25 EUR on 3 overdue invoices"
    s.call("insert_doc", {"doctype": "ToDo", "doc": {"description": text}}, {"ok": 1})
    result = saved(s)
    description = steps_of(result)["insert_doc_1"]["input"]["doc"]["description"]
    assert description == "Owes {{@tally_1}} {{@tally_3}} on {{@tally_2}} overdue invoices"
    total, currency = result.template.step("tally_1"), result.template.step("tally_3")
    assert total.code is not None and currency.code is not None
    other = [{"outstanding_amount": 15999.99, "currency": "GBP"}, {"outstanding_amount": 1000000, "currency": "GBP"}]
    assert run_code(total.code, {"list": other}) == "1,015,999.99"
    assert run_code(currency.code, {"list": other}) == "GBP"


def test_a_count_says_what_it_counts_a_few_words_on_and_by_what_the_read_asked_for() -> None:
    s = Session()
    docs = [{"id": n, "sku_s": f"GT-{n}"} for n in range(5)]
    s.call("select", {"collection": "products", "q": "inStock_b:false", "rows": 10}, {"response": {"docs": docs}})
    s.call("create_task", {"name": "Restock 5 out-of-stock products in Garden tools"}, {"id": "t1"})
    result = saved(s)
    name = steps_of(result)["create_task_1"]["input"]["name"]
    assert name.startswith("Restock {{@tally_1}} out-of-stock products in ")
    # no word of the user's text is read out of it as another call's value
    assert steps_of(result)["select_1"]["input"]["collection"] == "products"


FLEET = """+---------------+-----------------------+---------+
| HOST          | OS                    | STATUS  |
+---------------+-----------------------+---------+
| mbp-ana.local | macOS 15.1.1          | online  |
| ws-build-07   | Ubuntu 24.04.1 LTS    | offline |
| mbp-jon.local | macOS 14.7.1          | offline |
| win-fin-02    | Microsoft Windows 11  | offline |
| imac-design-1 | macOS 15.0            | offline |
| mba-lee.local | macOS 15.1.1          | mia     |
+---------------+-----------------------+---------+"""


def test_a_message_listing_the_rows_two_conditions_keep_counts_and_joins_them_on_each_run() -> None:
    s = Session()
    s.call("fleetctl_get", {"resource": "hosts", "flags": ["--team", "3"]}, FLEET)
    text = "Fleet: 2 macOS hosts offline: mbp-jon.local, imac-design-1"
    s.call("send_message", {"dst": "+14155550199", "text": text}, {"message_uuid": "m-1"})
    result = saved(s)
    steps = steps_of(result)
    # the bordered table is read as rows; the hosts listed are those offline whose OS starts with the family named
    select = next(step for name, step in steps.items() if name.startswith("select_"))
    assert select["input"]["where"] == [
        {"key": "OS", "op": "starts with", "value": "@input.os_prefix"},
        {"key": "STATUS", "op": "==", "value": "offline"},
    ]
    assert result.input_values["os_prefix"] == "macOS"
    # the count is the kept rows', the state a word of the text, the hosts their join
    assert (
        steps["send_message_1"]["input"]["text"]
        == "Fleet: {{@tally_1}} {{@input.os_prefix}} hosts offline: {{@join_1}}"
    )
    tally, join = result.template.step("tally_1"), result.template.step("join_1")
    assert tally.code is not None and join.code is not None
    kept = [
        {"HOST": "ci-1", "OS": "Ubuntu", "STATUS": "offline"},
        {"HOST": "ci-2", "OS": "Ubuntu", "STATUS": "offline"},
    ]
    assert run_code(tally.code, {"list": [*kept, kept[0]]}) == "3"
    assert run_code(join.code, {"list": kept, "path": ["HOST"], "sep": ", "}) == "ci-1, ci-2"


def test_a_list_of_objects_one_per_element_is_built_for_every_element_on_each_run() -> None:
    people: list[dict[str, Any]] = [
        {
            "id": "p1",
            "emails": {"primaryEmail": "nora@acme.example"},
            "name": {"firstName": "Nora", "lastName": "Vidal"},
        },
        {"id": "p2", "emails": {"primaryEmail": "ivo@acme.example"}, "name": {"firstName": "Ivo", "lastName": "Marsh"}},
        {
            "id": "p3",
            "emails": {"primaryEmail": "lena@acme.example"},
            "name": {"firstName": "Lena", "lastName": "Park"},
        },
    ]
    s = Session()
    s.call("find_people", {"filter": "companyId[eq]:c-2", "limit": 50}, {"data": {"people": people}})
    recipients = [
        {"address": {"email": p["emails"]["primaryEmail"], "name": f"{p['name']['firstName']} {p['name']['lastName']}"}}
        for p in people
    ]
    s.call("create_transmission", {"recipients": recipients, "campaign_id": "review"}, {"id": "t-1"})
    result = saved(s)  # (verified, and replayed dry: the mapping step runs for each person)
    steps = steps_of(result)
    assert steps["create_transmission_1"]["input"]["recipients"] == "@map"
    assert steps["map"]["for_each"] == "@find_people_1.data.people"
    assert steps["map"]["input"] == {
        "address": {"email": "@item.emails.primaryEmail", "name": "{{@item.name.firstName}} {{@item.name.lastName}}"}
    }


def test_elements_kept_by_a_field_being_there_are_not_kept_by_the_beginning_their_ids_share() -> None:
    tracks = [
        {"name": "One", "mbid": "1c2f3a4b-0001-4d5e-8f9a-0b1c2d3e4f01"},
        {"name": "Two", "mbid": ""},
        {"name": "Three", "mbid": "1c2f3a4b-0001-4d5e-8f9a-0b1c2d3e4f03"},
    ]
    s = Session()
    s.call("get_top_tracks", {"user": "rj", "limit": 3}, {"toptracks": {"track": tracks}})
    wanted = [{"identifier": f"https://musicbrainz.org/recording/{t['mbid']}"} for t in tracks if t["mbid"]]
    s.call("create_playlist", {"playlist": {"title": "Top tracks", "track": wanted}}, {"id": "pl-1"})
    result = saved(s)
    steps = steps_of(result)
    # the tracks kept are those with an mbid, whatever their ids start with: no prefix proposed as an input
    assert not any(str(value).startswith("1c2f3a4b") for value in result.input_values.values())
    mapped = steps[steps["create_playlist_1"]["input"]["playlist"]["track"][1:]]
    assert mapped["input"] == {"identifier": "https://musicbrainz.org/recording/{{@item.mbid}}"}


def test_ids_a_list_gives_as_numbers_and_calls_send_as_text_are_walked_and_a_revision_keyword_stays() -> None:
    changes = [
        {"_number": 48213, "subject": "pin the provider", "mergeable": True},
        {"_number": 48190, "subject": "drop the old job", "mergeable": False},
        {"_number": 48177, "subject": "rotate the keys", "mergeable": True},
    ]
    s = Session()
    s.call("query_changes", {"q": "status:open owner:ana@corp.example", "n": 25}, changes)
    for number in ("48213", "48177"):
        s.call("set_review", {"change": number, "revision": "current", "labels": {"Code-Review": 1}}, {"ok": True})
    result = saved(s)
    loop = next(step for step in steps_of(result).values() if step.get("for_each"))
    assert loop["for_each"] == "@query_changes_1[?(@.mergeable == true)]"
    assert loop["input"]["change"] == "{{@item._number}}"
    assert loop["input"]["revision"] == "current"
    assert "current" not in result.input_values.values()


CLOCK = {"timezone": "UTC", "datetime": "2026-11-27T11:05:44.120931+00:00", "is_dst": False}


def test_a_date_a_round_number_of_days_after_the_clocks_is_that_many_days_from_each_run() -> None:
    s = Session()
    s.call("get_current_time", {"timezone": "UTC"}, CLOCK)
    s.call("create_api_key", {"name": "koyeb-ingest", "expired_at": "2027-02-25T00:00:00Z"}, {"api_key": "k-1"})
    s.call("create_task", {"title": "Renew it", "due": "2026-12-04"}, {"id": "t-1"})
    result = saved(s)
    steps = steps_of(result)
    expiry = result.template.step(steps["create_api_key_1"]["input"]["expired_at"][1:])
    due = result.template.step(steps["create_task_1"]["input"]["due"][1:])
    assert expiry.code is not None and due.code is not None
    assert sorted(v for v in result.input_values.values() if isinstance(v, int)) == [7, 90]
    # the next run, on the last day of February of a leap year, 30 days on
    assert run_code(expiry.code, {"text": "2028-02-29T08:00:00+00:00", "days": 30, "rest": "T00:00:00Z"}) == (
        "2028-03-30T00:00:00Z"
    )
    assert run_code(due.code, {"text": "2026-12-31T23:59:00+00:00", "days": 7, "rest": ""}) == "2027-01-07"


def test_a_date_no_round_number_of_days_away_is_the_users_date() -> None:
    s = Session()
    s.call("get_current_time", {"timezone": "UTC"}, CLOCK)
    s.call("create_issue", {"title": "Remove the old client", "deadline": "2027-01-31"}, {"id": 7})
    result = saved(s)
    assert steps_of(result)["create_issue_1"]["input"]["deadline"] in ("2027-01-31", "@input.deadline")


def test_an_element_named_by_its_domain_is_the_users_domain_not_a_position() -> None:
    listed = [
        {"domain": "microsoftonline.com", "id": 12, "type": "deny"},
        {"domain": "telemetry.example-ads.net", "id": 13, "type": "deny"},
        {"domain": "login.microsoftonline.com", "id": 14, "type": "deny"},
        {"domain": "login.microsoftonline.com.evil.example", "id": 15, "type": "deny"},
    ]
    s = Session()
    s.call("list_domains", {"type": "deny", "kind": "exact"}, {"domains": listed})
    s.call("delete_domain", {"type": "deny", "kind": "exact", "domain": "login.microsoftonline.com"}, "removed")
    result = saved(s)
    assert steps_of(result)["delete_domain_1"]["input"]["domain"] == "@input.domain"
    assert result.input_values == {"domain": "login.microsoftonline.com"}
