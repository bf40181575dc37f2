"""Values checked against small JSON Schemas: the answer to an approval that asks for data, and a
template input's constraints (`enum`, `pattern`, `minimum`, `maximum`).

Checks use `jsonschema` (draft 2020-12); every problem names the field it is about, so a person can
correct exactly that field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from jsonschema import Draft202012Validator, ValidationError, validators
from jsonschema.exceptions import SchemaError

from toolreel.core._ref_regex import LinearRegexError, check_linear, search
from toolreel.core.model import JSON

__all__ = ["check_answer", "check_value", "mismatch", "parse_answer_text", "schema_problem"]


def _linear_pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    """`pattern` on RE2, in time linear in the text: Python's backtracking `re`, which jsonschema uses,
    took seconds on 26 characters against `^(a+)+$`, holding the event loop meanwhile."""
    if not validator.is_type(instance, "string") or not isinstance(pattern, str):
        return
    try:
        check_linear(pattern)
    except LinearRegexError as exc:  # a template saved before patterns were checked on RE2
        yield ValidationError(f"pattern {exc}")
        return
    if not search(instance, pattern):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


_Validator = validators.extend(Draft202012Validator, validators={"pattern": _linear_pattern})


def check_value(field: str, schema: Mapping[str, Any], value: JSON) -> str | None:
    """The first problem of `value` against `schema`, as a sentence naming `field`, or None."""
    for error in _Validator(dict(schema)).iter_errors(value):
        return f"{field!r}: {error.message}"
    return None


def mismatch(schema: Mapping[str, Any], value: JSON) -> str | None:
    """Where `value` first fails `schema`, as `at $.path: message`, or None when it matches."""
    for error in Draft202012Validator(dict(schema)).iter_errors(value):
        return f"at {error.json_path}: {error.message}"
    return None


def schema_problem(schema: Mapping[str, Any]) -> str | None:
    """Why `schema` is not a valid JSON Schema (draft 2020-12), or None."""
    try:
        Draft202012Validator.check_schema(dict(schema))
    except SchemaError as exc:
        where = "/".join(str(part) for part in exc.absolute_path)
        return f"{exc.message}{f' (at {where})' if where else ''}"
    return None


def check_answer(form: Mapping[str, Any], answer: JSON) -> dict[str, JSON]:
    """`answer` when it fills `form` (a flat object schema); raises ValueError naming every field that does not."""
    if not isinstance(answer, dict):
        raise ValueError(f"the answer must be an object of fields ({_fields(form)}), got {type(answer).__name__}")
    properties: Mapping[str, Any] = form.get("properties") or {}
    problems = [f"unknown field {name!r}" for name in answer if name not in properties]
    problems += [f"field {name!r} is required" for name in form.get("required") or () if name not in answer]
    for name, value in answer.items():
        if name in properties:
            found = check_value(name, _keywords(properties[name]), value)
            if found is not None:
                problems.append(f"field {found}")
    if problems:
        raise ValueError("; ".join(problems) + f" (fields: {_fields(form)})")
    return answer


def parse_answer_text(form: Mapping[str, Any], text: str) -> dict[str, JSON]:
    """A `--response` given as JSON text, checked against `form`."""
    try:
        answer = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"the response must be a JSON object of fields ({_fields(form)}), but it does not parse: {exc.msg}"
        ) from None
    return check_answer(form, answer)


def _keywords(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The checking keywords of a field (its labels and default say nothing about an answer)."""
    return {key: value for key, value in schema.items() if key not in ("title", "description", "default")}


def _fields(form: Mapping[str, Any]) -> str:
    properties: Mapping[str, Any] = form.get("properties") or {}
    return ", ".join(f"{name}: {spec.get('type', 'any')}" for name, spec in properties.items()) or "none"
