"""A template as an immutable value: what the templatizer writes and the replayer runs.

Parsing (YAML/JSON), validation and the JSON Schema live in `core.template_io`; this
module only defines the shape. Refs stay as strings here (see `core.refs`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

from toolreel.core.model import JSON

__all__ = [
    "DEFAULT_CASE",
    "InputSpec",
    "LLMSpec",
    "OnTimeout",
    "RetryPolicy",
    "SecretSource",
    "StepSpec",
    "SwitchCase",
    "SwitchSpec",
    "Template",
    "WaitSpec",
    "When",
]

RetryOn = Literal["timeout", "transient", "tool_error"]
Backoff = Literal["fixed", "linear", "exponential"]
WhenOp = Literal["eq", "neq", "gt", "gte", "lt", "lte", "in", "exists"]
OnTimeout = Literal["reject", "approve", "default"]
StepKindName = Literal["tool", "return", "approve", "template", "code", "script", "wait", "switch", "llm"]
DEFAULT_CASE = -1  # the branch index of a switch's `default` steps


@dataclass(frozen=True, slots=True)
class SecretSource:
    """Where a secret input's value is read when the run starts: never typed, never stored."""

    kind: Literal["env", "file"]
    where: str  # the variable's name, or the file's path

    def __str__(self) -> str:
        return f"{self.kind}:{self.where}"


@dataclass(frozen=True, slots=True)
class InputSpec:
    type: str | None = None  # JSON Schema type: string, integer, number, boolean, object, array
    description: str | None = None
    default: JSON = None
    has_default: bool = False
    secret: bool = False  # came from a redacted value: never stored, always asked for
    enum: tuple[JSON, ...] | None = None  # the allowed values
    pattern: str | None = None  # a regular expression a string value must match (search, as JSON Schema)
    minimum: float | None = None
    maximum: float | None = None
    items: Mapping[str, JSON] | None = None  # an array's element schema (`{"type": "string"}`)
    secret_source: SecretSource | None = None  # `secret: {env: VAR}` / `{file: PATH}`

    def constraints(self) -> dict[str, JSON]:
        """The JSON Schema keywords that constrain a value (enum, pattern, minimum, maximum, items)."""
        found: dict[str, JSON] = {
            "enum": list(self.enum) if self.enum is not None else None,
            "pattern": self.pattern,
            "minimum": self.minimum,
            "maximum": self.maximum,
            "items": dict(self.items) if self.items is not None else None,
        }
        return {key: value for key, value in found.items() if value is not None}

    @property
    def required(self) -> bool:
        return not self.has_default


@dataclass(frozen=True, slots=True)
class When:
    """A test of one ref (`ref`, `op`, `value`), or a combination: `all` / `any` of conditions, `not_` one.
    A combination has no ref of its own (`ref` is "")."""

    ref: str
    op: WhenOp | None = None  # None: truthy
    value: JSON = None
    all: tuple[When, ...] = ()
    any: tuple[When, ...] = ()
    not_: When | None = None

    @property
    def combined(self) -> bool:
        return not self.ref

    def leaves(self) -> Iterator[When]:
        """The tests of single refs this condition is made of, depth first."""
        if not self.combined:
            yield self
            return
        for part in (*self.all, *self.any, *((self.not_,) if self.not_ is not None else ())):
            yield from part.leaves()


@dataclass(frozen=True, slots=True)
class WaitSpec:
    """A `wait` step: exactly one of a duration (`for_`), a time or ref to one (`until`), or a signal's name."""

    for_: float | None = None  # seconds, counted from when the step first waits
    until: str | None = None  # an ISO 8601 time, or a ref to one (or to epoch seconds)
    signal: str | None = None
    schema: JSON = None  # with `signal`: a JSON Schema the signal's data must match


@dataclass(frozen=True, slots=True)
class LLMSpec:
    """An `llm` step: a prompt (refs interpolated) asked of a model; the answer, checked against `schema`
    (parsed as JSON when there is one), is the output. `recorded`: the answer a recording gave, replayed
    instead of asking when a run pins recorded answers (`--llm recorded`)."""

    prompt: str
    schema: JSON = None
    max_tokens: int = 1024
    recorded: JSON = None
    has_recorded: bool = False


