"""The template file format at the edge: pydantic models and the JSON Schema (durations: `template_values`).

`validate_shape(data)` checks field names and types (SPEC §7) and turns pydantic's errors
into one `TemplateError` naming the template, step and field; `core.template_io` does the
semantic checks (refs, cycles, kinds) and builds the frozen `core.template.Template`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema, model_validator
from pydantic_core import ErrorDetails

from toolreel.core.errors import TemplateError
from toolreel.core.template import RetryOn, WhenOp
from toolreel.core.template_values import Duration, check_constraints, format_duration, parse_duration, parse_time

__all__ = [
    "INPUT_NAME_RE",
    "TEMPLATE_NAME_RE",
    "WHEN_OPS",
    "ApproveModel",
    "CaseModel",
    "FieldModel",
    "FormModel",
    "InputModel",
    "LLMModel",
    "RetryModel",
    "SecretSourceModel",
    "StepModel",
    "SwitchModel",
    "TemplateModel",
    "WaitModel",
    "WhenModel",
    "check_constraints",
    "format_duration",
    "parse_duration",
    "parse_time",
    "template_json_schema",
    "validate_shape",
]

SCHEMA_ID = "https://toolreel.dev/schema/template.json"
WHEN_OPS: tuple[WhenOp, ...] = ("eq", "neq", "gt", "gte", "lt", "lte", "in", "exists")
TEMPLATE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
INPUT_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SIGNAL_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


JsonAny = Annotated[Any, WithJsonSchema({})]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class SecretSourceModel(_Strict):
    model_config = ConfigDict(title="SecretSource", json_schema_extra={"minProperties": 1, "maxProperties": 1})

    env: str | None = Field(None, description="Read the value from this environment variable when the run starts.")
    file: str | None = Field(None, description="Read the value from this file (one trailing newline dropped).")

    @model_validator(mode="after")
    def _one_source(self) -> SecretSourceModel:
        if (self.env is None) == (self.file is None):
            raise ValueError("a secret's source is exactly one of {env: VAR} or {file: PATH}")
        return self


class InputModel(_Strict):
    model_config = ConfigDict(title="Input")

    type: Literal["string", "integer", "number", "boolean", "object", "array"] | None = Field(
        None, description="JSON Schema type of the value; `-i key=value` on the command line is read per this type."
    )
    description: str | None = Field(None, description="What the value is; shown in the `reel__<name>` tool schema.")
    default: JsonAny = Field(None, description="Used when the caller gives no value; without it the input is required.")
    secret: bool | SecretSourceModel = Field(
        False,
        description="A secret: never stored, never typed on a command line nor passed through the LLM; "
        "`true`, or a default source `{env: VAR}` / `{file: PATH}` read when the run starts.",
    )
    enum: list[JsonAny] | None = Field(None, min_length=1, description="The allowed values; checked before a run.")
    pattern: str | None = Field(None, description="A regular expression a string value must match (JSON Schema).")
    minimum: int | float | None = Field(None, description="The smallest allowed number.")
    maximum: int | float | None = Field(None, description="The largest allowed number.")
    items: dict[str, JsonAny] | None = Field(
        None, description='For an array: the JSON Schema of its elements, e.g. `{"type": "string"}`.'
    )

    @model_validator(mode="after")
    def _constraints(self) -> InputModel:
        check_constraints(self.pattern, self.minimum, self.maximum)
        return self


class FieldModel(_Strict):
    model_config = ConfigDict(title="Form field")

    type: Literal["string", "number", "integer", "boolean"] = Field(description="A flat value: no objects or lists.")
    title: str | None = Field(None, description="The label shown to the person.")
    description: str | None = Field(None, description="A hint shown to the person.")
    enum: list[str] | None = Field(None, min_length=1, description="For a string: the choices.")
    pattern: str | None = Field(None, description="For a string: a regular expression the answer must match.")
    minimum: int | float | None = Field(None, description="For a number: the smallest allowed answer.")
    maximum: int | float | None = Field(None, description="For a number: the largest allowed answer.")
    default: JsonAny = Field(None, description="The preselected answer.")

    @model_validator(mode="after")
    def _fits_type(self) -> FieldModel:
        if (self.enum is not None or self.pattern is not None) and self.type != "string":
            raise ValueError("`enum` and `pattern` are for string fields")
        if (self.minimum is not None or self.maximum is not None) and self.type not in ("number", "integer"):
            raise ValueError("`minimum` and `maximum` are for number and integer fields")
        check_constraints(self.pattern, self.minimum, self.maximum)
        return self


class FormModel(_Strict):
    model_config = ConfigDict(title="Form")

    type: Literal["object"] = Field("object", description="Always `object`: the answer is one object of fields.")
    properties: dict[str, FieldModel] = Field(min_length=1, description="The fields asked for, by name.")
    required: list[str] = Field(default_factory=list, description="Fields the answer must have.")

    @model_validator(mode="after")
    def _required_known(self) -> FormModel:
        unknown = [name for name in self.required if name not in self.properties]
        if unknown:
            raise ValueError(f"`required` names {', '.join(unknown)}, which are not in `properties`")
        return self


class ApproveModel(_Strict):
    model_config = ConfigDict(title="Approval with data or a timeout")

    message: str = Field(description="What the person is asked; may use {{@ref}}.")
    schema_: FormModel | None = Field(
        None, alias="schema", description="The fields asked for (a flat MCP elicitation schema); none: yes or no."
    )
    timeout: Duration | None = Field(
        None, description="How long the approval waits for its answer, like `1h`; then `on_timeout` decides."
    )
    on_timeout: Literal["reject", "approve", "default"] = Field(
        "reject",
        description="With `timeout`: `reject` fails the step, `approve` approves it, `default` answers with the "
        "`default` of every field of `schema`.",
    )

    @model_validator(mode="after")
    def _timeout_rules(self) -> ApproveModel:
        if "on_timeout" in self.model_fields_set and self.timeout is None:
            raise ValueError("`on_timeout` says what happens when `timeout` passes: give `timeout` too")
        if self.on_timeout == "approve" and self.schema_ is not None:
            raise ValueError(
                "an approval that asks for data answers with its fields: on_timeout is `default` (every field "
                "with a default) or `reject`, not `approve`"
            )
        if self.on_timeout == "default":
            form = self.schema_
            missing = [name for name, f in form.properties.items() if f.default is None] if form else ["(no schema)"]
            if missing:
                raise ValueError(
                    "`on_timeout: default` answers with each field's `default`: give every field of `schema` a "
                    f"default (missing: {', '.join(missing)}), or use reject or approve"
                )
        return self


class LLMModel(_Strict):
    model_config = ConfigDict(title="LLM")

    prompt: str = Field(description="What the model is asked; refs are interpolated (`{{@step.path}}`).")
    schema_: dict[str, JsonAny] | None = Field(
        None,
        alias="schema",
        description="A JSON Schema the answer must match: the model is asked for JSON, and its answer is parsed "
        "and checked (a mismatch fails the step with `llm_answer_invalid`). Without it the answer is the text.",
    )
    max_tokens: int = Field(1024, ge=1, le=100_000, description="The longest answer asked for, in tokens.")
    recorded: JsonAny = Field(
        None, description="The answer a recording gave: replayed instead of asking when a run pins recorded answers."
    )


class WaitModel(_Strict):
    model_config = ConfigDict(title="Wait", json_schema_extra={"minProperties": 1})

    for_: Duration | None = Field(
        None, alias="for", description="Wait this long (`10m`, `2h`), counted from when the step first waits."
    )
    until: str | None = Field(
        None,
        description="Wait until this time: ISO 8601 with a zone (`2026-12-01T09:00:00Z`), or a ref to one "
        "(or to epoch seconds). A time already past does not wait.",
    )
    signal: str | None = Field(
        None,
        description="Wait for the signal of this name (`toolreel executions signal ID NAME --data JSON`); its data "
        "is the step's output.",
        json_schema_extra={"pattern": r"^[A-Za-z0-9_.:-]{1,64}$"},
    )
    schema_: dict[str, JsonAny] | None = Field(
        None, alias="schema", description="With `signal`: a JSON Schema the signal's data must match."
    )

    @model_validator(mode="after")
    def _one_kind(self) -> WaitModel:
        given = [name.rstrip("_") for name in ("for_", "until", "signal") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(f"`wait` takes exactly one of for, until, signal; found {' and '.join(given) or 'none'}")
        if self.schema_ is not None and self.signal is None:
            raise ValueError("`schema` checks a signal's data: it goes with `signal`")
        if self.signal is not None and not _SIGNAL_RE.fullmatch(self.signal):
            raise ValueError("a signal name is 1-64 characters of [A-Za-z0-9_.:-]")
        if self.until is not None and not self.until.startswith("@"):
            parse_time(self.until)
        return self


class WhenModel(_Strict):
    model_config = ConfigDict(title="When", json_schema_extra={"maxProperties": 2})

    ref: str | None = Field(
        None,
        description="The ref whose value is tested, e.g. `@list_issues.total`.",
        json_schema_extra={"pattern": "^@"},
    )
    all: list[WhenModel] | None = Field(None, min_length=1, description="Holds if every one of these holds.")
    any: list[WhenModel] | None = Field(None, min_length=1, description="Holds if at least one of these holds.")
    not_: WhenModel | None = Field(None, alias="not", description="Holds if this does not hold.")
    eq: JsonAny = Field(None, description="Run the step if the value equals this.")
    neq: JsonAny = Field(None, description="Run the step if the value differs from this.")
    gt: JsonAny = Field(None, description="Run the step if the value is greater than this.")
    gte: JsonAny = Field(None, description="Run the step if the value is greater than or equal to this.")
    lt: JsonAny = Field(None, description="Run the step if the value is less than this.")
    lte: JsonAny = Field(None, description="Run the step if the value is less than or equal to this.")
    in_: JsonAny = Field(None, alias="in", description="Run the step if the value is one of this list.")
    exists: bool | None = Field(None, description="Run the step if the value is (true) or is not (false) non-null.")

    def operators(self) -> list[WhenOp]:
        return [op for op in WHEN_OPS if ("in_" if op == "in" else op) in self.model_fields_set]

    def combinators(self) -> list[str]:
        return [name for name in ("all", "any", "not_") if name in self.model_fields_set]

    @model_validator(mode="after")
    def _one_operator(self) -> WhenModel:
        ops = self.operators()
        if len(ops) > 1:
            raise ValueError(f"`when` has operators {' and '.join(ops)}; use at most one of {', '.join(WHEN_OPS)}")
        shown = [name.rstrip("_") for name in self.combinators()]
        if shown and (self.ref is not None or ops or len(shown) > 1):
            raise ValueError(
                f"a `when` with {' and '.join(shown)} tests nothing else: write {{all: [...]}}, {{any: [...]}} or "
                "{not: {...}} alone, and each condition inside it as {ref, operator}"
            )
        if not shown and self.ref is None:
            raise ValueError("`when` needs a ref to test (`ref: @step.field`), or all / any / not of conditions")
        return self


class RetryModel(_Strict):
    model_config = ConfigDict(title="Retry")

    max_attempts: int = Field(1, ge=1, le=100, description="Attempts in all, the first included.")
    backoff: Literal["fixed", "linear", "exponential"] = Field(
        "exponential", description="How the delay grows: fixed, linear or exponential in the attempt number."
    )
    initial_delay: Duration = Field(0.5, description="Base delay, like `500ms` or `2s`.")
    max_delay: Duration = Field(30.0, description="Upper bound of one delay before jitter.")
    jitter: float = Field(0.0, ge=0.0, le=1.0, description="Each delay is multiplied by 1 ± jitter (0..1).")
    retry_on: list[Literal["timeout", "transient", "tool_error"]] = Field(
        default_factory=lambda: list(_DEFAULT_RETRY_ON),
        description="Failures that are retried: timeout, transient (upstream unreachable or restarted), "
        "tool_error (an isError result).",
    )


_DEFAULT_RETRY_ON: tuple[RetryOn, ...] = ("timeout", "transient")
_STEP_KINDS = ("tool", "return", "approve", "template", "code", "script", "wait", "switch", "llm")


class ScriptModel(_Strict):
    model_config = ConfigDict(title="Script")

    code: str = Field(description="The body of an async function of `input`, or a module with `export default`.")
    max_calls: int | None = Field(None, ge=0, le=100_000, description="The most tool calls (default 1000).")


class StepModel(_Strict):
    model_config = ConfigDict(
        title="Step",
        json_schema_extra={"oneOf": [{"required": [kind]} for kind in _STEP_KINDS]},
    )

    name: str = Field(
        description="Unique step name; refs address its output as `@<name>.<path>`.",
        json_schema_extra={"pattern": r"^[A-Za-z_][A-Za-z0-9_]*$"},
    )
    tool: str | None = Field(None, description="Kind `tool`: the tool to call, as listed (`server__tool`).")
    return_: JsonAny = Field(
        None, alias="return", description="Kind `return`: end the execution with this (resolved) value as output."
    )
    approve: str | ApproveModel | None = Field(
        None,
        description="Kind `approve`: the prompt shown to a person (may use {{@ref}}), or `{message, schema}` to ask "
        "for data (the answer is the step's output), with `timeout` and `on_timeout` if it must not wait forever.",
    )
    wait: WaitModel | None = Field(
        None, description="Kind `wait`: `{for: 10m}`, `{until: TIME-or-ref}` or `{signal: NAME, schema?}`."
    )
    llm: LLMModel | None = Field(
        None,
        description="Kind `llm`: `{prompt, schema?}` asks a model (MCP sampling from the client that started the "
        "run, else the OpenAI-compatible endpoint in TOOLREEL_LLM_URL, else the run pauses); the answer is the output.",
    )
    switch: SwitchModel | None = Field(
        None,
        description="Kind `switch`: `{ref, cases: [{OP: value, steps: [...]}], default: [...]}` runs the steps of "
        "the first case whose test of the ref holds, else those of `default`; the others are skipped.",
    )
    wait_for: Literal["all", "any"] | JoinModel | None = Field(
        None,
        description="Where branches meet: start once `all` dependencies finished (the default), once `any` one "
        "succeeded, or once `{n_of: K}` succeeded; refs to those not finished yet give null.",
    )
    code: str | None = Field(
        None,
        description="Kind `code`: `export default function(input) { ... }` in JavaScript, run in a sandbox "
        "(no I/O, no clock, no randomness); its return value is the output.",
    )
    memory_mb: int | None = Field(
        None, ge=1, le=1024, description="With `code` or `script`: the memory limit in MiB (default 64; 128)."
    )
    script: ScriptModel | None = Field(
        None,
        description="Kind `script`: a Code Mode script that calls tools (`await tools.<server>.<tool>(args)`); "
        "`input` is its `input`, its return value the output; each call is a row `<step>.<n>`.",
    )
    template: str | None = Field(None, description="Kind `template`: run this template as a child execution.")
    template_version: int | None = Field(None, ge=1, description="With `template`: pin this version.")
    input: JsonAny = Field(
        None, description="Arguments of a tool or template step; refs (`@step.path`, `@input.x`) at any depth."
    )
    for_each: str | None = Field(
        None,
        description="A ref to a list: the step runs once per element (`@item`, `@index`).",
        json_schema_extra={"pattern": "^@"},
    )
    concurrency: int | None = Field(None, ge=1, description="With `for_each`: elements in flight at once.")
    when: WhenModel | None = Field(None, description="Run the step only if this holds; otherwise it is skipped.")
    depends_on: list[str] = Field(default_factory=list, description="Steps that must finish first (besides refs).")
    timeout: Duration | None = Field(
        None, description="Timeout per attempt, like `30s` (a code step: CPU time, default 1s)."
    )
    retry: RetryModel | None = Field(None, description="Retry policy.")
    idempotency_key: str | None = Field(None, description="A stored result under this key is reused, not re-run.")
    idempotency_scope: Literal["execution", "global"] = Field(
        "execution", description="Whether the key is per execution or shared by every run."
    )
    idempotency_ttl: Duration | None = Field(None, description="How long a stored idempotent result is reused.")
    include_failed: bool = Field(False, description="A recorded failed step kept on purpose.")
    on_error: Literal["fail_fast", "continue"] = Field(
        "fail_fast",
        description="`continue`: the step's error (a for_each item's error) becomes its output "
        "`{error: {code, message}}` and the run goes on; `fail_fast` (default): it fails the run.",
    )
    tool_digest: str | None = Field(
        None,
        description="Kind `tool`: the digest of the tool's definition when the template was saved; a replay "
        "whose tool now has another definition stops before calling it (`tool_changed`).",
        json_schema_extra={"pattern": "^tool-v1:"},
    )


class JoinModel(_Strict):
    model_config = ConfigDict(title="Join")

    n_of: int = Field(ge=1, description="How many dependencies must have succeeded for the step to start.")


class CaseModel(_Strict):
    model_config = ConfigDict(title="Case", json_schema_extra={"minProperties": 2, "maxProperties": 2})

    eq: JsonAny = Field(None, description="This case if the switch's value equals this.")
    neq: JsonAny = Field(None, description="This case if the value differs from this.")
    gt: JsonAny = Field(None, description="This case if the value is greater than this.")
    gte: JsonAny = Field(None, description="This case if the value is greater than or equal to this.")
    lt: JsonAny = Field(None, description="This case if the value is less than this.")
    lte: JsonAny = Field(None, description="This case if the value is less than or equal to this.")
    in_: JsonAny = Field(None, alias="in", description="This case if the value is one of this list.")
    exists: bool | None = Field(None, description="This case if the value is (true) or is not (false) non-null.")
    steps: list[StepModel] = Field(min_length=1, description="The steps this case runs.")

    def operators(self) -> list[WhenOp]:
        return [op for op in WHEN_OPS if ("in_" if op == "in" else op) in self.model_fields_set]

    @model_validator(mode="after")
    def _one_operator(self) -> CaseModel:
        if len(self.operators()) != 1:
            found = " and ".join(self.operators()) or "none"
            raise ValueError(
                f"a case tests the switch's value with exactly one of {', '.join(WHEN_OPS)}; found {found}"
            )
        return self


class SwitchModel(_Strict):
    model_config = ConfigDict(title="Switch")

    ref: str = Field(description="The ref whose value picks the case.", json_schema_extra={"pattern": "^@"})
    cases: list[CaseModel] = Field(min_length=1, description="Tried in order: the first that holds runs.")
    default: list[StepModel] = Field(default_factory=list, description="The steps run when no case holds.")


StepModel.model_rebuild()


class TemplateModel(_Strict):
    model_config = ConfigDict(title="toolreel template")

    schema_: str | None = Field(None, alias="$schema", description="The schema URL, for editors; ignored.")
    name: str = Field(
        description="Template name; also listed as the tool `reel__<name>`.",
        json_schema_extra={"pattern": TEMPLATE_NAME_RE.pattern},
    )
    description: str | None = Field(None, description="What the template does; the `reel__<name>` tool description.")
    inputs: dict[str, InputModel] = Field(
        default_factory=dict, description="Declared inputs, addressed as `@input.<name>`."
    )
    steps: list[StepModel] = Field(min_length=1, description="The steps; they run as a DAG of their refs.")
    output: JsonAny = Field(
        None, description="The execution's output; default: the `return` step that ran, else the last step."
    )
    output_schema: dict[str, JsonAny] | None = Field(
        None,
        description="A JSON Schema (draft 2020-12) the execution's output must match when the run ends; an output "
        "that does not fails the execution, naming where it differs.",
    )
    servers: dict[str, dict[str, JsonAny]] = Field(
        default_factory=dict,
        description="Server name -> its client config entry (secrets as `${env:VAR}` references), so a replay "
        "starts the servers with no config file; a config given to the replay overrides it.",
    )


def template_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a template file, with a description on every field."""
    schema = TemplateModel.model_json_schema(by_alias=True)
    schema["properties"]["inputs"]["propertyNames"] = {"pattern": INPUT_NAME_RE.pattern}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def validate_shape(data: Mapping[str, Any], *, source: str | None = None) -> TemplateModel:
    """Field names and types; raise one TemplateError for the first problem found."""
    if not isinstance(data, Mapping):
        raise _error(f"a template must be a mapping, got {type(data).__name__}", data=None, source=source)
    try:
        return TemplateModel.model_validate(dict(data))
    except ValidationError as exc:
        details = _fitting(exc.errors())
        raise _from_pydantic(details[0], len(details), data, source) from None


