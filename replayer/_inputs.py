"""Template inputs at the edge of a run: unknown and missing names refused, values coerced per declared type
and checked against the input's `enum`, `pattern`, `minimum` and `maximum`.

`bind_inputs` is what every entry point (MCP tool, `toolreel run`, child template steps) goes
through; `parse_cli_value` reads one `-i key=value` text per the input's declared type.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from toolreel.core.errors import ExecutionError
from toolreel.core.form import check_value
from toolreel.core.secrets import REDACTED
from toolreel.core.template import InputSpec, SecretSource, Template

__all__ = [
    "REDACTED",
    "bind_inputs",
    "parse_cli_value",
    "parse_secret_option",
    "read_secret",
    "redact_inputs",
    "refuse_given_secrets",
    "secret_values",
]

_TRUE = {"true", "yes", "y", "1", "on"}
_FALSE = {"false", "no", "n", "0", "off"}


def bind_inputs(template: Template, given: Mapping[str, Any]) -> dict[str, Any]:
    """The run's inputs: given values coerced, defaults filled. Raises ExecutionError naming every problem."""
    unknown = sorted(set(given) - set(template.inputs))
    missing = sorted(
        name
        for name, spec in template.inputs.items()
        if spec.required and name not in given and spec.secret_source is None
    )
    problems = []
    if unknown:
        declared = ", ".join(sorted(template.inputs)) or "none"
        problems.append(f"unknown input(s) {', '.join(unknown)} (declared: {declared})")
    if missing:
        problems.append(f"missing required input(s) {', '.join(missing)}")
    bound: dict[str, Any] = {}
    for name, spec in template.inputs.items():
        if name not in given and spec.secret_source is not None:
            try:
                bound[name] = coerce(spec, read_secret(spec.secret_source))
            except ValueError as exc:
                problems.append(f"secret input {name!r}: {exc}")
        elif name in given:
            try:
                bound[name] = coerce(spec, given[name])
            except ValueError as exc:
                problems.append(f"input {name!r}: {exc}")
                continue
            broken = _constraint_problem(name, spec, bound[name])
            if broken is not None:
                problems.append(broken)
        elif spec.has_default:
            bound[name] = spec.default
    if problems:
        raise ExecutionError(f"template {template.name!r}: " + "; ".join(problems))
    return bound


def _constraint_problem(name: str, spec: InputSpec, value: Any) -> str | None:
    """`enum`, `pattern`, `minimum`, `maximum` of a given value (a null for an optional input passes)."""
    constraints = spec.constraints()
    if not constraints or (value is None and not spec.required):
        return None
    found = check_value(name, constraints, value)
    return None if found is None else f"input {found}"


def coerce(spec: InputSpec, value: Any) -> Any:
    """`value` as the declared JSON Schema type; lossless conversions only (\"3\" -> 3, 3 -> 3.0)."""
    kind = spec.type
    if kind is None or (value is None and not spec.required):
        return value
    converter = _COERCERS.get(kind)
    if converter is None:
        return value
    return converter(value)


def _to_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return json.dumps(value)
    raise ValueError(f"expected a string, got {_describe(value)}")


def _to_integer(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"expected an integer, got {_describe(value)}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise ValueError(f"expected an integer, got {_describe(value)}")


def _to_number(value: Any) -> int | float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = math.nan
        if math.isfinite(number):
            return int(number) if number.is_integer() and "." not in value and "e" not in value.lower() else number
    raise ValueError(f"expected a number, got {_describe(value)}")


def _to_boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"expected a boolean (true/false), got {_describe(value)}")


def _to_json(kind: type, label: str) -> Any:
    def convert(value: Any) -> Any:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError(f"expected {label} as JSON, but the text does not parse: {exc.msg}") from None
        if not isinstance(value, kind):
            raise ValueError(f"expected {label}, got {_describe(value)}")
        return value

    return convert


_COERCERS = {
    "string": _to_string,
    "integer": _to_integer,
    "number": _to_number,
    "boolean": _to_boolean,
    "object": _to_json(dict, "an object"),
    "array": _to_json(list, "an array"),
}


def _describe(value: Any) -> str:
    text = json.dumps(value, default=str)
    return f"{type(value).__name__} {text[:60]}"


def parse_cli_value(spec: InputSpec | None, text: str) -> Any:
    """One `-i key=value` value. Strings stay text; other declared types are coerced (JSON for
    objects and arrays); an undeclared type takes JSON when the text parses, else the text."""
    if spec is not None and spec.type is not None:
        return coerce(spec, text)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def secret_values(template: Template, inputs: Mapping[str, Any]) -> list[str]:
    """The text of every secret input's value: these must never reach the store in clear."""
    values = []
    for name, spec in template.inputs.items():
        value = inputs.get(name)
        if spec.secret and value is not None and value != "":
            values.append(value if isinstance(value, str) else json.dumps(value))
    return values


def redact_inputs(template: Template, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return {name: REDACTED if _is_secret(template, name) else value for name, value in inputs.items()}


def _is_secret(template: Template, name: str) -> bool:
    spec = template.inputs.get(name)
    return spec is not None and spec.secret


def read_secret(source: SecretSource) -> str:
    """A secret's value from its source (ValueError naming the source when it cannot be read)."""
    if source.kind == "env":
        value = os.environ.get(source.where)
        if value is None:
            raise ValueError(f"environment variable {source.where} is not set; set it where the run is driven")
        return value
    try:
        text = Path(source.where).expanduser().read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read the file {source.where} ({exc.strerror}); check the path") from None
    return text.removesuffix("\n").removesuffix("\r")


def parse_secret_option(text: str) -> tuple[str, SecretSource]:
    """`NAME=env:VAR` or `NAME=file:PATH` (a `--secret` option)."""
    name, sep, spec = text.partition("=")
    kind, colon, where = spec.partition(":")
    if not sep or not name or not colon or not where or kind not in ("env", "file"):
        raise ValueError(f"--secret {text!r}: write NAME=env:VAR or NAME=file:PATH")
    return name, SecretSource("env" if kind == "env" else "file", where)


def refuse_given_secrets(template: Template, given: Mapping[str, Any]) -> None:
    """Secret inputs are never typed on a command line nor passed through the LLM (a tool call)."""
    typed = sorted(name for name in given if _is_secret(template, name))
    if typed:
        raise ExecutionError(
            f"template {template.name!r}: {', '.join(typed)} is a secret input and is never typed on a command "
            "line nor passed in a tool call; give it a source: `toolreel run --secret NAME=env:VAR` (or "
            "file:PATH), or `secret: {env: VAR}` in the template"
        )
