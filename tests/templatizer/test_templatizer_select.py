"""Loops over the elements that two conditions keep (a region and a state, a name prefix and a type)."""

from __future__ import annotations

from typing import Any

from tests.recorded import Session
from toolreel.core.model import JSON, StepRecord
from toolreel.core.sandbox import run_code
from toolreel.templatizer import summary, templatize, verify
from toolreel.templatizer._select import SELECT_CODE, Condition, conditions_of

_REGIONS = ("ams", "fra", "ams", "ams", "iad", "ams", "fra")
_STATES = ("started", "started", "stopped", "started", "started", "started", "stopped")


def _machines(regions: tuple[str, ...], states: tuple[str, ...], salt: str) -> list[dict[str, Any]]:
    return [
        {"id": f"{salt}{i:02d}e2d6b795d8", "name": f"m-{salt}-{i}", "state": state, "region": region, "cpus": 1}
        for i, (region, state) in enumerate(zip(regions, states, strict=True))
    ]


def _stop_started(region: str, machines: list[dict[str, Any]], execution: str = "e1") -> list[StepRecord]:
    s = Session(execution=execution)
    s.call("machine_list", {"app": "kettle-api"}, machines)
    for machine in machines:
        if machine["region"] == region and machine["state"] == "started":
            s.call("machine_stop", {"app": "kettle-api", "id": machine["id"]}, f"{machine['id']} has been stopped")
    return s.steps


def test_the_elements_two_fields_tell_apart_are_walked_through_a_select_step() -> None:
    recording = _stop_started("ams", _machines(_REGIONS, _STATES, "a"))
    result = templatize([recording], name="t")
    select = result.template.step("select_machine_list_1")
    assert select.code is not None and select.input == {
        "items": "@machine_list_1",
        "where": [{"key": "state", "op": "==", "value": "started"}, {"key": "region", "op": "==", "value": "ams"}],
    }
    loop = result.template.step("machine_stop_each")
    assert (loop.for_each, loop.input) == ("@select_machine_list_1", {"app": "kettle-api", "id": "@item.id"})
    assert len(result.loops) == 1 and "region == 'ams'" in result.loops[0].why
    # the region is the user's choice for this run; the state is the task's own
    likely = {item.name: item for item in result.likely_inputs}
    assert likely["region"].ticked and likely["region"].value == "ams"
    assert not likely["state"].ticked
    verification = verify(result, [recording])  # the dry replay runs the select code in the sandbox
    assert verification.verified, verification.to_json()
    assert "machine_stop_each" in summary(result, verification, saved=None, note=None)


def test_a_plain_save_takes_the_condition_from_its_input() -> None:
    recording = _stop_started("ams", _machines(_REGIONS, _STATES, "a"))
    first = templatize([recording], name="t")
    saved = templatize([recording], name="t", inputs=first.ticked_inputs)
    where = saved.template.step("select_machine_list_1").input["where"]
    assert {"key": "region", "op": "==", "value": "@input.region"} in where
    assert verify(saved, [recording]).verified


def test_services_whose_names_start_alike_are_walked_by_their_prefix() -> None:
    s = Session()
    names = ["marketing-site", "checkout-api", "checkout-web", "search-api", "checkout-admin"]
    services = [{"id": f"srv-d1a9k{i}q7c4nc73e0", "name": name, "type": "web_service"} for i, name in enumerate(names)]
    s.call("list_services", {}, services)
    for service in services[1:]:
        if service["name"].startswith("checkout-"):
            s.call("set_env", {"serviceId": service["id"], "key": "FLAG"}, "updated")
    result = templatize([s.steps], name="t")
    select = result.template.step("select_list_services_1")
    assert select.input == {
        "items": "@list_services_1",
        "where": [{"key": "name", "op": "starts with", "value": "checkout-"}],
    }
    assert result.template.step("set_env_each").for_each == "@select_list_services_1"
    assert {item.name: item.ticked for item in result.likely_inputs}.get("name_prefix") is True
    assert verify(result, [s.steps]).verified