@dataclass(frozen=True, slots=True)
class SwitchCase:
    """One case of a `switch`: the test of the switch's ref (`when.ref` is the switch's) and its steps' names."""

    when: When
    steps: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SwitchSpec:
    """A `switch` step: the first case whose test holds runs its steps, else `default`. The branches' steps
    are steps of the template (flattened after the switch, each with `branch` set), so refs, names and the
    DAG treat them like any other."""

    ref: str
    cases: tuple[SwitchCase, ...]
    default: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_attempts: int = 1
    backoff: Backoff = "exponential"
    initial_delay: float = 0.5  # seconds
    max_delay: float = 30.0
    jitter: float = 0.0
    retry_on: tuple[RetryOn, ...] = ("timeout", "transient")


@dataclass(frozen=True, slots=True)
class StepSpec:
    """One step. Exactly one of `tool`, `return_`, `approve`, `template`, `code`, `script`, `wait` says its kind."""

    name: str
    tool: str | None = None  # listed name, `server__tool`
    input: JSON = None  # for `tool` and `template` steps; refs as strings
    return_: JSON = None
    has_return: bool = False
    approve: str | None = None  # the prompt; may interpolate refs
    approve_schema: JSON = None  # a flat form schema: the approval asks for these fields (its answer is the output)
    approve_timeout: float | None = None  # seconds an approval waits for its answer before `on_timeout` decides
    on_timeout: OnTimeout = "reject"
    wait: WaitSpec | None = None
    switch: SwitchSpec | None = None
    llm: LLMSpec | None = None
    branch: tuple[str, int] | None = None  # inside a switch: (its name, the case index, or DEFAULT_CASE)
    wait_for: int | None = None  # a join: start once this many dependencies succeeded (None: once all finished)
    template: str | None = None  # a child template's name
    template_version: int | None = None
    code: str | None = None  # `export default function(input) { ... }`, run in a QuickJS sandbox
    memory_mb: int | None = None  # a code step's memory limit (default 64; a script's 128)
    script: str | None = None  # a Code Mode script (an async function body or module) that calls tools
    max_calls: int | None = None  # a script step's most tool calls (default 1000)
    for_each: str | None = None  # a ref to a list
    concurrency: int | None = None  # for_each items in flight
    when: When | None = None
    depends_on: tuple[str, ...] = ()
    timeout: float | None = None  # seconds per attempt
    retry: RetryPolicy | None = None
    idempotency_key: str | None = None
    idempotency_scope: Literal["execution", "global"] = "execution"
    idempotency_ttl: float | None = None  # seconds
    include_failed: bool = False  # a recorded failed step kept on purpose
    # `continue`: a failure (of the step, or of a for_each item) becomes the output `{error: {code, message}}`
    on_error: Literal["fail_fast", "continue"] = "fail_fast"
    tool_digest: str | None = None  # the tool's definition when saved (core.tool_digest); a replay checks it

    @property
    def kind(self) -> StepKindName:
        if self.llm is not None:
            return "llm"
        if self.switch is not None:
            return "switch"
        if self.wait is not None:
            return "wait"
        if self.code is not None:
            return "code"
        if self.script is not None:
            return "script"
        if self.has_return:
            return "return"
        if self.approve is not None:
            return "approve"
        if self.template is not None:
            return "template"
        return "tool"


@dataclass(frozen=True, slots=True)
class Template:
    name: str
    steps: tuple[StepSpec, ...]
    description: str | None = None
    inputs: Mapping[str, InputSpec] = field(default_factory=dict)
    output: JSON = None
    has_output: bool = False
    version: int | None = None  # set when loaded from the store
    hash: str | None = None
    # The config entries of the servers its tools come from (secrets as `${env:VAR}`, never values),
    # so a replay can start them with no config file.
    servers: Mapping[str, Mapping[str, JSON]] = field(default_factory=dict)
    output_schema: Mapping[str, JSON] | None = None  # a JSON Schema the output is checked against at the end

    def step(self, name: str) -> StepSpec:
        for spec in self.steps:
            if spec.name == name:
                return spec
        raise KeyError(name)
