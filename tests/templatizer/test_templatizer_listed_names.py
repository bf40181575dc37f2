"""Eighteenth pass: a name taken from a list of plain names past its first (`radosgw-admin user list`) is the name
the agent was given, found in that list, not the element at that position; a bare flag followed by another flag
is a switch, not that flag's value."""

from __future__ import annotations

from tests.recorded import Session, inputs_of, saved, steps_of
from toolreel.templatizer import TemplatizeResult, templatize

READS = frozenset({"svc__admin_list"})


def _session() -> Session:
    s = Session()
    s.call("admin_list", {"args": ["user", "list"]}, ["backup", "ci-artifacts-old", "ci-artifacts", "grafana"])
    created = {"user_id": "ci-artifacts", "keys": [{"access_key": "0555B35654AD1656D804"}]}
    args = ["key", "create", "--uid=ci-artifacts", "--key-type=s3", "--gen-access-key", "--gen-secret"]
    s.call("admin_create", {"args": args}, created)
    return s


def _first(s: Session) -> TemplatizeResult:
    return templatize([s.steps], name="t", read_only=READS)


def test_a_name_taken_from_a_list_of_names_is_found_by_itself_not_by_its_position() -> None:
    first = _first(_session())
    (pick,) = first.picks
    assert pick.key == "" and pick.value == "ci-artifacts" and pick.label == "uid"
    assert inputs_of(first)[pick.step] == {"items": "@admin_list_1", "key": "", "value": "ci-artifacts"}
    created = inputs_of(first)["admin_create_1"]
    assert isinstance(created, dict) and created["args"][2] == "--uid={{@" + pick.step + "}}"


def test_the_saved_template_takes_that_name_as_the_users() -> None:
    result = saved(_session(), READS)
    assert result.input_values.get("uid") == "ci-artifacts"
    assert steps_of(result)["admin_create_1"]["input"]["args"][2] == "--uid={{@input.uid}}"


def test_a_switch_before_another_switch_gives_no_input() -> None:
    first = _first(_session())
    assert not any(item.value == "--gen-secret" for item in first.likely_inputs)
    assert "--gen-secret" not in saved(_session(), READS).input_values.values()


def test_the_first_name_of_a_list_stays_the_first() -> None:
    s = Session()
    s.call("admin_list", {"args": ["user", "list"]}, ["backup", "grafana"])
    s.call("admin_create", {"args": ["key", "create", "--uid=backup"]}, {"user_id": "backup"})
    assert _first(s).picks == ()


def test_an_address_among_lines_of_addresses_is_the_users_not_the_first_line() -> None:
    """The address the user gave happens to open a look-alike's list of addresses: a number beside a number says
    only where it stands, so it is not read out of that text."""
    s = Session()
    rows = [
        {"name": "TRUSTED_ADMINS_OLD", "content": "10.20.30.44\n10.20.30.45"},
        {"name": "TRUSTED_ADMINS", "content": "10.20.30.4\n10.20.30.41\n10.20.30.144"},
    ]
    s.call("search_aliases", {"searchPhrase": "TRUSTED_ADMINS"}, {"rows": rows, "total": 2})
    s.call("alias_add", {"alias": "TRUSTED_ADMINS", "address": "10.20.30.44"}, {"status": "done"})
    result = saved(s, frozenset({"svc__search_aliases"}))
    assert not any(step.code for step in result.template.steps)
    assert steps_of(result)["alias_add_1"]["input"]["address"] == "@input.address"
    assert result.input_values["address"] == "10.20.30.44"


def test_a_word_under_a_field_that_names_the_thing_is_the_users() -> None:
    s = Session()
    vms = [{"name_label": "gitlab-runner-1", "uuid": "u1"}, {"name_label": "gitlab", "uuid": "u3"}]
    s.call("list_vms", {"filter": "name_label:gitlab", "fields": "name_label,uuid"}, vms)
    ticked = templatize([s.steps], name="t", read_only=frozenset({"svc__list_vms"})).ticked_inputs
    assert "gitlab" in ticked.values()


def test_a_title_labelling_a_chosen_word_is_built_on_it() -> None:
    s = Session()
    s.call("list_tests", {"tags": "prod", "page": 1}, {"data": [{"name": "Shop", "status": "down"}]})
    s.call("send_message", {"title": "StatusCake: prod", "message": "Shop is down", "priority": 1}, {"status": 1})
    result = saved(s, frozenset({"svc__list_tests"}))
    assert result.input_values == {"tags": "prod"}
    assert steps_of(result)["send_message_1"]["input"]["title"] == "StatusCake: {{@input.tags}}"


def _subscription(rate: float, consumers: int) -> dict[str, object]:
    readers = [{"consumerName": f"c{i}"} for i in range(consumers)]
    return {"msgRateOut": rate, "msgBacklog": 20000, "type": "Shared", "consumers": readers}


def test_entries_of_an_object_keyed_by_name_are_walked_as_a_list() -> None:
    """Pulsar's topic stats key each subscription by its name: the names the calls took are the entries'."""
    s = Session()
    subs = {
        "billing-main": _subscription(12.5, 2),
        "audit-archive": _subscription(0.0, 0),
        "crm-sync": _subscription(0.0, 0),
    }
    s.call("topic_stats", {"topic": "persistent://shop/orders/events"}, {"msgRateIn": 4.0, "subscriptions": subs})
    for name in ("audit-archive", "crm-sync"):
        s.call("clear_backlog", {"topic": "persistent://shop/orders/events", "subscription": name}, "Cleared")
    steps = steps_of(saved(s, frozenset({"svc__topic_stats"})))
    view = steps["topic_stats_1_rows"]
    assert view["input"] == {"text": "@topic_stats_1.subscriptions", "shape": "keyed", "level": 0}
    (loop,) = [step for step in steps.values() if step.get("for_each")]
    assert loop["for_each"].startswith("@topic_stats_1_rows")
    assert loop["input"]["subscription"] == "@item.name"


def test_the_default_namespace_is_no_choice() -> None:
    s = Session()
    s.call("get_job", {"namespace": "default", "job": "billing-worker"}, {"ID": "billing-worker", "Count": 2})
    s.call("scale_job", {"namespace": "default", "job": "billing-worker", "count": 4}, {"EvalID": "e-81f2"})
    likely = templatize([s.steps], name="t", read_only=frozenset({"svc__get_job"})).likely_inputs
    assert not any(item.value == "default" and item.ticked for item in likely)
    assert any(item.value == "billing-worker" and item.ticked for item in likely)