def test_handled_elements_no_two_conditions_tell_apart_stay_unrolled() -> None:
    s = Session()
    machines = _machines(("ams", "ams", "ams", "ams"), ("started",) * 4, "c")
    s.call("machine_list", {"app": "kettle-api"}, machines)
    for machine in (machines[0], machines[2]):
        s.call("machine_stop", {"app": "kettle-api", "id": machine["id"]}, "stopped")
    result = templatize([s.steps], name="t")
    assert not result.loops and "select_machine_list_1" not in {step.name for step in result.template.steps}
    assert "no field tells the handled ones apart" in result.unrolled[0].why


def test_the_elements_a_field_inside_them_tells_apart_are_walked_and_the_state_stays_the_task_s() -> None:
    s = Session()
    syncs = ["Synced", "OutOfSync", "Synced", "OutOfSync", "OutOfSync", "Synced"]
    apps: list[JSON] = [
        {"metadata": {"name": f"payments-{i}", "namespace": "argocd"}, "status": {"sync": {"status": sync}}}
        for i, sync in enumerate(syncs)
    ]
    s.call("list_applications", {"search": "payments"}, {"items": apps})
    for i, sync in enumerate(syncs):
        if sync == "OutOfSync":
            s.call("sync_application", {"applicationName": f"payments-{i}"}, {"ok": True})
    result = templatize([s.steps], name="t")
    select = result.template.step("select_items")
    assert select.input == {
        "items": "@list_applications_1.items",
        "where": [{"key": "status.sync.status", "op": "==", "value": "OutOfSync"}],
    }
    loop = result.template.step("sync_application_each")
    assert (loop.for_each, loop.input) == ("@select_items", {"applicationName": "@item.metadata.name"})
    assert "OutOfSync" not in result.ticked_inputs.values()
    assert verify(result, [s.steps]).verified


def test_a_value_cut_out_of_each_element_is_walked_through_a_cut_step() -> None:
    s = Session()
    drafts: list[JSON] = [{"_id": f"drafts.post-{n}", "title": f"Post {n}"} for n in ("3f2a91", "7c0d14", "a19e07")]
    s.call("query_documents", {"query": '*[_id in path("drafts.**")]'}, {"result": drafts, "ms": 14})
    for n in ("3f2a91", "7c0d14", "a19e07"):
        s.call("publish_document", {"dataset": "production", "documentId": f"post-{n}"}, f"Published post-{n}")
    result = templatize([s.steps], name="t")
    cut = result.template.step("cut_id")
    assert cut.code is not None
    assert cut.input == {"items": "@query_documents_1.result", "key": "_id", "prefix": "drafts.", "suffix": ""}
    loop = result.template.step("publish_document_each")
    assert (loop.for_each, loop.input) == ("@cut_id", {"dataset": "production", "documentId": "@item"})
    # the ids are the cut's, not the user's: none is proposed as an input
    assert not {"post-3f2a91", "post-7c0d14", "post-a19e07"} & {item.value for item in result.likely_inputs}
    verification = verify(result, [s.steps])  # the dry replay runs the cut code in the sandbox
    assert verification.verified, verification.to_json()


def test_names_listed_in_a_file_s_text_are_walked_whatever_their_number() -> None:
    s = Session()
    content = "# flags whose code was removed\nold-checkout\nlegacy-search\nholiday-banner-2025\n"
    s.call("read_text_file", {"path": "/srv/flags.txt"}, {"content": content})
    for flag in ("old-checkout", "legacy-search", "holiday-banner-2025"):
        s.call("archive_flag", {"project": "web", "flag": flag}, {"ok": True})
    result = templatize([s.steps], name="t")
    view = result.template.step("read_text_file_1_rows")
    assert view.input == {"text": "@read_text_file_1.content", "shape": "names", "level": 0}
    loop = result.template.step("archive_flag_each")
    assert (loop.for_each, loop.input) == ("@read_text_file_1_rows", {"project": "web", "flag": "@item"})
    assert verify(result, [s.steps]).verified
    # a replay reads however many names the file holds, one as well
    assert view.code is not None
    assert run_code(view.code, {"text": "only-one\n", "shape": "names", "level": 0}) == ["only-one"]


