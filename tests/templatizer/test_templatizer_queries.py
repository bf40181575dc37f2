"""Inputs inside queries, sixth pass: clauses compared by an order (`created > "2026-11-19"`) or by a word operator
of SCIM and OData filters (`profile.email eq "a@b.c"`) are query syntax, and the values they compare with are
weighed as the query's other values are."""

from __future__ import annotations

import pytest

from tests.recorded import Session
from toolreel.core.model import JSON
from toolreel.core.template_io import template_to_dict
from toolreel.templatizer import TemplatizeResult, templatize
from toolreel.templatizer._evidence import is_query


def ticked(result: TemplatizeResult) -> dict[str, JSON]:
    return {likely.name: likely.value for likely in result.likely_inputs if likely.ticked}


def saved(steps: Session) -> TemplatizeResult:
    """What a plain save stores: the ticked inputs applied."""
    first = templatize([steps.steps], name="t")
    return templatize([steps.steps], name="t", inputs=first.ticked_inputs) if first.ticked_inputs else first


@pytest.mark.parametrize("text", ["Note: hello there", "a > b is true", "Run it: now", "equal to me eq you"])
def test_prose_with_a_colon_or_a_comparison_is_no_query(text: str) -> None:
    assert not is_query(text)


def test_a_date_a_query_compares_with_is_the_user_s_and_the_query_is_built_on_it() -> None:
    s = Session()
    query = 'status:"Trial" created > "2026-11-19"'
    s.call("search_leads", {"query": query, "_limit": 3}, {"data": [{"id": "lead_a1b2c3d4e5"}]})
    s.call("subscribe", {"lead_ids": ["lead_a1b2c3d4e5"]}, "ok")
    result = saved(s)
    assert list(ticked(templatize([s.steps], name="t")).values()) == ["2026-11-19"]
    name = next(iter(result.input_values))
    sent = template_to_dict(result.template)["steps"][0]["input"]["query"]
    assert sent == f'status:"Trial" created > "{{{{@input.{name}}}}}"'


def test_an_address_a_scim_filter_selects_by_is_the_user_s() -> None:
    s = Session()
    query = 'profile.email eq "maya.ortiz@kettle.coffee"'
    s.call("list_users", {"search": query}, [{"id": "00u1a2b3c4d5e6f7g8h9", "status": "ACTIVE"}])
    s.call("deactivate_user", {"userId": "00u1a2b3c4d5e6f7g8h9"}, "ok")
    result = saved(s)
    assert list(result.input_values.values()) == ["maya.ortiz@kettle.coffee"]
    name = next(iter(result.input_values))
    sent = template_to_dict(result.template)["steps"][0]["input"]["search"]
    assert sent == f'profile.email eq "{{{{@input.{name}}}}}"'


def test_a_filter_of_keywords_stays_literal() -> None:
    s = Session()
    s.call("list_mail_messages", {"filter": "isRead eq false and importance eq 'high'"}, {"value": []})
    assert ticked(templatize([s.steps], name="t")) == {}


def test_a_phrase_searched_for_inside_a_query_is_the_user_s() -> None:
    s = Session()
    query = 'cat:cs.DB AND abs:"query optimization"'
    papers = {"papers": [{"id": "2611.16110", "title": "Cardinality Estimation Revisited"}]}
    s.call("search_papers", {"query": query, "max_results": 10}, papers)
    s.call("create_item", {"name": "Cardinality Estimation Revisited"}, {"id": 7})
    result = saved(s)
    assert "query optimization" in result.input_values.values()
    name = next(k for k, v in result.input_values.items() if v == "query optimization")
    sent = template_to_dict(result.template)["steps"][0]["input"]["query"]
    assert sent == f'cat:cs.DB AND abs:"{{{{@input.{name}}}}}"'


def test_a_capitalized_label_inside_a_query_stays_in_it() -> None:
    s = Session()
    s.call("search_issues", {"jql": 'project = PAY AND status = "In Progress"'}, {"issues": []})
    assert "In Progress" not in ticked(templatize([s.steps], name="t")).values()


def test_a_flag_s_value_in_an_argument_vector_given_again_whole_is_the_user_s() -> None:
    s = Session()
    listed = "REVISION              READY\ncheckout-00042-xam     True\ncheckout-00041-pov     True"
    s.call("run_gcloud_command", {"args": ["run", "revisions", "list", "--service=checkout", "--limit=5"]}, listed)
    s.call("run_gcloud_command", {"args": ["run", "services", "update-traffic", "checkout", "--to-latest"]}, "Done")
    result = saved(s)
    assert "checkout" in result.input_values.values()
    name = next(k for k, v in result.input_values.items() if v == "checkout")
    steps = template_to_dict(result.template)["steps"]
    assert steps[0]["input"]["args"][3] == f"--service={{{{@input.{name}}}}}"
    assert steps[1]["input"]["args"][3] == f"@input.{name}"


