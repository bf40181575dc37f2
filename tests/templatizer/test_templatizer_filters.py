"""Filters, twelfth pass: a filter's key names the field it filters (`categories:in`), and an entity named as a key
(`category`) takes the `id` of what the entity's tool listed; a record's own id and another record's reference to it
(`parent_id`) are one entity, not two candidates; and the elements a loop handled may be told apart by a number none
of them has left (`inventory_level == 0`), a state of the task."""

from __future__ import annotations

from typing import Any

from tests.recorded import Session, applied, saved
from toolreel.core.sandbox import CodeLimits, run_code
from toolreel.core.template_io import template_to_dict
from toolreel.templatizer import templatize
from toolreel.templatizer._values import key_similarity


def test_a_filter_key_is_read_without_its_operator_and_an_entity_key_takes_its_id() -> None:
    assert key_similarity("categories:in", "id", "get_categories") == 0.9
    assert key_similarity("project", "id", "list_projects") == 0.9
    assert key_similarity("price[gte]", "price", "list_products") == 1.0
    assert key_similarity("project", "id", "list_users") == 0.0  # another entity's id
    assert key_similarity("is_in", "id", "get_categories") < 0.9  # `in` alone is no operator suffix here


def _categories() -> list[dict[str, Any]]:
    return [
        {"id": 41, "parent_id": 0, "name": "Mugs & cups"},
        {"id": 23, "parent_id": 0, "name": "Mugs"},
        {"id": 57, "parent_id": 23, "name": "Travel mugs"},
    ]


def test_an_id_referenced_by_another_record_is_still_one_entity() -> None:
    s = Session()
    s.call("get_categories", {"name:like": "Mugs"}, {"data": _categories()})
    s.call("list_products", {"categories:in": "23", "is_visible": True}, {"data": []})
    result = saved(s)
    assert applied(result)[("list_products_1", '$["categories:in"]')] == "{{@get_categories_1.data[1].id}}"


def test_a_small_number_under_an_unrelated_key_stays_literal() -> None:
    s = Session()
    s.call("get_categories", {"name:like": "Mugs"}, {"data": _categories()})
    s.call("list_products", {"limit": "23", "is_visible": True}, {"data": []})
    result = templatize([s.steps], name="t")
    assert ("list_products_1", "$.limit") not in applied(result)


def _product(pid: int, level: int, tracking: str) -> dict[str, Any]:
    return {"id": pid, "name": f"Mug {pid}", "inventory_level": level, "inventory_tracking": tracking}


def test_elements_none_of_which_is_left_are_walked_with_the_state_that_sets_them_apart() -> None:
    s = Session()
    products = [_product(1101, 0, "product"), _product(1102, 12, "product"), _product(1107, 0, "none")]
    products.append(_product(1110, 0, "product"))
    s.call("list_products", {"categories:in": "23"}, {"data": products})
    s.call("update_product", {"product_id": 1101, "is_visible": False}, {"data": {"id": 1101}})
    s.call("update_product", {"product_id": 1110, "is_visible": False}, {"data": {"id": 1110}})
    result = saved(s)
    assert not result.unrolled and len(result.loops) == 1
    (select,) = [step for step in template_to_dict(result.template)["steps"] if step["name"].startswith("select_")]
    where = {c["key"]: c["value"] for c in select["input"]["where"]}
    assert where.keys() == {"inventory_level", "inventory_tracking"} and where["inventory_level"] == 0
    zero = next(item for item in result.likely_inputs if item.value == 0)
    assert not zero.ticked  # none left: a state of the task, not the user's choice


def test_a_shared_number_other_than_zero_is_no_condition() -> None:
    s = Session()
    products = [_product(1101, 3, "product"), _product(1102, 12, "product"), _product(1110, 3, "product")]
    s.call("list_products", {"categories:in": "23"}, {"data": products})
    s.call("update_product", {"product_id": 1101, "is_visible": False}, {"data": {"id": 1101}})
    s.call("update_product", {"product_id": 1110, "is_visible": False}, {"data": {"id": 1110}})
    result = templatize([s.steps], name="t")
    steps = template_to_dict(result.template)["steps"]
    assert not any(c.get("value") == 3 for step in steps for c in step.get("input", {}).get("where", []))


def _order(oid: int, paid: str | None, email: str) -> dict[str, Any]:
    return {"id": oid, "status": "processing", "date_paid": paid, "billing": {"email": email, "first_name": "Ana"}}


def test_the_paid_orders_of_one_address_written_two_ways_are_selected_by_both() -> None:
    s = Session()
    orders = [
        _order(4811, "2026-11-28T10:13:00", "hana.ruiz@mail.example"),
        _order(4807, "2026-11-27T18:01:00", "ana.ruiz@mail.example"),
        _order(4803, None, "ana.ruiz@mail.example"),
        _order(4799, "2026-11-26T09:30:00", "Ana.Ruiz@mail.example"),
    ]
    s.call("list_orders", {"status": "processing", "search": "ana.ruiz@mail.example"}, orders)
    for order in (4807, 4799):
        s.call("update_order", {"order_id": order, "status": "completed"}, {"id": order})
    result = saved(s)
    steps = {step["name"]: step for step in template_to_dict(result.template)["steps"]}
    (select,) = [step for name, step in steps.items() if name.startswith("select_")]
    where = {(c["key"], c["op"]): c["value"] for c in select["input"]["where"]}
    assert where == {("date_paid", "is set"): True, ("billing.email", "equals, case aside"): "@input.search"}
    other = [
        _order(5120, "2026-12-01T08:00:00", "li.wei@corp.example"),
        _order(5118, "2026-12-01T07:00:00", "li.weis@corp.example"),
        _order(5117, "2026-11-30T16:00:00", "LI.WEI@corp.example"),
        _order(5109, None, "li.wei@corp.example"),
    ]
    given = {
        "items": other,
        "where": [
            {**c, "value": "li.wei@corp.example"} if c["value"] == "@input.search" else c
            for c in select["input"]["where"]
        ],
    }
    kept = run_code(select["code"], given, CodeLimits(timeout=5.0, memory_mb=32))
    assert [order["id"] for order in kept] == [5120, 5117]
