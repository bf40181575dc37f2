"""Picks, twelfth pass: of two payments the agent captured the `authorized` one, which nothing but its status sets
apart, so the template picks it by that status and the capture is skipped where no payment is in it; a JSON:API
element is named by the fields inside its `attributes`; the element whose number the agent quotes as the largest
is the one picked, before a name that merely sets it apart; a trace's id is an entity's id, not a request's; and a
string a query searches for that the agent writes again in its own words is the user's."""

from __future__ import annotations

from typing import Any

from tests.recorded import Session, applied
from toolreel.core.sandbox import CodeLimits, run_code
from toolreel.core.template_io import template_to_dict
from toolreel.templatizer import TemplatizeResult, templatize, verify

_LIMITS = CodeLimits(timeout=5.0, memory_mb=32)


def saved(s: Session, read_only: frozenset[str] = frozenset()) -> TemplatizeResult:
    first = templatize([s.steps], name="t", read_only=read_only)
    chosen = first.ticked_inputs
    result = templatize([s.steps], name="t", inputs=chosen, read_only=read_only) if chosen else first
    assert verify(result, [s.steps]).verified
    return result


def _steps(result: TemplatizeResult) -> dict[str, dict[str, Any]]:
    return {step["name"]: step for step in template_to_dict(result.template)["steps"]}


def _payment(pid: str, status: str, method: str) -> dict[str, Any]:
    return {"id": pid, "amount": 499900, "currency": "INR", "status": status, "method": method, "email": "r@x.in"}


def _captured_by_state() -> TemplatizeResult:
    s = Session()
    payments = [_payment("pay_Nq8yA1b2C3d4E5", "failed", "card"), _payment("pay_Nq8zF6g7H8i9J0", "authorized", "upi")]
    s.call("fetch_order_payments", {"order_id": "order_Nq8xT2bLmZ0aQe"}, {"count": 2, "items": payments})
    s.call("capture_payment", {"payment_id": "pay_Nq8zF6g7H8i9J0", "amount": 499900, "currency": "INR"}, {"ok": 1})
    return saved(s, frozenset({"t__fetch_order_payments"}))


def test_of_two_elements_the_one_only_its_status_sets_apart_is_picked_by_that_status() -> None:
    result = _captured_by_state()
    (pick,) = result.picks
    assert (pick.key, pick.value, pick.state) == ("status", "authorized", True)
    capture = _steps(result)["capture_payment_1"]
    assert capture["input"]["payment_id"] == f"@{pick.step}.id"
    # another world: the authorized payment comes third; one where none is authorized gives nothing to capture
    code = _steps(result)[pick.step]["code"]
    given = _steps(result)[pick.step]["input"]
    third = [
        _payment("pay_A", "failed", "card"),
        _payment("pay_B", "failed", "upi"),
        _payment("pay_C", "authorized", "upi"),
    ]
    assert run_code(code, {**given, "items": third}, _LIMITS)["id"] == "pay_C"
    assert run_code(code, {**given, "items": [_payment("pay_D", "captured", "card")]}, _LIMITS) is None


def test_a_write_on_the_element_a_state_picks_runs_only_when_the_pick_finds_one() -> None:
    result = _captured_by_state()
    (pick,) = result.picks
    capture = _steps(result)["capture_payment_1"]
    assert capture["when"] == {"ref": f"@{pick.step}"}
    assert any(step == "capture_payment_1" and "finds an element" in why for step, why in result.conditions)


def test_of_two_elements_with_different_names_the_status_is_no_pick() -> None:
    s = Session()
    repos = [
        {"id": 9001, "name": "kettle-api", "status": "archived"},
        {"id": 9002, "name": "kettle-web", "status": "active"},
    ]
    s.call("list_repos", {"org": "kettle"}, repos)
    s.call("get_repo", {"repo_id": 9002}, {"id": 9002})
    result = templatize([s.steps], name="t")
    assert [(p.key, p.state) for p in result.picks] == [("name", False)]


def test_a_json_api_element_is_named_by_a_field_inside_its_attributes() -> None:
    s = Session()

    def subscription(sid: str, product: str) -> dict[str, Any]:
        attributes = {"product_name": product, "user_name": "Jo Park", "status": "active", "store_id": 31}
        return {"type": "subscriptions", "id": sid, "attributes": attributes}

    data = [subscription("1021", "Pro plan (legacy)"), subscription("1388", "Pro plan")]
    s.call("list_subscriptions", {"user_email": "jo@studio.example"}, {"data": data})
    s.call("update_subscription", {"id": "1388", "pause": {"mode": "free"}}, {"data": {"id": "1388"}})
    result = templatize([s.steps], name="t")
    assert [(p.key, p.value) for p in result.picks] == [("attributes.product_name", "Pro plan")]
    proposed = {item.value: item.ticked for item in result.likely_inputs}
    assert proposed.get("Pro plan") is True  # which subscription: the user's choice