def test_a_flag_s_value_alone_in_one_call_stays_proposed() -> None:
    s = Session()
    s.call("run_gcloud_command", {"args": ["run", "revisions", "list", "--service=checkout"]}, "REVISION\nx-1")
    assert "checkout" not in ticked(templatize([s.steps], name="t")).values()


# --------------------------------------------------------------------------- seventh pass (worlds5)


def _query_step(key: str, query: str) -> Session:
    s = Session()
    s.call("search", {key: query, "limit": 50}, {"results": [{"id": "res_7c1d2e3f4a5b"}]})
    s.call("update", {"id": "res_7c1d2e3f4a5b", "done": True}, "ok")
    return s


@pytest.mark.parametrize(
    ("query", "value"),
    [
        # a search piped into commands (SPL)
        ('search index=payments host="pay-api-07" status>=500 | stats count by uri_path | head 1', "pay-api-07"),
        # a filter expression joined by && (GROQ)
        ('*[_type == "post" && author->slug.current == "mira-k"]{_id, title}', "mira-k"),
        # a name of capitalized words compared whole
        ("brand = 'Kettle Co' AND stock = 0", "Kettle Co"),
        # the text a LIKE pattern looks for
        ("SELECT count() FROM events WHERE event = '$pageview' AND url LIKE '%/checkout%'", "/checkout"),
        # an identifier the query selects by, alone
        ('sku:"KT-2207"', "KT-2207"),
    ],
)
def test_the_value_a_query_selects_by_is_the_user_s_and_the_query_is_built_on_it(query: str, value: str) -> None:
    s = _query_step("query", query)
    assert value in ticked(templatize([s.steps], name="t")).values()
    result = saved(s)
    name = next(name for name, v in result.input_values.items() if v == value)
    sent = template_to_dict(result.template)["steps"][0]["input"]["query"]
    assert sent == query.replace(value, f"{{{{@input.{name}}}}}")


def test_a_state_a_query_selects_by_and_the_query_language_s_own_names_stay_literal() -> None:
    s = _query_step("query", "SELECT id FROM events WHERE event = '$pageview' AND status = 'In Progress' LIMIT 5")
    chosen = ticked(templatize([s.steps], name="t"))
    assert "$pageview" not in chosen.values() and "In Progress" not in chosen.values()
    s = _query_step("query", "WorkflowType = 'OrderFulfillment' AND ExecutionStatus = 'Running'")
    assert "Running" not in ticked(templatize([s.steps], name="t")).values()


def test_an_amount_with_cents_the_user_typed_is_an_input() -> None:
    s = Session()
    s.call("get_product", {"sku": "KT-2207"}, {"objectID": "8830127455", "price": 22.0})
    s.call("update_product", {"objectID": "8830127455", "attributes": {"price": 24.5}}, "ok")
    assert 24.5 in ticked(templatize([s.steps], name="t")).values()


def test_clauses_joined_by_a_plus_are_query_syntax_and_its_one_value_is_the_user_s() -> None:
    assert is_query("status:draft+tag:release-notes")
    s = _query_step("filter", "status:draft+tag:release-notes")
    assert "release-notes" in ticked(templatize([s.steps], name="t")).values()


def test_criteria_of_field_operator_value_are_query_syntax_and_their_email_is_the_user_s() -> None:
    criteria = "((Stage:equals:Negotiation/Review)and(Owner.email:equals:nina.holt@kettle.dev))"
    assert is_query(criteria) and not is_query("(see: equals: the same)")
    s = Session()
    s.call("search_records", {"module": "Deals", "criteria": criteria}, {"data": [{"id": "5725767000001"}]})
    s.call("create_records", {"module": "Tasks", "data": [{"What_Id": "5725767000001"}]}, {"data": []})
    assert "nina.holt@kettle.dev" in ticked(templatize([s.steps], name="t")).values()
    result = saved(s)
    name = next(n for n, v in result.input_values.items() if v == "nina.holt@kettle.dev")
    sent = template_to_dict(result.template)["steps"][0]["input"]["criteria"]
    assert sent == f"((Stage:equals:Negotiation/Review)and(Owner.email:equals:{{{{@input.{name}}}}}))"


# --------------------------------------------------------------------------- ninth pass (worlds8)


