"""Templates in and out: parse and validate YAML/JSON into a frozen `Template`, and back.

`parse_template` checks the shape (`core.template_schema`) and the meaning (SPEC §7: unique
names, refs to existing steps and declared inputs, no cycles, one kind per step) and raises
one `TemplateError` naming the template, step and field. `template_to_dict` is canonical:
`parse_template(template_to_dict(t)) == t` for a template without version and hash.
"""

from __future__ import annotations

import dataclasses
import hashlib
import heapq
import json
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from core.errors import TemplateError
from core.model import JSON, TemplateRecord
from core.refs import RESERVED_ROOTS, STEP_NAME_RE, Ref, is_ref, ref_roots, refs_in
from core.template import InputSpec, RetryPolicy, StepSpec, Template, When
from core.template_schema import (
    INPUT_NAME_RE,
    TEMPLATE_NAME_RE,
    InputModel,
    StepModel,
    TemplateModel,
    WhenModel,
    format_duration,
    template_json_schema,
    validate_shape,
)

__all__ = [
    "check_template_cycles",
    "dependencies",
    "dump_template_yaml",
    "load_template_file",
    "load_template_text",
    "parse_template",
    "stored_template",
    "template_hash",
    "template_json_schema",
    "template_to_dict",
    "to_mermaid",
    "tool_input_schema",
    "topo_order",
]

_LOOP_ROOTS = frozenset({"item", "index"})
_FIRST_KEY_RE = re.compile(r"""^(?:([A-Za-z_][A-Za-z0-9_-]*)|\[(["'])((?:[^\\]|\\.)*?)\2\])""")


# --------------------------------------------------------------------------- loading


def parse_template(data: Mapping[str, Any], *, source: str | None = None) -> Template:
    """Validate a template definition (a JSON object) and return it as a frozen Template."""
    model = validate_shape(data, source=source)
    template = _build(model)
    _Checker(template, source).check()
    return template


def stored_template(record: TemplateRecord) -> Template:
    """A template as saved in a store, with its version and definition hash set."""
    template = parse_template(record.definition, source=f"template {record.name!r} version {record.version}")
    return dataclasses.replace(template, version=record.version, hash=record.hash)


def load_template_text(text: str, *, source: str | None = None) -> Template:
    """A template from YAML or JSON text (JSON is YAML); YAML errors give line and column."""
    return parse_template(_load_yaml(text, source), source=source)


def load_template_file(path: str | Path) -> Template:
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise TemplateError(f"cannot read template file {str(file)!r}: {exc.strerror or exc}") from exc
    return load_template_text(text, source=str(file))


class _Loader(yaml.SafeLoader):
    """Safe YAML without timestamps (dates stay strings: templates are JSON) and without duplicate keys."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (the second one would silently win)", mark
            )
        seen[key] = loader.construct_object(value_node, deep=True)
    return seen


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _load_yaml(text: str, source: str | None) -> Mapping[str, Any]:
    where = source or "<template>"
    try:
        data = yaml.load(text, Loader=_Loader)  # _Loader is a SafeLoader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        position = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = exc.problem or exc.context or "invalid YAML"
        raise TemplateError(f"{where}{position}: YAML error: {problem}") from None
    except yaml.YAMLError as exc:
        raise TemplateError(f"{where}: YAML error: {exc}") from None
    if not isinstance(data, Mapping):
        raise TemplateError(f"{where}: a template is a mapping with name and steps, got {type(data).__name__}")
    return data


# --------------------------------------------------------------------------- model -> dataclasses


def _build(model: TemplateModel) -> Template:
    return Template(
        name=model.name,
        description=model.description,
        inputs={name: _input(spec) for name, spec in model.inputs.items()},
        steps=tuple(_step(step) for step in model.steps),
        output=model.output,
        has_output="output" in model.model_fields_set,
    )


def _input(model: InputModel) -> InputSpec:
    return InputSpec(
        type=model.type,
        description=model.description,
        default=model.default,
        has_default="default" in model.model_fields_set,
        secret=model.secret,
    )


def _step(model: StepModel) -> StepSpec:
    retry = model.retry
    return StepSpec(
        name=model.name,
        tool=model.tool,
        input=model.input,
        return_=model.return_,
        has_return="return_" in model.model_fields_set,
        approve=model.approve,
        template=model.template,
        template_version=model.template_version,
        for_each=model.for_each,
        concurrency=model.concurrency,
        when=_when(model.when) if model.when is not None else None,
        depends_on=tuple(model.depends_on),
        timeout=model.timeout,
        retry=None
        if retry is None
        else RetryPolicy(
            max_attempts=retry.max_attempts,
            backoff=retry.backoff,
            initial_delay=retry.initial_delay,
            max_delay=retry.max_delay,
            jitter=retry.jitter,
            retry_on=tuple(dict.fromkeys(retry.retry_on)),
        ),
        idempotency_key=model.idempotency_key,
        idempotency_scope=model.idempotency_scope,
        idempotency_ttl=model.idempotency_ttl,
        include_failed=model.include_failed,
    )


def _when(model: WhenModel) -> When:
    ops = model.operators()
    if not ops:
        return When(ref=model.ref)
    return When(ref=model.ref, op=ops[0], value=getattr(model, "in_" if ops[0] == "in" else ops[0]))


# --------------------------------------------------------------------------- semantic checks


def _strings(value: JSON, path: str) -> Iterator[tuple[str, str]]:
    """Every string in `value` with where it is (`input.user.id`, `input.tags[0]`)."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")


