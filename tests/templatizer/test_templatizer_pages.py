"""Paged reads: the same read called again for the next page (a cursor the previous answer gave, a page number, an
offset) is saved as one script step that pages until the answer ends the list, whatever the number of pages in
another world; what the agent did with the elements of every page walks that step's merged answer."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.gw import call, call_ok, fixture_entry, text_of, until_listed
from tests.inproc import gateway_with_clients
from tests.recorded import Session, applied
from toolreel.core.model import JSON
from toolreel.core.sandbox import run_code
from toolreel.core.store import open_store
from toolreel.replayer import dry_replay
from toolreel.templatizer import templatize, verify


def _notion_pages() -> Session:
    pages = [
        ({"results": [{"id": "pg-aa11"}, {"id": "pg-bb22"}], "next_cursor": "cur-7f3e9a01", "has_more": True}),
        ({"results": [{"id": "pg-cc33"}], "next_cursor": None, "has_more": False}),
    ]
    s = Session()
    s.call("query_database", {"database_id": "db-5e1b0c3a", "page_size": 2}, pages[0])
    s.call("query_database", {"database_id": "db-5e1b0c3a", "page_size": 2, "start_cursor": "cur-7f3e9a01"}, pages[1])
    for page_id in ("pg-aa11", "pg-bb22", "pg-cc33"):
        s.call("archive_page", {"page_id": page_id}, {"ok": True})
    return s


def test_pages_read_by_a_cursor_are_one_step_paging_until_the_cursor_is_gone() -> None:
    s = _notion_pages()
    result = templatize([s.steps], name="t")
    paged = result.template.step("query_database_1")
    assert paged.kind == "script" and paged.input == {"args": {"database_id": "db-5e1b0c3a", "page_size": 2}}
    assert "query_database_2" not in {step.name for step in result.template.steps}
    loop = result.template.step("archive_page_each")
    assert loop.for_each == "@query_database_1.results" and loop.input == {"page_id": "@item.id"}
    assert verify(result, [s.steps]).verified
    # The dry replay runs the paging: a second page asked for with another cursor is a difference.
    wrong = [*s.steps]
    wrong[1] = dataclasses.replace(wrong[1], resolved_input={**(wrong[1].resolved_input or {}), "start_cursor": "x"})
    found = dry_replay(result.template, result.input_values, wrong, result.loop_items)
    assert [(d.step, d.field) for d in found] == [("query_database_1.2", "$.start_cursor")]


def test_pages_read_by_an_offset_end_where_the_answer_says_it_is_the_last() -> None:
    rows = [{"Id": n, "Status": "Trial"} for n in (14, 19, 23, 31, 37, 40, 44)]
    s = Session()
    for offset in (0, 3, 6):
        last = offset + 3 >= len(rows)
        page: JSON = {"list": rows[offset : offset + 3], "pageInfo": {"isLastPage": last, "page": offset // 3 + 1}}
        s.call("list_records", {"tableId": "tbl_m3wq8h2k", "limit": 3, "offset": offset}, page)
    result = templatize([s.steps], name="t")
    paged = result.template.step("list_records_1")
    assert paged.script is not None and verify(result, [s.steps]).verified
    # on one page that says it is the last, one call; the merged answer holds that page's rows
    one: JSON = {"list": rows[:2], "pageInfo": {"isLastPage": True, "page": 1}}
    merge = paged.script.replace("export default async function", "async function paged")
    merge += "\nexport default function (input) { return {ended: ended(input.page), merged: merge([input.page])}; }"
    assert run_code(merge, {"page": one}) == {"ended": True, "merged": one}


def _ended(script: str) -> str:
    """The paging script's own `ended(page, seen)` as a program of its own: whether `page` ends the list."""
    ended = script.replace("export default async function", "async function paged")
    return ended + "\nexport default function (input) { return ended(input.page, input.seen); }"


def _numbered_pages(tool: str, args: dict[str, JSON], pages: list[JSON]) -> str:
    """The `ended` program of the paged read saved from `pages` read by page number (1, 2, ...)."""
    s = Session()
    for number, page in enumerate(pages, start=1):
        s.call(tool, {**args, "page": number}, page)
    result = templatize([s.steps], name="t")
    paged = result.template.step(f"{tool}_1")
    assert paged.script is not None and verify(result, [s.steps]).verified
    return _ended(paged.script)


