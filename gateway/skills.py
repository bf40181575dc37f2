"""The Skills extension (SEP-2640) on the gateway's face: each template's latest version served as a skill.

A skill's files are `skill://toolreel/<name>/<path>` resources: `SKILL.md` is listed by `resources/list`
(with its front matter's name and description), every file is read by `resources/read`, and
`skills/list` / `skills/get` give the entries with each file's digest and size. A URI spelled with the
template's own name in place of the skill name (`Triage_Issues` for `triage-issues`) is answered too.
The skills come from the hook (`ToolHook.skills()`, the template catalogue's), so they change when the
templates do; the front announces `resources` list changes with the tools'.

The servers' own skills are listed beside them: each server that declares the extension is asked for its
`skills/list` (with what the calling client said of itself), and its entries are given with every URI as the
aggregate lists the server's resources (upstreams.uris: `skill://<server>.<authority>/...` when names are
prefixed), so two servers' skills never collide and a read of any listed file reaches the server that has it;
`skills/get` on such a URI is answered by that server. A server that fails to answer is left out of the
listing (logged), never the whole listing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolreel.core.errors import UpstreamError
from toolreel.core.skill import SKILL_AUTHORITY, SKILL_FILE, Skill, find_skill
from toolreel.gateway.links import client_envelope, era_result
from toolreel.upstreams.hub import Hub
from toolreel.upstreams.upstream import Upstream

__all__ = ["SKILLS_EXTENSION", "GetSkillParams", "install", "is_local", "read_skill_file", "skill_resources"]

SKILLS_EXTENSION: Final = "io.modelcontextprotocol/skills"
_PREFIX: Final = f"skill://{SKILL_AUTHORITY}/"
_MIME: Final = {SKILL_FILE: "text/markdown", "template.yaml": "application/yaml"}

Skills = Callable[[], Sequence[Skill]]
logger = logging.getLogger("toolreel.skills")


class GetSkillParams(types.RequestParams):
    uri: str


def install(server: Server[Any], skills: Skills, ready: Callable[[], Awaitable[None]], hub: Hub | None = None) -> None:
    """Declare the extension (no optional feature: an empty settings object) and serve its two methods.
    `ready` is awaited first: the skills come with the templates' listing, which a gateway whose store is
    still opening has not read yet (a first `skills/list` would find none)."""
    server.extensions[SKILLS_EXTENSION] = {}

    async def list_skills(ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams) -> dict[str, Any]:
        await ready()
        # One page: a catalogue of templates is small, and an entry is never split across pages.
        entries = [skill.entry() for skill in skills()]
        if hub is not None:
            entries += await _upstream_entries(hub, ctx)
        return _cacheable(ctx, {"skills": entries})

    async def get_skill(ctx: ServerRequestContext[Any, Any], params: GetSkillParams) -> dict[str, Any]:
        await ready()
        if hub is not None and not is_local(params.uri):
            upstream, own = hub.resource_route(params.uri)
            if _serves_skills(upstream):
                answer = await _ask(upstream, ctx, "skills/get", {"uri": own})
                entry = answer.get("skill")
                if isinstance(entry, dict):
                    return _cacheable(ctx, {"skill": _listed(hub, upstream, entry)})
        found = find_skill(skills(), params.uri)
        if found is None or found[1].path != SKILL_FILE:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"skills/get: toolreel serves no skill at {params.uri!r}; skills/list names the ones it has",
            )
        return _cacheable(ctx, {"skill": found[0].entry()})

    server.add_request_handler("skills/list", types.PaginatedRequestParams, list_skills)
    server.add_request_handler("skills/get", GetSkillParams, get_skill)


def _serves_skills(upstream: Upstream | None) -> bool:
    """Whether to ask `upstream` for skills: it declared the extension, or it was spoken to in the handshake era,
    where a server's declaration of extensions does not reach its client (it is asked; -32601 means no skills)."""
    if upstream is None:
        return False
    caps = upstream.capabilities
    return not upstream.modern or bool(caps is not None and caps.extensions and SKILLS_EXTENSION in caps.extensions)


async def _ask(upstream: Upstream, ctx: ServerRequestContext[Any, Any], method: str, params: dict[str, Any]) -> Any:
    try:
        return await upstream.request(method, params, envelope=client_envelope(ctx))
    except UpstreamError as exc:
        raise MCPError(code=types.INTERNAL_ERROR, message=f"{method}: {exc}") from None


async def _upstream_entries(hub: Hub, ctx: ServerRequestContext[Any, Any]) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for upstream in list(hub.upstreams.values()):
        if not _serves_skills(upstream):
            continue
        try:
            answer = await _ask(upstream, ctx, "skills/list", {})
        except MCPError as exc:  # one server's failure leaves its skills out, not the listing
            if exc.code != types.METHOD_NOT_FOUND:
                logger.warning("server %s: its skills are not listed: %s", upstream.name, exc.error.message)
            continue
        listed = answer.get("skills") if isinstance(answer, dict) else None
        entries += [_listed(hub, upstream, entry) for entry in listed or () if isinstance(entry, dict)]
    return entries


def _listed(hub: Hub, upstream: Upstream, entry: dict[str, Any]) -> dict[str, Any]:
    """A server's skill entry with its URIs as the aggregate lists that server's resources."""
    out = dict(entry)
    if isinstance(entry.get("uri"), str):
        out["uri"] = hub.listed_uri(upstream, entry["uri"])
    files = entry.get("resources")
    if isinstance(files, list):
        out["resources"] = [
            {**file, "uri": hub.listed_uri(upstream, file["uri"])}
            if isinstance(file, dict) and isinstance(file.get("uri"), str)
            else file
            for file in files
        ]
    return out


def is_local(uri: str) -> bool:
    """Whether `uri` names a file of one of toolreel's own skills (never an upstream's)."""
    return uri.startswith(_PREFIX)


def skill_resources(skills: Sequence[Skill]) -> list[dict[str, Any]]:
    """The `resources/list` entries of the skills: each one's SKILL.md (its other files are read on need)."""
    return [
        {
            "uri": skill.uri,
            "name": skill.name,
            "description": skill.description,
            "mimeType": _MIME[SKILL_FILE],
            "size": skill.files[0].size,
        }
        for skill in skills
    ]


def read_skill_file(skills: Sequence[Skill], uri: str) -> dict[str, Any]:
    """The `resources/read` result of one skill file; an unknown one is -32602 (as for a missing resource)."""
    found = find_skill(skills, uri)
    if found is not None:
        _, file = found
        return {
            "contents": [{"uri": uri, "mimeType": _MIME.get(file.path, "text/plain"), "text": file.content.decode()}]
        }
    raise MCPError(
        code=types.INVALID_PARAMS,
        message=f"resources/read: no skill file at {uri!r}; skills/list names each skill's files",
    )


def _cacheable(ctx: ServerRequestContext[Any, Any], result: dict[str, Any]) -> dict[str, Any]:
    """From 2026-07-28 a skills result carries the list-caching attributes; templates change at any moment."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        result = {**result, "ttlMs": 0, "cacheScope": "private"}
    return era_result(ctx, result)
