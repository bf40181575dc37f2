"""Nineteenth pass: with several recordings, a string whose words the recordings share is a frame around the parts
that change (each a ref or an input), not one input; the elements a call handles are never told apart by what
that call's own answer lists (a cycle the template checker refuses); and an address or a scope sent to each item
of a loop is the user's, not the loop's fixed wording."""

from __future__ import annotations

from tests.recorded import Session, inputs_of, saved
from toolreel.core.model import StepRecord
from toolreel.templatizer import templatize

READS = frozenset({"crm__search_requesters", "hosts__search_hosts"})


def _laptop(email: str, requester: int, laptop: str, centre: str) -> Session:
    s = Session()
    s.call(
        "search_requesters", {"query": f"primary_email:'{email}'"}, {"requesters": [{"id": requester}]}, server="crm"
    )
    ticket = {"requester_id": requester, "description": f"{laptop} for Lena, cost centre {centre}"}
    s.call("create_ticket", ticket, {"id": 9}, server="crm")
    return s


def _two() -> list[list[StepRecord]]:
    first = _laptop("lena.roth@acme.dev", 17, "MacBook Pro 14 M5", "CC-4410")
    second = _laptop("omar.said@acme.dev", 23, "Dell XPS 13", "CC-7001")
    return [first.steps, second.steps]


def test_the_parts_that_change_between_recordings_are_inputs_inside_the_words_that_do_not() -> None:
    result = templatize(_two(), name="t", read_only=READS)
    query = inputs_of(result)["search_requesters_1"]
    assert isinstance(query, dict) and query["query"] == "primary_email:'{{@input.primary_email}}'"
    ticket = inputs_of(result)["create_ticket_1"]
    assert isinstance(ticket, dict) and ticket["requester_id"] == "@search_requesters_1.requesters[0].id"
    assert ticket["description"] == "{{@input.description}} for Lena, cost centre {{@input.description_2}}"
    assert result.input_values == {
        "primary_email": "lena.roth@acme.dev",
        "description": "MacBook Pro 14 M5",
        "description_2": "CC-4410",
    }
    assert result.run_inputs[1]["description"] == "Dell XPS 13"


def test_texts_that_share_no_word_stay_one_input() -> None:
    first, second = Session(), Session()
    first.call("notify", {"text": "Build 4.2 is ready to try"}, {"ok": True}, server="push")
    second.call("notify", {"text": "Your early access starts today"}, {"ok": True}, server="push")
    result = templatize([first.steps, second.steps], name="t")
    assert inputs_of(result)["notify_1"] == {"text": "@input.text"}


def test_the_elements_a_call_handles_are_not_told_apart_by_its_own_answer() -> None:
    s = Session()
    ids = [f"8f1a0c2e4b6d4e0f9a1b2c3d4e5f600{n}" for n in range(1, 5)]
    hosts = [{"device_id": d, "hostname": f"build-0{n}", "status": "normal"} for n, d in enumerate(ids, 1)]
    s.call("search_hosts", {"filter": "hostname:'build-*'"}, {"resources": hosts}, server="hosts")
    echoed = [{"device_id": ids[1], "updated": True}, {"device_id": ids[3], "updated": True}]
    s.call("tag_hosts", {"ids": [ids[1], ids[3]], "tags": ["stale"]}, echoed, server="hosts")
    result = templatize([s.steps], name="t", read_only=READS)  # raised a cycle error before
    for step in result.template.steps:
        refs = str(step.input)
        assert "@tag_hosts_1" not in refs, (step.name, refs)


def _assign_each(field: str, value: str) -> Session:
    s = Session()
    s.call(
        "query", {"wiql": "SELECT [System.Id] FROM WorkItems"}, {"workItems": [{"id": n} for n in (4412, 4419, 4433)]}
    )
    for n in (4412, 4419, 4433):
        s.call("update", {"id": n, field: value}, {"id": n, "rev": 3})
    return s


def test_an_address_each_item_of_a_loop_is_given_is_the_users() -> None:
    result = saved(_assign_each("assigned_to", "dana@fabrikam.com"), frozenset({"svc__query"}))
    assert "dana@fabrikam.com" in result.input_values.values()


def test_a_scope_each_item_of_a_loop_is_filed_in_is_the_users() -> None:
    first = templatize([_assign_each("project", "Fabrikam Fiber").steps], name="t", read_only=frozenset({"svc__query"}))
    chosen = {item.value: item.ticked for item in first.likely_inputs}
    assert chosen.get("Fabrikam Fiber") is True, chosen


def test_the_address_each_message_is_sent_from_is_not_an_input() -> None:
    first = templatize(
        [_assign_each("from", "billing@kettle.coffee").steps], name="t", read_only=frozenset({"svc__query"})
    )
    assert not any(item.value == "billing@kettle.coffee" and item.ticked for item in first.likely_inputs)
