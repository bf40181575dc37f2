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
    ├── CodeError                a code step's script failed or is invalid (JavaScript message, line)
    │   ├── CodeTimeout          it ran past its timeout (`code_timeout`)
    │   └── CodeMemoryError      it went past its memory limit (`code_memory_limit`)
    └── ExecutionError           a run failed, was cancelled or is not resumable
"""

from __future__ import annotations

__all__ = [
    "CodeError",
    "CodeMemoryError",
    "CodeTimeout",
    "ConfigError",
    "ExecutionError",
    "NotFoundError",
    "RefBudgetError",
    "RefError",
    "SchemaVersionError",
    "StaleClaimError",
    "StoreError",
    "TemplateError",
    "ToolreelError",
    "UpstreamError",
    "UpstreamTimeout",
]


class ToolreelError(Exception):
    """Root of every error toolreel raises on purpose."""

    @property
    def message(self) -> str:
        return str(self)


class ConfigError(ToolreelError):
    def __init__(self, message: str, *, file: str | None = None, path: str | None = None) -> None:
        where = ": ".join(part for part in (file, path) if part)
        super().__init__(f"{where}: {message}" if where else message)
        self.file = file
        self.path = path


class RefError(ToolreelError):
    def __init__(self, message: str, *, ref: str | None = None, step: str | None = None) -> None:
        super().__init__(message)
        self.ref = ref
        self.step = step


class RefBudgetError(RefError):
    pass


class TemplateError(ToolreelError):
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
    pass


class SchemaVersionError(StoreError):
    pass


class NotFoundError(StoreError):
    pass


class StaleClaimError(StoreError):
    pass


class UpstreamError(ToolreelError):
    def __init__(self, message: str, *, server: str, transient: bool = False) -> None:
        super().__init__(message)
        self.server = server
        self.transient = transient


class UpstreamTimeout(UpstreamError):
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


class CodeError(ToolreelError):
    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


class CodeTimeout(CodeError):
    pass


class CodeMemoryError(CodeError):
    pass


class ExecutionError(ToolreelError):
    def __init__(self, message: str, *, execution_id: str | None = None, step: str | None = None) -> None:
        super().__init__(message)
        self.execution_id = execution_id
        self.step = step
