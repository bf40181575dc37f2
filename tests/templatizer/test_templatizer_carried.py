"""Inputs from structure, fifth pass: a value carried into another call's argument, and the value a pick selects
an element by (or the state that singles it out)."""

from __future__ import annotations

import json
import re

import pytest

from tests.recorded import Session
from toolreel.core.model import JSON
from toolreel.core.template_io import template_to_dict
from toolreel.templatizer import TemplatizeResult, templatize, verify
from toolreel.templatizer._patterns import shape

_JOBS = {
    "jobs": [
        {"id": 10, "name": "lint", "conclusion": "success"},
        {"id": 11, "name": "unit (3.11)", "conclusion": "failure"},
        {"id": 12, "name": "unit (3.12)", "conclusion": "success"},
        {"id": 13, "name": "build", "conclusion": "skipped"},
    ]
}
_MEMBERS = [
    {"id": "46dc699d-0a8e-4792-84ac-c49cdea1fbb8", "profile": {"name": "Dana Whitfield"}, "role": "member"},
    {"id": "89eb0b05-829a-4945-800c-75f36b6bfe42", "profile": {"name": "Marco Bell"}, "role": "member"},
    {"id": "45e2abed-35eb-4e32-8c8e-4ddb0b970c7f", "profile": {"name": "Priya Raman"}, "role": "member"},
]


def ticked(result: TemplatizeResult) -> dict[str, JSON]:
    return {likely.name: likely.value for likely in result.likely_inputs if likely.ticked}


def saved(steps: Session) -> TemplatizeResult:
    """What a plain save stores: the ticked inputs applied."""
    first = templatize([steps.steps], name="t")
    return templatize([steps.steps], name="t", inputs=first.ticked_inputs) if first.ticked_inputs else first


def test_a_value_carried_inside_another_call_s_selector_is_the_user_s() -> None:
    s = Session()
    s.call("run", {"selector": "+orders_daily"}, "Completed successfully")
    s.call("test", {"selector": "orders_daily"}, "PASS=4")
    result = saved(s)
    assert list(result.input_values.values()) == ["orders_daily"]
    steps = template_to_dict(result.template)["steps"]
    name = next(iter(result.input_values))
    assert steps[0]["input"]["selector"] == f"+{{{{@input.{name}}}}}"
    assert steps[1]["input"]["selector"] == f"@input.{name}"


def test_an_identifier_alone_in_one_call_stays_proposed() -> None:
    s = Session()
    s.call("run", {"selector": "+orders_daily"}, "Completed successfully")
    s.call("test", {"selector": "customers"}, "PASS=4")
    assert "orders_daily" not in ticked(templatize([s.steps], name="t")).values()


def test_a_plain_word_inside_another_argument_is_no_evidence() -> None:
    s = Session()
    s.call("get", {"kind": "build"}, "ok")
    s.call("run", {"target": "build-all"}, "ok")
    assert "build" not in ticked(templatize([s.steps], name="t")).values()


def test_the_name_a_pick_selects_by_is_an_input_and_a_replay_picks_by_it() -> None:
    s = Session()
    s.call("list_members", {}, _MEMBERS)
    s.call("create_story", {"name": "Gift notes", "owner_ids": ["45e2abed-35eb-4e32-8c8e-4ddb0b970c7f"]}, {"id": 7})
    first = templatize([s.steps], name="t")
    assert "Priya Raman" in ticked(first).values()
    result = saved(s)
    pick = next(step for step in template_to_dict(result.template)["steps"] if step["name"].startswith("pick_"))
    assert pick["input"]["value"].startswith("@input.")
    assert pick["input"]["key"] == "profile.name"


def test_an_element_singled_out_by_its_state_is_picked_by_the_state_and_no_input_is_made() -> None:
    s = Session()
    s.call("list_jobs", {"run_id": 1204}, _JOBS)
    s.call("get_job_logs", {"job_id": 11}, "FAILED test_cart")
    result = saved(s)
    pick = next(step for step in template_to_dict(result.template)["steps"] if step["name"].startswith("pick_"))
    assert pick["input"] == {"items": "@list_jobs_1.jobs", "key": "conclusion", "value": "failure", "optional": True}
    assert "unit (3.11)" not in result.input_values.values()
    assert [p.state for p in result.picks] == [True]


def test_a_state_shared_by_no_other_element_but_all_distinct_is_a_name_not_a_state() -> None:
    s = Session()
    stages = ["lint", "unit", "build"]
    jobs = [{"id": 120441873210 + n, "name": f"job {n}", "stage": stage} for n, stage in enumerate(stages)]
    s.call("list_jobs", {"run_id": 1204}, {"jobs": jobs})
    s.call("get_job_logs", {"job_id": 120441873211}, "log")
    result = templatize([s.steps], name="t")
    assert [p.key for p in result.picks] == ["name"]
    assert "job 1" in ticked(result).values()


