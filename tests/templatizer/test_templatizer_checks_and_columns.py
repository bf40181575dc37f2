"""Fifteenth pass: a call that mends (redeploys) what a read of the same thing showed failed runs only in that
state; a list inside a picked element is picked from once for every call that reads it; a short id of the element
a search named exactly is that element's; a cursor handed out as `continuation` pages under any argument name; and
small ids that walk a list in its order, which no ref took alone, are a loop over the elements that meet the
conditions (a list another read names them in, and a field of their own)."""

from __future__ import annotations

from typing import Any

from tests.recorded import Session, saved, steps_of
from toolreel.templatizer import TemplatizeResult


def _projects() -> list[dict[str, Any]]:
    def app(aid: str, name: str) -> dict[str, Any]:
        return {"applicationId": aid, "name": name, "applicationStatus": "done"}

    return [
        {"projectId": "p_1", "name": "shop-staging", "applications": [app("a_St41", "api"), app("a_St77", "web")]},
        {"projectId": "p_2", "name": "shop", "applications": [app("a_Wq12", "web"), app("a_Ap90", "api")]},
    ]


def _redeployed(status: str, write: str = "application_redeploy") -> TemplatizeResult:
    s = Session()
    s.call("project_all", {}, _projects())
    s.call("application_one", {"applicationId": "a_Ap90"}, {"applicationId": "a_Ap90", "applicationStatus": status})
    s.call(write, {"applicationId": "a_Ap90"}, True)
    return saved(s, frozenset({"svc__project_all", "svc__application_one"}))


def test_a_redeploy_after_a_read_that_showed_it_failed_runs_only_in_that_state() -> None:
    redeploy = steps_of(_redeployed("error"))["application_redeploy_1"]
    assert redeploy["when"] == {"ref": "@application_one_1.applicationStatus", "eq": "error"}


def test_no_condition_where_the_state_read_is_no_failure_or_the_call_mends_nothing() -> None:
    for result in (_redeployed("done"), _redeployed("error", write="application_update")):
        steps = steps_of(result)
        writes = [step for name, step in steps.items() if name.startswith(("application_re", "application_up"))]
        assert writes and all("when" not in step for step in writes)


def test_a_list_inside_a_picked_element_is_picked_from_once_for_every_call() -> None:
    steps = steps_of(_redeployed("error"))
    one = steps["application_one_1"]["input"]["applicationId"]
    assert one.startswith("@pick_") and not one.endswith("]")
    assert steps["application_redeploy_1"]["input"]["applicationId"] == one  # not `@pick_shop.applications[1]...`


def test_a_short_id_of_the_element_a_search_named_exactly_is_that_element() -> None:
    s = Session()
    found = [
        {"id": 311, "name": "Weekly signups by plan", "tags": ["growth"]},
        {"id": 87, "name": "Weekly signups", "tags": ["kpi"]},
        {"id": 412, "name": "Weekly signups (old)", "tags": []},
    ]
    s.call("list_queries", {"q": "Weekly signups", "page_size": 25}, {"count": 3, "results": found})
    s.call("get_query_results_csv", {"query_id": 87}, "plan,signups\nfree,412\n")
    steps = steps_of(saved(s))
    pick = steps["get_query_results_csv_1"]["input"]["query_id"]
    assert pick.startswith("@pick_") and pick.endswith(".id")
    assert steps[pick[1:].split(".")[0]]["input"]["key"] == "name"


def test_without_the_exact_name_a_short_id_stays_a_literal() -> None:
    s = Session()
    found = [{"id": 311, "name": "Weekly signups by plan"}, {"id": 87, "name": "Weekly signups (old)"}]
    s.call("list_queries", {"q": "Weekly signups", "page_size": 25}, {"count": 2, "results": found})
    s.call("get_query_results_csv", {"query_id": 87}, "plan,signups\nfree,412\n")
    assert steps_of(saved(s))["get_query_results_csv_1"]["input"]["query_id"] == 87


def test_a_continuation_cursor_pages_under_a_one_letter_argument() -> None:
    s = Session()

    def item(n: int) -> dict[str, Any]:
        return {"id": f"tag:google.com,2005:reader/item/{n:016x}", "title": f"Item {n}"}

    s.call("stream_contents", {"s": "feed/12", "n": 2}, {"items": [item(1), item(2)], "continuation": "17963199999"})
    s.call("stream_contents", {"s": "feed/12", "n": 2, "c": "17963199999"}, {"items": [item(3)]})
    s.call("edit_tag", {"i": [item(n)["id"] for n in (1, 2, 3)], "a": "user/-/state/com.google/read"}, "OK")
    paged = saved(s, frozenset({"svc__stream_contents"})).template.step("stream_contents_1")
    assert paged.kind == "script" and isinstance(paged.input, dict) and paged.input["args"]["n"] == 2


def _indexers() -> Session:
    s = Session()
    indexers = [
        {"id": 1, "name": "1337x", "enable": True, "protocol": "torrent"},
        {"id": 4, "name": "Nyaa.si", "enable": True, "protocol": "torrent"},
        {"id": 7, "name": "NZBgeek", "enable": True, "protocol": "usenet"},
        {"id": 9, "name": "TorrentLeech", "enable": False, "protocol": "torrent"},
    ]
    statuses = [
        {"id": 1, "indexerId": 7, "disabledTill": "2026-11-27T11:05:00Z"},
        {"id": 2, "indexerId": 9, "disabledTill": "2026-11-28T00:00:00Z"},
        {"id": 3, "indexerId": 1, "disabledTill": "2026-11-27T10:40:00Z"},
    ]
    s.call("get_indexers", {}, indexers)
    s.call("get_indexer_status", {}, statuses)
    s.call("test_indexer", {"id": 1}, {"id": 1, "isValid": True})
    s.call("test_indexer", {"id": 7}, {"id": 7, "isValid": True})
    return s


def test_small_ids_walking_a_list_in_order_are_a_loop_over_the_elements_the_conditions_keep() -> None:
    result = saved(_indexers(), frozenset({"svc__get_indexers", "svc__get_indexer_status"}))
    steps = steps_of(result)
    loop = next(step for step in steps.values() if step.get("for_each"))
    assert loop["input"] == {"id": "@item.id"}
    select = steps[loop["for_each"][1:]]
    kept = select["input"]
    assert "@get_indexer_status_1[*].indexerId" in str(kept)  # the status list names them
    assert "enable" in str(kept)  # and they are enabled (the disabled failing one is left alone)
