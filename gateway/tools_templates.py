"""The template catalogue over MCP: save (templatize), list, get, delete, and `reel__<name>` tools.

Every saved template is listed as a tool `reel__<name>` whose `inputSchema` comes from its
inputs; the listing is cached and `notifications/tools/list_changed` goes out whenever the
catalogue changes (here, or in another process sharing the store).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from toolreel.core.errors import NotFoundError, TemplateError
from toolreel.core.model import StepRecord
from toolreel.core.names import prefixed_name, server_part
from toolreel.core.skill import Skill
from toolreel.gateway import save_form
from toolreel.gateway.catalogue import Catalogue, reel_tool
from toolreel.gateway.links import ClientLink
from toolreel.gateway.management import Extension, GatewayHook, ManagementTool, tool_result
from toolreel.gateway.script_templates import ScriptWork, script_template, script_work, verify_script
from toolreel.ui import SaveRequest, save_reviewed

if TYPE_CHECKING:
    from toolreel.core.store import Store
    from toolreel.core.template import Template
    from toolreel.templatizer import TemplatizeResult

__all__ = ["TemplateTools", "reel_tool"]

logger = logging.getLogger("toolreel.gateway")

REFRESH_SECONDS = 5.0


class _Handlers:
    """The catalogue's MCP tools: arguments in, the tool's answer out, over `Catalogue`."""

    def __init__(self, hook: GatewayHook, catalogue: Catalogue) -> None:
        self.hook = hook
        self.catalogue = catalogue

    @property
    def store(self) -> Store:
        return self.hook.store

    async def refresh(self) -> None:
        await self.catalogue.refresh()

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
        sources = tuple(arguments.get("execution_ids") or ())
        return save_reviewed(self.store, SaveRequest(template.name, definition, template.description, sources))

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
        records = await self.catalogue.list()
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
        version = arguments.get("version")
        record = await self.catalogue.get(str(arguments.get("name", "")), version)
        return tool_result(
            {"name": record.name, "version": record.version, "hash": record.hash, "template": dict(record.definition)}
        )

    async def delete(self, arguments: dict[str, Any], ctx: Any, link: ClientLink) -> dict[str, Any]:
        name = str(arguments.get("name", ""))
        count = await self.catalogue.delete(name)
        return tool_result({"deleted": name, "versions": count})


class _Draft:
    """The templatizer's arguments of one save, so that it can run again with other inputs."""

    def __init__(
        self, catalogue: _Handlers, recordings: list[Sequence[StepRecord]], arguments: dict[str, Any], name: str
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
        self.catalogue = Catalogue(hook)
        self.handlers = _Handlers(hook, self.catalogue)

    def listed(self) -> list[dict[str, Any]]:
        return self.catalogue.listed

    def skills(self) -> Sequence[Skill]:
        return self.catalogue.skills

    def service(self) -> contextlib.AbstractAsyncContextManager[None]:
        return self.catalogue.service()

    def tools(self) -> tuple[ManagementTool, ...]:
        catalogue = self.handlers
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
