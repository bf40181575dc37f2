"""Values the agent read, eleventh pass: a small id that the call's key names as the id of what the producer
lists (`template_id: 5` from a template list, `groupids: ["2"]` from a host group lookup) is a ref, however small;
values copied off labelled lines of a tool's text into the agent's own sentence (`Conditions: light rain`) are read
out of that text on the next run, not kept stale or made inputs; the project inside an organization the user chose
is the user's too."""

from __future__ import annotations

from tests.recorded import Session, applied, saved
from toolreel.core.sandbox import CodeLimits, run_code
from toolreel.core.template_io import template_to_dict
from toolreel.templatizer import templatize
from toolreel.templatizer._candidates import id_key


def test_a_small_id_named_by_its_key_is_the_listed_entity_s() -> None:
    s = Session()
    templates = [
        {"id": 4, "project_id": 2, "name": "Deploy API (canary)"},
        {"id": 5, "project_id": 2, "name": "Deploy API"},
        {"id": 9, "project_id": 2, "name": "Deploy API dry-run"},
    ]
    s.call("list_templates", {"project_id": 2}, templates)
    s.call("run_task", {"project_id": 2, "template_id": 5, "limit": "api_eu"}, {"id": 812, "template_id": 5})
    result = saved(s)
    task = template_to_dict(result.template)["steps"][-1]["input"]
    assert str(task["template_id"]).startswith("@")  # linked to the listed template, not the literal 5
    assert task["project_id"] == 2  # shared by every element: no entity of its own, stays literal


def test_a_small_id_under_the_same_run_together_key_is_a_ref() -> None:
    s = Session()
    s.call("hostgroup_get", {"filter": {"name": ["Linux servers"]}}, [{"groupid": "2", "name": "Linux servers"}])
    s.call("problem_get", {"groupids": ["2"], "severities": [4, 5]}, [{"eventid": "18811", "acknowledged": "0"}])
    result = saved(s)
    assert applied(result)[("problem_get_1", "$.groupids[0]")] == "@hostgroup_get_1[0].groupid"


def test_a_small_number_under_a_key_that_names_no_entity_stays_literal() -> None:
    s = Session()
    s.call("list_feeds", {}, [{"id": 3, "title": "LWN"}, {"id": 5, "title": "HN"}])
    s.call("get_entries", {"limit": 5, "status": "unread"}, {"entries": []})
    result = templatize([s.steps], name="t")
    assert ("get_entries_1", "$.limit") not in applied(result)


def test_run_together_ids_and_words_that_end_in_id() -> None:
    assert id_key("groupid") and id_key("eventid") and id_key("user_id") and id_key("issueKey")
    assert not id_key("valid") and not id_key("paid") and not id_key("grid") and not id_key("android")


def test_values_copied_off_labelled_lines_are_read_again_not_stale() -> None:
    s = Session()
    s.call("geocode", {"address": "Rua Augusta 24, Lisboa"}, {"location": {"lat": 38.7093, "lng": -9.1368}})
    weather = "Current weather:\nTemperature: 17.2°C (feels like 16.8°C)\nConditions: light rain\nWind: 4.1 m/s"
    s.call("get_weather", {"lat": 38.7093, "lon": -9.1368}, weather)
    s.call("create_note", {"board_id": "uXjVKq1c3ZA=", "content": "Site visit: 17.2°C, light rain"}, {"id": "n1"})
    result = saved(s)
    steps = {step["name"]: step for step in template_to_dict(result.template)["steps"]}
    content = steps["create_note_1"]["input"]["content"]
    assert "17.2" not in content and "light rain" not in content
    assert "content" not in result.input_values  # the agent's reading, not the user's choice
    other = "Current weather:\nTemperature: 3.4°C (feels like 1.0°C)\nConditions: overcast clouds\nWind: 9.0 m/s"
    limits = CodeLimits(timeout=5.0, memory_mb=32)
    read = sorted(str(run_code(step["code"], {"text": other}, limits)) for step in steps.values() if "code" in step)
    assert read == ["3.4°C", "overcast clouds"]


