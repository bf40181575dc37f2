"""The one exception tree of toolreel.

Every error a user can meet derives from `ToolreelError` and says what happened, where,
and what to do. Subclasses carry the fields a caller needs to act on (`server`, `step`,
`template`, `field`) instead of making it parse the message::

    ToolreelError
    ├── ConfigError              a config file is unusable (file, JSON path)
    ├── RefError                 a @ref does not resolve (ref, existing steps/fields)
    │   └── RefBudgetError       its evaluation ran past its time or memory budget (ref)
    ├── TemplateError            a template is invalid (template, step, field)
    ├── StoreError               the store cannot be read or written
    │   ├── SchemaVersionError   the database is newer than this program
    │   ├── NotFoundError        no such execution / template / version
    │   └── StaleClaimError      another process now drives this execution
    ├── UpstreamError            an upstream server failed (server, transient)
    │   └── UpstreamTimeout      a call exceeded its timeout (server, tool, seconds)
    ├── ScheduleError            a schedule's cron expression or time zone is invalid
    ├── CodeError                a code step's script failed or is invalid (JavaScript message, line)
    │   ├── CodeTimeout          it ran past its timeout (`code_timeout`)
    │   └── CodeMemoryError      it went past its memory limit (`code_memory_limit`)
    └── ExecutionError           a run failed, was cancelled or is not resumable
        └── SignalError          a signal no step waits for, or whose data does not fit (`signal_refused`)

Each class has a stable `code` (`not_found`, `upstream_timeout`, ...): the table in docs/errors.md
says what each means and what to do; tests/core/test_error_codes.py keeps the two in step.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "CodeError",
    "CodeMemoryError",
    "CodeTimeout",
    "ConfigError",
    "ExecutionError",
    "NotFoundError",
    "RefBudgetError",
    "RefError",
    "ScheduleError",
    "SchemaVersionError",
    "SignalError",
    "StaleClaimError",
    "StoreError",
    "TemplateError",
    "ToolreelError",
    "UpstreamError",
    "UpstreamTimeout",
]


class ToolreelError(Exception):
    """Root of every error toolreel raises on purpose. `code`: its stable name in docs/errors.md,
    one per class, what programs match (messages may be reworded)."""

    code: ClassVar[str] = "error"

    @property
    def message(self) -> str:
        return str(self)

    def as_json(self) -> dict[str, str]:
        """`{code, message}`: how management tools, the web view and `--json` outputs report it."""
        return {"code": self.code, "message": self.message}


class ConfigError(ToolreelError):
    code: ClassVar[str] = "config_invalid"

    def __init__(self, message: str, *, file: str | None = None, path: str | None = None) -> None:
        where = ": ".join(part for part in (file, path) if part)
        super().__init__(f"{where}: {message}" if where else message)
        self.file = file
        self.path = path


class RefError(ToolreelError):
    code: ClassVar[str] = "ref_unresolved"

    def __init__(self, message: str, *, ref: str | None = None, step: str | None = None) -> None:
        super().__init__(message)
        self.ref = ref
        self.step = step


class RefBudgetError(RefError):
    """A ref's filter went past its time or memory budget (`TOOLREEL_REF_TIME_LIMIT`, `TOOLREEL_REF_WORKER_MB`)."""

    code: ClassVar[str] = "ref_budget_exceeded"


class TemplateError(ToolreelError):
    code: ClassVar[str] = "template_invalid"

    def __init__(
        self, message: str, *, template: str | None = None, step: str | None = None, field: str | None = None
    ) -> None:
        where = ", ".join(
            f"{label} {value!r}" for label, value in (("template", template), ("step", step), ("field", field)) if value
        )
        super().__init__(f"{where}: {message}" if where else message)
        self.template = template
        self.step = step
        self.field = field


class StoreError(ToolreelError):
    code: ClassVar[str] = "store_failed"


class SchemaVersionError(StoreError):
    code: ClassVar[str] = "store_too_new"


class NotFoundError(StoreError):
    code: ClassVar[str] = "not_found"


class StaleClaimError(StoreError):
    code: ClassVar[str] = "claim_lost"


class UpstreamError(ToolreelError):
    code: ClassVar[str] = "upstream_failed"

    def __init__(self, message: str, *, server: str, transient: bool = False) -> None:
        super().__init__(message)
        self.server = server
        self.transient = transient


class UpstreamTimeout(UpstreamError):
    code: ClassVar[str] = "upstream_timeout"

    def __init__(self, *, server: str, tool: str, seconds: float, step: str | None = None) -> None:
        # `step`: the limit was that template step's own `timeout`, which is where to raise it
        remedy = (
            f"raise the 'timeout' of step {step!r} in the template"
            if step
            else "raise the server's 'timeout' in the config"
        )
        super().__init__(
            f"server {server!r}: tool {tool!r} did not answer within {seconds:g} s; the call was cancelled "
            f"upstream ({remedy} if the tool is legitimately slow)",
            server=server,
            transient=False,
        )
        self.tool = tool
        self.seconds = seconds


class ScheduleError(ToolreelError):
    code: ClassVar[str] = "schedule_invalid"


class CodeError(ToolreelError):
    code: ClassVar[str] = "code_failed"

    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


class CodeTimeout(CodeError):
    code: ClassVar[str] = "code_timeout"


class CodeMemoryError(CodeError):
    code: ClassVar[str] = "code_memory_limit"


class ExecutionError(ToolreelError):
    code: ClassVar[str] = "execution_refused"

    def __init__(self, message: str, *, execution_id: str | None = None, step: str | None = None) -> None:
        super().__init__(message)
        self.execution_id = execution_id
        self.step = step


class SignalError(ExecutionError):
    """A signal that cannot be delivered: no step of the execution waits for it now, or its data does not
    match the waiting step's schema. Nothing was delivered; the execution is as it was."""

    code: ClassVar[str] = "signal_refused"
