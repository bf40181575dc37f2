"""Transforms inferred from recordings: each function of the closed set is found (one test each), the
code step it becomes reproduces the recorded argument, and nothing is proposed on weak or ambiguous
evidence."""

from __future__ import annotations

from typing import Any

import pytest

from tests.recorded import Session
from toolreel.core.model import JSON
from toolreel.core.refs import MappingScope, resolve
from toolreel.core.sandbox import run_code
from toolreel.templatizer import TemplatizeResult, templatize
from toolreel.templatizer._transforms import FUNCTIONS

ORDERS = [
    {"id": "ord_5d1e0a77", "amount": 12.5, "placed": "2024-03-01T09:00:00Z", "sku": "apple"},
    {"id": "ord_93b2c4e1", "amount": 99.25, "placed": "2024-02-11T17:30:00Z", "sku": "bread"},
    {"id": "ord_2f8a6b90", "amount": 40.0, "placed": "2024-03-09T08:15:00Z", "sku": "cheese"},
]


def replayed(session: Session, result: TemplatizeResult) -> dict[str, JSON]:
    """Run the template against the recording: tool steps give their recorded outputs, code steps run."""
    outputs: dict[str, JSON] = {}
    recorded = {step.name: step for step in session.steps}
    sent: dict[str, JSON] = {}
    for spec in result.template.steps:
        scope = MappingScope(steps=outputs, inputs=dict(result.input_values))
        value = resolve(spec.input, scope)
        if spec.code is not None:
            outputs[spec.name] = run_code(spec.code, value)
        else:
            sent[spec.name] = value
            outputs[spec.name] = recorded[spec.name].output
    return sent


def transform_of(session: Session, step: str, path: str) -> tuple[str, str]:
    """(function, code) of the one transform proposed, after checking that the template reproduces the recording."""
    result = templatize([session.steps], name="t")
    assert replayed(session, result) == {s.name: s.resolved_input for s in session.steps}
    found = [i for i in result.applied if i.kind == "transform"]
    assert [(i.step, i.input_path) for i in found] == [(step, path)], [i.evidence for i in found]
    code_step = result.template.step(found[0].ref.removeprefix("@"))
    assert code_step.code is not None and code_step.kind == "code"
    return code_step.name.split("_")[1], found[0].evidence


def session_with(args: dict[str, Any], output: JSON = None) -> Session:
    session = Session()
    session.call("list_orders", {"status": "open"}, output if output is not None else {"orders": ORDERS})
    session.call("report", args, {"ok": True})
    return session


def test_the_closed_set_is_what_is_documented() -> None:
    expected = (
        *("count", "sum", "max", "max_by", "min_by", "newest_by", "newest_version", "first_unset"),
        *("lower", "upper", "join", "join_fields", "number"),
    )
    assert expected == FUNCTIONS


def test_sum_of_a_field() -> None:
    function, evidence = transform_of(session_with({"total": 151.75}), "report_1", "$.total")
    assert function == "sum" and "sum of `amount`" in evidence


def test_count_of_a_list() -> None:
    items = [{"n": i} for i in range(12)]
    function, _ = transform_of(session_with({"count": 12}, {"orders": items}), "report_1", "$.count")
    assert function == "count"


def test_max_of_numbers() -> None:
    function, _ = transform_of(session_with({"top": 71.5}, {"scores": [12.5, 71.5, 33.0]}), "report_1", "$.top")
    assert function == "max"


def test_field_of_the_item_with_the_largest_field() -> None:
    function, evidence = transform_of(session_with({"biggest": "bread"}), "report_1", "$.biggest")
    assert function == "max" and "largest `amount`" in evidence  # calc_max_by_1


def test_field_of_the_item_with_the_newest_date() -> None:
    function, evidence = transform_of(session_with({"latest": "ord_2f8a6b90"}), "report_1", "$.latest")
    assert function == "newest" and "newest `placed`" in evidence


def test_lower_case() -> None:
    session = Session()
    session.call("get_user", {"id": "u1"}, {"email": "Ada.Lovelace@Example.COM"})
    session.call("invite", {"email": "ada.lovelace@example.com"}, {"ok": True})
    function, _ = transform_of(session, "invite_1", "$.email")
    assert function == "lower"


