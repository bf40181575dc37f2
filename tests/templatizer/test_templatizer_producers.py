"""Producers, thirteenth pass: a generic tool's arguments say what it lists (`object_type: "dcim.site"`), a key
ending in "by" names a person a people's tool listed, the element a search was for is picked by the searched term
however short it is (`jdoe` among `jdoe2` and `jdoe.contractor`), the most viewed element by its count, and an
account a read looked up and a message names again is the user's."""

from __future__ import annotations

from typing import Any

from tests.recorded import Session, applied, saved
from toolreel.core.model import JSON
from toolreel.core.template_io import template_to_dict
from toolreel.templatizer import templatize
from toolreel.templatizer._values import key_similarity, producer_words


def test_a_generic_tool_lists_what_its_arguments_ask_for() -> None:
    words = producer_words("netbox_get_objects", {"object_type": "dcim.site", "filters": {"q": "Berlin DC1"}})
    assert key_similarity("site_id", "id", words) == 0.9
    assert key_similarity("site_id", "id", "netbox_get_objects") < 0.9  # the tool's name alone says nothing
    assert key_similarity("device_id", "id", words) < 0.9
    assert producer_words("search_read", {"model": "sale", "limit": 20}) == "search_read sale"
    assert producer_words("search", {"q": "Berlin DC1", "type": "site"}) == "search"  # a query or a bare `type`: no


def test_a_key_ending_in_by_names_a_person_a_people_tool_listed() -> None:
    assert key_similarity("requestedBy", "id", "list_users") == 0.9
    assert key_similarity("created_by", "id", "list_members") == 0.9
    assert key_similarity("requestedBy", "id", "list_requests") < 0.9  # not a tool about people


def _sites() -> list[dict[str, Any]]:
    return [
        {"id": 14, "name": "Berlin DC10", "slug": "berlin-dc10"},
        {"id": 9, "name": "Berlin DC1", "slug": "berlin-dc1"},
        {"id": 21, "name": "Berlin DC1 Annex", "slug": "berlin-dc1-annex"},
    ]


def test_a_small_id_of_what_a_generic_tool_listed_is_a_ref() -> None:
    s = Session()
    s.call("get_objects", {"object_type": "dcim.site", "filters": {"q": "Berlin DC1"}}, {"results": _sites()})
    s.call("get_objects", {"object_type": "dcim.device", "filters": {"site_id": 9}}, {"results": []})
    result = saved(s)
    assert applied(result)[("get_objects_2", "$.filters.site_id")] == "@get_objects_1.results[1].id"
    # ... taken from the site the search was for, by its name, wherever it sits on the next run
    assert result.template.step("get_objects_2").input == {
        "object_type": "dcim.device",
        "filters": {"site_id": "@pick_berlin_dc1.id"},
    }


def _users() -> list[dict[str, Any]]:
    return [
        {"id": 118, "name": "John Doe II", "username": "jdoe2"},
        {"id": 42, "name": "Jane Doe", "username": "jdoe"},
        {"id": 207, "name": "Jim Doe", "username": "jdoe.contractor"},
    ]


def test_the_element_a_search_was_for_is_picked_by_the_searched_term() -> None:
    s = Session()
    s.call("search_users", {"search": "jdoe", "limit": 25}, {"rows": _users()})
    s.call("get_user_assets", {"user_id": 42}, {"rows": []})
    template = template_to_dict(saved(s).template)
    pick = next(step for step in template["steps"] if step["name"].startswith("pick_"))
    assert pick["input"]["key"] == "username"
    assert pick["input"]["value"] == "@input.search"
    assert "name" not in template["inputs"]  # not "Jane Doe": the user gave the username


def _clips() -> list[dict[str, Any]]:
    return [
        {"id": "Bright-x1", "title": "Speedrun WR attempt", "view_count": 812, "url": "https://clips.tv/Bright-x1"},
        {"id": "Calm-a9", "title": "Chat raid chaos", "view_count": 204, "url": "https://clips.tv/Calm-a9"},
        {"id": "Tangible-77", "title": "The 1-frame skip", "view_count": 1930, "url": "https://clips.tv/Tangible-77"},
        {"id": "Slick-Q", "title": "Outro song", "view_count": 97, "url": "https://clips.tv/Slick-Q"},
    ]


def _clip_of_the_week() -> Session:
    s = Session()
    s.call("get_users", {"login": "pixelforge"}, {"data": [{"id": "141981764", "login": "pixelforge"}]})
    s.call("get_clips", {"broadcaster_id": "141981764", "first": 20}, {"data": _clips()})
    status = "Clip of the week from pixelforge: The 1-frame skip https://clips.tv/Tangible-77"
    s.call("post_status", {"status": status, "visibility": "public"}, {"id": "1136"})
    return s


def test_the_most_viewed_element_is_picked_by_its_count_not_by_its_title() -> None:
    template = template_to_dict(saved(_clip_of_the_week()).template)
    pick = next(step for step in template["steps"] if step["name"].startswith("pick_"))
    assert pick["input"]["key"] == "view_count" and pick["input"]["best"] == "max"
    assert "title" not in template.get("inputs", {})  # no input named after the recorded winner


def test_an_account_a_read_looked_up_and_a_message_names_again_is_the_users() -> None:
    first = templatize([_clip_of_the_week().steps], name="t", read_only={"svc__get_users", "svc__get_clips"})
    login = next(item for item in first.likely_inputs if item.value == "pixelforge")
    assert login.ticked and "looked up" in login.reason


def test_a_stream_is_picked_by_its_users_login_not_by_the_display_name() -> None:
    sessions: list[JSON] = [
        {"session_key": "61", "user": "sam.k", "friendly_name": "Sam.K", "video_decision": "direct play"},
        {"session_key": "64", "user": "nora", "friendly_name": "Nora", "video_decision": "copy"},
        {"session_key": "66", "user": "sam", "friendly_name": "Sam", "video_decision": "transcode"},
    ]
    s = Session()
    s.call("get_activity", {}, {"response": {"data": {"sessions": sessions}}})
    s.call("terminate_session", {"session_key": "66", "message": "The server is busy tonight."}, {"ok": True})
    template = template_to_dict(saved(s).template)
    pick = next(step for step in template["steps"] if step["name"].startswith("pick_"))
    assert pick["input"]["key"] == "user"


def test_a_row_with_no_name_is_picked_as_the_largest_of_its_one_number() -> None:
    rows: list[JSON] = [
        {"fields": {"Donor": "M. Okafor", "Amount": 250.0}},
        {"fields": {"Donor": "Riverside Bakery", "Amount": 1200.0}},
        {"fields": {"Donor": "J. Park", "Amount": 75.5}},
    ]
    s = Session()
    s.call("run_sql", {"sql": "SELECT Donor, Amount FROM Pledges WHERE Status = 'Open'"}, {"records": rows})
    s.call("notify", {"body": "Largest pledge from Riverside Bakery", "tag": "fundraising"}, {"ok": True})
    template = template_to_dict(saved(s).template)
    pick = next(step for step in template["steps"] if step["name"].startswith("pick_"))
    assert (pick["input"]["key"], pick["input"]["best"]) == ("fields.Amount", "max")
    notify = next(step for step in template["steps"] if step["name"] == "notify_1")
    assert notify["input"]["body"] == f"Largest pledge from {{{{@{pick['name']}.fields.Donor}}}}"