def _input_name(ref: Ref) -> str | None:
    """The input a `@input...` ref names (its first key), or None for `@input` itself."""
    if ref.path is None:
        return None
    match = _FIRST_KEY_RE.match(ref.path)
    if match is None:
        return ""
    return match.group(1) if match.group(1) is not None else re.sub(r"\\(.)", r"\1", match.group(3))


class _Checker:
    """SPEC §7 validation of a built template; raises the first problem as a TemplateError."""

    def __init__(self, template: Template, source: str | None) -> None:
        self.t = template
        self.source = source
        self.names = [step.name for step in template.steps]
        self.known = set(self.names)

    def error(self, message: str, step: str | None = None, field: str | None = None) -> TemplateError:
        if self.source:
            message = f"{message} (in {self.source})"
        return TemplateError(message, template=self.t.name, step=step, field=field)

    def check(self) -> None:
        if not TEMPLATE_NAME_RE.match(self.t.name):
            raise self.error(
                "a template name is 1-64 characters of [A-Za-z0-9_-], starting with a letter or digit "
                "(it is also the tool name reel__<name>)",
                field="name",
            )
        for name in self.t.inputs:
            if not INPUT_NAME_RE.match(name):
                raise self.error(
                    f"input name {name!r} must match [A-Za-z_][A-Za-z0-9_]* (it is written @input.{name})",
                    field=f"inputs.{name}",
                )
        self._check_names()
        for step in self.t.steps:
            self._check_step(step)
        for field, text in _strings(self.t.output, "output"):
            self._check_refs(None, field, text, in_loop=False)
        try:
            topo_order(self.t)
        except _CycleError as exc:
            naming = self._field_naming(self.t.step(exc.cycle[0]), exc.cycle[1])
            raise self.error(str(exc).split(": ", 1)[-1], exc.cycle[0], naming) from None

    def _field_naming(self, step: StepSpec, other: str) -> str | None:
        """Where `step` refers to (or depends on) step `other`."""
        for field, value in self._ref_fields(step):
            for where, text in _strings(value, field):
                if other in ref_roots(text):
                    return where
        return "depends_on" if other in step.depends_on else None

    def _check_names(self) -> None:
        seen: set[str] = set()
        for step in self.t.steps:
            if not STEP_NAME_RE.fullmatch(step.name):
                raise self.error("a step name must match [A-Za-z_][A-Za-z0-9_]*", step.name, "name")
            if step.name in RESERVED_ROOTS:
                raise self.error(
                    f"{step.name!r} is reserved (@input, @item, @index); choose another step name", step.name, "name"
                )
            if step.name in seen:
                raise self.error("duplicate step name; step names must be unique", step.name, "name")
            seen.add(step.name)

    def _check_step(self, step: StepSpec) -> None:
        self._check_kind(step)
        if step.for_each is not None and not is_ref(step.for_each):
            raise self.error("for_each must be one ref to a list, like @list_issues.items", step.name, "for_each")
        if step.when is not None and not is_ref(step.when.ref):
            raise self.error("when.ref must be one ref, like @list_issues.total", step.name, "when.ref")
        if step.template is not None and step.template == self.t.name:
            raise self.error(f"the step runs template {self.t.name!r}, itself: a cycle", step.name, "template")
        for dep in step.depends_on:
            if dep == step.name:
                raise self.error("a step cannot depend on itself", step.name, "depends_on")
            if dep not in self.known:
                raise self.error(
                    f"depends on {dep!r}, which is not a step; steps: {', '.join(self.names)}", step.name, "depends_on"
                )
        in_loop = step.for_each is not None
        for field, value in self._ref_fields(step):
            loop_here = in_loop and field != "for_each"
            for where, text in _strings(value, field):
                self._check_refs(step, where, text, in_loop=loop_here)

    def _check_kind(self, step: StepSpec) -> None:
        kinds = [
            kind
            for kind, present in (
                ("tool", step.tool is not None),
                ("return", step.has_return),
                ("approve", step.approve is not None),
                ("template", step.template is not None),
            )
            if present
        ]
        if len(kinds) != 1:
            found = " and ".join(kinds) if kinds else "none"
            raise self.error(
                f"a step has exactly one kind of tool, return, approve, template; found {found}",
                step.name,
                kinds[1] if len(kinds) > 1 else "tool",
            )
        kind = kinds[0]
        callable_kind = kind in ("tool", "template")
        rules = (
            ("for_each", step.for_each is not None, callable_kind, "only a tool or template step can have for_each"),
            ("concurrency", step.concurrency is not None, step.for_each is not None, "concurrency needs for_each"),
            ("input", step.input is not None, callable_kind, f"a {kind} step takes no input"),
            ("template_version", step.template_version is not None, kind == "template", "needs `template`"),
        )
        for field, present, allowed, message in rules:
            if present and not allowed:
                raise self.error(message, step.name, field)
        if step.input is not None and not isinstance(step.input, Mapping) and not _is_str_ref(step.input):
            raise self.error("input must be an object of arguments (or one ref to an object)", step.name, "input")

    def _ref_fields(self, step: StepSpec) -> Iterator[tuple[str, JSON]]:
        yield "input", step.input
        yield "return", step.return_
        yield "approve", step.approve
        yield "for_each", step.for_each
        yield "idempotency_key", step.idempotency_key
        if step.when is not None:
            yield "when.ref", step.when.ref
            yield f"when.{step.when.op}", step.when.value

    def _check_refs(self, step: StepSpec | None, field: str, text: str, *, in_loop: bool) -> None:
        where = step.name if step is not None else None
        for ref in refs_in(text):
            if ref.root == "input":
                name = _input_name(ref)
                if name is not None and name not in self.t.inputs:
                    declared = ", ".join(self.t.inputs) or "none"
                    raise self.error(
                        f"`{ref.text}` refers to input {name!r}, which is not declared; declared inputs: {declared}",
                        where,
                        field,
                    )
            elif ref.root in _LOOP_ROOTS:
                if not in_loop:
                    raise self.error(
                        f"`{ref.text}`: @{ref.root} is only defined in the input of a for_each step", where, field
                    )
            elif ref.root not in self.known:
                raise self.error(
                    f"`{ref.text}` refers to step {ref.root!r}, which does not exist; steps: {', '.join(self.names)}",
                    where,
                    field,
                )
            elif step is not None and ref.root == step.name:
                raise self.error(f"`{ref.text}`: a step cannot use its own output (a cycle)", where, field)


