"""The templatizer's refs: each kind of candidate, each filter against coincidences, and secrets an earlier step
produced."""

from __future__ import annotations

import pytest

from tests.recorded import Session, applied, candidates, inputs_of, reproduces
from toolreel.core.model import JSON
from toolreel.core.secrets import REDACTED
from toolreel.templatizer import templatize

# --------------------------------------------------------------------------- candidates


def test_a_typed_exact_id_becomes_a_ref_with_evidence() -> None:
    s = Session()
    s.call("create_user", {"name": "Ann"}, {"id": "usr_9f8e7d6c5b4a", "name": "Ann"})
    s.call("get_user", {"user_id": "usr_9f8e7d6c5b4a"}, {"id": "usr_9f8e7d6c5b4a"})
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["get_user_1"] == {"user_id": "@create_user_1.id"}
    (inference,) = result.applied
    assert (inference.kind, inference.confidence) == ("exact", "high")
    assert "output $.id of step create_user_1 -> input $.user_id" in inference.evidence
    reproduces(result, s.steps)


def test_a_long_number_passed_on_as_text_becomes_an_interpolated_ref() -> None:
    s = Session()
    s.call("create_ticket", {"title": "Printer jam"}, {"number": 4815162342})
    s.call("comment", {"ticket": "4815162342", "body": "on it"}, {"ok": True})
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["comment_1"] == {"ticket": "{{@create_ticket_1.number}}", "body": "on it"}
    (inference,) = [i for i in result.applied if (i.step, i.input_path) == ("comment_1", "$.ticket")]
    assert (inference.kind, inference.confidence) == ("coerced", "high")
    reproduces(result, s.steps)


def test_text_passed_on_as_a_number_is_cast_by_a_code_step() -> None:
    """A ref keeps the string type: "4815162342" becomes the number through a `code` step that casts it."""
    s = Session()
    s.call("create_ticket", {"title": "Printer jam"}, {"number": "4815162342"})
    s.call("comment", {"ticket": 4815162342, "body": "on it"}, {"ok": True})
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["comment_1"] == {"ticket": "@calc_number_1", "body": "on it"}
    assert inputs_of(result)["calc_number_1"] == {"text": "@create_ticket_1.number"}
    (transform,) = [i for i in result.applied if i.kind == "transform"]
    assert transform.confidence == "high" and "the number written in" in transform.evidence
    (candidate,) = result.candidates
    assert (candidate.ref, candidate.kind, candidate.confidence) == ("@create_ticket_1.number", "coerced", "medium")


def test_a_decimal_amount_copied_into_a_sentence_becomes_a_ref_but_not_inside_a_version() -> None:
    s = Session()
    s.call("create_order", {"sku": "cheese"}, {"order_id": "ord_5d4c3b2a", "total": 5.7})
    s.call("notify", {"text": "Your order totals 5.7 EUR"}, {"ok": True})
    s.call("notify", {"text": "Running release 5.7.1"}, {"ok": True})
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["notify_1"] == {"text": "Your order totals {{@create_order_1.total}} EUR"}
    assert inputs_of(result)["notify_2"] == {"text": "Running release 5.7.1"}
    reproduces(result, s.steps)


def test_a_whole_object_equal_to_an_output_subtree_becomes_one_ref() -> None:
    address = {"street": "12 Long Road", "city": "Springfield", "zip": "90210"}
    s = Session()
    s.call("get_customer", {"id": "cus_1a2b3c4d"}, {"id": "cus_1a2b3c4d", "address": address})
    s.call("create_shipment", {"ship_to": dict(address), "weight": 12}, {"shipment": "shp_77aa88bb"})
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["create_shipment_1"] == {"ship_to": "@get_customer_1.address", "weight": 12}
    assert applied(result)[("create_shipment_1", "$.ship_to")] == "@get_customer_1.address"
    assert result.applied[0].kind == "subtree"


def test_a_bounded_substring_becomes_an_interpolation() -> None:
    s = Session()
    s.call("make_dir", {"name": "run"}, {"dir": "/srv/data/run-2024-abc"})
    s.call("write", {"path": "/srv/data/run-2024-abc/out.txt", "text": "x"}, {"ok": True})
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["write_1"] == {"path": "{{@make_dir_1.dir}}/out.txt", "text": "x"}
    assert result.applied[0].kind == "substring"
    reproduces(result, s.steps)


def test_a_substring_never_cuts_a_word() -> None:
    s = Session()
    s.call("mint", {}, {"code": "abcd1234"})
    s.call("say", {"text": "xabcd1234y and abcd12345"}, {"ok": True})
    assert templatize([s.steps], name="t").applied == ()


# --------------------------------------------------------------------------- filters


