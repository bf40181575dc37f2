"""The JSON the pages read: executions, one execution as a graph, templates.

Everything comes from the store as it was written (secrets are stored redacted, so they stay
so here). An execution's graph has one node per step and one edge per ref in a step's input as
written, labelled with the path it reads; a template's `depends_on` adds dashed edges.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from toolreel.core.errors import NotFoundError, TemplateError
from toolreel.core.model import Execution, ExecutionMode, ExecutionStatus, StepRecord, TemplateRecord
from toolreel.core.refs import RESERVED_ROOTS, refs_in

if TYPE_CHECKING:
    from toolreel.core.store import Store
    from toolreel.core.template import StepSpec, Template

__all__ = ["execution_page", "execution_summary", "graph_of_template", "template_page"]


def execution_summary(e: Execution) -> dict[str, Any]:
    return {
        "id": e.id,
        "status": e.status.value,
        "mode": e.mode.value,
        "template": e.template,
        "template_version": e.template_version,
        "created_at": e.created_at,
        "updated_at": e.updated_at,
        "error": e.error,
        "parent_id": e.parent_id,
        "attempt": e.attempt,
        "schedule": e.schedule,
    }


def execution_page(store: Store, execution_id: str) -> dict[str, Any]:
    """An execution, its steps (every attempt) and its graph; blocking (run it in a thread)."""
    execution = store.get_execution(execution_id)
    rows = store.get_steps(execution_id, all_attempts=True)
    template = _template_of(store, execution)
    steps = _steps(rows)
    nodes = [dict(step) for step in steps.values()]
    edges: list[dict[str, Any]] = []
    if template is not None:
        graph = graph_of_template(template)
        edges = graph["edges"]
        for node in graph["nodes"]:
            if node["name"] not in steps:  # not started yet: drawn pending
                nodes.append({**node, "status": "pending", "attempts": []})
    else:
        edges = _ref_edges([(s["name"], s["input"]) for s in steps.values()], set(steps))
    page = {**execution_summary(execution), "inputs": execution.inputs, "output": execution.output}
    page.update(
        prompt=execution.prompt,
        nodes=nodes,
        edges=edges,
        can_cancel=not execution.status.finished and execution.status is not ExecutionStatus.RECORDING,
        can_resume=_resumable(execution),
        can_retry=_retryable(execution),
        can_templatize=execution.status is ExecutionStatus.RECORDING or execution.template is None,
    )
    return page


def _resumable(execution: Execution) -> bool:
    """Paused, or interrupted: running with nobody driving it (no claim, or its lease lapsed)."""
    if execution.status is ExecutionStatus.PAUSED:
        return True
    lapsed = execution.lease_until is None or execution.lease_until < time.time()
    return execution.status is ExecutionStatus.RUNNING and lapsed


def _retryable(execution: Execution) -> bool:
    """A failed or cancelled run of a template, not a child (its parent is retried)."""
    ended = execution.status in (ExecutionStatus.FAILED, ExecutionStatus.CANCELLED)
    return ended and execution.mode is ExecutionMode.AUTO and execution.parent_id is None


def _template_of(store: Store, execution: Execution) -> Template | None:
    if execution.template is None:
        return None
    from toolreel.core.template_io import stored_template

    try:
        return stored_template(store.get_template(execution.template, execution.template_version))
    except (NotFoundError, TemplateError):
        return None  # deleted since, or unreadable: the steps alone are drawn


def _steps(rows: Sequence[StepRecord]) -> dict[str, dict[str, Any]]:
    """One entry per step name (its latest attempt), earlier attempts listed under it;
    for_each items (`name[i]`) are folded into their step."""
    steps: dict[str, dict[str, Any]] = {}
    for row in sorted(rows, key=lambda r: (r.seq, r.attempt)):
        base, bracket, _ = row.name.partition("[")
        if bracket and base in steps:
            steps[base].setdefault("items", []).append(_attempt(row) | {"name": row.name})
            continue
        entry = steps.get(row.name)
        attempts = [*entry["attempts"], _attempt(row)] if entry else [_attempt(row)]
        steps[row.name] = _step_entry(row) | {"attempts": attempts}
    return steps


def _attempt(row: StepRecord) -> dict[str, Any]:
    return {
        "attempt": row.attempt,
        "status": row.status.value,
        "error": row.error,
        "started_at": row.started_at,
        "ended_at": row.ended_at,
    }


def _step_entry(row: StepRecord) -> dict[str, Any]:
    return {
        "name": row.name,
        "seq": row.seq,
        "kind": row.kind.value,
        "status": row.status.value,
        "server": row.server,
        "tool": row.tool,
        "input": row.input,
        "resolved_input": row.resolved_input,
        "output": row.output,
        "is_error": row.is_error,
        "error": row.error,
        "started_at": row.started_at,
        "ended_at": row.ended_at,
        "redacted": list(row.redacted),
    }


def _ref_edges(inputs: Sequence[tuple[str, Any]], known: set[str]) -> list[dict[str, Any]]:
    edges = []
    for name, value in inputs:
        for ref in refs_in(value):
            if ref.root in RESERVED_ROOTS or ref.root not in known or ref.root == name:
                continue
            edges.append({"source": ref.root, "target": name, "label": ref.path or "", "ref": ref.text, "kind": "ref"})
    return edges


def _spec_values(step: StepSpec) -> list[Any]:
    values: list[Any] = [step.input, step.return_, step.approve, step.for_each, step.idempotency_key]
    if step.wait is not None:
        values.append(step.wait.until)
    if step.llm is not None:
        values.append(step.llm.prompt)
    if step.switch is not None:
        values += [step.switch.ref, *(case.when.value for case in step.switch.cases)]
    if step.when is not None:
        values += [part for leaf in step.when.leaves() for part in (leaf.ref, leaf.value)]
    return values


def graph_of_template(template: Template) -> dict[str, Any]:
    """Nodes of a template's steps and its edges: one per ref, one dashed per `depends_on`."""
    names = {step.name for step in template.steps}
    edges = _ref_edges([(step.name, _spec_values(step)) for step in template.steps], names)
    for step in template.steps:
        for before in step.depends_on:
            edges.append({"source": before, "target": step.name, "label": "", "ref": None, "kind": "depends_on"})
        if step.branch is not None:  # a switch's branch: drawn as an ordering edge from the switch
            edges.append(
                {"source": step.branch[0], "target": step.name, "label": "", "ref": None, "kind": "depends_on"}
            )
    nodes = [
        {"name": step.name, "kind": step.kind, "tool": step.tool, "input": step.input, "for_each": step.for_each}
        for step in template.steps
    ]
    return {"nodes": nodes, "edges": edges}