def test_names_after_a_label_that_share_a_prefix_are_walked_and_the_prefix_is_the_user_s() -> None:
    s = Session()
    s.call("list_topics", {}, "Kafka topics: _schemas,orders,dlq.orders,payments,dlq.payments")
    for topic in ("dlq.orders", "dlq.payments"):
        s.call("alter_topic", {"topicName": topic, "retention": "604800000"}, f"altered {topic}")
    first = templatize([s.steps], name="t")
    assert first.ticked_inputs["value_prefix"] == "dlq."
    # saved with the prefix as an input, the topics are still read from the listing, not built on the prefix
    saved = templatize([s.steps], name="t", inputs=first.ticked_inputs)
    select = saved.template.step("select_list_topics_1_rows")
    assert select.input == {
        "items": "@list_topics_1_rows",
        "where": [{"key": "", "op": "starts with", "value": "@input.value_prefix"}],
    }
    assert saved.template.step("alter_topic_each").input["topicName"] == "@item"
    assert verify(saved, [s.steps]).verified


def test_a_yaml_sequence_of_mappings_is_read_as_rows() -> None:
    text = (
        "metadata:\n  name: Kettle web\nnodes:\n"
        "  - id: 'node-7f3a9c21'\n    name: cart-drawer\n    boundingBox:\n      x: 0\n"
        "  - id: 'node-8e4b0d32'\n    name: checkout-hero\n    visible: true\n"
        "globalVars:\n  styles: {}\n"
    )
    s = Session()
    s.call("get_file", {"fileKey": "Xk2fQ9LmVt7aB3cRw1"}, text)
    s.call("export", {"nodeIds": ["node-7f3a9c21", "node-8e4b0d32"]}, "ok")
    result = templatize([s.steps], name="t")
    view = result.template.step("get_file_1_rows")
    assert view.input == {"text": "@get_file_1", "shape": "yaml", "level": 0} and view.code is not None
    rows = run_code(view.code, {"text": text, "shape": "yaml", "level": 0})
    assert rows == [
        {"id": "node-7f3a9c21", "name": "cart-drawer"},
        {"id": "node-8e4b0d32", "name": "checkout-hero", "visible": True},
    ]
    assert result.template.step("export_1").input == {"nodeIds": "@get_file_1_rows[*].id"}


def test_a_record_s_own_timestamp_sent_back_beside_its_id_is_read_from_that_record() -> None:
    s = Session()
    posts: list[JSON] = [
        {"id": f"6745a1b2c3d4e5f6a7b8c9{i}0", "title": f"Post {i}", "updated_at": f"2026-11-26T1{i}:20:11.000Z"}
        for i in range(3)
    ]
    s.call("posts_browse", {"filter": "status:draft"}, posts)
    s.call("posts_edit", {"id": "6745a1b2c3d4e5f6a7b8c910", "updated_at": "2026-11-26T11:20:11.000Z"}, {"ok": True})
    result = templatize([s.steps], name="t")
    edit = result.template.step("posts_edit_1").input
    assert edit == {"id": "@pick_post_1.id", "updated_at": "@pick_post_1.updated_at"}
    assert "2026-11-26T11:20:11.000Z" not in {item.value for item in result.likely_inputs}
    # a timestamp alone, with no id of the same record beside it, is still no ref (it equals others by chance)
    s = Session()
    s.call("posts_browse", {"filter": "status:draft"}, posts)
    s.call("schedule", {"at": "2026-11-26T11:20:11.000Z"}, {"ok": True})
    assert templatize([s.steps], name="t").template.step("schedule_1").input == {"at": "2026-11-26T11:20:11.000Z"}


