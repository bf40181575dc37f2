"""Fifteenth pass: AQL and Cypher are statements as SQL is (their unquoted right-hand sides are fields), a short
value quoted whole in a query is the input it was named (`u.country == "DE"`), a GraphQL variable's declared type
is no value and a tag sits in a list literal; picks the agent wrote of by name are the user's, not a walk; and a
flag copied from one of two reads onto the other is a ref that writes only while the two differ."""

from __future__ import annotations

from typing import Any

from tests.recorded import Session, saved, selected_by, steps_of
from toolreel.templatizer import TemplatizeResult

AQL = (
    'FOR u IN users FILTER u.plan == "trial" AND u.country == "DE" AND u.trial_ends < "2026-12-01" '
    "SORT u.trial_ends RETURN { _key: u._key, email: u.email }"
)


def test_an_aql_statement_selects_by_its_quoted_values_and_bounds_not_by_its_fields() -> None:
    assert selected_by(AQL) == {"plan": "trial", "country": "DE", "trial_ends": "2026-12-01"}  # not `email: u.email`
    cypher = 'MATCH (s:Service {name: "checkout"})-[:OWNED_BY]->(t:Team) WHERE t.size > 3 RETURN t.name, t.lead'
    assert selected_by(cypher)["name"] == "checkout"


def test_a_graphql_variable_type_is_no_value_and_a_listed_tag_is() -> None:
    mutation = "mutation ($id: Int!, $content: String!) { pages { update(id: $id, content: $content) { ok } } }"
    assert selected_by(mutation) == {}
    assert selected_by('{ pages { list(tags: ["runbook"]) { id path title } } }') == {"tags": "runbook"}


def test_a_short_value_quoted_whole_in_a_query_is_interpolated_as_its_input() -> None:
    s = Session()
    users = [{"_key": "u_81723", "email": "a@x.de"}, {"_key": "u_80911", "email": "b@x.de"}]
    s.call("arango_query", {"query": AQL}, users)
    result = saved(s, frozenset({"svc__arango_query"}))
    assert result.input_values.get("country") == "DE"
    query = steps_of(result)["arango_query_1"]["input"]["query"]
    assert 'u.country == "{{@input.country}}"' in query
    assert "{{@input.country}}" not in query.replace('"{{@input.country}}"', "")  # not the `DE` of a word


def _environments() -> list[dict[str, Any]]:
    names = ["Production EU", "Staging", "Pre-production", "Production"]
    return [{"environmentId": f"e{i}-{name.lower()[:4]}", "name": name, "order": i} for i, name in enumerate(names)]


def _promoted(source: bool, target: bool) -> TemplatizeResult:
    s = Session()
    s.call("list_environments", {"productId": "08d8f1e2-7a6b"}, _environments())
    s.call("get_setting_value", {"environmentId": "e1-stag", "key": "new_checkout"}, {"value": source, "id": 40211})
    s.call("get_setting_value", {"environmentId": "e3-prod", "key": "new_checkout"}, {"value": target, "id": 40211})
    change = {"environmentId": "e3-prod", "key": "new_checkout", "value": source, "reason": "Promoted from Staging"}
    s.call("update_setting_value", change, {"value": source})
    return saved(s, frozenset({"svc__list_environments", "svc__get_setting_value"}))


def test_picks_the_agent_wrote_of_by_name_are_the_users_and_the_text_is_built_on_them() -> None:
    result = _promoted(True, False)
    assert {"Staging", "Production"} <= set(result.input_values.values())
    assert "Promoted from Staging" not in result.input_values.values()
    reason = steps_of(result)["update_setting_value_1"]["input"]["reason"]
    assert reason.startswith("Promoted from {{@input.") and reason.endswith("}}")


def test_a_flag_copied_from_one_of_two_reads_is_a_ref_written_only_while_they_differ() -> None:
    update = steps_of(_promoted(True, False))["update_setting_value_1"]
    assert update["input"]["value"] == "@get_setting_value_1.value"
    assert update["when"] == {"ref": "@get_setting_value_2.value", "neq": "@get_setting_value_1.value"}


def test_a_flag_two_reads_agree_on_stays_a_literal_and_unguarded() -> None:
    update = steps_of(_promoted(True, True))["update_setting_value_1"]
    assert update["input"]["value"] is True and "when" not in update


def _published(status: str) -> TemplatizeResult:
    s = Session()

    def doc(did: str, rev: str, slug: str, title: str, state: str) -> dict[str, Any]:
        return {"_id": did, "_rev": rev, "slug": slug, "title": title, "status": state}

    docs = [
        doc("post:old", "3-a1b2", "year-in-review-2026-draft-old", "Old", "draft"),
        doc("post:yir", "5-9f8e", "year-in-review-2026", "Our 2026", status),
        doc("post:yir2", "1-0a0b", "year-in-review-2026-2", "Part 2", "published"),
    ]
    s.call("find_documents", {"db": "blog", "selector": {"slug": {"$regex": "^year-in-review-2026"}}}, {"docs": docs})
    s.call("get_current_time", {"timezone": "UTC"}, {"timezone": "UTC", "datetime": "2026-11-27T10:58:31+00:00"})
    document = {"_rev": "5-9f8e", "slug": "year-in-review-2026", "title": "Our 2026", "status": "published"}
    written = {**document, "at": "2026-11-27T10:58:31Z"}
    s.call("put_document", {"db": "blog", "doc_id": "post:yir", "document": written}, {})
    return saved(s, frozenset({"svc__find_documents", "svc__get_current_time"}))


def test_an_anchored_pattern_is_built_on_the_value_it_matches_and_the_element_is_picked_by_it() -> None:
    result = _published("draft")
    assert result.input_values.get("slug") == "year-in-review-2026"
    steps = steps_of(result)
    assert steps["find_documents_1"]["input"]["selector"]["slug"]["$regex"] == "^{{@input.slug}}"
    put = steps["put_document_1"]["input"]
    pick = steps[put["doc_id"].split(".")[0][1:]]
    assert (pick["input"]["key"], pick["input"]["value"]) == ("slug", "@input.slug")
    assert put["document"]["title"] == put["doc_id"].replace("_id", "title")  # the picked post's own title
    assert str(put["document"]["at"]).startswith("@format_date")  # the UTC clock written with `Z`


def test_a_write_moving_a_picked_element_to_a_state_others_are_in_runs_only_from_its_state() -> None:
    put = steps_of(_published("draft"))["put_document_1"]
    assert put["when"] == {"ref": put["input"]["doc_id"].replace("._id", ".status"), "eq": "draft"}


def test_the_clock_read_only_a_conditional_write_uses_runs_under_its_condition() -> None:
    steps = steps_of(_published("draft"))
    when = steps["put_document_1"]["when"]
    formatted = str(steps["put_document_1"]["input"]["document"]["at"])[1:]
    assert steps["get_current_time_1"]["when"] == when and steps[formatted]["when"] == when
    assert "when" not in steps["find_documents_1"]  # the read the condition itself needs runs always
