"""The template catalogue over MCP: save (templatize), list, get, delete, and `reel__<name>` tools.

Every saved template is listed as a tool `reel__<name>` whose `inputSchema` comes from its
inputs; the listing is cached and `notifications/tools/list_changed` goes out whenever the
catalogue changes (here, or in another process sharing the store).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from toolreel.core.errors import NotFoundError, StoreError, TemplateError
from toolreel.core.model import StepRecord, TemplateDraft
from toolreel.core.names import prefixed_name, server_part
from toolreel.core.skill import Skill, reel_tool_name, served_skills
from toolreel.gateway import save_form
from toolreel.gateway.links import ClientLink
from toolreel.gateway.management import Extension, GatewayHook, ManagementTool, tool_result
from toolreel.gateway.script_templates import ScriptWork, script_template, script_work, verify_script

if TYPE_CHECKING:
    from toolreel.core.template import Template
    from toolreel.templatizer import TemplatizeResult

__all__ = ["TemplateTools", "reel_tool"]

logger = logging.getLogger("toolreel.gateway")

REFRESH_SECONDS = 5.0


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


class _Catalogue:
    def __init__(self, hook: GatewayHook) -> None:
        self.hook = hook
        self.listed: list[dict[str, Any]] = []
        self.skills: list[Skill] = []
        self._failing = False  # the last refresh could not read the store

    @property
    def store(self) -> Any:
        return self.hook.store

    def _current(self) -> tuple[list[dict[str, Any]], list[Skill]]:
        from toolreel.core.template_io import stored_template

        tools, templates = [], []
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

    # tools ---------------------------------------------------------------------------------
    async def save(self, arguments: dict[str, Any], ctx: Any, link: ClientLink) -> dict[str, Any]:
        name = arguments.get("name")
        if not isinstance(name, str) or not name:
            raise TemplateError("'name' is required: the template's name", field="name")
        given = arguments.get("inputs")
        if given is not None and not isinstance(given, dict):
            raise TemplateError("'inputs' is an object of input name -> the recorded value it replaces", field="inputs")
        await self.hook.ready_store()
        recordings = await self._recordings(arguments, link)
        work = script_work(recordings[-1]) if given is None else None
        if work is not None:  # the session's work was a script: the script is the template
            return await self._save_script(name, work, arguments)
        draft = _Draft(self, recordings, arguments, name)
        result = draft.templatize(given)
        note = None
        offered = [*result.likely_inputs, *(await self._fixes(result, recordings))] if given is None else []
        if offered:
            dry = bool(arguments.get("dry_run"))  # a dry run asks the user nothing
            asked = None if dry else await save_form.ask(link, name, offered)
            if asked is not None and asked.declined:
                text = f"Not saved: the form for template {name!r} was declined, so nothing was saved."
                return _answer(text, {"saved": False, "declined": True})
            if asked is None:
                chosen = result.ticked_inputs  # thin ones are proposed, never applied without the user
                why = "this is a dry run" if dry else "this client cannot show a confirmation form"
                note = _applied_note(chosen, why, [likely.name for likely in result.likely_inputs if not likely.ticked])
            else:
                chosen = dict(asked.inputs)
            result = draft.templatize(chosen)
        result = self._pinning(self._remembering(result), recordings)
        return await self._finish(result, recordings, arguments, note)

    async def _fixes(self, result: TemplatizeResult, recordings: list[Sequence[StepRecord]]) -> list[Any]:
        """What the generalization check would change, offered unticked in the form beside the likely inputs."""
        from toolreel.templatizer import propose_fixes, verify

        return propose_fixes(result, await anyio.to_thread.run_sync(verify, result, recordings))

    async def _save_script(self, name: str, work: ScriptWork, arguments: dict[str, Any]) -> dict[str, Any]:
        from toolreel.core.template_io import template_to_dict
        from toolreel.upstreams.remembered import portable_entry

        journal = await anyio.to_thread.run_sync(self.store.get_steps, work.execution_id)
        used = {row.server for row in journal if row.server}
        servers = {
            u.name: portable_entry(u.config, self.hook.secret_values)
            for u in self.hook.hub.upstreams.values()
            if u.name in used
        }
        template = script_template(name, arguments.get("description"), work, servers)
        problems = await verify_script(work, journal)
        definition = template_to_dict(template)
        detail: dict[str, Any] = {"template": definition, "verified": not problems, "problems": problems}
        if arguments.get("dry_run") or (problems and not arguments.get("force")):
            detail["saved"] = False
            why = "dry run" if arguments.get("dry_run") else "; ".join(problems)
            answer = _answer(f"Not saved: script template {name!r} ({why})", detail)
            answer["isError"] = bool(problems) and not arguments.get("dry_run")
            return answer
        record = await anyio.to_thread.run_sync(self._save_checked, template, definition, arguments)
        await self.refresh()
        detail.update(saved=True, version=record.version, hash=record.hash)
        inputs = ", ".join(template.inputs) or "none"
        text = f"Saved script template {name!r} (version {record.version}, tool reel__{name}; inputs: {inputs})"
        return _answer(text, detail)

    def _remembering(self, result: TemplatizeResult) -> TemplatizeResult:
        """The template with the config entries of the servers its tools come from."""
        from toolreel.upstreams.remembered import portable_entry

        servers: dict[str, Any] = {}
        for spec in result.template.steps:
            upstream = self.hook.hub.upstreams.get(server_part(spec.tool or ""))
            if upstream is not None and upstream.name not in servers:
                servers[upstream.name] = portable_entry(upstream.config, self.hook.secret_values)
        return dataclasses.replace(result, template=dataclasses.replace(result.template, servers=servers))

    def _pinning(self, result: TemplatizeResult, recordings: list[Sequence[StepRecord]]) -> TemplatizeResult:
        """The template's tool steps with the digest of their tool's definition (core.tool_digest): the one the
        calls were recorded with (the latest recorded call of that tool), else, for steps recorded before
        recordings kept it, the definition listed now."""
        from toolreel.core.tool_digest import recorded_digest

        recorded: dict[str, str] = {}
        for recording in recordings:
            for step in recording:
                tool = prefixed_name(step.server, step.tool)
                if step.server and tool and (digest := recorded_digest(step.result)) is not None:
                    recorded[tool] = digest
        steps = tuple(
            dataclasses.replace(spec, tool_digest=digest)
            if (digest := recorded.get(spec.tool or "") or self._digest(spec.tool))
            else spec
            for spec in result.template.steps
        )
        return dataclasses.replace(result, template=dataclasses.replace(result.template, steps=steps))

    def _digest(self, name: str | None) -> str | None:
        from toolreel.core.tool_digest import tool_digest

        tool = self.hook.hub.tool_definition(name) if name else None
        return tool_digest(tool) if tool is not None else None

    async def _finish(
        self,
        result: TemplatizeResult,
        recordings: list[Sequence[StepRecord]],
        arguments: dict[str, Any],
        note: str | None,
    ) -> dict[str, Any]:
        from toolreel.core.template_io import template_to_dict
        from toolreel.templatizer import summary, verify

        verification = await anyio.to_thread.run_sync(verify, result, recordings)
        detail: dict[str, Any] = {**result.to_json(), "verified": verification.verified}
        detail["verification"] = verification.to_json()
        name = result.template.name
        if arguments.get("dry_run"):
            headline = f"Dry run of template {name!r}, nothing saved"
            detail["saved"] = False
        elif not verification.verified and not arguments.get("force"):
            headline = f"Not saved: template {name!r} does not replay its recording (force: true saves it anyway)"
            detail["saved"] = False
            failed = _answer(summary(result, verification, saved=headline, note=note), detail)
            failed["isError"] = True
            return failed
        else:
            definition = template_to_dict(result.template)
            record = await anyio.to_thread.run_sync(self._save_checked, result.template, definition, arguments)
            headline = f"Saved template {name!r} (version {record.version}, tool reel__{name})"
            note = "\n".join(filter(None, [note, _servers_note(result.template.servers)]))
            detail.update(saved=True, version=record.version, hash=record.hash)
            await self.refresh()
        return _answer(summary(result, verification, saved=headline, note=note), detail)

    def _save_checked(self, template: Template, definition: dict[str, Any], arguments: dict[str, Any]) -> Any:
        from toolreel.core.template_io import check_template_cycles

        check_template_cycles(template, self._lookup)
        sources = tuple(arguments.get("execution_ids") or ())
        return self.store.save_template(TemplateDraft(template.name, definition, template.description, sources))

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
            execution = await anyio.to_thread.run_sync(self.store.get_execution, execution_id)
            if not link.may_see(execution.session):
                raise NotFoundError(f"no execution {execution_id!r} recorded with this client's credentials")
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


class _Draft:
    """The templatizer's arguments of one save, so that it can run again with other inputs."""

    def __init__(
        self, catalogue: _Catalogue, recordings: list[Sequence[StepRecord]], arguments: dict[str, Any], name: str
    ) -> None:
        self.recordings = recordings
        self.options: dict[str, Any] = {
            "name": name,
            "description": arguments.get("description"),
            "steps": arguments.get("steps"),
            "include_failed": bool(arguments.get("include_failed", False)),
            "read_only": catalogue.hook.hub.read_only_tools(),
            "schemas": catalogue.hook.hub.input_schemas(),
        }

    def templatize(self, inputs: Mapping[str, Any] | None) -> TemplatizeResult:
        from toolreel.templatizer import templatize

        return templatize(self.recordings, inputs=inputs, **self.options)