def test_a_single_plain_word_off_a_labelled_line_is_no_evidence() -> None:
    s = Session()
    s.call("get_status", {"service": "api-7f3a"}, "Service: api-7f3a\nState: open\nOwner: platform team")
    s.call("post_message", {"channel": "C0ABC123", "text": "api-7f3a is open for now"}, {"ok": True})
    result = templatize([s.steps], name="t")
    steps = template_to_dict(result.template)["steps"]
    assert [step["name"] for step in steps if "code" in step] == []


def test_a_value_is_read_where_it_stands_apart_not_where_it_is_glued_into_a_longer_name() -> None:
    s = Session()
    listing = "Services:\n- checkout-api-canary (URL: https://a.example)\n- checkout-api (URL: https://b.example)"
    s.call("list_services", {"project": "shop-prod-4411"}, listing)
    s.call("get_service", {"service": "checkout-api"}, "Name: checkout-api\nLast deployed by: mara@shop.example")
    result = templatize([s.steps], name="t")
    steps = {step["name"]: step for step in template_to_dict(result.template)["steps"]}
    code = next(step["code"] for step in steps.values() if "code" in step)
    assert "canary" not in code  # not `(...)-canary`: the name cut out of a longer one
    other = "Services:\n- search-canary (URL: https://a.example)\n- search (URL: https://b.example)"
    assert run_code(code, {"text": other}, CodeLimits(timeout=5.0, memory_mb=32)) == "search"


def test_an_element_is_picked_by_the_field_the_agent_quotes_in_its_own_words() -> None:
    s = Session()
    sites = [
        {"id": "02d89813-7a72-41e1-87f0-8d668f85008b", "name": "Kettle docs", "domain": "docs.kettle.dev"},
        {"id": "5ea5a7e8-3c5b-4f3a-9c2e-2b7d1f6c8a90", "name": "Kettle", "domain": "kettle.dev"},
    ]
    s.call("get_websites", {}, {"data": sites})
    s.call("get_stats", {"websiteId": "5ea5a7e8-3c5b-4f3a-9c2e-2b7d1f6c8a90"}, {"visitors": 18022})
    s.call("publish", {"channel": "growth", "data": "kettle.dev had 18022 visitors"}, {"ok": True})
    result = saved(s)
    steps = {step["name"]: step for step in template_to_dict(result.template)["steps"]}
    pick = next(step for name, step in steps.items() if name.startswith("pick_"))
    assert pick["input"]["key"] == "domain"  # not the display name: the words the message calls it by
    assert "kettle.dev" in result.input_values.values()


def _referrers(rows: list[tuple[str, int]]) -> Session:
    s = Session()
    s.call("get_metrics", {"websiteId": "5ea5a7e8-3c5b-4f3a", "type": "referrer"}, [{"x": x, "y": y} for x, y in rows])
    top = max(rows, key=lambda row: row[1])
    s.call("publish", {"channel": "growth", "data": f"Top referrer: {top[0]} ({top[1]} visitors)"}, {"ok": True})
    return s


def test_the_element_a_sentence_quotes_the_largest_number_of_is_picked_by_that_number() -> None:
    result = saved(
        _referrers([("news.ycombinator.com", 812), ("google.com", 2210), ("github.com", 1544), ("x.com", 3)])
    )
    steps = {step["name"]: step for step in template_to_dict(result.template)["steps"]}
    assert steps["publish_1"]["input"]["data"] == "Top referrer: {{@pick_max_y.x}} ({{@pick_max_y.y}} visitors)"
    other = [{"x": "a.example", "y": 5}, {"x": "b.example", "y": 640}, {"x": "c.example", "y": 95}]
    limits = CodeLimits(timeout=5.0, memory_mb=32)
    picked = run_code(steps["pick_max_y"]["code"], {**steps["pick_max_y"]["input"], "items": other}, limits)
    assert picked == {"x": "b.example", "y": 640}


