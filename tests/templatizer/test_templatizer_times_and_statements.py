"""Seventeenth pass: Unix times a clock leads to (a window of the last hours in milliseconds, the same window a day
earlier in microseconds) are worked out from the clock on each run, the window the user's; a table drawn with box
characters reads as rows; a statement quoted after a label is no value, a query is built on the value it selects
by, and SQL's pattern match and its bound on a day are values too; an id that is also its element's name is that
element."""

from __future__ import annotations

from tests.recorded import Session, reproduces, saved
from toolreel.core.model import JSON
from toolreel.core.sandbox import run_code
from toolreel.templatizer import TemplatizeResult, templatize
from toolreel.templatizer._epochs import EPOCH_CODE

UTC_NINE = {"timezone": "UTC", "datetime": "2026-11-28T09:00:00+00:00", "day_of_week": "Saturday"}
NOW_MS = 1795856400000


def ticked(result: TemplatizeResult) -> dict[str, JSON]:
    return {item.name: item.value for item in result.likely_inputs if item.ticked}


def _services(hours: int) -> Session:
    s = Session()
    s.call("get_current_time", {"timezone": "UTC"}, UTC_NINE)
    start, end = str(NOW_MS - hours * 3600 * 1000), str(NOW_MS)
    s.call("list_services", {"start": start, "end": end}, {"data": [{"serviceName": "frontend", "errorRate": 0.3}]})
    return s


def test_a_window_of_milliseconds_up_to_the_clock_is_worked_out_on_each_run_for_the_users_hours() -> None:
    s = _services(3)
    result = saved(s)
    reproduces(result, s.steps)
    assert result.input_values["hours"] == 3
    start = result.template.step("list_services_1").input["start"]
    assert isinstance(start, str) and start.startswith("@unix_time_")
    given = dict(result.template.step(start[1:]).input)
    assert given["back"] == "@input.hours"
    # the next run: another reading, one hour asked for
    given |= {"text": "2027-03-01T12:30:00+00:00", "back": 1}
    assert run_code(EPOCH_CODE, given) == "1803900600000"


def test_the_same_window_a_day_earlier_in_microseconds_keeps_its_day_in_the_code() -> None:
    s = Session()
    s.call("get_current_time", {"timezone": "UTC"}, UTC_NINE)
    now_us = NOW_MS * 1000
    for back in (0, 86400):
        window = {"start_time": now_us - (back + 1800) * 10**6, "end_time": now_us - back * 10**6}
        s.call("search", {"sql": "SELECT COUNT(*) FROM logs", **window}, {"hits": [{"n": 4}]})
    result = saved(s)
    reproduces(result, s.steps)
    assert result.input_values["minutes"] == 30
    earlier = result.template.step("search_2").input["start_time"]
    assert isinstance(earlier, str)
    assert dict(result.template.step(earlier[1:]).input)["shift"] == -86400


def test_a_number_near_the_clock_that_no_whole_minute_moves_there_stays_literal() -> None:
    s = Session()
    s.call("get_current_time", {"timezone": "UTC"}, UTC_NINE)
    s.call("list_services", {"start": str(NOW_MS - 3600 * 1000 - 1234), "end": str(NOW_MS)}, {"data": []})
    result = templatize([s.steps], name="t")
    assert result.template.step("list_services_1").input["start"] == str(NOW_MS - 3600 * 1000 - 1234)


BOXED = "\n".join(
    [
        "┼──────────┼─────────┼──────────┼─────────┼",
        "│    ID    │  NAME   │   ZONE   │  STATE  │",
        "┼──────────┼─────────┼──────────┼─────────┼",
        "│ 4a1f9c0e │ web-10  │ de-fra-1 │ running │",
        "│ 7b3c0f1e │ web-1   │ de-fra-1 │ running │",
        "│ 2e8d4b6a │ web-1-x │ ch-gva-2 │ stopped │",
        "┼──────────┼─────────┼──────────┼─────────┼",
    ]
)


def test_a_table_drawn_with_box_characters_is_read_as_rows_and_picked_from_by_name() -> None:
    s = Session()
    s.call("instance_list", {}, BOXED)
    s.call("instance_snapshot_create", {"instance": "7b3c0f1e", "zone": "de-fra-1"}, "done")
    result = saved(s, frozenset({"svc__instance_list"}))
    reproduces(result, s.steps)
    step = result.template.step("instance_snapshot_create_1").input
    assert str(step["instance"]).startswith("@pick_") and str(step["instance"]).endswith(".ID")
    assert str(step["zone"]).endswith(".ZONE")


def test_a_statement_quoted_after_a_label_is_no_value_and_the_query_is_built_on_what_it_selects_by() -> None:
    s = Session()
    sql = "SELECT COUNT(*) AS errors FROM logs WHERE namespace = 'checkout' AND level = 'error'"
    s.call("search", {"sql": sql}, {"hits": [{"errors": 1842}]})
    s.call("create_issue", {"project": "ops/incidents", "description": f"Query: {sql}"}, {"id": 1510})
    chosen = ticked(templatize([s.steps], name="t"))
    assert "SELECT" not in chosen.values() and sql not in chosen.values()
    assert "checkout" in chosen.values()