def test_records_printed_as_key_value_blocks_are_read_as_rows_and_picked_by_name() -> None:
    blocks = [
        ("Call plumber", "2Xq7cWvN8bJrLk3TmA9dPe", "House"),
        ("Renew passport", "7Hq2ZxN4pLmB8rTgW1cVsD", "Travel"),
    ]
    text = "\n\n---\n\n".join(f"Title: {t}\nUUID: {u}\nStatus: incomplete\nProject: {p}" for t, u, p in blocks)
    s = Session()
    s.call("get_today", {}, text)
    s.call("update_todo", {"id": "7Hq2ZxN4pLmB8rTgW1cVsD", "completed": True}, "ok")
    result = templatize([s.steps], name="t")
    view = result.template.step("get_today_1_rows")
    assert view.input == {"text": "@get_today_1", "shape": "records", "level": 0} and view.code is not None
    rows = run_code(view.code, {"text": text, "shape": "records", "level": 0})
    assert isinstance(rows, list) and rows[1] == {
        "Title": "Renew passport",
        "UUID": "7Hq2ZxN4pLmB8rTgW1cVsD",
        "Status": "incomplete",
        "Project": "Travel",
    }
    assert result.template.step("update_todo_1").input == {"id": "@pick_renew_passport.UUID", "completed": True}


def _resubmit_failed(rows: list[tuple[str, str]]) -> list[StepRecord]:
    s = Session()
    s.call("list_workflows", {"namespace": "data"}, [{"name": name, "status": status} for name, status in rows])
    for name, status in rows:
        if name.startswith("nightly-etl-") and status in ("Failed", "Error"):
            s.call("resubmit_workflow", {"namespace": "data", "name": name}, {"ok": True})
    return s.steps


def test_elements_in_any_of_the_states_handled_are_walked_beside_a_name_prefix() -> None:
    # A Failed one of another prefix and a Succeeded one of this prefix are left: neither condition alone tells.
    rows = [("nightly-etl-8k2lp", "Failed"), ("nightly-etl-7gq9d", "Succeeded"), ("report-mail-x2c4v", "Failed")]
    recording = _resubmit_failed([*rows, ("nightly-etl-6bz1m", "Error"), ("nightly-etl-5hn8r", "Failed")])
    result = templatize([recording], name="t")
    where = result.template.step("select_list_workflows_1").input["where"]
    assert where == [
        {"key": "name", "op": "starts with", "value": "nightly-etl-"},
        {"key": "status", "op": "in", "value": ["Failed", "Error"]},
    ]
    likely = {item.name: item for item in result.likely_inputs}
    assert likely["name_prefix"].ticked and not likely["status"].ticked  # the states are the task's
    assert verify(result, [recording]).verified
    # the select step's code keeps what its Python twin keeps: a Running one is in no state handled
    select = result.template.step("select_list_workflows_1")
    assert select.code is not None
    items = [{"name": "nightly-etl-a1", "status": "Running"}, {"name": "nightly-etl-b2", "status": "Error"}]
    kept = run_code(select.code, {"items": items, "where": where})
    assert kept == [{"name": "nightly-etl-b2", "status": "Error"}]


def test_a_field_inside_one_element_lists_tells_elements_apart_and_names_come_from_the_same_element() -> None:
    # Attio wraps each value in a list of one: `values.stage[0].status.title`, `values.name[0].first_name`.
    people = [
        ("Nora", "Feld", "Customer"),
        ("Raj", "Mehta", "Customer"),
        ("Ana", "Silva", "Lead"),
        ("Ken", "Ito", "Customer"),
    ]
    records: list[JSON] = [
        {
            "id": {"record_id": f"a1b2c3d4-000{i}-4e5f-8a9b-0c1d2e3f4a0{i}"},
            "values": {
                "name": [{"first_name": first, "last_name": last}],
                "email_addresses": [{"email_address": f"{first.lower()}@{last.lower()}.example"}],
                "stage": [{"status": {"title": stage}}],
            },
        }
        for i, (first, last, stage) in enumerate(people)
    ]
    s = Session()
    s.call("list_records", {"object": "people", "filter": {"stage": "Customer"}}, {"data": records})
    for first, last, stage in people:
        if stage == "Customer":
            email = f"{first.lower()}@{last.lower()}.example"
            s.call("create_contact", {"email": email, "attributes": {"FIRSTNAME": first, "LASTNAME": last}}, {"id": 1})
    result = templatize([s.steps], name="t")
    assert result.template.step("select_data").input["where"] == [
        {"key": "values.stage.0.status.title", "op": "==", "value": "Customer"}
    ]
    loop = result.template.step("create_contact_each")
    assert loop.input == {
        "email": "@item.values.email_addresses[0].email_address",
        "attributes": {"FIRSTNAME": "@item.values.name[0].first_name", "LASTNAME": "@item.values.name[0].last_name"},
    }
    assert verify(result, [s.steps]).verified


