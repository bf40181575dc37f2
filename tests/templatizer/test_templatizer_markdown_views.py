"""Markdown a tool answers with, read as rows, eleventh pass: a list of links (a search's hits: `- [title](url)
(id: …)`), picked by the title the user searched for among look-alikes; and a task list (`- [ ] item`) under
headings, whose unticked items under one heading a loop walks, however many there are on the next run."""

from __future__ import annotations

from tests.recorded import Session, saved
from toolreel.core.sandbox import run_code
from toolreel.core.template_io import template_to_dict


def _hits(*titles: tuple[str, str]) -> str:
    return "\n".join(
        f"- [{t}](https://wiki.acme.dev/doc/{t.lower().replace(' ', '-')}-{i}) (id: {i})" for t, i in titles
    )


def _doc(title: str, todo: list[tuple[str, bool]]) -> str:
    items = "\n".join(f"- [{'x' if done else ' '}] {text}" for text, done in todo)
    return f"# {title}\n\n## Decisions\n- ship it\n\n## Action items\n{items}\n\n## Notes\n- [ ] not an action\n"


def _session() -> Session:
    s = Session()
    hits = _hits(("Retro 2026-11-20 (draft)", "hQ2mZ7pLkd"), ("Retro 2026-11-20", "Xy8vR3tWq1"))
    s.call("search_documents", {"query": "Retro 2026-11-20"}, hits)
    todo = [("Rotate the staging certs", False), ("Write the incident timeline", True), ("Add alert", False)]
    s.call("get_document", {"id": "Xy8vR3tWq1"}, _doc("Retro 2026-11-20", todo))
    for text, done in todo:
        if not done:
            s.call("create_task", {"project_id": 12, "title": text, "description": "From Retro 2026-11-20"}, {"id": 1})
    return s


def test_a_list_of_links_is_rows_and_the_hit_is_picked_by_the_title_searched_for() -> None:
    result = saved(_session())
    steps = {step["name"]: step for step in template_to_dict(result.template)["steps"]}
    rows_code = steps["search_documents_1_rows"]["code"]
    other = _hits(("Planning week 49", "Pw49aaaaaa"), ("Planning week 49 (old)", "Pw49bbbbbb"))
    rows = run_code(rows_code, {"text": other, "shape": "links", "level": 0})
    assert rows == [
        {
            "title": "Planning week 49",
            "url": "https://wiki.acme.dev/doc/planning-week-49-Pw49aaaaaa",
            "id": "Pw49aaaaaa",
        },
        {
            "title": "Planning week 49 (old)",
            "url": "https://wiki.acme.dev/doc/planning-week-49-(old)-Pw49bbbbbb",  # a `)` inside the URL is kept
            "id": "Pw49bbbbbb",
        },
    ]
    assert result.input_values == {"query": "Retro 2026-11-20"}
    picks = [step for step in steps.values() if step["name"].startswith("pick_")]
    assert [pick["input"]["value"] for pick in picks] == ["@input.query"]
    assert steps["get_document_1"]["input"]["id"] == f"@{picks[0]['name']}.id"


def test_a_loop_walks_the_unticked_items_under_the_heading_on_any_number_of_them() -> None:
    result = saved(_session())
    steps = {step["name"]: step for step in template_to_dict(result.template)["steps"]}
    loop = steps["create_task_each"]
    assert loop["input"]["title"] == "@item.title"
    select = steps[loop["for_each"].removeprefix("@")]
    rows_code = steps["get_document_1_rows"]["code"]
    for todo in ([("Book the venue", False)], [(f"item {n}", n % 2 == 0) for n in range(10)]):
        rows = run_code(rows_code, {"text": _doc("Kickoff", todo), "shape": "checklist", "level": 0})
        chosen = run_code(select["code"], {"items": rows, "where": select["input"]["where"]})
        assert [row["title"] for row in chosen] == [text for text, done in todo if not done]
    assert "section" not in result.input_values  # the heading is where the task looks, not the user's choice
