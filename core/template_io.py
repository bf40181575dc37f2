"""Templates in and out: parse and validate YAML/JSON into a frozen `Template`, and back.

`parse_template` checks the shape (`core.template_schema`) and the meaning (SPEC §7: unique
names, refs to existing steps and declared inputs, no cycles, one kind per step) and raises
one `TemplateError` naming the template, step and field. `template_to_dict` is canonical:
`parse_template(template_to_dict(t)) == t` for a template without version and hash.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from toolreel.core._template_check import Checker
from toolreel.core._template_graph import check_template_cycles, dependencies, topo_order
from toolreel.core.errors import TemplateError
from toolreel.core.model import JSON, TemplateRecord
from toolreel.core.refs import ref_roots
from toolreel.core.template import (
    DEFAULT_CASE,
    InputSpec,
    LLMSpec,
    RetryPolicy,
    SecretSource,
    StepSpec,
    SwitchCase,
    SwitchSpec,
    Template,
    WaitSpec,
    When,
)
from toolreel.core.template_schema import (
    ApproveModel,
    InputModel,
    JoinModel,
    LLMModel,
    SecretSourceModel,
    StepModel,
    SwitchModel,
    TemplateModel,
    WaitModel,
    WhenModel,
    format_duration,
    template_json_schema,
    validate_shape,
)
from toolreel.core.yaml_bounded import load_yaml

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
    "template_text",
    "template_to_dict",
    "to_mermaid",
    "tool_input_schema",
    "topo_order",
]


# --------------------------------------------------------------------------- loading


def parse_template(data: Mapping[str, Any], *, source: str | None = None) -> Template:
    """Validate a template definition (a JSON object) and return it as a frozen Template."""
    _refuse_lone_surrogates(data, source or "<template>")
    model = validate_shape(data, source=source)
    template = _build(model)
    Checker(template, source).check()
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
        data = file.read_bytes()
    except OSError as exc:
        raise TemplateError(f"cannot read template file {str(file)!r}: {exc.strerror or exc}") from exc
    return load_template_text(template_text(data, str(file)), source=str(file))


def template_text(data: bytes, where: str) -> str:
    """The text of a template or inputs file; TemplateError when it is binary or not UTF-8."""
    nul = data.find(b"\0")
    if nul >= 0:
        raise TemplateError(f"{where}: byte {nul} is NUL: a binary file, not YAML or JSON text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TemplateError(
            f"{where}: byte {exc.start} (0x{data[exc.start]:02x}) is not UTF-8: the file must be YAML or JSON text "
            "in UTF-8; convert it (iconv -t UTF-8) or check that it is the file meant"
        ) from None


_SURROGATE = re.compile("[\ud800-\udfff]")


def _refuse_lone_surrogates(data: Any, where: str) -> None:
    """A lone UTF-16 surrogate (YAML's or JSON's `"\\ud800"`) is not text: no store, hash or file can hold it."""
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            found = None if value.isascii() else _SURROGATE.search(value)
            if found is not None:
                raise TemplateError(
                    f"{where}: {path or 'the template'} holds a lone UTF-16 surrogate "
                    f"(\\u{ord(found.group()):04x}), which is not text; write the whole character"
                )
        elif isinstance(value, Mapping):
            for key, item in value.items():
                stack.append((key, path or "a key"))
                stack.append((item, f"{path}.{key}" if path else str(key)))
        elif isinstance(value, list | tuple):
            stack.extend((item, f"{path}[{index}]") for index, item in enumerate(value))


def _load_yaml(text: str, source: str | None) -> Mapping[str, Any]:
    where = source or "<template>"
    data = load_yaml(text, where)
    if not isinstance(data, Mapping):
        raise TemplateError(f"{where}: a template is a mapping with name and steps, got {type(data).__name__}")
    return data


# --------------------------------------------------------------------------- model -> dataclasses


def _build(model: TemplateModel) -> Template:
    return Template(
        name=model.name,
        description=model.description,
        inputs={name: _input(spec) for name, spec in model.inputs.items()},
        steps=tuple(_flat(model.steps)),
        output=model.output,
        has_output="output" in model.model_fields_set,
        servers=model.servers,
        output_schema=model.output_schema,
    )


def _input(model: InputModel) -> InputSpec:
    return InputSpec(
        type=model.type,
        description=model.description,
        default=model.default,
        has_default="default" in model.model_fields_set,
        secret=model.secret is not False,
        secret_source=_secret_source(model.secret),
        enum=tuple(model.enum) if model.enum is not None else None,
        pattern=model.pattern,
        minimum=model.minimum,
        maximum=model.maximum,
        items=model.items,
    )


def _secret_source(secret: bool | SecretSourceModel) -> SecretSource | None:
    if isinstance(secret, bool):
        return None
    return SecretSource("env", secret.env) if secret.env is not None else SecretSource("file", secret.file or "")


def _flat(models: list[StepModel], branch: tuple[str, int] | None = None) -> list[StepSpec]:
    """Steps in order, each switch followed by the steps of its cases and default (their `branch` set)."""
    out: list[StepSpec] = []
    for model in models:
        out.append(_step(model, branch))
        if model.switch is not None:
            for index, case in enumerate(model.switch.cases):
                out += _flat(case.steps, (model.name, index))
            out += _flat(model.switch.default, (model.name, DEFAULT_CASE))
    return out


def _switch(model: SwitchModel) -> SwitchSpec:
    cases = []
    for case in model.cases:
        op = case.operators()[0]
        test = When(ref=model.ref, op=op, value=getattr(case, "in_" if op == "in" else op))
        cases.append(SwitchCase(test, tuple(step.name for step in case.steps)))
    return SwitchSpec(model.ref, tuple(cases), tuple(step.name for step in model.default))


def _llm(model: LLMModel) -> LLMSpec:
    return LLMSpec(
        prompt=model.prompt,
        schema=model.schema_,
        max_tokens=model.max_tokens,
        recorded=model.recorded,
        has_recorded="recorded" in model.model_fields_set,
    )


def _join(wait_for: str | JoinModel | None) -> int | None:
    if isinstance(wait_for, JoinModel):
        return wait_for.n_of
    return 1 if wait_for == "any" else None


def _step(model: StepModel, branch: tuple[str, int] | None = None) -> StepSpec:
    retry = model.retry
    return StepSpec(
        name=model.name,
        tool=model.tool,
        input=model.input,
        return_=model.return_,
        has_return="return_" in model.model_fields_set,
        approve=model.approve.message if isinstance(model.approve, ApproveModel) else model.approve,
        approve_schema=_form(model.approve),
        approve_timeout=model.approve.timeout if isinstance(model.approve, ApproveModel) else None,
        on_timeout=model.approve.on_timeout if isinstance(model.approve, ApproveModel) else "reject",
        wait=_wait(model.wait) if model.wait is not None else None,
        switch=_switch(model.switch) if model.switch is not None else None,
        llm=_llm(model.llm) if model.llm is not None else None,
        branch=branch,
        wait_for=_join(model.wait_for),
        template=model.template,
        template_version=model.template_version,
        code=model.code,
        script=model.script.code if model.script is not None else None,
        max_calls=model.script.max_calls if model.script is not None else None,
        memory_mb=model.memory_mb,
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
        on_error=model.on_error,
        tool_digest=model.tool_digest,
    )


def _wait(model: WaitModel) -> WaitSpec:
    return WaitSpec(for_=model.for_, until=model.until, signal=model.signal, schema=model.schema_)


def _form(approve: str | ApproveModel | None) -> JSON:
    if not isinstance(approve, ApproveModel) or approve.schema_ is None:
        return None
    form: dict[str, Any] = approve.schema_.model_dump(exclude_none=True, exclude_unset=True)
    form["type"] = "object"
    return form


def _when(model: WhenModel) -> When:
    if model.all is not None:
        return When(ref="", all=tuple(_when(part) for part in model.all))
    if model.any is not None:
        return When(ref="", any=tuple(_when(part) for part in model.any))
    if model.not_ is not None:
        return When(ref="", not_=_when(model.not_))
    assert model.ref is not None  # the model's validator
    ops = model.operators()
    if not ops:
        return When(ref=model.ref)
    return When(ref=model.ref, op=ops[0], value=getattr(model, "in_" if ops[0] == "in" else ops[0]))


# --------------------------------------------------------------------------- writing


def template_to_dict(t: Template) -> dict[str, Any]:
    """The canonical JSON object of a template (SPEC §7 shape; durations like `30s`)."""
    out: dict[str, Any] = {"name": t.name}
    if t.description is not None:
        out["description"] = t.description
    if t.inputs:
        out["inputs"] = {name: _input_dict(spec) for name, spec in t.inputs.items()}
    out["steps"] = [_step_dict(step, t) for step in t.steps if step.branch is None]
    if t.has_output:
        out["output"] = t.output
    if t.output_schema is not None:
        out["output_schema"] = dict(t.output_schema)
    if t.servers:
        out["servers"] = {name: dict(entry) for name, entry in t.servers.items()}
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
        source = spec.secret_source
        out["secret"] = {source.kind: source.where} if source is not None else True
    out.update(spec.constraints())
    return out


def _script_dict(step: StepSpec) -> dict[str, Any]:
    return {"code": step.script} if step.max_calls is None else {"code": step.script, "max_calls": step.max_calls}


def _step_dict(step: StepSpec, t: Template) -> dict[str, Any]:
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
        ("approve", _approve_dict(step), step.approve is not None),
        ("wait", _wait_dict(step.wait) if step.wait else None, step.wait is not None),
        ("switch", _switch_dict(step, t), step.switch is not None),
        ("llm", _llm_dict(step.llm) if step.llm else None, step.llm is not None),
        ("wait_for", _join_dict(step.wait_for), step.wait_for is not None),
        ("code", step.code, step.code is not None),
        ("script", _script_dict(step), step.script is not None),
        ("memory_mb", step.memory_mb, step.memory_mb is not None),
        ("depends_on", list(step.depends_on), bool(step.depends_on)),
        ("timeout", _duration(step.timeout), step.timeout is not None),
        ("retry", _retry_dict(step.retry) if step.retry else None, step.retry is not None),
        ("idempotency_key", step.idempotency_key, step.idempotency_key is not None),
        ("idempotency_scope", step.idempotency_scope, step.idempotency_scope != "execution"),
        ("idempotency_ttl", _duration(step.idempotency_ttl), step.idempotency_ttl is not None),
        ("include_failed", True, step.include_failed),
        ("on_error", step.on_error, step.on_error != "fail_fast"),
        ("tool_digest", step.tool_digest, step.tool_digest is not None),
    ]
    out.update((key, value) for key, value, present in optional if present)
    return out


def _approve_dict(step: StepSpec) -> JSON:
    if step.approve_schema is None and step.approve_timeout is None:
        return step.approve
    out: dict[str, Any] = {"message": step.approve}
    if step.approve_schema is not None:
        out["schema"] = step.approve_schema
    if step.approve_timeout is not None:
        out["timeout"] = format_duration(step.approve_timeout)
        out["on_timeout"] = step.on_timeout
    return out


def _switch_dict(step: StepSpec, t: Template) -> dict[str, Any] | None:
    switch = step.switch
    if switch is None:
        return None

    def branch(index: int) -> list[dict[str, Any]]:
        return [_step_dict(inner, t) for inner in t.steps if inner.branch == (step.name, index)]

    cases = [{str(case.when.op): case.when.value, "steps": branch(i)} for i, case in enumerate(switch.cases)]
    out: dict[str, Any] = {"ref": switch.ref, "cases": cases}
    if switch.default:
        out["default"] = branch(DEFAULT_CASE)
    return out


def _llm_dict(llm: LLMSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"prompt": llm.prompt}
    if llm.schema is not None:
        out["schema"] = llm.schema
    if llm.max_tokens != 1024:
        out["max_tokens"] = llm.max_tokens
    if llm.has_recorded:
        out["recorded"] = llm.recorded
    return out


def _join_dict(wait_for: int | None) -> JSON:
    return "any" if wait_for == 1 else {"n_of": wait_for}


def _wait_dict(wait: WaitSpec) -> dict[str, Any]:
    if wait.for_ is not None:
        return {"for": format_duration(wait.for_)}
    if wait.until is not None:
        return {"until": wait.until}
    return {"signal": wait.signal} if wait.schema is None else {"signal": wait.signal, "schema": wait.schema}


def _duration(seconds: float | None) -> str | float | None:
    return None if seconds is None else format_duration(seconds)


def _describe(when: When) -> str:
    if when.combined:
        joined = [_describe(part) for part in (*when.all, *when.any)]
        if when.not_ is not None:
            return f"not ({_describe(when.not_)})"
        return f" {'and' if when.all else 'or'} ".join(f"({part})" for part in joined)
    test = f"{when.op} {json.dumps(when.value)}" if when.op else "is truthy"
    return f"{when.ref} {test}"


def _when_dict(when: When) -> dict[str, Any]:
    if when.all:
        return {"all": [_when_dict(part) for part in when.all]}
    if when.any:
        return {"any": [_when_dict(part) for part in when.any]}
    if when.not_ is not None:
        return {"not": _when_dict(when.not_)}
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
        if spec.secret:  # never passed through the LLM: read from its source when the run starts
            continue
        prop: dict[str, Any] = {"type": spec.type} if spec.type else {}
        if spec.description:
            prop["description"] = spec.description
        if spec.has_default:
            prop["default"] = spec.default
        prop.update(spec.constraints())
        properties[name] = prop
    required = [name for name, spec in t.inputs.items() if spec.required and not spec.secret]
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

_SHAPES = {
    "tool": ('["', '"]'),
    "template": ('[["', '"]]'),
    "return": ('(["', '"])'),
    "approve": ('{{"', '"}}'),
    "code": ('[/"', '"/]'),
    "script": ('[/"', '"\\]'),
    "wait": ('(("', '"))'),
    "switch": ('{"', '"}'),
    "llm": ('>"', '"]'),
}


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
    if step.wait is not None:
        values.append(step.wait.until)
    if step.switch is not None:
        values += [step.switch.ref, *(case.when.value for case in step.switch.cases)]
    if step.llm is not None:
        values.append(step.llm.prompt)
    if step.when is not None:
        values += [part for leaf in step.when.leaves() for part in (leaf.ref, leaf.value)]
    return values


def _label(step: StepSpec) -> str:
    detail = {
        "tool": step.tool,
        "template": f"template {step.template}",
        "return": "return",
        "approve": "approve",
        "code": "code",
        "script": "script",
        "wait": "wait",
        "llm": "llm",
        "switch": f"switch on {step.switch.ref if step.switch else ''}",
    }[step.kind]
    if step.wait is not None:
        detail = _wait_label(step.wait)
    parts = [step.name, str(detail)]
    if step.for_each is not None:
        parts.append(f"for each {step.for_each}")
    if step.when is not None:
        parts.append(f"when {_describe(step.when)}")
    return "<br/>".join(part.replace('"', "#quot;") for part in parts)


def _wait_label(wait: WaitSpec) -> str:
    if wait.for_ is not None:
        return f"wait {format_duration(wait.for_)}"
    return f"wait until {wait.until}" if wait.until is not None else f"wait for signal {wait.signal}"
