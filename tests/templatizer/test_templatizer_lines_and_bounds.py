"""Fifteenth pass: a markdown list of links carries its fields after the dash (`— id 1821, 14 min read`), a bound
a loop keeps elements by is the round number a person sets (at least 10 minutes, not the 11 of the shortest one
handled), and a list argument built one element per line of a file follows the file."""

from __future__ import annotations

from typing import Any

from tests.recorded import Session, saved, steps_of
from toolreel.core.sandbox import CodeLimits, run_code
from toolreel.templatizer._view_code import VIEW_CODE

_LIMITS = CodeLimits(timeout=5.0, memory_mb=32)
ENTRIES = (
    "Found 4 unread entries for lwn.net (page 1/1):\n\n"
    "- [The state of the page cache in 2026](https://lwn.net/Articles/998101/) — id 1821, 14 min read, tags: kernel\n"
    "- [Kernel release status](https://lwn.net/Articles/998230/) — id 1830, 3 min read\n"
    "- [A look at Rust in the block layer](https://lwn.net/Articles/998311/) — id 1833, 11 min read\n"
    "- [Security updates for Wednesday](https://lwn.net/Articles/998400/) — id 1840, 2 min read"
)


def test_a_link_list_carries_the_fields_written_after_its_dash() -> None:
    rows = run_code(VIEW_CODE, {"text": ENTRIES, "shape": "links", "level": 0}, _LIMITS)
    assert rows[0] == {
        "title": "The state of the page cache in 2026",
        "url": "https://lwn.net/Articles/998101/",
        "id": 1821,
        "min_read": 14,
        "tags": "kernel",
    }
    assert [row["id"] for row in rows] == [1821, 1830, 1833, 1840]
    # a parenthesized field keeps its place; words without a number are no field
    retro = "- [Retro](https://w/d) (id: Xy8v) — updated today"
    (row,) = run_code(VIEW_CODE, {"text": retro, "shape": "links"}, _LIMITS)
    assert row == {"title": "Retro", "url": "https://w/d", "id": "Xy8v"}


def test_a_loop_kept_by_a_bound_takes_the_round_number_between_the_handled_and_the_others() -> None:
    s = Session()
    s.call("get_entries", {"domain_name": "lwn.net", "archive": 0}, ENTRIES)
    s.call("add_tags_to_entry", {"entry_id": 1821, "tags": "weekend"}, {"id": 1821})
    s.call("add_tags_to_entry", {"entry_id": 1833, "tags": "weekend"}, {"id": 1833})
    result = saved(s)
    loop = next(step for step in steps_of(result).values() if step.get("for_each"))
    assert loop["input"]["entry_id"] == "@item.id"
    bound = next(name for name, value in result.input_values.items() if name.startswith("min_read"))
    assert result.input_values[bound] == 10  # the user's "10 minutes or more", which keeps 14 and 11, not 3


def test_a_bound_with_no_round_number_in_reach_stays_as_recorded() -> None:
    s = Session()
    reviews = [{"id": f"r{i}", "rating": rating, "title": f"T{i}"} for i, rating in enumerate([5, 2, 1, 4, 3])]
    s.call("list_reviews", {"app": "notes"}, reviews)
    s.call("reply_review", {"review_id": "r1", "text": "Sorry!"}, {"ok": True})
    s.call("reply_review", {"review_id": "r2", "text": "Sorry!"}, {"ok": True})
    result = saved(s)
    assert 2 in result.input_values.values() and 5 not in result.input_values.values()


FILE = "# batch 14, exported from Zendesk macros\nwhere is my parcel\n\ncan I change the size\nrefund still not here\n"


def test_a_list_argument_built_one_element_per_line_of_a_file_follows_the_file() -> None:
    s = Session()
    s.call("read_text_file", {"path": "/home/ana/batch-14.txt"}, {"content": FILE})
    lines = ["where is my parcel", "can I change the size", "refund still not here"]
    s.call("import_tasks", {"project_id": 44, "tasks": [{"data": {"text": line}} for line in lines]}, {"task_count": 3})
    steps = steps_of(saved(s))
    tasks = steps["import_tasks_1"]["input"]["tasks"]
    assert tasks.startswith("@lines_")
    built = steps[tasks[1:]]
    other = "# another batch\nfirst\nsecond\n\n# more\nthird\nfourth\nfifth\n"
    got = run_code(built["code"], {**built["input"], "text": other}, _LIMITS)
    assert got == [{"data": {"text": t}} for t in ("first", "second", "third", "fourth", "fifth")]