def test_upper_case() -> None:
    session = Session()
    session.call("get_country", {"id": "c1"}, {"code": "fra", "name": "France"})
    session.call("ship", {"country": "FRA"}, {"ok": True})
    function, _ = transform_of(session, "ship_1", "$.country")
    assert function == "upper"


def test_join_of_a_field_over_a_list() -> None:
    """A text listing a field of every item (the folding's join of a whole list, or a transform) follows the
    list: on other orders it lists theirs."""
    session = session_with({"skus": "apple, bread, cheese"})
    result = templatize([session.steps], name="t")
    assert replayed(session, result) == {s.name: s.resolved_input for s in session.steps}
    report = result.template.step("report_1")
    assert isinstance(report.input, dict) and str(report.input["skus"]).startswith("{{@")
    join = result.template.step(str(report.input["skus"]).removeprefix("{{@").removesuffix("}}"))
    assert join.code is not None
    others = [{"sku": sku, "amount": 1.0} for sku in ("pear", "milk")]
    scope = MappingScope(steps={"list_orders_1": {"orders": others}})
    assert run_code(join.code, resolve(join.input, scope)) == "pear, milk"


def test_join_of_two_fields() -> None:
    """Fields too short to be found inside a string (longer ones become `{{@a}}/{{@b}}`, no code needed)."""
    session = Session()
    session.call("get_user", {"id": "u1"}, {"first": "Al", "last": "Wu", "id": "u1"})
    session.call("badge", {"label": "Wu/Al"}, {"ok": True})
    function, _ = transform_of(session, "badge_1", "$.label")
    assert function == "join"  # calc_join_fields_1


def test_nothing_is_proposed_for_an_exact_value_or_a_small_number_or_an_ambiguous_one() -> None:
    session = Session()
    session.call("list_orders", {}, {"orders": ORDERS, "pages": [1, 1, 1], "tags": ["a", "b"]})
    session.call("report", {"count": 3, "first": "ord_5d1e0a77", "n": 2, "note": "hello world"}, {"ok": True})
    result = templatize([session.steps], name="t")
    assert [i for i in result.applied if i.kind == "transform"] == []  # 3 is a count and a sum: no guess
    assert result.template.step("report_1").input["first"] == "@list_orders_1.orders[0].id"  # exact stays exact


def test_a_small_count_confirmed_by_a_second_recording_becomes_a_transform() -> None:
    runs = []
    for n, count in ((1, 3), (2, 5)):
        session = Session(execution=f"e{n}")
        session.call("list_issues", {"repo": "r"}, {"issues": [{"title": f"t{i}", "n": 100 + i} for i in range(count)]})
        session.call("post", {"text": "summary", "count": count}, {"ok": True})
        runs.append(session.steps)
    result = templatize(runs, name="t")
    found = [i for i in result.applied if i.kind == "transform"]
    assert [(i.step, i.input_path) for i in found] == [("post_1", "$.count")]


def test_a_transform_the_second_recording_refutes_is_not_proposed() -> None:
    runs = []
    for n, (values, total) in enumerate((([20.5, 30.25], 50.75), ([1.5, 2.5], 99.0))):
        session = Session(execution=f"e{n}")
        session.call("prices", {}, {"values": values})
        session.call("charge", {"amount": total}, {"ok": True})
        runs.append(session.steps)
    result = templatize(runs, name="t")
    assert [i for i in result.applied if i.kind == "transform"] == []


@pytest.mark.parametrize("index", [1, 2])
def test_a_positional_ref_to_the_newest_item_becomes_a_pick(index: int) -> None:
    orders = [{k: v for k, v in o.items() if k != "amount"} for o in ORDERS]  # the newest is the only pick
    orders[index]["placed"], orders[2]["placed"] = orders[2]["placed"], orders[index]["placed"]
    session = session_with({"order": orders[index]["id"]}, {"orders": orders})
    function, _ = transform_of(session, "report_1", "$.order")
    assert function == "newest"