def test_names_of_elements_one_tool_was_called_on_in_turn_are_walked_not_named() -> None:
    s = Session()
    rows = [{"id": f"6650f0a1c2d3e4f5a6b7c8{n:02d}", "name": f"Card {n}"} for n in range(4)]
    s.call("get_cards", {}, rows)
    s.call("archive_card", {"card_id": rows[1]["id"]}, "ok")
    s.call("archive_card", {"card_id": rows[3]["id"]}, "ok")
    result = templatize([s.steps], name="t")
    assert all(p.walked for p in result.picks) and len(result.picks) == 2
    assert not {"Card 1", "Card 3"} & set(ticked(result).values())
    assert {"Card 1", "Card 3"} <= {likely.value for likely in result.likely_inputs if not likely.ticked}


def test_two_elements_of_one_list_used_by_different_calls_are_both_named() -> None:
    s = Session()
    lists = [
        {"id": f"2901e4e21dd1858c7ded1d{n:02d}", "name": name} for n, name in enumerate(["Backlog", "Review", "Done"])
    ]
    s.call("get_lists", {}, lists)
    s.call("get_cards_by_list", {"list_id": lists[1]["id"]}, [])
    s.call("move_card", {"card_id": "c-1", "list_id": lists[2]["id"]}, "ok")
    result = templatize([s.steps], name="t")
    assert {"Review", "Done"} <= set(ticked(result).values())


def test_a_path_holding_a_chosen_file_name_stays_an_input_of_its_own() -> None:
    s = Session()
    s.call("create_upload_session", {"file_name": "q3-ledger.parquet", "folder_id": "238904127731"}, {"id": "u-1"})
    s.call("upload_part", {"file_path": "/data/exports/q3-ledger.parquet", "session_id": "u-1"}, "ok")
    values = set(ticked(templatize([s.steps], name="t")).values())
    assert {"q3-ledger.parquet", "/data/exports/q3-ledger.parquet"} <= values


@pytest.mark.parametrize("as_text", [False, True], ids=["json", "json-in-text"])
def test_the_first_result_of_a_search_for_its_name_is_picked_by_that_name(as_text: bool) -> None:
    s = Session()
    sites = [
        {"id": "31ba63e1-de71-4810-9111-e3c194db8e89", "name": "kettle-shop"},
        {"id": "a2ac847c-5544-4d71-9d58-ccb363b1b0cd", "name": "kettle-shop-staging"},
    ]
    s.call("get_projects", {"params": {"search": "kettle-shop"}}, json.dumps(sites) if as_text else sites)
    s.call("set_env", {"site_id": sites[0]["id"], "key": "PUBLIC_URL"}, "ok")
    result = saved(s)
    pick = next(step for step in template_to_dict(result.template)["steps"] if step["name"].startswith("pick_"))
    assert pick["input"]["key"] == "name" and pick["input"]["value"].startswith("@input.")
    assert "kettle-shop" in result.input_values.values()


def test_the_first_result_of_a_search_for_something_else_stays_the_first() -> None:
    s = Session()
    sites = [
        {"id": "31ba63e1-de71-4810-9111-e3c194db8e89", "name": "kettle-shop"},
        {"id": "a2ac847c-5544-4d71-9d58-ccb363b1b0cd", "name": "kettle-shop-staging"},
    ]
    s.call("get_projects", {"params": {"search": "kettle"}}, sites)
    s.call("set_env", {"site_id": sites[0]["id"], "key": "PUBLIC_URL"}, "ok")
    result = templatize([s.steps], name="t")
    assert result.picks == ()
    assert template_to_dict(result.template)["steps"][1]["input"]["site_id"] == "@get_projects_1[0].id"


def test_the_lone_result_of_a_search_for_its_name_stays_the_first() -> None:
    s = Session()
    teams = [{"id": "4b7e5c1a-9d2f-4e3b-8a6c-1f0e9d8c7b6a", "name": "Web Platform"}]
    s.call("list_teams", {"query": "Web Platform"}, teams)
    s.call("create_issue", {"teamId": teams[0]["id"], "title": "Checkout 500s"}, {"id": 5})
    result = templatize([s.steps], name="t")
    assert result.picks == ()
    assert template_to_dict(result.template)["steps"][1]["input"]["teamId"] == "@list_teams_1[0].id"