def _applied_note(chosen: Mapping[str, Any], why: str, unticked: Sequence[str] = ()) -> str:
    names = ", ".join(chosen) or "none"
    note = (
        f"The likely inputs ({names}) were applied because {why}; "
        "to keep a value fixed, save again with inputs naming only the values that should change."
    )
    if unticked:
        note += f" Proposed but not applied (thin evidence): {', '.join(unticked)}; name them in inputs to use them."
    return note


def _servers_note(servers: Mapping[str, Mapping[str, Any]]) -> str | None:
    from toolreel.upstreams.remembered import env_references

    if not servers:
        return None
    needs = env_references(servers)
    tail = f" (a replay needs the environment variables {', '.join(needs)})" if needs else ""
    return f"It remembers its servers {', '.join(servers)}: `toolreel run` starts them with no config{tail}."


def _answer(text: str, detail: dict[str, Any]) -> dict[str, Any]:
    """The human summary first (what an agent relays), then the whole detail as JSON."""
    result = tool_result({"summary": text, **detail})
    result["content"] = [{"type": "text", "text": text}, *result["content"]]
    return result


class TemplateTools(Extension):
    """The catalogue's management tools, and one `reel__<name>` tool per saved template."""

    def __init__(self, hook: GatewayHook) -> None:
        self.catalogue = _Catalogue(hook)

    def listed(self) -> list[dict[str, Any]]:
        return self.catalogue.listed

    def skills(self) -> Sequence[Skill]:
        return self.catalogue.skills

    def service(self) -> contextlib.AbstractAsyncContextManager[None]:
        return self.catalogue.service()

    def tools(self) -> tuple[ManagementTool, ...]:
        catalogue = self.catalogue
        name_prop = {"name": {"type": "string"}}
        return (
            ManagementTool(
                "toolreel__save_template",
                "Turn this session's recorded steps (or the recordings in execution_ids) into a template: "
                "literals become refs (@step.path) and inputs (@input.name). Without inputs, the likely inputs "
                "found are applied (the user confirms them in a form when the client can show one). The template "
                "is replayed dry against the recording first and saved only if every step gets its recorded input"
                " (or force). Returns a summary, the template, every inferred ref with confidence and evidence, "
                "and ambiguous candidates; saves it unless dry_run (same name: new version).",
                {
                    "type": "object",
                    "properties": {
                        **name_prop,
                        "description": {"type": "string"},
                        "steps": {
                            "type": "array",
                            "items": {"type": "string"},
                            "description": "Keep only these steps.",
                        },
                        "inputs": {
                            "type": "object",
                            "description": "Input name -> the literal value it replaces (default: the likely inputs).",
                        },
                        "execution_ids": {"type": "array", "items": {"type": "string"}},
                        "dry_run": {"type": "boolean"},
                        "force": {"type": "boolean", "description": "Save even if the dry replay differs."},
                        "include_failed": {"type": "boolean"},
                    },
                    "required": ["name"],
                },
                catalogue.save,
            ),
            ManagementTool(
                "toolreel__list_templates",
                "Saved templates (latest versions).",
                {"type": "object", "properties": {}},
                catalogue.list,
            ),
            ManagementTool(
                "toolreel__get_template",
                "A saved template (latest version unless version).",
                {"type": "object", "properties": {**name_prop, "version": {"type": "integer"}}, "required": ["name"]},
                catalogue.get,
            ),
            ManagementTool(
                "toolreel__delete_template",
                "Delete every version of a template.",
                {"type": "object", "properties": name_prop, "required": ["name"]},
                catalogue.delete,
            ),
        )