def _is_str_ref(value: JSON) -> bool:
    return isinstance(value, str) and is_ref(value)


# --------------------------------------------------------------------------- graph


def dependencies(step: StepSpec) -> set[str]:
    """Steps `step` waits for: refs in input, when, for_each, idempotency_key, return, approve, and depends_on."""
    values: list[JSON] = [step.input, step.return_, step.approve, step.for_each, step.idempotency_key]
    if step.when is not None:
        values += [step.when.ref, step.when.value]
    roots = ref_roots(values)
    roots.update(step.depends_on)
    roots -= RESERVED_ROOTS
    roots.discard(step.name)
    return roots


class _CycleError(TemplateError):
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
        raise _CycleError(
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


# --------------------------------------------------------------------------- writing


def template_to_dict(t: Template) -> dict[str, Any]:
    """The canonical JSON object of a template (SPEC §7 shape; durations like `30s`)."""
    out: dict[str, Any] = {"name": t.name}
    if t.description is not None:
        out["description"] = t.description
    if t.inputs:
        out["inputs"] = {name: _input_dict(spec) for name, spec in t.inputs.items()}
    out["steps"] = [_step_dict(step) for step in t.steps]
    if t.has_output:
        out["output"] = t.output
    return out


def _input_dict(spec: InputSpec) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if spec.type is not None:
        out["type"] = spec.type
    if spec.description is not None:
        out["description"] = spec.description
    if spec.has_default:
        out["default"] = spec.default
    if spec.secret:
        out["secret"] = True
    return out


def _step_dict(step: StepSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"name": step.name}
    optional: list[tuple[str, Any, bool]] = [
        ("when", _when_dict(step.when) if step.when else None, step.when is not None),
        ("for_each", step.for_each, step.for_each is not None),
        ("concurrency", step.concurrency, step.concurrency is not None),
        ("tool", step.tool, step.tool is not None),
        ("template", step.template, step.template is not None),
        ("template_version", step.template_version, step.template_version is not None),
        ("input", step.input, step.input is not None),
        ("return", step.return_, step.has_return),
        ("approve", step.approve, step.approve is not None),
        ("depends_on", list(step.depends_on), bool(step.depends_on)),
        ("timeout", _duration(step.timeout), step.timeout is not None),
        ("retry", _retry_dict(step.retry) if step.retry else None, step.retry is not None),
        ("idempotency_key", step.idempotency_key, step.idempotency_key is not None),
        ("idempotency_scope", step.idempotency_scope, step.idempotency_scope != "execution"),
        ("idempotency_ttl", _duration(step.idempotency_ttl), step.idempotency_ttl is not None),
        ("include_failed", True, step.include_failed),
    ]
    out.update((key, value) for key, value, present in optional if present)
    return out


def _duration(seconds: float | None) -> str | float | None:
    return None if seconds is None else format_duration(seconds)


def _when_dict(when: When) -> dict[str, Any]:
    out: dict[str, Any] = {"ref": when.ref}
    if when.op is not None:
        out[when.op] = when.value
    return out


def _retry_dict(retry: RetryPolicy) -> dict[str, Any]:
    return {
        "max_attempts": retry.max_attempts,
        "backoff": retry.backoff,
        "initial_delay": format_duration(retry.initial_delay),
        "max_delay": format_duration(retry.max_delay),
        "jitter": retry.jitter,
        "retry_on": list(retry.retry_on),
    }


def tool_input_schema(t: Template) -> dict[str, Any]:
    """The `inputSchema` of the tool `reel__<name>`: one property per input, required unless it has a default."""
    properties: dict[str, Any] = {}
    for name, spec in t.inputs.items():
        prop: dict[str, Any] = {"type": spec.type} if spec.type else {}
        description = spec.description or ""
        if spec.secret:
            description = f"{description} (secret: never stored)".strip()
        if description:
            prop["description"] = description
        if spec.has_default:
            prop["default"] = spec.default
        properties[name] = prop
    required = [name for name, spec in t.inputs.items() if spec.required]
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def dump_template_yaml(t: Template) -> str:
    return yaml.safe_dump(template_to_dict(t), sort_keys=False, allow_unicode=True, width=120)


def template_hash(definition: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of a definition; the store computes the same."""
    canonical = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- mermaid

_SHAPES = {"tool": ('["', '"]'), "template": ('[["', '"]]'), "return": ('(["', '"])'), "approve": ('{{"', '"}}')}


def to_mermaid(t: Template) -> str:
    """A Mermaid flowchart of the DAG: one node per step (shape by kind), an edge per dependency."""
    lines = ["flowchart TD"]
    for step in t.steps:
        open_, close = _SHAPES[step.kind]
        lines.append(f"    {step.name}{open_}{_label(step)}{close}")
    names = {step.name for step in t.steps}
    for name in topo_order(t):
        step = t.step(name)
        for dep in sorted(dependencies(step) & names):
            arrow = "-.->" if dep in step.depends_on and dep not in ref_roots(_data_fields(step)) else "-->"
            lines.append(f"    {dep} {arrow} {name}")
    return "\n".join(lines) + "\n"


def _data_fields(step: StepSpec) -> list[JSON]:
    values: list[JSON] = [step.input, step.return_, step.approve, step.for_each, step.idempotency_key]
    if step.when is not None:
        values += [step.when.ref, step.when.value]
    return values


def _label(step: StepSpec) -> str:
    detail = {
        "tool": step.tool,
        "template": f"template {step.template}",
        "return": "return",
        "approve": "approve",
    }[step.kind]
    parts = [step.name, str(detail)]
    if step.for_each is not None:
        parts.append(f"for each {step.for_each}")
    if step.when is not None:
        test = f"{step.when.op} {json.dumps(step.when.value)}" if step.when.op else "is truthy"
        parts.append(f"when {step.when.ref} {test}")
    return "<br/>".join(part.replace('"', "#quot;") for part in parts)
