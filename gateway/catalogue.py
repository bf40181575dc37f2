"""The template catalogue of a gateway, as typed calls: save, list, get, delete.

Every front goes through it: the MCP management tools (`tools_templates`) and the web view (`web`).
It also keeps the listing of `reel__<name>` tools and skills fresh: refreshed after a change made
here, and polled every REFRESH_SECONDS for changes made by another process sharing the store.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import anyio

from toolreel.core.errors import NotFoundError, StoreError, TemplateError
from toolreel.core.skill import Skill, reel_tool_name, served_skills
from toolreel.ui import SaveRequest, save_reviewed

if TYPE_CHECKING:
    from toolreel.core.model import TemplateRecord
    from toolreel.core.store import Store
    from toolreel.core.template import Template
    from toolreel.gateway.management import GatewayHook

__all__ = ["REFRESH_SECONDS", "Catalogue", "reel_tool"]

logger = logging.getLogger("toolreel.gateway")

REFRESH_SECONDS = 5.0

# `Catalogue.list` shadows the builtin inside the class: its annotations use these.
_Tools = list[dict[str, Any]]
_Skills = list[Skill]
_Records = list["TemplateRecord"]


def reel_tool(template: Template) -> dict[str, Any] | None:
    """The `reel__<name>` tool of a template, or None when the name cannot be a tool name."""
    name = reel_tool_name(template.name)
    if name is None:
        return None
    properties: dict[str, Any] = {}
    required: list[str] = []
    for key, spec in template.inputs.items():
        if spec.secret:  # never passed through the LLM: read from the input's default source
            continue
        prop: dict[str, Any] = {}
        if spec.type:
            prop["type"] = spec.type
        if spec.description:
            prop["description"] = spec.description
        if spec.has_default:
            prop["default"] = spec.default
        prop.update(spec.constraints())  # enum, pattern, minimum, maximum: the caller sees what is accepted
        properties[key] = prop
        if spec.required:
            required.append(key)
    return {
        "name": name,
        "description": template.description or f"Replay the template {template.name!r} in auto mode.",
        "inputSchema": {"type": "object", "properties": properties, "required": required},
    }


class Catalogue:
    """The saved templates (typed: `SaveRequest` in, `TemplateRecord` out) and their tools' listing."""

    def __init__(self, hook: GatewayHook) -> None:
        self.hook = hook
        self.listed: _Tools = []
        self.skills: _Skills = []
        self._failing = False  # the last refresh could not read the store

    async def save(self, request: SaveRequest) -> TemplateRecord:
        """Validate (schema, refs, cycles through saved templates) and store a new version; the listing
        follows at once."""
        store = await self.hook.ready_store()
        record: TemplateRecord = await anyio.to_thread.run_sync(save_reviewed, store, request)
        await self.refresh()
        return record

    async def list(self) -> _Records:
        """The latest version of every saved template."""
        store = await self.hook.ready_store()
        return await anyio.to_thread.run_sync(store.list_templates)

    async def get(self, name: str, version: int | None = None) -> TemplateRecord:
        """A saved template (the latest version unless `version`); NotFoundError names what is missing."""
        store = await self.hook.ready_store()
        return await anyio.to_thread.run_sync(store.get_template, name, version)

    async def delete(self, name: str) -> int:
        """Delete every version of a template; returns how many there were."""
        store = await self.hook.ready_store()
        count = await anyio.to_thread.run_sync(store.delete_template, name)
        await self.refresh()
        return count

    def lookup(self, name: str) -> Template | None:
        """The latest saved version of `name`, parsed (None when there is none); blocking."""
        from toolreel.core.template_io import stored_template

        try:
            return stored_template(self.store.get_template(name))
        except NotFoundError:
            return None

    # the listing ----------------------------------------------------------------------------
    @property
    def store(self) -> Store:
        return self.hook.store

    def _current(self) -> tuple[_Tools, _Skills]:
        from toolreel.core.template_io import stored_template

        tools: _Tools = []
        templates = []
        for record in self.store.list_templates():
            try:
                template = stored_template(record)
            except TemplateError:
                continue  # a stored template this version cannot read is not offered as a tool
            templates.append(template)
            tool = reel_tool(template)
            if tool is not None:
                tools.append(tool)
        return tools, served_skills(templates)

    async def refresh(self) -> None:
        tools, skills = await anyio.to_thread.run_sync(self._current)
        changed = frozenset({"tools"} if tools != self.listed else set()) | (
            {"resources"} if skills != self.skills else set()
        )
        self.listed, self.skills = tools, skills
        if changed:
            self.hook.hub.router.lists_changed(changed)

    @contextlib.asynccontextmanager
    async def service(self) -> AsyncIterator[None]:
        try:
            self.listed, self.skills = await anyio.to_thread.run_sync(self._current)
        except StoreError as exc:  # a store outage degrades the gateway, it never ends it: the poll retries
            self._failing = True
            logger.warning("the template list cannot be read (%s); retrying every %g s", exc, REFRESH_SECONDS)
        else:
            if self.hook.listing_ready.is_set() and self.listed:
                # clients listed before the store opened
                self.hook.hub.router.lists_changed(frozenset({"tools", "resources"}))
        self.hook.listing_ready.set()  # a first tools/list waiting for the templates may answer now
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
