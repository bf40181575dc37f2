"""Fourteenth pass: a sentence a query writes (a GraphQL mutation's `_set`, SQL's UPDATE) is the user's text, a
filter's operator (`email: {_eq: "…"}`) names no input, and a title shared by look-alikes is picked together with
its year."""

from __future__ import annotations

from typing import Any

from tests.recorded import Session, saved, selected_by
from toolreel.core.template_io import template_to_dict

READ = 'query { orders(where: {customer: {email: {_eq: "sven@example.se"}}, status: {_eq: "pending"}}) { id } }'
WRITE = (
    'mutation { update_orders_by_pk(pk_columns: {id: 40377}, _set: {status: "cancelled",'
    ' cancel_reason: "Customer asked by phone"}) { id status } }'
)


def test_a_sentence_a_mutation_sets_is_a_value_and_an_operator_names_no_field() -> None:
    assert selected_by(WRITE)["cancel_reason"] == "Customer asked by phone"
    assert selected_by(READ) == {"email": "sven@example.se", "status": "pending"}  # not `_eq`
    # a sentence a read compares is not taken for the user's: only what a write sets
    assert "note" not in selected_by('query { notes(where: {note: {_eq: "Customer asked by phone"}}) { id } }')
    assert selected_by("UPDATE tickets SET reason = 'Customer asked by phone' WHERE id = 7")["reason"] == (
        "Customer asked by phone"
    )


def test_the_user_text_of_a_mutation_on_a_picked_order_is_an_input() -> None:
    s = Session()
    orders = [
        {"id": 40211, "created_at": "2026-12-02T09:14:22+00:00", "status": "pending"},
        {"id": 40377, "created_at": "2026-12-11T16:40:05+00:00", "status": "pending"},
    ]
    s.call("run_graphql_query", {"query": READ}, {"data": {"orders": orders}})
    s.call("run_graphql_mutation", {"query": WRITE}, {"data": {"update_orders_by_pk": {"id": 40377}}})
    result = saved(s)
    assert result.input_values["email"] == "sven@example.se"
    reason = next(name for name, value in result.input_values.items() if value == "Customer asked by phone")
    mutation = result.template.step("run_graphql_mutation_1").input
    assert isinstance(mutation, dict)
    assert f'cancel_reason: "{{{{@input.{reason}}}}}"' in str(mutation["query"])


def _series() -> list[dict[str, Any]]:
    return [
        {"id": 71, "title": "Doctor Who", "year": 1963, "status": "ended", "seasonCount": 26},
        {"id": 12, "title": "Doctor Who", "year": 2005, "status": "ended", "seasonCount": 13},
        {"id": 230, "title": "Doctor Who", "year": 2023, "status": "continuing", "seasonCount": 2},
        {"id": 45, "title": "Doctor Who Confidential", "year": 2005, "status": "ended", "seasonCount": 6},
    ]


def test_a_title_shared_by_look_alikes_is_picked_with_its_year() -> None:
    s = Session()
    s.call("get_series", {}, _series())
    s.call("get_episodes", {"seriesId": 12, "seasonNumber": 4}, [])
    result = saved(s)
    template = template_to_dict(result.template)
    pick = next(step for step in template["steps"] if step["name"].startswith("pick_"))
    assert pick["input"]["key"] == "title" and pick["input"]["also"] == [["year", "@input.year"]]
    assert result.input_values["year"] == 2005  # a number, as the element holds it
    assert template["inputs"]["year"]["type"] == "integer"