@pytest.mark.parametrize(
    ("key", "query", "value"),
    [
        # a filter written as functions (JSON:API: Klaviyo)
        ("filter", "greater-than(created,2026-11-01T00:00:00Z)", "2026-11-01T00:00:00Z"),
        # clauses compared by `=` and joined by a lower-case `and` (MLflow, OData)
        ("filter", "params.model_family = 'gbm-v2' and attributes.status = 'FINISHED'", "gbm-v2"),
        # bracketed fields and the `UNDER` operator (WIQL); `@project` is the language's own
        (
            "wiql",
            "SELECT [System.Id] FROM WorkItems WHERE [System.TeamProject] = @project AND [System.State] = 'Resolved' "
            "AND [System.AreaPath] UNDER 'Kettle\\Checkout'",
            "Kettle\\Checkout",
        ),
    ],
)
def test_a_value_inside_more_query_languages_is_the_user_s_and_the_query_is_built_on_it(
    key: str, query: str, value: str
) -> None:
    assert is_query(query)
    s = _query_step(key, query)
    assert value in ticked(templatize([s.steps], name="t")).values()
    result = saved(s)
    name = next(name for name, v in result.input_values.items() if v == value)
    assert template_to_dict(result.template)["steps"][0]["input"][key] == query.replace(value, f"{{{{@input.{name}}}}}")


def test_a_quoted_word_a_query_selects_by_is_proposed_not_chosen() -> None:
    s = _query_step("sql", "SELECT id, email FROM customers WHERE plan = 'pro' AND stripe_id IS NULL")
    result = templatize([s.steps], name="t")
    assert {item.value: item.ticked for item in result.likely_inputs}.get("pro") is False


def test_a_stream_selector_and_a_graphql_document_are_queries() -> None:
    assert is_query('{namespace="shop-prod", app="checkout"} |= "level=error"')
    assert is_query("query Runs($entity: String!) { project(name: $entity) { runs { edges { node { name } } } } }")
    assert not is_query("{ see the notes }") and not is_query("name = x and more")


def test_an_area_path_under_the_chosen_project_is_an_input_of_its_own() -> None:
    s = Session()
    wiql = "SELECT [System.Id] FROM WorkItems WHERE [System.AreaPath] UNDER 'Kettle\\Payments'"
    s.call("wit_query", {"project": "Kettle", "wiql": wiql}, {"workItems": [{"id": 5230}]})
    s.call("wit_get", {"project": "Kettle", "id": 5230}, {"id": 5230, "fields": {"System.Title": "Refund fails"}})
    chosen = ticked(templatize([s.steps], name="t"))
    assert "Kettle\\Payments" in chosen.values()  # not `{{@input.project}}\Payments`: the path is what was named


def test_a_word_the_agent_quotes_in_a_later_message_is_the_user_s() -> None:
    s = Session()
    s.call("list_checks", {"tag": "payments", "limit": 100}, [{"id": "c1a2b3", "name": "Refund webhook"}])
    s.call("post", {"channel": "ops", "message": "1 failing check tagged `payments`: Refund webhook"}, "ok")
    assert ticked(templatize([s.steps], name="t")).get("tag") == "payments"
    s = Session()  # unquoted, the same word in a sentence may be chance
    s.call("list_checks", {"tag": "payments", "limit": 100}, [{"id": "c1a2b3", "name": "Refund webhook"}])
    s.call("post", {"channel": "ops", "message": "1 failing check of payments: Refund webhook"}, "ok")
    assert "payments" not in ticked(templatize([s.steps], name="t")).values()


def test_a_name_with_a_suffix_beside_the_name_is_another_name_not_the_first_decorated() -> None:
    s = Session()
    for repo in ("kettle-labs/support-intents", "kettle-labs/support-intents-v2"):
        s.call("hub_repo_details", {"repo_ids": [repo]}, f"# {repo}\n\n| split | rows |\n| test | 5.1K |")
    s.call("send", {"topic": "kettle-labs/support-intents-v2", "content": "the test split shrank"}, "ok")
    chosen = ticked(templatize([s.steps], name="t")).values()
    assert "kettle-labs/support-intents" in chosen and "kettle-labs/support-intents-v2" in chosen


def test_the_value_inside_a_composite_key_is_the_user_s_and_its_prefix_and_update_expression_stay() -> None:
    s = Session()
    values = {":pk": {"S": "CUSTOMER#C-20417"}, ":order": {"S": "ORDER#"}}
    query = {"table_name": "orders", "key_condition_expression": "pk = :pk AND begins_with(sk, :order)"}
    s.call("query", {**query, "expression_attribute_values": values}, {"Items": [], "Count": 0})
    key = {"pk": {"S": "CUSTOMER#C-20417"}, "sk": {"S": "PROFILE"}}
    s.call("update_item", {"key": key, "update_expression": "SET pending_orders = :n"}, {"ok": True})
    chosen = ticked(templatize([s.steps], name="t"))
    assert "C-20417" in chosen.values()
    assert not {"CUSTOMER#C-20417", "ORDER#", "SET pending_orders = :n"} & set(chosen.values())
    result = saved(s)
    name = next(n for n, v in result.input_values.items() if v == "C-20417")
    assert template_to_dict(result.template)["steps"][1]["input"]["key"]["pk"]["S"] == f"CUSTOMER#{{{{@input.{name}}}}}"
