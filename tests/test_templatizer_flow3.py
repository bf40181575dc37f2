"""Flow rules of saved templates, third pass, in-process: a loop over a list the user gave whose calls built
each argument around the element (`tenant:{{@item}}:flags`)."""

from __future__ import annotations

from tests.test_templatizer import Session
from toolreel.templatizer import templatize, verify
from toolreel.templatizer._affixes import around, split_affixes

TENANTS = ["acme", "globex", "initech"]


def _flags(tenants: list[str]) -> Session:
    s = Session()
    for tenant in tenants:
        name = f"tenant:{tenant}:flags"
        s.call("hset", {"name": name, "key": "checkout_v2", "value": "on"}, f"Field set in hash '{name}'.")
    return s


def test_the_varying_middle_between_separators_is_what_was_listed() -> None:
    assert split_affixes(["tenant:acme:flags", "tenant:globex:flags"]) == ("tenant:", ":flags", ["acme", "globex"])
    assert split_affixes(["/srv/a/config.yaml", "/srv/bb/config.yaml"]) == ("/srv/", "/config.yaml", ["a", "bb"])
    assert split_affixes(["acme/web", "acme/api"]) == ("acme/", "", ["web", "api"])
    # No cut inside an e-mail address, a domain or a file name: the user gives those whole.
    assert split_affixes(["ann@example.com", "bob@example.com"]) is None
    assert split_affixes(["report-1.csv", "report-2.csv"]) is None
    assert split_affixes(["same", "same"]) is None
    assert around("tenant:acme:flags", "acme") == ("tenant:", ":flags")
    assert around("tenant:acmeco:flags", "acme") is None  # not between separators
    assert around("acme:acme", "acme") is None  # twice: which one is unclear


def test_one_input_per_call_built_around_the_element_becomes_a_list_of_the_elements() -> None:
    s = _flags(TENANTS)
    first = templatize([s.steps], name="t")
    result = templatize([s.steps], name="t", inputs=first.ticked_inputs)
    loop = result.template.step("hset_each")
    (name,) = [n for n, spec in result.template.inputs.items() if spec.type == "array"]
    assert loop.for_each == f"@input.{name}"
    assert loop.input["name"] == "tenant:{{@item}}:flags"
    assert result.input_values[name] == TENANTS
    assert verify(result, [s.steps]).verified


def test_a_list_input_the_user_named_is_found_inside_the_text_of_each_call() -> None:
    s = _flags(TENANTS)
    result = templatize([s.steps], name="t", inputs={"tenants": TENANTS})
    loop = result.template.step("hset_each")
    assert (loop.for_each, loop.input["name"]) == ("@input.tenants", "tenant:{{@item}}:flags")
    assert verify(result, [s.steps]).verified


def test_a_text_that_holds_the_element_with_no_separator_around_it_is_no_loop_over_the_list() -> None:
    s = Session()
    for tenant in TENANTS:
        s.call("hset", {"name": f"tenant{tenant}flags", "key": "k", "value": "on"}, "ok")
    result = templatize([s.steps], name="t", inputs={"tenants": TENANTS})
    assert all(step.for_each != "@input.tenants" for step in result.template.steps)