def test_pages_with_a_total_end_when_all_of_it_is_read_even_on_a_full_page() -> None:
    s = Session()
    pages: list[JSON] = [
        {"total": 3, "entries": [{"id": 9001}, {"id": 9004}]},
        {"total": 3, "entries": [{"id": 9010}]},
    ]
    for offset, page in zip((0, 2), pages, strict=True):
        s.call("get_feed_entries", {"feed_id": 5, "status": "unread", "limit": 2, "offset": offset}, page)
    result = templatize([s.steps], name="t")
    paged = result.template.step("get_feed_entries_1")
    assert paged.script is not None and verify(result, [s.steps]).verified
    assert '"end": {"when": "total", "path": ["total"]}' in paged.script
    # Another world: two entries in all, on one full page. A short-page rule would ask for a second page.
    ended = _ended(paged.script)
    full: JSON = {"total": 2, "entries": [{"id": 700}, {"id": 701}]}
    assert run_code(ended, {"page": full, "seen": 2}) is True
    assert run_code(ended, {"page": {"total": 5, "entries": [{"id": 50}, {"id": 51}]}, "seen": 2}) is False


def test_pages_that_say_they_have_additional_ones_end_where_one_says_none() -> None:
    pages: list[JSON] = [
        {"page": 1, "has_additional": True, "tags": [{"name": "v2.9.3"}, {"name": "latest"}]},
        {"page": 2, "has_additional": False, "tags": [{"name": "v2.10.0"}, {"name": "v1.12.0"}]},
    ]
    ended = _numbered_pages("list_tags", {"repository": "acme/billing-api", "limit": 2}, pages)
    # Another world: one full page that says it is the only one; a short-page rule would ask for a second.
    only: JSON = {"page": 1, "has_additional": False, "tags": [{"name": "v5.0.0"}, {"name": "v5.1.0"}]}
    assert run_code(ended, {"page": only, "seen": 2}) is True
    assert run_code(ended, {"page": {**only, "has_additional": True}, "seen": 2}) is False