_UNIONS = ("approve", "wait_for")  # fields that take a string or an object


def _union_tag(part: int | str) -> str | None:
    """Which member of a string-or-object union a location part names (`str` or `literal[...]`: the string;
    a model, which pydantic may name `function-after[..., ApproveModel]`: the object), or None."""
    if not isinstance(part, str):
        return None
    if part == "str" or part.startswith("literal["):
        return "str"
    return "model" if part in ("ApproveModel", "JoinModel") or "ApproveModel" in part else None


def _fitting(details: list[ErrorDetails]) -> list[ErrorDetails]:
    """`approve` and `wait_for` are a string or an object, and pydantic reports a problem for each: keep those
    of the form the author wrote (an object: its fields; anything else: not a string), without the union tag."""
    kept: list[ErrorDetails] = []
    for err in details:
        loc = list(err["loc"])
        at = next((i for i, part in enumerate(loc[:-1]) if part in _UNIONS and _union_tag(loc[i + 1])), None)
        if at is None:
            kept.append(err)
            continue
        tag = _union_tag(loc[at + 1])
        wrote_object = tag == "str" and isinstance(err.get("input"), dict)
        wrote_other = tag == "model" and err["type"] in ("model_type", "dict_type")
        if not (wrote_object or wrote_other):
            kept.append({**err, "loc": (*loc[: at + 1], *loc[at + 2 :])})
    return kept or details