def test_messages_that_say_a_word_are_walked_by_it_whatever_its_case_and_the_word_stays_the_task_s() -> None:
    texts = [
        "<p>Yesterday: checkout retries. Today: refunds review.</p>",
        "<p>Today: tax rules. <strong>Blocked</strong> on the VAT keys.</p>",
        "<p>Unblocked yesterday, shipping today</p>",
        "<p>Still blocked by #812 review.</p>",
    ]
    messages: list[JSON] = [{"id": 50211 + i, "content": text} for i, text in enumerate(texts)]
    s = Session()
    s.call("get_messages", {"stream": "standup"}, {"messages": messages})
    for message in (messages[1], messages[3]):
        assert isinstance(message, dict)
        s.call("add_reaction", {"message_id": message["id"], "emoji_name": "eyes"}, "added")
    result = templatize([s.steps], name="t")
    select = result.template.step("select_messages")
    assert select.input == {
        "items": "@get_messages_1.messages",
        "where": [{"key": "content", "op": "has words", "value": "blocked"}],
    }
    assert result.template.step("add_reaction_each").for_each == "@select_messages"
    assert "blocked" not in result.ticked_inputs.values()  # a lower-case word of the task, not the user's choice
    assert verify(result, [s.steps]).verified  # the sandbox's twin of the condition keeps the same two
    where = select.input["where"]
    kept = run_code(SELECT_CODE, {"items": [*messages, {"id": 1, "content": "BLOCKED: no keys"}], "where": where})
    assert [m["id"] for m in kept] == [50212, 50214, 1]  # not `Unblocked`


def test_a_phrase_written_alike_in_every_handled_subject_is_the_user_s() -> None:
    subjects = ["Offer letter for Jamie Fox", "Mutual NDA with Acme", "Offer letter for Ben Kraus", "Re: the plan"]
    envelopes: list[JSON] = [{"envelopeId": f"3f9a1c2e-{i}", "emailSubject": t} for i, t in enumerate(subjects)]
    where = conditions_of(envelopes, [0, 2])
    assert where == (Condition("emailSubject", "has words", "Offer letter"),) and where is not None
    assert not where[0].state


def test_droplets_that_carry_a_tag_are_walked_by_it_each_shut_down_then_snapshot_in_turn() -> None:
    tags = (["web", "prod"], ["db-primary", "prod"], ["db-primary-old", "prod"], ["db-primary", "cache"])
    names = ("web-fra1-01", "pg-fra1-a", "pg-fra1-b", "redis-fra1")
    pairs = enumerate(zip(names, tags, strict=True))
    droplets: list[JSON] = [{"id": 481120931 + i, "name": name, "tags": list(t)} for i, (name, t) in pairs]
    s = Session()
    s.call("droplet_list", {"Page": 1}, droplets)
    for droplet in (droplets[1], droplets[3]):
        assert isinstance(droplet, dict)
        s.call("shutdown_droplet", {"ID": droplet["id"]}, "ok")
        s.call("snapshot_droplet", {"ID": droplet["id"], "Name": f"{droplet['name']}-pre-upgrade"}, "ok")
    result = templatize([s.steps], name="t")
    select = result.template.step("select_droplet_list_1")
    assert select.input == {"items": "@droplet_list_1", "where": [{"key": "tags", "op": "has", "value": "db-primary"}]}
    # each droplet shut down, then snapshot, before the next: one script step walking the selected droplets
    group = result.template.step("shutdown_droplet_snapshot_droplet_each")
    assert group.kind == "script" and group.input == {"items": "@select_droplet_list_1"}
    assert group.script is not None and 'text(at(item, ["name"], "@item.name")) + "-pre-upgrade"' in group.script
    assert result.ticked_inputs.get("tags") == "db-primary"  # the tag is the user's: `prod` would be too
    assert verify(result, [s.steps]).verified


