"""The shared core of toolreel: the model, the ref grammar, templates and the store.

It imports nothing from the other packages. Its modules are its face: `core.model` (executions,
steps, template records), `core.errors` (the one exception tree), `core.refs` (the ref grammar and
resolver), `core.secrets` (redaction), `core.template` / `core.template_io` / `core.template_schema`
(templates as values, files and JSON Schema), `core.store` (SQLite / PostgreSQL).
"""

from toolreel.core.errors import ToolreelError
from toolreel.core.model import JSON, Execution, ExecutionStatus, StepRecord, StepStatus
from toolreel.core.template import Template

__all__ = ["JSON", "Execution", "ExecutionStatus", "StepRecord", "StepStatus", "Template", "ToolreelError"]