def test_a_pattern_a_statement_matches_and_the_day_it_is_bounded_by_are_the_users() -> None:
    s = Session()
    sql = (
        "SELECT job_id, status FROM [SHOW JOBS] WHERE job_type = 'BACKUP' AND description LIKE '%orders%' "
        "AND created >= TIMESTAMP '2026-11-20 00:00:00' ORDER BY created"
    )
    s.call("query", {"sql": sql}, {"rows": []})
    result = saved(s)
    reproduces(result, s.steps)
    built = result.template.step("query_1").input["sql"]
    assert isinstance(built, str)
    assert "LIKE '%{{@input." in built and "TIMESTAMP '{{@input." in built and " 00:00:00'" in built
    assert sorted(map(str, result.input_values.values())) == ["2026-11-20", "orders"]


def test_an_id_that_is_also_the_elements_name_is_that_element() -> None:
    s = Session()
    projects = [
        {"id": "billing-staging", "name": "billing-staging"},
        {"id": "billing", "name": "billing"},
        {"id": "web", "name": "web"},
    ]
    s.call("list_projects", {}, {"data": {"projects": projects}})
    s.call("create_secret_group", {"projectId": "billing", "name": "portal-oidc"}, {"data": {"id": "portal-oidc"}})
    result = saved(s, frozenset({"svc__list_projects"}))
    reproduces(result, s.steps)
    assert result.template.step("create_secret_group_1").input["projectId"] != "billing"
    assert "billing" in result.input_values.values()


DASHED = "\n".join(
    [
        "Node Name    Node ID                              Address        Labels",
        "------------ ------------------------------------ -------------- -----------------------------",
        "db-1-replica 3f1c9a2e-5b7d-4e8f-a1b2-c3d4e5f60718 10.0.4.12:3022 env=prod,role=db",
        "db-1         c0ffee12-3456-4789-abcd-ef0123456789 \u27f5 Tunnel       env=prod,role=db,tier=primary",
        "web-1        11112222-3333-4444-5555-666677778888 10.0.2.5:3022  env=prod,role=web",
    ]
)
BARE = "\n".join(
    [
        "ID | Hostname        | User  | Connected | Expired",
        "31 | alice-laptop    | alice | online    | no",
        "37 | alice-old-phone | alice | offline   | no",
        "39 | alice-nas       | alice | offline   | yes",
    ]
)


def test_a_table_underlined_by_dash_runs_is_cut_at_its_columns_spaces_and_all() -> None:
    s = Session()
    s.call("tsh_ls", {"verbose": True}, DASHED)
    s.call("tsh_request_create", {"resource": "/node/c0ffee12-3456-4789-abcd-ef0123456789"}, "Request ID: 0194c1f2")
    result = saved(s, frozenset({"svc__tsh_ls"}))
    reproduces(result, s.steps)
    resource = result.template.step("tsh_request_create_1").input["resource"]
    assert resource == '/node/{{@pick_db_1["Node ID"]}}'  # (the row named db-1, not db-1-replica)


def test_a_table_of_bars_with_no_rule_under_its_header_is_read_as_rows() -> None:
    s = Session()
    s.call("nodes_list", {"user": "alice"}, BARE)
    s.call("nodes_expire", {"identifier": 37}, "Node expired")
    result = saved(s, frozenset({"svc__nodes_list"}))
    reproduces(result, s.steps)
    assert result.template.step("nodes_expire_1").input["identifier"] != 37


def test_a_value_a_yql_field_contains_is_what_the_query_selects_by() -> None:
    s = Session()
    yql = 'select id, sku from product where brand contains "Fjord" and in_stock = false order by sku asc'
    s.call("search", {"yql": yql, "hits": 3}, {"root": {"children": []}})
    result = saved(s)
    assert "Fjord" in result.input_values.values()
    assert result.template.step("search_1").input["yql"] != yql


NESTED = (
    "web-01.prod:\n    True\n"
    "web-02.prod:\n    Minion did not return. [No response]\n    To look up the return data, run:\n\n"
    "    salt-run jobs.lookup_jid 20261128101542123456\n"
    "web-03.prod:\n    True\n"
    "web-04.prod:\n    Minion did not return. [No response]\n"
)


def test_names_each_followed_by_an_indented_answer_are_rows_and_a_loop_walks_those_that_answered() -> None:
    s = Session()
    s.call("salt_run", {"target": "G@role:web", "tgt_type": "compound", "function": "test.ping"}, NESTED)
    for minion in ("web-01.prod", "web-03.prod"):
        s.call(
            "salt_run", {"target": minion, "tgt_type": "glob", "function": "service.restart"}, f"{minion}:\n    True\n"
        )
    result = saved(s)
    reproduces(result, s.steps)
    loop = result.template.step("salt_run_each")
    assert loop.input["target"] == "@item.name"
    assert str(loop.for_each).endswith('[?(@.value == "True")]')
