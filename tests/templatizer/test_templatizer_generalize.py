"""The templatizer on cases its first corpus did not show: typed numbers, values of one output travelling
together, and the folder a session makes.

Each test builds a recording the way the recorder names steps and checks what a plain save gets.
"""

from __future__ import annotations

from tests.recorded import Session, applied, inputs_of, reproduces
from toolreel.core.model import JSON
from toolreel.templatizer import TemplatizeResult, templatize


def likely(result: TemplatizeResult) -> dict[str, JSON]:
    return {item.name: item.value for item in result.likely_inputs}


def test_amounts_the_user_typed_are_likely_inputs_and_the_sentence_holding_them_is_not() -> None:
    s = Session()
    s.call("echo", {"message": "Adding 1250 and 4380 for the invoice"}, "Echo: Adding 1250 and 4380 for the invoice")
    s.call("add", {"a": 1250, "b": 4380}, "The sum is 5630.")
    first = templatize([s.steps], name="t")
    assert likely(first) == {"a": 1250, "b": 4380}
    assert {item.type for item in first.likely_inputs} == {"integer"}

    saved = templatize([s.steps], name="t", inputs=likely(first))
    assert inputs_of(saved) == {
        "echo_1": {"message": "Adding {{@input.a}} and {{@input.b}} for the invoice"},
        "add_1": {"a": "@input.a", "b": "@input.b"},
    }
    reproduces(saved, s.steps)


def test_knobs_small_counts_and_round_settings_are_not_proposed() -> None:
    s = Session()
    s.call("search", {"query": "printers", "limit": 250, "timeout_ms": 4500, "qty": 12, "page_size": 100}, {"hits": []})
    s.call("report", {"year": 2026, "batch": 500, "retries": 3, "width": 800}, {"ok": True})
    found = likely(templatize([s.steps], name="t"))
    assert found == {"query": "printers", "year": 2026}


def test_a_round_number_under_an_amount_key_is_still_the_users() -> None:
    s = Session()
    s.call("transfer", {"amount": 500, "to": "acct_7f6e5d4c"}, {"ok": True})
    assert likely(templatize([s.steps], name="t")) == {"amount": 500, "to": "acct_7f6e5d4c"}


def test_a_number_an_earlier_output_holds_is_never_proposed_as_the_users() -> None:
    s = Session()
    s.call("stats", {"city": "Lyon"}, {"visitors": 4821})
    s.call("chart", {"value": 4821}, {"ok": True})
    result = templatize([s.steps], name="t")
    assert "value" not in likely(result)
    assert applied(result)[("chart_1", "$.value")] == "@stats_1.visitors"


def test_two_small_numbers_of_one_output_passed_on_together_are_refs() -> None:
    s = Session()
    s.call("weather", {"city": "Chicago"}, {"temperature": 36, "conditions": "Light rain", "humidity": 82})
    s.call("add", {"a": 36, "b": 82}, "118")
    result = templatize([s.steps], name="t", inputs={"city": "Chicago"})
    assert inputs_of(result)["add_1"] == {"a": "@weather_1.temperature", "b": "@weather_1.humidity"}
    reproduces(result, s.steps)


def test_one_small_number_alone_stays_a_literal() -> None:
    s = Session()
    s.call("weather", {"city": "Chicago"}, {"temperature": 36, "conditions": "Light rain", "humidity": 82})
    s.call("add", {"a": 36, "b": 5}, "41")
    result = templatize([s.steps], name="t", inputs={"city": "Chicago"})
    assert inputs_of(result)["add_1"] == {"a": 36, "b": 5}


def test_small_numbers_found_in_several_outputs_do_not_back_each_other() -> None:
    s = Session()
    s.call("weather", {"city": "Chicago"}, {"temperature": 36, "humidity": 82})
    s.call("weather", {"city": "Boston"}, {"temperature": 36, "humidity": 82})
    s.call("weather", {"city": "Denver"}, {"temperature": 36, "humidity": 82})
    s.call("add", {"a": 36, "b": 82}, "118")
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["add_1"] == {"a": 36, "b": 82}


def test_a_weak_value_beside_a_strong_one_of_the_same_output_in_a_sentence_is_a_ref() -> None:
    s = Session()
    s.call("order", {"sku": "milk"}, {"order_id": "ord_93be01f2c4", "total": 6.0})
    s.call("note", {"text": "ord_93be01f2c4 (6.0) is paid"}, "ok")
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["note_1"] == {"text": "{{@order_1.order_id}} ({{@order_1.total}}) is paid"}
    reproduces(result, s.steps)


def test_a_word_and_a_two_digit_number_of_one_output_in_a_sentence_are_refs() -> None:
    s = Session()
    s.call("weather", {"city": "Oslo"}, {"temperature": 33, "conditions": "Cloudy"})
    s.call("say", {"message": "Oslo: Cloudy, 33 degrees"}, "ok")
    result = templatize([s.steps], name="t", inputs={"city": "Oslo"})
    assert inputs_of(result)["say_1"] == {
        "message": "{{@input.city}}: {{@weather_1.conditions}}, {{@weather_1.temperature}} degrees"
    }
    reproduces(result, s.steps)


def test_a_lone_word_of_an_output_inside_a_sentence_stays_literal() -> None:
    s = Session()
    s.call("weather", {"city": "Oslo"}, {"temperature": 3, "conditions": "Cloudy"})
    s.call("say", {"message": "Cloudy skies ahead"}, "ok")
    result = templatize([s.steps], name="t", inputs={"city": "Oslo"})
    assert inputs_of(result)["say_1"] == {"message": "Cloudy skies ahead"}


def test_the_folder_a_session_makes_is_not_the_users_root() -> None:
    s = Session()
    s.call("create_directory", {"path": "/srv/app/logs"}, "Created /srv/app/logs")
    s.call("write_file", {"path": "/srv/app/logs/incidents.log", "content": "disk full"}, "ok")
    s.call("list_directory", {"path": "/srv/app/logs"}, "[FILE] incidents.log")
    result = templatize([s.steps], name="t")
    assert likely(result)["root_dir"] == "/srv/app"
    saved = templatize([s.steps], name="t", inputs=likely(result))
    assert inputs_of(saved)["create_directory_1"] == {"path": "{{@input.root_dir}}/logs"}
    reproduces(saved, s.steps)


def test_a_folder_only_used_is_the_root_itself() -> None:
    s = Session()
    s.call("list_directory", {"path": "/srv/app/logs"}, "[FILE] incidents.log")
    s.call("read_file", {"path": "/srv/app/logs/incidents.log"}, "disk full")
    assert likely(templatize([s.steps], name="t"))["root_dir"] == "/srv/app/logs"


def test_two_fields_of_one_output_joined_in_a_string_are_an_interpolation_not_code() -> None:
    s = Session()
    s.call("get_user", {"id": "u1"}, {"first": "Grace", "last": "Hopper", "id": "u1"})
    s.call("badge", {"label": "Hopper/Grace"}, {"ok": True})
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["badge_1"] == {"label": "{{@get_user_1.last}}/{{@get_user_1.first}}"}
    assert [step.name for step in result.template.steps] == ["get_user_1", "badge_1"]


def test_a_short_or_round_numeral_is_not_cast_into_a_number_argument() -> None:
    s = Session()
    s.call("settings", {}, {"page_size": "100", "retries": "3"})
    s.call("search", {"query": "printers", "limit": 100}, {"hits": []})
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["search_1"] == {"query": "printers", "limit": 100}
    assert [step.name for step in result.template.steps] == ["settings_1", "search_1"]