def test_a_computed_value_is_not_offered_as_a_likely_input() -> None:
    session = Session()
    session.call(
        "create_user",
        {"name": "Dana Reyes", "email": "Dana.Reyes@Example.TEST"},
        {"id": "u1", "email": "Dana.Reyes@Example.TEST"},
    )
    session.call("search", {"query": "dana.reyes@example.test"}, {"count": 1})
    result = templatize([session.steps], name="t")
    assert result.template.step("search_1").input == {"query": "@calc_lower_1"}
    assert "dana.reyes@example.test" not in [likely.value for likely in result.likely_inputs]
    assert "Dana Reyes" in [likely.value for likely in result.likely_inputs]  # a value the user chose stays one


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_transform_saved_over_mcp_computes_the_value_for_new_data(tmp_path: Any) -> None:
    import json

    from tests.callers import fixture_env
    from tests.gw import call, fixture_entry, gateway_env, stdio_gateway, write_config

    events = [
        {"id": "evt_19a7c3", "title": "deploy", "at": "2024-05-02T10:00:00Z"},
        {"id": "evt_4be210", "title": "rollback", "at": "2024-05-04T08:30:00Z"},
        {"id": "evt_88d0f1", "title": "incident", "at": "2024-05-03T22:45:00Z"},
    ]
    feed = json.dumps({"events": events})
    config = write_config(tmp_path / "mcp.json", {"features": fixture_entry("features", env=fixture_env(tmp_path))})
    db = f"sqlite:///{tmp_path / 'store.db'}"
    async with stdio_gateway(["--config", str(config)], gateway_env(db)) as gw:
        await call(gw, "features__echo", {"text": feed})
        await call(gw, "features__echo", {"text": "rollback"})  # the agent picked the newest event's title
        saved = await call(gw, "toolreel__save_template", {"name": "newest", "inputs": {"feed": feed}})
        answer = saved.structured_content or {}
        assert answer["saved"] is True, answer
        assert [i["kind"] for i in answer["inferred"] if i["step"] == "echo_2"] == ["transform"]
        later = [{"id": "evt_1", "title": "backup", "at": "2024-06-01T00:00:00Z"}, *events]
        later.append({"id": "evt_2", "title": "upgrade", "at": "2024-07-01T12:00:00+02:00"})
        run = await call(gw, "reel__newest", {"feed": json.dumps({"events": later})})
        assert not run.is_error, run.content
        assert json.loads(run.content[0].text) == "upgrade", run.content  # the newest of the new feed


def test_a_positional_ref_to_the_cheapest_item_becomes_a_pick_even_with_amounts_written_as_text() -> None:
    rates: list[JSON] = [
        {"object_id": "rate_a1", "provider": "UPS", "amount": "14.20"},
        {"object_id": "rate_b2", "provider": "USPS", "amount": "8.90"},
        {"object_id": "rate_c3", "provider": "DHL", "amount": "31.40"},
    ]
    session = session_with({"rate": "rate_b2"}, {"rates": rates})
    function, evidence = transform_of(session, "report_1", "$.rate")
    assert function == "min" and "smallest `amount`" in evidence


def test_no_pick_explains_a_value_every_item_has_nor_the_smallest_id() -> None:
    items: list[JSON] = [
        {"id": 2904411, "domain": "staging.kettle.shop", "target": "production"},
        {"id": 2904398, "domain": "kettle.shop", "target": "production"},
        {"id": 2910020, "domain": "kettle.shopping", "target": "production"},
    ]
    session = session_with({"domainId": 2904398, "target": "production"}, {"data": items})
    result = templatize([session.steps], name="t")
    assert [i for i in result.applied if i.kind == "transform"] == []


def two_recordings(lists: tuple[list[JSON], list[JSON]], picked: tuple[JSON, JSON]) -> TemplatizeResult:
    runs = []
    for n, (items, value) in enumerate(zip(lists, picked, strict=True)):
        session = Session(execution=f"e{n}")
        session.call("list_tickets", {"customer": "c1"}, {"data": items})
        session.call("reply", {"ticket_id": value, "text": "On its way."}, {"ok": True})
        runs.append(session.steps)
    return templatize(runs, name="t")