def test_the_operations_of_a_tool_that_calls_others_fold_as_loops_of_their_own() -> None:
    users: list[JSON] = [{"$id": f"66f1a2b3c4d5e6f7a8b{i}", "name": f"User {i}"} for i in range(3)]
    s = Session()
    s.call("call_tool", {"tool_name": "users_list", "arguments": {"search": "kettle.dev"}}, {"users": users})
    for user in users:
        assert isinstance(user, dict)
        for operation in ("users_update_status", "users_delete_sessions"):
            s.call("call_tool", {"tool_name": operation, "arguments": {"user_id": user["$id"]}}, "ok")
    result = templatize([s.steps], name="t")
    # two operations per user, in turn: the script step makes both for each user before the next
    group = result.template.step("call_tool_each")
    assert group.kind == "script" and group.input == {"items": "@call_tool_1.users"}
    assert group.script is not None
    assert all(
        f'"tool_name": "{operation}"' in group.script for operation in ("users_update_status", "users_delete_sessions")
    )
    assert verify(result, [s.steps]).verified


def test_users_at_a_domain_the_user_searched_for_are_walked_by_the_domain_case_aside() -> None:
    emails = ("mia@brightagency.io", "leo@brightagency.io.uk", "ivy@brightagency.io", "omar@BrightAgency.io")
    users: list[JSON] = [
        {"$id": f"66f1a2b3c4d5e6f7a8b{i}", "email": email, "status": i != 2} for i, email in enumerate(emails)
    ]
    s = Session()
    s.call("users_list", {"search": "brightagency.io"}, {"users": users})
    for user in (users[0], users[3]):
        assert isinstance(user, dict)
        s.call("users_update_status", {"user_id": user["$id"], "status": False}, "ok")
    result = templatize([s.steps], name="t", inputs={"domain": "brightagency.io"})
    where = result.template.step("select_users").input["where"]
    assert {"key": "email", "op": "ends with", "value": "@input.domain"} in where
    assert {"key": "status", "op": "==", "value": True} in where
    assert verify(result, [s.steps]).verified
    kept = run_code(
        SELECT_CODE, {"items": users, "where": [{"key": "email", "op": "ends with", "value": "brightagency.io"}]}
    )
    assert [u["email"] for u in kept] == ["mia@brightagency.io", "ivy@brightagency.io", "omar@BrightAgency.io"]


def test_an_element_a_named_input_picks_in_each_recording_wherever_it_sits_is_a_pick_not_an_input() -> None:
    worlds = (
        ("Checkout API", ["Checkout API (legacy)", "Checkout API", "Checkout API Docs"]),
        ("Search", ["Search", "Search Indexer"]),
    )
    runs = []
    for n, (project, names) in enumerate(worlds):
        s = Session(execution=f"e{n}")
        projects = [{"id": f"Projects-{100 * n + i + 11}", "name": name} for i, name in enumerate(names)]
        s.call("list_projects", {"partialName": project}, {"items": projects})
        chosen = next(p for p in projects if p["name"] == project)
        s.call("find_releases", {"projectId": chosen["id"]}, {"items": [{"version": "1.0.0"}]})
        runs.append(s.steps)
    result = templatize(runs, name="t")  # the name varies between the recordings: an input
    assert result.template.step("find_releases_1").input == {"projectId": "@pick_checkout_api.id"}
    assert result.template.step("pick_checkout_api").input["value"] == "@input.partial_name"
    assert set(result.input_values) == {"partial_name"}  # the id is read, not asked for
    assert verify(result, runs).verified
