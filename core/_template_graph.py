"""The step graph of a template: what each step waits for, an order that respects it, and cycles.

`topo_order` raises a `TemplateError` naming one cycle; `check_template_cycles` follows `template` steps
through saved templates.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from typing import ClassVar

from toolreel.core.errors import TemplateError
from toolreel.core.model import JSON
from toolreel.core.refs import RESERVED_ROOTS, ref_roots
from toolreel.core.template import StepSpec, Template

__all__ = ["CycleError", "check_template_cycles", "dependencies", "topo_order"]


def dependencies(step: StepSpec) -> set[str]:
    """Steps `step` waits for: refs in input, when, for_each, idempotency_key, return, approve, wait.until,
    a switch's ref and case values, the switch a branch's step is in, and depends_on."""
    values: list[JSON] = [step.input, step.return_, step.approve, step.for_each, step.idempotency_key]
    if step.wait is not None:
        values.append(step.wait.until)
    if step.switch is not None:
        values += [step.switch.ref, *(case.when.value for case in step.switch.cases)]
    if step.llm is not None:
        values.append(step.llm.prompt)
    if step.when is not None:
        values += [part for leaf in step.when.leaves() for part in (leaf.ref, leaf.value)]
    roots = ref_roots(values)
    roots.update(step.depends_on)
    if step.branch is not None:  # a branch's step runs once its switch has picked
        roots.add(step.branch[0])
    roots -= RESERVED_ROOTS
    roots.discard(step.name)
    return roots


class CycleError(TemplateError):
    code: ClassVar[str] = "template_cycle"

    def __init__(self, message: str, *, template: str, step: str, cycle: tuple[str, ...]) -> None:
        super().__init__(message, template=template, step=step)
        self.cycle = cycle


def topo_order(t: Template) -> list[str]:
    """Step names in an order where every step follows its dependencies (declaration order among equals)."""
    position = {step.name: i for i, step in enumerate(t.steps)}
    deps = {step.name: dependencies(step) & position.keys() for step in t.steps}
    waiting = {name: len(names) for name, names in deps.items()}
    dependents: dict[str, list[str]] = {name: [] for name in deps}
    for name, names in deps.items():
        for dep in names:
            dependents[dep].append(name)
    ready = [position[name] for name, count in waiting.items() if count == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        name = t.steps[heapq.heappop(ready)].name
        order.append(name)
        for dependent in dependents[name]:
            waiting[dependent] -= 1
            if waiting[dependent] == 0:
                heapq.heappush(ready, position[dependent])
    if len(order) < len(t.steps):
        done = set(order)
        cycle = _find_cycle(deps, [step.name for step in t.steps if step.name not in done])
        raise CycleError(
            f"steps wait for each other in a cycle: {' -> '.join(cycle)} (each waits for the next); "
            "remove one of these refs or depends_on",
            template=t.name,
            step=cycle[0],
            cycle=tuple(cycle),
        )
    return order


def _find_cycle(deps: Mapping[str, set[str]], pending: list[str]) -> list[str]:
    """One cycle among steps that could not be ordered, as names ending where they start."""
    left = set(pending)
    path: list[str] = [pending[0]]
    while True:
        nxt = min(deps[path[-1]] & left, key=pending.index)  # every unordered step waits on another one
        if nxt in path:
            return [*path[path.index(nxt) :], nxt]
        path.append(nxt)


def check_template_cycles(t: Template, lookup: Callable[[str], Template | None]) -> None:
    """Refuse `t` if its `template` steps lead back to it through saved templates.

    `lookup(name)` returns the saved template (latest version) or None; unknown names are
    not an error here (they fail at run time if still missing).
    """
    stack: list[tuple[str, list[str]]] = [(t.name, [t.name])]
    visited: set[str] = set()
    while stack:
        name, chain = stack.pop()
        current = t if name == t.name and len(chain) == 1 else lookup(name)
        if current is None or name in visited:
            continue
        visited.add(name)
        for step in current.steps:
            if step.template is None:
                continue
            if step.template == t.name:
                raise TemplateError(
                    f"templates form a cycle: {' -> '.join([*chain, t.name])}",
                    template=t.name,
                    step=step.name if len(chain) == 1 else None,
                    field="template",
                )
            stack.append((step.template, [*chain, step.template]))
