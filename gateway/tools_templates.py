"""The template catalogue over MCP: save (templatize), list, get, delete, and `reel__<name>` tools.

Every saved template is listed as a tool `reel__<name>` whose `inputSchema` comes from its
inputs; the listing is cached and `notifications/tools/list_changed` goes out whenever the
catalogue changes (here, or in another process sharing the store).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from toolreel.core.errors import NotFoundError, StoreError, TemplateError
from toolreel.core.model import StepRecord
from toolreel.gateway.links import ClientLink
from toolreel.gateway.management import GatewayHook, ManagementTool, tool_result

if TYPE_CHECKING:
    from toolreel.core.template import Template

__all__ = ["install", "reel_tool"]

logger = logging.getLogger("toolreel.gateway")

REEL_PREFIX = "reel__"
REFRESH_SECONDS = 5.0
_LEGAL = re.compile(r"[A-Za-z0-9_-]{1,64}")


def reel_tool(template: Template) -> dict[str, Any] | None:
    """The `reel__<name>` tool of a template, or None when the name cannot be a tool name."""
    name = f"{REEL_PREFIX}{template.name}"
    if not _LEGAL.fullmatch(name):
        return None
    properties: dict[str, Any] = {}
    required: list[str] = []
    for key, spec in template.inputs.items():
        prop: dict[str, Any] = {}
        if spec.type:
            prop["type"] = spec.type
        if spec.description:
            prop["description"] = spec.description
        if spec.has_default:
            prop["default"] = spec.default
        properties[key] = prop
        if spec.required:
            required.append(key)
    return {
        "name": name,
        "description": template.description or f"Replay the template {template.name!r} in auto mode.",
        "inputSchema": {"type": "object", "properties": properties, "required": required},
    }


class _Catalogue:
    def __init__(self, hook: GatewayHook) -> None:
        self.hook = hook
        self.listed: list[dict[str, Any]] = []
        self._failing = False  # the last refresh could not read the store

    @property
    def store(self) -> Any:
        return self.hook.store

    def _current(self) -> list[dict[str, Any]]:
        from toolreel.core.template_io import stored_template

        tools = []
        for record in self.store.list_templates():
            try:
                template = stored_template(record)
            except TemplateError:
                continue  # a stored template this version cannot read is not offered as a tool
            tool = reel_tool(template)
            if tool is not None:
                tools.append(tool)
        return tools

    async def refresh(self) -> None:
        current = await anyio.to_thread.run_sync(self._current)
        if current != self.listed:
            self.listed = current
            self.hook.hub.router.lists_changed(frozenset({"tools"}))

    @contextlib.asynccontextmanager
    async def service(self) -> AsyncIterator[None]:
        await self._refresh_logged()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._poll)
            yield
            tg.cancel_scope.cancel()

    async def _poll(self) -> None:
        while True:
            await anyio.sleep(REFRESH_SECONDS)
            await self._refresh_logged()

    async def _refresh_logged(self) -> None:
        """A refresh that outlives the store: while it cannot be read, the last listing stays and
        the failure is said once (a store outage degrades the gateway, it never ends it)."""
        try:
            await self.refresh()
        except StoreError as exc:
            if not self._failing:
                logger.warning("the template list cannot be refreshed (%s); retrying every %g s", exc, REFRESH_SECONDS)
            self._failing = True
            return
        if self._failing:
            logger.warning("the template list is refreshed again")
        self._failing = False

    # tools ---------------------------------------------------------------------------------
    async def save(self, arguments: dict[str, Any], ctx: Any, link: ClientLink) -> dict[str, Any]:
        name = arguments.get("name")
        if not isinstance(name, str) or not name:
            raise TemplateError("'name' is required: the template's name", field="name")
        from toolreel.core.template_io import template_to_dict
        from toolreel.templatizer import templatize

        await self.hook.ready_store()
        recordings = await self._recordings(arguments, link)
        result = templatize(
            recordings,
            name=name,
            description=arguments.get("description"),
            inputs=arguments.get("inputs"),
            steps=arguments.get("steps"),
            include_failed=bool(arguments.get("include_failed", False)),
            read_only=self.hook.hub.read_only_tools(),
        )
        answer = result.to_json()
        if not arguments.get("dry_run"):
            definition = template_to_dict(result.template)
            record = await anyio.to_thread.run_sync(self._save_checked, result.template, definition, arguments)
            answer.update(saved=True, version=record.version, hash=record.hash)
            await self.refresh()
        else:
            answer["saved"] = False
        return tool_result(answer)

    def _save_checked(self, template: Template, definition: dict[str, Any], arguments: dict[str, Any]) -> Any:
        from toolreel.core.template_io import check_template_cycles

        check_template_cycles(template, self._lookup)
        return self.store.save_template(
            template.name,
            definition,
            description=template.description,
            source_executions=tuple(arguments.get("execution_ids") or ()),
        )

    def _lookup(self, name: str) -> Template | None:
        from toolreel.core.template_io import stored_template

        try:
            return stored_template(self.store.get_template(name))
        except NotFoundError:
            return None

    async def _recordings(self, arguments: dict[str, Any], link: ClientLink) -> list[Sequence[StepRecord]]:
        await self.hook.recorder.writer.flush()
        ids = arguments.get("execution_ids")
        if not ids:
            own = self.hook.session(link).execution_id
            if own is None:
                raise TemplateError(
                    "this session has recorded no tool call yet: call some tools first, or pass execution_ids",
                    field="execution_ids",
                )
            ids = [own]
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise TemplateError("'execution_ids' must be a list of execution ids", field="execution_ids")
        recordings: list[Sequence[StepRecord]] = []
        for execution_id in ids:
            steps = await anyio.to_thread.run_sync(self.store.get_steps, execution_id)
            recordings.append(steps)
        return recordings

    async def list(self, arguments: dict[str, Any], ctx: Any, link: ClientLink) -> dict[str, Any]:
        await self.hook.ready_store()
        records = await anyio.to_thread.run_sync(self.store.list_templates)
        items = [
            {
                "name": r.name,
                "version": r.version,
                "hash": r.hash,
                "description": r.description,
                "created_at": r.created_at,
                "inputs": r.definition.get("inputs", {}),
                "steps": len(r.definition.get("steps", [])),
            }
            for r in records
        ]
        return tool_result({"templates": items})

    async def get(self, arguments: dict[str, Any], ctx: Any, link: ClientLink) -> dict[str, Any]:
        name = str(arguments.get("name", ""))
        version = arguments.get("version")
        await self.hook.ready_store()
        record = await anyio.to_thread.run_sync(self.store.get_template, name, version)
        return tool_result(
            {"name": record.name, "version": record.version, "hash": record.hash, "template": dict(record.definition)}
        )

    async def delete(self, arguments: dict[str, Any], ctx: Any, link: ClientLink) -> dict[str, Any]:
        name = str(arguments.get("name", ""))
        await self.hook.ready_store()
        count = await anyio.to_thread.run_sync(self.store.delete_template, name)
        await self.refresh()
        return tool_result({"deleted": name, "versions": count})


def install(hook: GatewayHook, **_: Any) -> None:
    catalogue = _Catalogue(hook)
    hook.services.append(catalogue.service)
    hook.dynamic.append(lambda: catalogue.listed)
    name_prop = {"name": {"type": "string"}}
    hook.add(
        ManagementTool(
            "toolreel__save_template",
            "Turn this session's recorded steps (or the recordings in execution_ids) into a template: literals become "
            "refs (@step.path) and inputs (@input.name). Returns the template, every inferred ref with confidence and "
            "evidence, and ambiguous candidates; saves it unless dry_run (same name: new version).",
            {
                "type": "object",
                "properties": {
                    **name_prop,
                    "description": {"type": "string"},
                    "steps": {"type": "array", "items": {"type": "string"}, "description": "Keep only these steps."},
                    "inputs": {"type": "object", "description": "Input name -> the literal value it replaces."},
                    "execution_ids": {"type": "array", "items": {"type": "string"}},
                    "dry_run": {"type": "boolean"},
                    "include_failed": {"type": "boolean"},
                },
                "required": ["name"],
            },
            catalogue.save,
        )
    )
    hook.add(
        ManagementTool(
            "toolreel__list_templates",
            "Saved templates (latest versions).",
            {"type": "object", "properties": {}},
            catalogue.list,
        )
    )
    hook.add(
        ManagementTool(
            "toolreel__get_template",
            "A saved template (latest version unless version).",
            {"type": "object", "properties": {**name_prop, "version": {"type": "integer"}}, "required": ["name"]},
            catalogue.get,
        )
    )
    hook.add(
        ManagementTool(
            "toolreel__delete_template",
            "Delete every version of a template.",
            {"type": "object", "properties": name_prop, "required": ["name"]},
            catalogue.delete,
        )
    )
