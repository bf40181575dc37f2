"""The shared core of toolreel: the model, the ref grammar, templates and the store.

It imports nothing from the other packages. Its modules are its face: `core.model` (executions,
steps, template records), `core.errors` (the one exception tree), `core.refs` (the ref grammar and
resolver), `core.secrets` (redaction), `core.template` / `core.template_io` / `core.template_schema`
(templates as values, files and JSON Schema), `core.store` (SQLite / PostgreSQL).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolreel.core import faces

if TYPE_CHECKING:
    from toolreel.core.errors import ToolreelError
    from toolreel.core.model import JSON, Execution, ExecutionStatus, StepRecord, StepStatus
    from toolreel.core.template import Template

__all__ = ["JSON", "Execution", "ExecutionStatus", "StepRecord", "StepStatus", "Template", "ToolreelError"]

# Every module of the product imports some core module, which runs this file first: the face's names
# load on first use (PEP 562), so that importing `core.errors` does not also import the model and templates.
_FACE = {
    "JSON": "model",
    "Execution": "model",
    "ExecutionStatus": "model",
    "StepRecord": "model",
    "StepStatus": "model",
    "Template": "template",
    "ToolreelError": "errors",
}

__getattr__ = faces.lazy_face(__name__, _FACE)