@pytest.mark.parametrize(
    ("output", "args"),
    [
        ({"ok": True, "none": None, "empty": ""}, {"ok": True, "none": None, "empty": ""}),
        ({"count": 7}, {"count": 7}),
        ({"created_at": "2024-05-01T10:00:00Z"}, {"since": "2024-05-01T10:00:00Z"}),
        ({"_meta": {"trace": "abcdef123456"}}, {"trace": "abcdef123456"}),
        ({"request_id": "req-8f7e6d5c4b"}, {"request_id": "req-8f7e6d5c4b"}),
        ({"next_cursor": "c-xyz-123456789"}, {"note": "c-xyz-123456789"}),
    ],
    ids=["bool-null-empty", "small-int", "timestamp", "_meta", "request-id", "cursor-to-non-cursor"],
)
def test_coincidences_never_become_refs(output: JSON, args: dict[str, JSON]) -> None:
    s = Session()
    s.call("produce", {}, output)
    s.call("consume", args, {"done": True})
    result = templatize([s.steps], name="t")
    assert result.applied == () and result.candidates == ()
    assert inputs_of(result)["consume_1"] == args


def test_a_cursor_links_to_a_cursor() -> None:
    # (another tool's call: the same tool's next call would be the next page of one paged read)
    s = Session()
    s.call("list", {"limit": 2}, {"items": [1, 2], "next_cursor": "c-xyz-123456789"})
    s.call("list_more", {"limit": 2, "cursor": "c-xyz-123456789"}, {"items": [3]})
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["list_more_1"] == {"limit": 2, "cursor": "@list_1.next_cursor"}


def test_a_value_produced_in_many_places_is_weaker_evidence() -> None:
    orders = [{"id": f"ord_{i:08d}", "status": "shipped"} for i in range(12)]
    once = Session()
    once.call("get_order", {"id": "ord_00000001"}, {"id": "ord_00000001", "status": "shipped"})
    once.call("notify", {"status": "shipped"}, {"ok": True})
    assert candidates(templatize([once.steps], name="t")) == {("notify_1", "$.status"): "@get_order_1.status"}
    many = Session()
    many.call("list_orders", {}, {"orders": orders})
    many.call("notify", {"status": "shipped"}, {"ok": True})
    result = templatize([many.steps], name="t")
    assert result.applied == () and result.candidates == ()


def test_a_value_the_server_only_echoed_is_not_a_ref() -> None:
    s = Session()
    s.call("create_user", {"email": "alice@x.test"}, {"id": "usr_5a5a5a5a5a", "email": "alice@x.test"})
    s.call("invite", {"email": "alice@x.test", "user": "usr_5a5a5a5a5a"}, {"ok": True})
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["invite_1"] == {"email": "alice@x.test", "user": "@create_user_1.id"}
    (likely,) = result.likely_inputs
    assert (likely.name, likely.value, likely.type) == ("email", "alice@x.test", "string")
    assert set(likely.used_at) == {("create_user_1", "$.email"), ("invite_1", "$.email")}


def test_key_names_pick_the_path_and_recency_the_producer() -> None:
    s = Session()
    s.call("a", {}, {"parent_id": "grp_123456789", "user_id": "usr_123456789"})
    s.call("b", {}, {"owner": "usr_123456789"})
    s.call("c", {"user_id": "usr_123456789", "member": "usr_123456789"}, {})
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["c_1"] == {"user_id": "@a_1.user_id", "member": "@b_1.owner"}


# --------------------------------------------------------------------------- secrets produced by a step


def test_a_token_produced_by_an_earlier_step_becomes_a_ref_not_an_input() -> None:
    s = Session()
    s.call("login", {"user": "ann", "password": REDACTED}, {"session_token": REDACTED}, redacted=("$.password",))
    s.call(
        "list_files", {"session_token": REDACTED, "dir": "/srv/reports"}, {"files": []}, redacted=("$.session_token",)
    )
    s.call("whoami", {"auth_token": REDACTED}, {"user": "ann"}, redacted=("$.auth_token",))
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["list_files_1"] == {"session_token": "@login_1.session_token", "dir": "/srv/reports"}
    assert inputs_of(result)["whoami_1"] == {"auth_token": "@login_1.session_token"}
    assert set(result.template.inputs) == {"password"}  # the user's own secret stays an input
    assert result.template.inputs["password"].secret
    reproduces(result, s.steps)


def test_a_redacted_value_under_an_unrelated_key_stays_a_secret_input() -> None:
    s = Session()
    s.call("login", {"user": "ann"}, {"session_token": REDACTED})
    s.call("charge", {"card_number": "4111", "api_key": REDACTED}, {"ok": True}, redacted=("$.api_key",))
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["charge_1"] == {"card_number": "4111", "api_key": "@input.api_key"}


def test_a_ref_the_agent_wrote_under_a_secret_key_stays_a_ref() -> None:
    s = Session()
    s.call("login", {"user": "ann"}, {"session_token": REDACTED})
    s.call(
        "list_files",
        {"session_token": REDACTED},
        {"files": []},
        written={"session_token": "@login_1.session_token"},
        redacted=("$.session_token",),
    )
    result = templatize([s.steps], name="t")
    assert inputs_of(result)["list_files_1"] == {"session_token": "@login_1.session_token"}
    assert result.template.inputs == {}
    reproduces(result, s.steps)
