"""Where executions come from and what a drive starts from.

`Origins` makes execution rows (inputs bound and checked, tools listed by an upstream, the saved version
with this very definition found) and gives a drive its template and its inputs in clear: a run started
in this process keeps its secret inputs and unsaved template here, never in the store.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from toolreel.core.caller import ToolCaller
from toolreel.core.errors import ExecutionError, NotFoundError, TemplateError
from toolreel.core.model import JSON, Execution, ExecutionMode, ExecutionStatus, new_id
from toolreel.core.secrets import REDACTED
from toolreel.core.store import Store
from toolreel.core.template import Template
from toolreel.core.template_io import parse_template
from toolreel.replayer._inputs import bind_inputs, read_secret, redact_inputs
from toolreel.replayer._ledger import definition_hash
from toolreel.replayer._state import ChildRequest

__all__ = ["Origins", "TemplateLoader"]

TemplateLoader = Callable[[str, int | None], Template]


class Origins:
    """Makes this engine's execution rows and holds, by execution id, what only this process knows of
    them: inputs in clear, templates run unsaved, outputs stored redacted (`clear`)."""

    def __init__(
        self, store: Store, caller: ToolCaller, *, owner: str, lease_seconds: float, loader: TemplateLoader
    ) -> None:
        self.store = store
        self.caller = caller
        self.owner = owner
        self.lease_seconds = lease_seconds
        self.loader = loader
        self.inputs: dict[str, Mapping[str, JSON]] = {}  # in clear, for runs started here (secrets)
        self._unsaved: dict[str, Template] = {}  # templates run without being saved, by execution id
        self.clear: dict[str, dict[str, JSON]] = {}  # outputs stored redacted, by execution id and step row

    def create(
        self,
        template: Template,
        inputs: Mapping[str, Any],
        *,
        deadline: float | None,
        execution_id: str | None = None,
        parent: Execution | None = None,
        parent_step: str | None = None,
        queued: bool = False,
    ) -> Execution:
        bound = bind_inputs(template, inputs)
        execution = self._new_execution(template, bound, deadline, execution_id, parent, parent_step, queued)
        self.store.create_execution(execution)
        if queued:
            return execution
        self.inputs[execution.id] = bound
        if execution.template_version is None:
            self._unsaved[execution.id] = template
        return execution

    def scheduled_execution(
        self, template: Template, inputs: Mapping[str, Any], *, schedule: str, execution_id: str
    ) -> Execution:
        """The pending execution of one tick of `schedule`, not stored yet (`Store.start_tick` stores it
        once per tick); inputs are checked against the template as it is now."""
        bound = bind_inputs(template, inputs)
        execution = self._new_execution(template, bound, None, execution_id, queued=True)
        return execution.replace(schedule=schedule)

    def _new_execution(
        self,
        template: Template,
        bound: Mapping[str, Any],
        deadline: float | None,
        execution_id: str | None = None,
        parent: Execution | None = None,
        parent_step: str | None = None,
        queued: bool = False,
    ) -> Execution:
        if not queued:
            self.check_tools(template)
        digest = definition_hash(template)
        version = template.version if template.version is not None else self._saved_version(template, digest)
        if queued and version is None:
            raise ExecutionError(
                f"template {template.name!r} is not saved: a queued run is driven by another process, which loads "
                "it from the store; save it first (toolreel templates import FILE)"
            )
        now = time.time()
        return Execution(
            id=execution_id or new_id(),
            mode=ExecutionMode.AUTO,
            status=ExecutionStatus.PENDING,
            created_at=now,
            updated_at=now,
            template=template.name,
            template_version=version,
            template_hash=digest,
            inputs=redact_inputs(template, bound),
            parent_id=parent.id if parent else None,
            parent_step=parent_step,
            depth=parent.depth + 1 if parent else 0,
            deadline=deadline,
            # ours from birth (no worker takes it before `run` claims it properly), unless queued
            claimed_by=None if queued else self.owner,
            lease_until=None if queued else now + self.lease_seconds,
        )

    def check_tools(self, template: Template) -> None:
        for spec in template.steps:
            if spec.tool is not None and self.caller.server_of(spec.tool) is None:
                raise TemplateError(
                    f"no upstream server lists tool {spec.tool!r} (is its server in the config, and running?)",
                    template=template.name,
                    step=spec.name,
                    field="tool",
                )

    def _saved_version(self, template: Template, digest: str) -> int | None:
        """The stored version with this very definition, so a crash can be recovered by loading it."""
        try:
            record = self.store.get_template(template.name)
        except NotFoundError:
            return None
        if record.hash == digest or definition_hash(parse_template(record.definition)) == digest:
            return record.version
        return None

    def prepare(self, execution: Execution) -> tuple[Template, Mapping[str, JSON]]:
        template = self.template_of(execution)
        inputs: Mapping[str, JSON] = self.inputs.get(execution.id) or execution.inputs or {}
        inputs = reread_secrets(template, inputs)
        hidden = [name for name, spec in template.inputs.items() if spec.secret and inputs.get(name) == REDACTED]
        if hidden:
            raise ExecutionError(
                f"execution {execution.id}: secret input(s) {', '.join(hidden)} are never stored and this process "
                "does not hold them, so it cannot go on; give them a default source in the template "
                "(`secret: {env: VAR}`), or run the template again",
                execution_id=execution.id,
            )
        return template, inputs

    def template_of(self, execution: Execution) -> Template:
        if execution.id in self._unsaved:
            template = self._unsaved[execution.id]
        elif execution.template is None or execution.template_version is None:
            raise ExecutionError(
                f"execution {execution.id} ran template {execution.template!r} without saving it, and this process "
                "does not hold it: it cannot be resumed here (save templates to make their runs recoverable)",
                execution_id=execution.id,
            )
        else:
            try:
                template = self.loader(execution.template, execution.template_version)
            except NotFoundError as exc:
                raise ExecutionError(
                    f"execution {execution.id} cannot be resumed: {exc}", execution_id=execution.id
                ) from exc
        digest = definition_hash(template)
        if execution.template_hash and digest != execution.template_hash:
            raise ExecutionError(
                f"execution {execution.id} started with template {execution.template!r} version "
                f"{execution.template_version} (definition hash {execution.template_hash[:12]}), but that version "
                f"now has hash {digest[:12]}: it was deleted and saved again. Resuming could run other steps than "
                "the ones already done; run the template again instead",
                execution_id=execution.id,
            )
        return template

    def child_execution(self, request: ChildRequest, child_id: str) -> Execution:
        try:
            return self.store.get_execution(child_id)
        except NotFoundError:
            pass
        assert request.step.template is not None
        template = self.loader(request.step.template, request.step.template_version)
        inputs = request.inputs if request.inputs is not None else {}
        if not isinstance(inputs, dict):
            raise ExecutionError(f"input resolved to {type(inputs).__name__}, not an object of template inputs")
        return self.create(
            template,
            inputs,
            deadline=request.parent.deadline,
            execution_id=child_id,
            parent=request.parent,
            parent_step=request.store_name,
        )

    def forget(self, execution_id: str) -> None:
        """What this process held for a run that can no longer be resumed."""
        self.inputs.pop(execution_id, None)
        self._unsaved.pop(execution_id, None)
        self.clear.pop(execution_id, None)


def reread_secrets(template: Template, inputs: Mapping[str, JSON]) -> Mapping[str, JSON]:
    """A stored run's secrets are redacted: those with a default source are read again where it is
    driven (a worker, a resume), so queued and interrupted runs go on without ever storing them."""
    out: dict[str, JSON] | None = None
    for name, spec in template.inputs.items():
        if spec.secret_source is not None and inputs.get(name) == REDACTED:
            out = dict(inputs) if out is None else out
            try:
                out[name] = read_secret(spec.secret_source)
            except ValueError:
                continue  # left redacted: the caller names it as missing
    return inputs if out is None else out