def _traces() -> Session:
    s = Session()
    traces = [
        {
            "traceID": "2f3e0cb6a6a91a5b7c1d",
            "rootServiceName": "checkout",
            "rootTraceName": "POST /pay",
            "durationMs": 1840,
        },
        {
            "traceID": "9a8b7c6d5e4f30211e0f",
            "rootServiceName": "frontend",
            "rootTraceName": "GET /cart",
            "durationMs": 4312,
        },
        {
            "traceID": "0c1d2e3f4a5b6c7d8e9f",
            "rootServiceName": "checkout",
            "rootTraceName": "POST /pay",
            "durationMs": 912,
        },
    ]
    s.call("traceql_search", {"query": '{ resource.service.name = "checkout" && status = error }'}, {"traces": traces})
    text = "Slowest failing checkout trace: GET /cart (frontend) took 4312 ms - https://g.example/explore?traceId="
    s.call("send_message", {"space": "spaces/AAAAq3kTz8E", "text": text + "9a8b7c6d5e4f30211e0f"}, {"name": "m/1"})
    return s


def test_the_element_whose_quoted_number_is_the_largest_is_picked_before_an_odd_name() -> None:
    result = saved(_traces())
    assert [(p.key, p.best) for p in result.picks] == [("durationMs", "max")]


def test_a_trace_id_is_an_id_a_later_call_may_carry() -> None:
    result = saved(_traces())
    assert applied(result)[("send_message_1", "$.text")].endswith("traceId={{@traceql_search_1.traces[1].traceID}}")
    assert _steps(result)["send_message_1"]["input"]["text"].endswith("traceId={{@pick_max_durationms.traceID}}")


def test_a_quoted_query_string_the_agent_writes_again_is_an_input_and_the_query_is_built_on_it() -> None:
    result = saved(_traces())
    assert result.input_values == {"name": "checkout"}
    steps = _steps(result)
    assert (
        steps["traceql_search_1"]["input"]["query"] == '{ resource.service.name = "{{@input.name}}" && status = error }'
    )
    assert steps["send_message_1"]["input"]["text"].startswith("Slowest failing {{@input.name}} trace")


def test_a_quoted_query_string_written_nowhere_else_stays_unticked() -> None:
    s = Session()
    s.call("traceql_search", {"query": '{ resource.service.name = "checkout" && status = error }'}, {"traces": []})
    s.call("send_message", {"space": "spaces/AAAAq3kTz8E", "text": "No failing traces today."}, {"name": "m/1"})
    result = templatize([s.steps], name="t")
    assert "checkout" not in result.ticked_inputs.values()


def test_a_list_inside_a_picked_element_is_picked_from_by_name_too() -> None:
    s = Session()

    def pipeline(pid: int, name: str, stages: list[str]) -> dict[str, Any]:
        return {"id": pid, "name": name, "stages": [{"id": pid * 10 + i, "name": n} for i, n in enumerate(stages)]}

    pipelines = [
        pipeline(300001, "Sales (partners)", ["Lead", "Qualified", "Won"]),
        pipeline(300002, "Onboarding", ["Start", "Done"]),
        pipeline(300003, "Sales", ["Lead", "Qualified", "Proposal", "Won"]),
    ]
    s.call("list_pipelines", {}, pipelines)
    s.call("create_opportunity", {"name": "Deal", "pipeline_id": 300003, "pipeline_stage_id": 3000031}, {"id": 1})
    result = saved(s)
    steps = _steps(result)
    opportunity = steps["create_opportunity_1"]["input"]
    assert opportunity["pipeline_id"] == "@pick_sales.id"
    stage = opportunity["pipeline_stage_id"]
    assert stage.startswith("@pick_") and stage != "@pick_sales.id"
    inner = steps[stage[1:].split(".")[0]]["input"]
    assert inner["items"] == "@pick_sales.stages" and inner["key"] == "name"
    assert inner["value"] == "Qualified" or result.input_values[inner["value"].removeprefix("@input.")] == "Qualified"
