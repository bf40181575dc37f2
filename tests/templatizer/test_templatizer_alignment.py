"""The element a call acts on: picked by what names it, and the values of other elements kept out of its call."""

from __future__ import annotations

from tests.recorded import Session, inputs_of
from toolreel.core.model import JSON
from toolreel.templatizer import templatize, verify

_DEVICES = (
    ("build-runner-01", "nQm4x7CNTRL", "Yes", "tag:ci"),
    ("mara-mbp", "nT2kz9CNTRL", "Yes", "none"),
    ("build-runner-02", "nH8pw3CNTRL", "No", "none"),
    ("nas-office", "nB5rv1CNTRL", "Yes", "tag:storage"),
)


def test_a_section_is_picked_by_its_heading() -> None:
    text = "Found 4 devices:\n\n" + "\n\n".join(
        f"## {name}\n**ID:** {device}\n**Authorized:** {authorized}\n**Tags:** {tags}"
        for name, device, authorized, tags in _DEVICES
    )
    s = Session()
    s.call("list_devices", {}, text)
    s.call("authorize_device", {"deviceId": "nH8pw3CNTRL"}, "Device nH8pw3CNTRL authorized")
    result = templatize([s.steps], name="t")
    pick = result.template.step("pick_build_runner_02")
    assert pick.input == {"items": "@list_devices_1_rows", "key": "heading", "value": "build-runner-02"}
    assert inputs_of(result)["authorize_device_1"] == {"deviceId": "@pick_build_runner_02.ID"}
    assert {item.value: item.ticked for item in result.likely_inputs}["build-runner-02"] is True


def test_a_weak_value_of_another_element_is_no_ref_beside_the_id_of_the_element_acted_on() -> None:
    devices: list[JSON] = [
        {"hostname": name, "id": device, "authorized": authorized, "tags": tags}
        for name, device, authorized, tags in _DEVICES
    ]
    s = Session()
    s.call("list_devices", {}, {"devices": devices})
    # the user's tag for the third device: equal by chance to the first device's tags
    s.call("set_device_tags", {"deviceId": "nH8pw3CNTRL", "tags": ["tag:ci"]}, "ok")
    result = templatize([s.steps], name="t")
    arguments = inputs_of(result)["set_device_tags_1"]
    assert isinstance(arguments, dict) and arguments["tags"] == ["tag:ci"]
    assert all("devices[0]" not in str(inference.ref) for inference in result.applied)


def test_the_element_whose_field_is_the_text_the_user_gave_is_picked_among_near_misses() -> None:
    questions = ("How do I change my billing address?", "How do I change my billing email?", "Where are invoices?")
    results: list[JSON] = [
        {"uuid": f"0a9b8c7d-6e5f-4d3c-9b2a-1f0e9d8c7b6{i}", "properties": {"question": q, "locale": "en"}}
        for i, q in enumerate(questions)
    ]
    s = Session()
    asked = questions[1]
    s.call("query_hybrid", {"query": asked, "collection_name": "SupportFAQ"}, {"results": results})
    upsert = {"id": "0a9b8c7d-6e5f-4d3c-9b2a-1f0e9d8c7b61", "properties": {"question": asked, "answer": "Settings."}}
    s.call("objects_upsert", {"collection_name": "SupportFAQ", "objects": [upsert]}, {"ok": True})
    result = templatize([s.steps], name="t", inputs={"query": asked})
    pick = next(step for step in result.template.steps if step.name.startswith("pick_"))
    assert pick.input == {"items": "@query_hybrid_1.results", "key": "properties.question", "value": "@input.query"}
    objects = inputs_of(result)["objects_upsert_1"]
    assert isinstance(objects, dict) and objects["objects"] == [
        {"id": f"@{pick.name}.uuid", "properties": {"question": "@input.query", "answer": "Settings."}}
    ]
    assert verify(result, [s.steps]).verified


def test_a_walk_with_a_short_name_in_it_still_walks_the_whole_list() -> None:
    # `li.wang` alone is too weak to be found, but its siblings read the members around the same text.
    s = Session()
    members = ["mara.kowalski", "li.wang", "sam.adeyemi"]
    s.call("get_group", {"name": "billing-core"}, {"spec": {"members": members}})
    for member in members:
        s.call("create_message", {"toPersonEmail": f"{member}@kettle.dev", "markdown": "Heads-up"}, {"id": member})
    result = templatize([s.steps], name="t")
    loop = result.template.step("create_message_each")
    assert loop.for_each == "@get_group_1.spec.members"
    assert loop.input == {"toPersonEmail": "{{@item}}@kettle.dev", "markdown": "Heads-up"}
    assert "li.wang@kettle.dev" not in {item.value for item in result.likely_inputs}
    assert verify(result, [s.steps]).verified
    # a literal no element reads the same way stays what it was: no loop over a list it does not walk
    s2 = Session()
    s2.call("get_group", {"name": "billing-core"}, {"spec": {"members": members}})
    for sent in ("mara.kowalski@kettle.dev", "ops@kettle.dev", "sam.adeyemi@kettle.dev"):
        s2.call("create_message", {"toPersonEmail": sent, "markdown": "Heads-up"}, {"id": sent})
    steps = {step.name: step for step in templatize([s2.steps], name="t").template.steps}
    assert "create_message_each" not in steps and steps["create_message_2"].input["toPersonEmail"] == "ops@kettle.dev"