def test_the_newest_item_in_one_state_is_picked_among_those_in_that_state() -> None:
    first: list[JSON] = [
        {"id": 330901, "status": "open", "created": "2026-12-01T09:00:00+00:00"},
        {"id": 331450, "status": "open", "created": "2026-12-09T16:40:00+00:00"},
        {"id": 331500, "status": "closed", "created": "2026-12-10T08:00:00+00:00"},  # newer, but closed
    ]
    second: list[JSON] = [
        {"id": 329000, "status": "closed", "created": "2026-11-12T09:00:00+00:00"},
        {"id": 329777, "status": "open", "created": "2026-11-20T12:00:00+00:00"},
        {"id": 330050, "status": "open", "created": "2026-11-28T12:00:00+00:00"},
    ]
    result = two_recordings((first, second), (331450, 330050))
    found = [i for i in result.applied if i.kind == "transform"]
    assert [(i.step, i.input_path) for i in found] == [("reply_1", "$.ticket_id")]
    assert "newest `created` among those with `status` = 'open'" in found[0].evidence
    assert "ticket_id" not in result.template.inputs


def test_the_first_item_with_no_field_is_picked_when_nothing_plainer_explains_it() -> None:
    boost: JSON = {"id": "9"}
    first: list[JSON] = [
        {"id": "113601000000000001", "reblog": boost, "created": "2026-12-10T09:00:00.000Z"},
        {"id": "113600500000000002", "reblog": None, "created": "2026-12-09T18:30:00.000Z"},
        {"id": "113600000000000003", "reblog": None, "created": "2026-12-08T07:00:00.000Z"},
    ]
    second: list[JSON] = [
        {"id": "113700000000000010", "reblog": None, "created": "2026-12-12T11:00:00.000Z"},
        {"id": "113699000000000011", "reblog": boost, "created": "2026-12-11T10:00:00.000Z"},
    ]
    result = two_recordings((first, second), ("113600500000000002", "113700000000000010"))
    found = [i for i in result.applied if i.kind == "transform"]
    assert [(i.step, i.input_path) for i in found] == [("reply_1", "$.ticket_id")]
    assert "first item with no `reblog`" in found[0].evidence


def test_a_pick_over_all_items_is_plainer_than_one_among_the_items_in_one_state() -> None:
    rates: list[JSON] = [
        {"id": "rate_d21b", "carrier": "USPS", "rate": "9.85", "days": 2},
        {"id": "rate_6fb0", "carrier": "UPS", "rate": "11.40", "days": 4},
        {"id": "rate_26dc", "carrier": "USPS", "rate": "6.12", "days": 4},  # the cheapest; the slower USPS too
        {"id": "rate_33a8", "carrier": "FedEx", "rate": "24.10", "days": 2},
    ]
    function, evidence = transform_of(session_with({"rate": "rate_26dc"}, {"rates": rates}), "report_1", "$.rate")
    assert function == "min" and "among" not in evidence


def test_a_page_size_equal_to_a_sum_stays_a_page_size() -> None:
    users: list[JSON] = [{"id": 1, "requests": 3}, {"id": 12, "requests": 12}, {"id": 9, "requests": 5}]
    session = Session()
    session.call("list_users", {"take": 50}, {"results": users})
    session.call("list_requests", {"requestedBy": 9, "take": 20}, {"results": []})  # 3 + 12 + 5, by chance
    result = templatize([session.steps], name="t")
    assert [i for i in result.applied if i.kind == "transform"] == []
    assert result.template.step("list_requests_1").input["take"] == 20


def test_the_newest_release_is_picked_comparing_versions_part_by_part_without_pre_releases() -> None:
    components: list[JSON] = [
        {"id": "c-182", "version": "1.8.2"},
        {"id": "c-1100", "version": "1.10.0"},  # newer than 1.9.4, though it sorts before it as text
        {"id": "c-194", "version": "1.9.4"},
        {"id": "c-200rc", "version": "2.0.0-RC1"},  # a pre-release: not a release
    ]
    function, evidence = transform_of(
        session_with({"version": "1.10.0"}, {"items": components}), "report_1", "$.version"
    )
    assert function == "newest" and "newest release `version`" in evidence
