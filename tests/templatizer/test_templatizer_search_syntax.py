"""Inputs inside a search box's syntax, eleventh pass: `field:value` terms compared by an order (`due:<2026-11-27`)
or by `:=`, ranges (`created:[a to b]`), braced filters (`{type:page}`), tags and flags (`#rust !unread`) and the
words searched for. The user's values are inputs the query is built on; the syntax's own words stay in it."""

from __future__ import annotations

import pytest

from tests.recorded import Session
from toolreel.core.template_io import template_to_dict
from toolreel.templatizer import templatize
from toolreel.templatizer._evidence import is_query, is_search
from toolreel.templatizer._inputs import Unexplained
from toolreel.templatizer._inside import query_values


def values(query: str) -> list[tuple[str, str | int | float]]:
    return [(found.flag, found.value) for found in query_values(Unexplained("s", ("q",), query, "t"))]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ('assignee:"Ines Duarte" status:open due:<2026-11-27', [("assignee", "Ines Duarte"), ("due", "2026-11-27")]),
        ("#rust !unread async", [("tag", "rust"), ("text", "async")]),
        ("{type:page} [owner=platform] {updated_before:2026-06-01}", [("updated_before", "2026-06-01")]),
        ("brand:=Moccamaster && discontinued:=true", [("brand", "Moccamaster")]),
        (
            'correspondent:"Stadtwerke Köln" type:invoice created:[2026-07-01 to 2026-09-30]',
            [("correspondent", "Stadtwerke Köln"), ("created", "2026-07-01"), ("created", "2026-09-30")],
        ),
        ("type:ticket status<solved organization:brightpath.io", [("organization", "brightpath.io")]),
        ("folder:campaigns/summer-2026 AND resource_type:image", [("folder", "campaigns/summer-2026")]),
        ('status:"Trial" created > "2026-11-19"', [("status", "Trial"), ("created", "2026-11-19")]),
        ("\"primary_email:'lena.roth@acme.dev'\"", [("primary_email", "lena.roth@acme.dev")]),
        ('dt.entity.service == "SERVICE-3C7E91B04D2A5F18"', [("service", "SERVICE-3C7E91B04D2A5F18")]),
        ("done = true && project = Atlas", [("project", "Atlas")]),
    ],
)
def test_the_values_a_search_selects_by(query: str, expected: list[tuple[str, str]]) -> None:
    assert is_query(query)
    assert values(query) == expected


@pytest.mark.parametrize(
    "text", ["TODO:fix the bug", "Note: hi there", "see https://x.y/a:b now", "ratio 3:2 is fine", "Hello! How are you"]
)
def test_prose_is_no_search(text: str) -> None:
    assert not is_search(text) and not is_query(text)


def test_a_search_is_built_on_the_user_s_values() -> None:
    s = Session()
    query = 'assignee:"Ines Duarte" status:open due:<2026-11-27'
    s.call("searchTasks", {"project_id": 7, "query": query}, {"result": [{"id": "412", "title": "Invoice export"}]})
    first = templatize([s.steps], name="t")
    assert sorted(str(v) for v in first.ticked_inputs.values()) == ["2026-11-27", "Ines Duarte"]
    result = templatize([s.steps], name="t", inputs=first.ticked_inputs)
    sent = template_to_dict(result.template)["steps"][0]["input"]["query"]
    assert "status:open" in sent and "Ines Duarte" not in sent and "2026-11-27" not in sent


def test_a_tag_and_the_words_searched_for_are_the_user_s_a_flag_is_not() -> None:
    s = Session()
    s.call("search_bookmarks", {"q": "#rust !unread async", "limit": 100}, {"results": [{"id": 11}]})
    first = templatize([s.steps], name="t")
    assert sorted(str(v) for v in first.ticked_inputs.values()) == ["async", "rust"]
    result = templatize([s.steps], name="t", inputs=first.ticked_inputs)
    sent = str(template_to_dict(result.template)["steps"][0]["input"]["q"])
    assert sent.startswith("#{{@input.") and " !unread {{@input." in sent


def test_a_time_stamp_a_search_is_bounded_by_is_the_user_s_beside_the_tag() -> None:
    s = Session()
    query = 'tag:"newsletter-replies" is:open before:1795700000'
    s.call("search_conversations", {"query": query, "limit": 50}, {"_results": [{"id": "cnv_55x"}]})
    s.call("update_conversation", {"conversation_id": "cnv_55x", "status": "archived"}, {"ok": True})
    assert sorted(map(str, templatize([s.steps], name="t").ticked_inputs.values())) == [
        "1795700000",
        "newsletter-replies",
    ]
    # a short number under a field that names no time stays the query's own (`priority:2`)
    assert values("tag:urgent priority:2 before:1795700000") == [("before", "1795700000")]
