"""SPEC §7 checks of a built `Template`: names, refs to steps and declared inputs, one kind per step, no cycles.

`Checker(template, source).check()` raises the first problem as one `TemplateError` naming template, step, field.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping

from toolreel.core._template_graph import CycleError, dependencies, topo_order
from toolreel.core.errors import CodeError, TemplateError
from toolreel.core.form import check_value, schema_problem
from toolreel.core.model import JSON
from toolreel.core.refs import RESERVED_ROOTS, STEP_NAME_RE, Ref, broken_ref, is_ref, ref_roots, refs_in
from toolreel.core.sandbox import check_code
from toolreel.core.script_sandbox import check_script
from toolreel.core.template import InputSpec, StepSpec, Template
from toolreel.core.template_schema import INPUT_NAME_RE, TEMPLATE_NAME_RE

__all__ = ["Checker"]

_LOOP_ROOTS = frozenset({"item", "index"})
_JSON_TYPES: dict[str, Callable[[object], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}
_FIRST_KEY_RE = re.compile(r"""^(?:([A-Za-z_][A-Za-z0-9_-]*)|\[(["'])((?:[^\\]|\\.)*?)\2\])""")


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


class Checker:
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
        if not TEMPLATE_NAME_RE.fullmatch(self.t.name):  # fullmatch: `$` alone lets a trailing newline through
            raise self.error(
                "a template name is 1-64 characters of [A-Za-z0-9_-], starting with a letter or digit "
                "(it is also the tool name reel__<name>)",
                field="name",
            )
        for name, spec in self.t.inputs.items():
            if not INPUT_NAME_RE.fullmatch(name):
                raise self.error(
                    f"input name {name!r} must match [A-Za-z_][A-Za-z0-9_]* (it is written @input.{name})",
                    field=f"inputs.{name}",
                )
            self._check_default(name)
            self._check_constraints(name, spec)
        self._check_names()
        for step in self.t.steps:
            self._check_step(step)
        for field, text in _strings(self.t.output, "output"):
            self._check_refs(None, field, text, in_loop=False)
        if self.t.output_schema is not None:
            problem = schema_problem(self.t.output_schema)
            if problem is not None:
                raise self.error(f"not a usable JSON Schema: {problem}", field="output_schema")
        try:
            topo_order(self.t)
        except CycleError as exc:
            naming = self._field_naming(self.t.step(exc.cycle[0]), exc.cycle[1])
            raise self.error(str(exc).split(": ", 1)[-1], exc.cycle[0], naming) from None

    def _check_constraints(self, name: str, spec: InputSpec) -> None:
        """Constraints fit the declared type, and a default meets them (a run would refuse it otherwise)."""
        misfit = (
            ("pattern", spec.pattern is not None, ("string",)),
            ("minimum", spec.minimum is not None, ("number", "integer")),
            ("maximum", spec.maximum is not None, ("number", "integer")),
            ("items", spec.items is not None, ("array",)),
        )
        for keyword, present, types in misfit:
            if present and spec.type is not None and spec.type not in types:
                raise self.error(
                    f"`{keyword}` applies to {' and '.join(types)} inputs, not {spec.type}",
                    field=f"inputs.{name}.{keyword}",
                )
        if spec.items is not None and (problem := schema_problem(spec.items)) is not None:
            raise self.error(f"`items` is not a JSON Schema: {problem}", field=f"inputs.{name}.items")
        if spec.has_default and spec.default is not None and spec.constraints():
            problem = check_value(name, spec.constraints(), spec.default)
            if problem is not None:
                raise self.error(
                    f"the default does not meet the constraints: {problem}", field=f"inputs.{name}.default"
                )

    def _check_default(self, name: str) -> None:
        """A default must be a value of the declared type (null: no value), or every run without the input fails."""
        spec = self.t.inputs[name]
        if spec.type is None or not spec.has_default or spec.default is None:
            return
        if not _JSON_TYPES[spec.type](spec.default):
            raise self.error(
                f"input {name!r} is declared {spec.type} but its default {spec.default!r} is not",
                field=f"inputs.{name}.default",
            )

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
        for leaf in step.when.leaves() if step.when is not None else ():
            if not is_ref(leaf.ref):
                raise self.error("when.ref must be one ref, like @list_issues.total", step.name, "when.ref")
        if step.switch is not None and not is_ref(step.switch.ref):
            raise self.error("switch.ref must be one ref, like @triage.severity", step.name, "switch.ref")
        if step.wait_for is not None:
            deps = set(step.depends_on) if step.depends_on else dependencies(step) & self.known
            if step.wait_for > len(deps):
                raise self.error(
                    f"waits for {step.wait_for} of its dependencies, but it has {len(deps)}"
                    f"{' (' + ', '.join(sorted(deps)) + ')' if deps else ''}; name them in depends_on",
                    step.name,
                    "wait_for",
                )
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
                ("code", step.code is not None),
                ("script", step.script is not None),
                ("wait", step.wait is not None),
                ("switch", step.switch is not None),
                ("llm", step.llm is not None),
            )
            if present
        ]
        if len(kinds) != 1:
            found = " and ".join(kinds) if kinds else "none"
            raise self.error(
                f"a step has exactly one kind of tool, return, approve, template, code, script, wait, switch, llm; "
                f"found {found}",
                step.name,
                kinds[1] if len(kinds) > 1 else "tool",
            )
        kind = kinds[0]
        callable_kind = kind in ("tool", "template", "code", "script")
        rules = (
            (
                "for_each",
                step.for_each is not None,
                callable_kind and kind != "script",
                "only a tool or template step, or a code step, can have for_each",
            ),
            ("concurrency", step.concurrency is not None, step.for_each is not None, "concurrency needs for_each"),
            ("input", step.input is not None, callable_kind, f"a {kind} step takes no input"),
            ("template_version", step.template_version is not None, kind == "template", "needs `template`"),
            ("memory_mb", step.memory_mb is not None, kind in ("code", "script"), "needs `code` or `script`"),
            (
                "timeout",
                step.timeout is not None,
                callable_kind or kind == "llm",
                f"a {kind} step has no timeout (tool, template, code and script steps do; an approval takes "
                "`approve: {message, timeout, on_timeout}`)",
            ),
        )
        for field, present, allowed, message in rules:
            if present and not allowed:
                raise self.error(message, step.name, field)
        if kind == "code":
            self._check_code(step)
        elif kind == "script":
            self._check_script(step)
        elif step.input is not None and not isinstance(step.input, Mapping) and not _is_str_ref(step.input):
            raise self.error("input must be an object of arguments (or one ref to an object)", step.name, "input")

    def _check_script(self, step: StepSpec) -> None:
        assert step.script is not None
        try:
            check_script(step.script)
        except CodeError as exc:
            raise self.error(f"the script does not compile: {exc}", step.name, "script") from None
        if step.input is not None and not isinstance(step.input, Mapping) and not _is_str_ref(step.input):
            raise self.error("a script's input is an object (or one ref to an object)", step.name, "input")

    def _check_code(self, step: StepSpec) -> None:
        assert step.code is not None
        try:
            check_code(step.code)
        except CodeError as exc:
            raise self.error(f"the script does not compile: {exc}", step.name, "code") from None

    def _ref_fields(self, step: StepSpec) -> Iterator[tuple[str, JSON]]:
        yield "input", step.input
        yield "return", step.return_
        yield "approve", step.approve
        yield "for_each", step.for_each
        yield "idempotency_key", step.idempotency_key
        if step.wait is not None:
            yield "wait.until", step.wait.until
        if step.llm is not None:
            yield "llm.prompt", step.llm.prompt
        if step.switch is not None:
            yield "switch.ref", step.switch.ref
            for index, case in enumerate(step.switch.cases):
                yield f"switch.cases[{index}].{case.when.op}", case.when.value
        for leaf in step.when.leaves() if step.when is not None else ():
            yield "when.ref", leaf.ref
            yield f"when.{leaf.op}", leaf.value

    def _check_refs(self, step: StepSpec | None, field: str, text: str, *, in_loop: bool) -> None:
        where = step.name if step is not None else None
        broken = broken_ref(text, self.known.__contains__)
        if broken is not None:  # a ref to a step that does not parse: refused now, not at run time
            raise self.error(broken, where, field)
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