def test_lines_the_agent_rewrote_are_no_line_list() -> None:
    s = Session()
    s.call("read_text_file", {"path": "/home/ana/batch-14.txt"}, {"content": FILE})
    s.call("import_tasks", {"tasks": [{"data": {"text": "Where is my parcel?"}}, {"data": {"text": "Size?"}}]}, {})
    assert not any(name.startswith("lines_") for name in steps_of(saved(s)))


def test_a_subset_of_a_list_under_a_quoted_key_is_the_elements_a_filter_keeps_not_its_longest() -> None:
    s = Session()

    def song(sid: str, artist: str, duration: int) -> dict[str, Any]:
        return {"id": sid, "title": f"Song {sid}", "artist": artist, "duration": duration}

    songs = [
        song("tr_0a", "Radiohead", 290),
        song("tr_3d", "Thom Yorke", 274),
        song("tr_6a", "Radiohead", 318),
        song("tr_9d", "Radiohead & Friends", 240),
        song("tr_2a", "Radiohead", 289),
    ]
    s.call("getStarred2", {}, {"subsonic-response": {"status": "ok", "starred2": {"song": songs}}})
    s.call("createPlaylist", {"name": "Radiohead favourites", "songId": ["tr_0a", "tr_6a", "tr_2a"]}, {"ok": True})
    steps = steps_of(saved(s))
    # the songs of one artist, the one the user named (an input): not the longest, not `Radiohead & Friends` too
    assert steps["select_song"]["input"] == {
        "items": '@getStarred2_1["subsonic-response"].starred2.song',
        "where": [{"key": "artist", "op": "==", "value": "@input.artist"}],
    }
    assert steps["createPlaylist_1"]["input"]["songId"] == "@select_song[*].id"
    assert saved(s).input_values["artist"] == "Radiohead"
    assert not any(name.startswith("calc_") for name in steps)


def test_a_month_of_the_clocks_year_is_read_from_the_clock() -> None:
    s = Session()
    now = {"timezone": "Europe/Berlin", "datetime": "2026-11-27T11:02:00+01:00", "is_dst": False}
    s.call("get_current_time", {"timezone": "Europe/Berlin"}, now)
    s.call("create_report", {"period": "November 2026", "kind": "monthly"}, {"id": "r1"})
    steps = steps_of(saved(s))
    period = steps["create_report_1"]["input"]["period"]
    assert isinstance(period, str) and period.startswith("@")
    made = steps[period[1:]]
    later = {
        key: "2027-01-01T00:30:00+01:00" if str(value).startswith("@") else value
        for key, value in made["input"].items()
    }
    assert run_code(made["code"], later, _LIMITS) == "January 2027"


def _digest(key: str) -> dict[str, Any]:
    s = Session()
    s.call("get_query_results_csv", {"query_id": 311}, "plan,signups\nfree,412\npro,87\nteam,23\n")
    s.call("trigger_event", {"name": "weekly-digest", "payload": {"total": 522, key: "free"}}, {"ok": True})
    payload = steps_of(saved(s))["trigger_event_1"]["input"]["payload"]
    assert isinstance(payload, dict)
    return payload


def test_a_csv_column_sums_and_the_top_row_is_picked_where_the_argument_says_top() -> None:
    payload = _digest("top_plan")
    assert str(payload["total"]).startswith("@calc_sum")  # the signups, as numbers
    assert str(payload["top_plan"]).startswith("@calc_max_by")  # the first row, but for having the most


def test_the_first_row_of_a_list_is_no_superlative_where_the_argument_does_not_say_so() -> None:
    assert not str(_digest("plan")["plan"]).startswith("@calc_")


def test_an_iso_week_in_a_title_is_read_from_the_clock_across_a_year_end() -> None:
    s = Session()
    now = {"timezone": "Europe/Berlin", "datetime": "2026-11-27T11:02:00+01:00", "is_dst": False}
    s.call("get_current_time", {"timezone": "Europe/Berlin"}, now)
    s.call("create_page", {"name": "Weekly review 2026-W48", "body": "## Wins\n\n## Blockers\n"}, {"id": "p1"})
    result = saved(s)
    page = steps_of(result)["create_page_1"]["input"]
    assert page["body"] == "## Wins\n\n## Blockers\n"  # a skeleton of headings: the same every week
    assert page["name"].startswith("Weekly review {{@") and "2026-W48" not in page["name"]
    made = steps_of(result)[page["name"].split("{{@")[1].split("}}")[0]]
    for day, week in (("2027-01-01", "2026-W53"), ("2027-01-04", "2027-W01"), ("2026-12-28", "2026-W53")):
        given = {key: f"{day}T09:00:00+01:00" if str(v).startswith("@") else v for key, v in made["input"].items()}
        assert run_code(made["code"], given, _LIMITS) == week