def test_two_reads_of_consecutive_ids_are_two_reads_not_pages() -> None:
    s = Session()
    s.call("get_issue", {"id": 101}, {"id": 101, "labels": ["bug", "ui"]})
    s.call("get_issue", {"id": 102}, {"id": 102, "labels": ["bug"]})
    result = templatize([s.steps], name="t")
    assert [step.kind for step in result.template.steps] == ["tool", "tool"]


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_paged_read_saved_on_two_pages_replays_on_three(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    async with gateway_with_clients({"shop": fixture_entry("ids")}, db=db) as gateway:
        async with gateway.connect(answers=False) as agent:
            await until_listed(agent, "shop__list_users")
            for name in ("Ann Lee", "Bob Stone", "Cyd Marsh"):
                await call_ok(agent, "shop__create_user", {"name": name, "email": f"{name[:3].lower()}@example.com"})
        async with gateway.connect(answers=False) as agent:
            page = await call_ok(agent, "shop__list_users", {"limit": 2})
            users = list(page["users"])
            page = await call_ok(agent, "shop__list_users", {"limit": 2, "cursor": page["next_cursor"]})
            users += page["users"]
            for user in users:
                await call_ok(agent, "shop__create_order", {"user_id": user["id"], "items": [{"sku": "tea", "qty": 1}]})
            saved = await call(agent, "toolreel__save_template", {"name": "tea", "inputs": {}})
            assert not saved.is_error, text_of(saved)
            assert (saved.structured_content or {})["verified"] is True
            for name in ("Dee Ford", "Eve Kahn"):
                await call_ok(agent, "shop__create_user", {"name": name, "email": f"{name[:3].lower()}@example.com"})
            everyone = (await call_ok(agent, "shop__list_users", {"limit": 100}))["users"]
            replayed = await call(agent, "reel__tea", {})
            assert not replayed.is_error, text_of(replayed)
            execution_id = (replayed.meta or {})["toolreel/execution"]
    store = open_store(db)
    try:
        rows = store.get_steps(execution_id)
    finally:
        store.close()
    pages = sorted((r for r in rows if r.tool == "list_users"), key=lambda r: r.seq)
    assert [r.resolved_input.get("cursor") is None for r in pages if isinstance(r.resolved_input, dict)] == [
        True,
        False,
        False,
    ]
    ordered = [r.resolved_input for r in rows if r.tool == "create_order" and "[" in r.name]  # (the loop's items)
    assert sorted(str(o) for o in ordered) == sorted(
        str({"user_id": u["id"], "items": [{"sku": "tea", "qty": 1}]}) for u in everyone
    )


def test_a_cursor_found_only_inside_the_next_page_s_url_is_read_out_of_it() -> None:
    # Klaviyo: the next page's cursor is a parameter of `links.next`, URL-encoded (`page%5Bcursor%5D=...%3D`).
    link = "https://a.example/api/profiles/?page%5Bcursor%5D=bmV4dDo6aWQ6OjAx%3D&page%5Bsize%5D=2"
    s = Session()
    s.call("get_profiles", {"page_size": 2}, {"data": [{"id": "p-01"}, {"id": "p-02"}], "links": {"next": link}})
    last: JSON = {"data": [{"id": "p-03"}], "links": {}}
    s.call("get_profiles", {"page_size": 2, "page_cursor": "bmV4dDo6aWQ6OjAx="}, last)
    result = templatize([s.steps], name="t")
    paged = result.template.step("get_profiles_1")
    assert paged.script is not None and '"param": "page[cursor]"' in paged.script
    assert verify(result, [s.steps]).verified


def test_pages_that_count_themselves_end_on_the_page_whose_number_reaches_the_count() -> None:
    pages: list[JSON] = [
        {"data": [{"id": "in_1"}, {"id": "in_2"}], "meta": {"pagination": {"current_page": 1, "total_pages": 2}}},
        {"data": [{"id": "in_3"}, {"id": "in_4"}], "meta": {"pagination": {"current_page": 2, "total_pages": 2}}},
    ]
    ended = _numbered_pages("list_invoices", {"client_id": "c_9", "per_page": 2}, pages)
    # Another world: three full pages; a page of a list that ends on a full page says so by its count alone
    second: JSON = {"data": [{"id": "x"}, {"id": "y"}], "meta": {"pagination": {"current_page": 2, "total_pages": 3}}}
    assert run_code(ended, {"page": second, "seen": 4}) is False
    third: JSON = {"data": [{"id": "z"}, {"id": "w"}], "meta": {"pagination": {"current_page": 3, "total_pages": 3}}}
    assert run_code(ended, {"page": third, "seen": 6}) is True


def test_a_count_of_items_or_a_page_size_is_no_count_of_pages() -> None:
    s = Session()
    for number in (1, 2):  # two full pages of two: `count` and `per_page` equal the number of pages by chance
        meta = {"current_page": number, "count": 2, "per_page": 2}
        page = {"data": [{"id": f"in_{number}a"}, {"id": f"in_{number}b"}], "meta": meta}
        s.call("list_invoices", {"client_id": "c_9", "page": number}, page)
    result = templatize([s.steps], name="t")
    assert all('"when": "pages"' not in (step.script or "") for step in result.template.steps)


def test_a_cursor_named_next_page_cursor_is_the_next_reads_cursor_not_read_out_of_the_url() -> None:
    # Squarespace: `pagination.nextPageCursor` beside `nextPageUrl` (which holds it too)
    cursor = "b5a0f9c7e4d34c0b8a6d2f1e0c9b8a7d"
    url = f"https://api.example.com/1.0/commerce/orders?cursor={cursor}"
    first: JSON = {"result": [{"id": "o-1"}], "pagination": {"nextPageCursor": cursor, "nextPageUrl": url}}
    s = Session()
    s.call("list_orders", {"fulfillmentStatus": "PENDING"}, first)
    s.call("list_orders", {"cursor": cursor}, {"result": [{"id": "o-2"}], "pagination": {"nextPageCursor": None}})
    result = templatize([s.steps], name="t")
    assert applied(result)[("list_orders_2", "$.cursor")] == "@list_orders_1.pagination.nextPageCursor"
    assert not any(step.name.startswith("extract") for step in result.template.steps)