def test_a_version_read_out_of_text_is_found_again_with_other_part_lengths() -> None:
    pattern = shape("1.0.215")
    assert re.fullmatch(pattern, "1.41.1") and re.fullmatch(pattern, "10.2.0")
    assert shape("2026-11-24") == "[0-9]{4}-[0-9]{2}-[0-9]{2}"  # a date's parts keep their lengths


def test_a_version_an_output_gave_is_read_from_it_inside_a_sentence() -> None:
    s = Session()
    s.call("get_package_info", {"package_name": "httpx"}, {"info": {"name": "httpx", "version": "0.28.1"}})
    s.call("create_story", {"name": "Bump httpx to 0.28.1"}, {"id": 48290})
    result = templatize([s.steps], name="t", inputs={"package": "httpx"})
    name = template_to_dict(result.template)["steps"][1]["input"]["name"]
    assert name == "Bump {{@input.package}} to {{@get_package_info_1.info.version}}"


def test_a_name_picked_from_a_list_passes_the_generalization_check() -> None:
    s = Session()
    s.call("list_members", {}, _MEMBERS)
    s.call("create_story", {"name": "Gift notes", "owner_ids": ["45e2abed-35eb-4e32-8c8e-4ddb0b970c7f"]}, {"id": 7})
    result = saved(s)
    checked = verify(result, [s.steps])
    assert checked.verified and checked.generalization == ()


def test_the_short_fields_of_an_address_the_user_gave_are_inputs_too() -> None:
    s = Session()
    to = {"name": "Ada Brooks", "street1": "417 Montgomery St", "city": "San Francisco", "state": "CA", "zip": "94104"}
    s.call("create_shipment", {"to_address": to, "parcel": {"weight": 32}}, {"id": "shp_2698e789ea369a39c6"})
    values = set(ticked(templatize([s.steps], name="t")).values())
    assert {"Ada Brooks", "417 Montgomery St", "San Francisco", "CA", "94104"} <= values


def test_one_chosen_field_makes_no_record() -> None:
    s = Session()
    s.call("send", {"message": {"text": "Deploy of checkout-api is done", "format": "plain", "lang": "en"}}, "ok")
    values = set(ticked(templatize([s.steps], name="t")).values())
    assert not {"plain", "en"} & values


def test_a_count_written_in_two_texts_of_one_call_is_read_from_the_output_that_gave_it() -> None:
    s = Session()
    nrql = "SELECT count(*) FROM TransactionError WHERE appName = 'checkout-api' SINCE 1 hour ago"
    s.call("run_nrql_query", {"nrql": nrql}, {"results": [{"count": 482}]})
    texts = {"subject": "checkout-api: 482 errors", "description": "New Relic counted 482 errors for checkout-api."}
    s.call("create_ticket", texts, {"id": 91230})
    first = templatize([s.steps], name="t")
    assert "checkout-api" in ticked(first).values()  # the texts built on the count still carry the app's name
    result = saved(s)
    ticket = template_to_dict(result.template)["steps"][1]["input"]
    name = next(iter(result.input_values))
    assert ticket["subject"] == f"{{{{@input.{name}}}}}: {{{{@run_nrql_query_1.results[0].count}}}} errors"


def test_a_count_written_once_in_a_sentence_stays_as_written() -> None:
    s = Session()
    s.call("run_query", {"q": "errors"}, {"results": [{"count": 482}]})
    s.call("create_ticket", {"subject": "482 errors", "description": "See the dashboard."}, {"id": 91230})
    ticket = template_to_dict(templatize([s.steps], name="t").template)["steps"][1]["input"]
    assert ticket["subject"] == "482 errors"


def test_words_sent_alone_and_composed_into_another_call_s_path_are_the_user_s() -> None:
    s = Session()
    password = {"id": "k2x9m4q7r1t5", "username": "w8c3n1z6v0b4", "access_host_url": "aws.connect.psdb.cloud"}
    s.call("create_password", {"database": "orders", "branch": "staging", "role": "readwriter"}, password)
    s.call("write_secret", {"path": "apps/orders/staging", "key": "HOST", "value": "aws.connect.psdb.cloud"}, "ok")
    found = {item.value: item.ticked for item in templatize([s.steps], name="t").likely_inputs}
    assert found["orders"] is True and found["staging"] is True
    assert "readwriter" not in found or found["readwriter"] is False  # not in the path: a setting
    first = templatize([s.steps], name="t")
    saved = templatize([s.steps], name="t", inputs=first.ticked_inputs)
    path = template_to_dict(saved.template)["steps"][1]["input"]["path"]
    assert path == "apps/{{@input.database}}/{{@input.branch}}"