def _from_pydantic(err: ErrorDetails, count: int, data: Mapping[str, Any], source: str | None) -> TemplateError:
    full_loc = loc = list(err["loc"])
    step: str | None = None
    if len(loc) >= 2 and loc[0] == "steps" and isinstance(loc[1], int):
        step = _step_label(data, loc[1])
        loc = loc[2:]
    field = ".".join(str(part) for part in loc) or None
    message = _describe(err, loc, full_loc)
    if count > 1:
        message += f" ({count - 1} more problem{'s' if count > 2 else ''} after this one)"
    return _error(message, data=data, step=step, field=field, source=source)


def _describe(err: ErrorDetails, loc: list[int | str], full_loc: list[int | str]) -> str:
    key = loc[-1] if loc else None
    kind = err["type"]
    if kind == "extra_forbidden":
        if "when" in loc[:-1]:
            return f"unknown operator {key!r} in `when`; use at most one of {', '.join(WHEN_OPS)}"
        return f"unknown field {key!r}; known fields: {', '.join(_known_fields(full_loc))}"
    if kind == "missing":
        return f"required field {key!r} is missing"
    message = str(err["msg"]).removeprefix("Value error, ")
    return message if kind == "value_error" else f"{message}, got {err.get('input')!r}"


_NESTED: dict[tuple[type[BaseModel], str], type[BaseModel]] = {
    (TemplateModel, "steps"): StepModel,
    (TemplateModel, "inputs"): InputModel,
    (StepModel, "retry"): RetryModel,
    (StepModel, "when"): WhenModel,
    (StepModel, "approve"): ApproveModel,
    (StepModel, "wait"): WaitModel,
    (StepModel, "llm"): LLMModel,
    (StepModel, "switch"): SwitchModel,
    (SwitchModel, "cases"): CaseModel,
    (SwitchModel, "default"): StepModel,
    (CaseModel, "steps"): StepModel,
    (ApproveModel, "schema"): FormModel,
    (FormModel, "properties"): FieldModel,
}


def _known_fields(loc: list[int | str]) -> list[str]:
    """The fields of the model that `loc` (a full pydantic location) ends in."""
    model: type[BaseModel] = TemplateModel
    for part in loc[:-1]:
        if isinstance(part, str):
            model = _NESTED.get((model, part), model)
    return [info.alias or name for name, info in model.model_fields.items()]


def _step_label(data: Mapping[str, Any], index: int) -> str:
    steps = data.get("steps")
    if isinstance(steps, list) and index < len(steps) and isinstance(steps[index], Mapping):
        name = steps[index].get("name")
        if isinstance(name, str):
            return name
    return f"#{index + 1}"


def _error(
    message: str,
    *,
    data: Mapping[str, Any] | None,
    step: str | None = None,
    field: str | None = None,
    source: str | None = None,
) -> TemplateError:
    name = data.get("name") if isinstance(data, Mapping) else None
    if source:
        message = f"{message} (in {source})"
    return TemplateError(message, template=name if isinstance(name, str) else None, step=step, field=field)