def test_the_first_element_of_a_list_is_not_taken_for_its_largest() -> None:
    # a list sorted by the number puts its largest first: `[0]` says that already, and no pick is added
    result = templatize([_referrers([("google.com", 2210), ("github.com", 1544), ("x.com", 3)]).steps], name="t")
    assert not [step for step in result.template.steps if step.name.startswith("pick_")]


def test_two_names_together_pick_the_element_neither_names_alone() -> None:
    s = Session()
    hits = [
        {"Id": "a1b2c3d4e5f60718293a4b5c6d7e8f90", "Name": "Windowlicker (Remix)", "AlbumArtist": "Aphex Twin"},
        {"Id": "0f1e2d3c4b5a69788796a5b4c3d2e1f0", "Name": "Windowlicker", "AlbumArtist": "Aphex Twin"},
        {"Id": "11223344556677889900aabbccddeeff", "Name": "Windowlicker", "AlbumArtist": "Tribute Band"},
    ]
    s.call("search_items", {"searchTerm": "Windowlicker"}, {"SearchHints": hits})
    s.call("add_to_playlist", {"playlistId": "5f5f5f5f5f5f", "ids": ["0f1e2d3c4b5a69788796a5b4c3d2e1f0"]}, "")
    result = saved(s)
    steps = {step["name"]: step for step in template_to_dict(result.template)["steps"]}
    pick = next(step for name, step in steps.items() if name.startswith("pick_"))
    assert pick["input"]["key"] == "Name" and pick["input"]["also"][0][0] == "AlbumArtist"
    assert {"Windowlicker", "Aphex Twin"} <= set(result.input_values.values())
    limits = CodeLimits(timeout=5.0, memory_mb=32)
    other = [{**hit, "Id": f"id{n}"} for n, hit in enumerate(reversed(hits))]
    picked = run_code(
        pick["code"],
        {**pick["input"], "items": other, "value": "Windowlicker", "also": [["AlbumArtist", "Aphex Twin"]]},
        limits,
    )
    assert picked["Id"] == "id1"


def test_the_project_inside_an_organization_the_user_chose_is_the_user_s_too() -> None:
    s = Session()
    query = "is:unresolved release:web@4.12.0"
    args = {"organization_slug": "acme", "project_slug": "storefront", "query": query}
    s.call("list_issues", args, [{"id": "801"}, {"id": "805"}])
    s.call("bulk_update_issues", {"organization_slug": "acme", "id": ["801", "805"], "status": "resolved"}, "ok")
    ticked = templatize([s.steps], name="t").ticked_inputs
    assert "acme" in ticked.values() and "storefront" in ticked.values()


def test_a_project_beside_an_organization_left_literal_stays_as_it_was() -> None:
    s = Session()
    s.call("list_issues", {"organization_slug": "acme", "project_slug": "storefront"}, [{"id": "801"}])
    assert "storefront" not in templatize([s.steps], name="t").ticked_inputs.values()


def test_a_small_number_read_off_the_row_another_argument_came_from_is_that_row_s() -> None:
    s = Session()
    stacks = [
        {"id": 3, "name": "traefik", "environmentId": 1, "status": 1},
        {"id": 7, "name": "monitoring-old", "environmentId": 2, "status": 2},
        {"id": 9, "name": "monitoring", "environmentId": 2, "status": 2},
    ]
    s.call("listLocalStacks", {}, stacks)
    s.call("startLocalStack", {"id": 9, "environmentId": 2}, "Local stack started successfully")
    result = templatize([s.steps], name="t")
    started = template_to_dict(result.template)["steps"][-1]["input"]
    row = str(started["id"]).rsplit(".", 1)[0]
    assert row.startswith("@") and started["environmentId"] == f"{row}.environmentId"