def template_page(store: Store, name: str, version: int | None) -> dict[str, Any]:
    """A template version: its YAML, graph, inputs and the list of its versions; blocking."""
    from toolreel.core.template_io import dump_template_yaml, stored_template
    from toolreel.core.view import template_record_view

    latest = store.get_template(name)
    record = latest if version is None else store.get_template(name, version)
    template = stored_template(record)
    return {
        **template_record_view(record),
        "versions": _versions(store, name, latest),
        "yaml": dump_template_yaml(template),
        "inputs": _inputs(template),
        **graph_of_template(template),
    }


def _versions(store: Store, name: str, latest: TemplateRecord) -> list[dict[str, Any]]:
    out = []
    for number in range(latest.version, 0, -1):
        try:
            record = latest if number == latest.version else store.get_template(name, number)
        except NotFoundError:
            continue
        out.append({"version": record.version, "hash": record.hash, "created_at": record.created_at})
    return out


def _inputs(template: Template) -> list[dict[str, Any]]:
    """The run form's fields. Secret inputs are not typed into a page: their default source is used."""
    fields = []
    for key, spec in template.inputs.items():
        fields.append(
            {
                "name": key,
                "type": spec.type,
                "description": spec.description,
                "required": spec.required,
                "default": spec.default if spec.has_default else None,
                "has_default": spec.has_default,
                "secret": spec.secret,
            }
        )
    return fields
