"""The Skills extension (SEP-2640) on the gateway's face: each template's latest version served as a skill.

A skill's files are `skill://toolreel/<name>/<path>` resources: `SKILL.md` is listed by `resources/list`
(with its front matter's name and description), every file is read by `resources/read`, and
`skills/list` / `skills/get` give the entries with each file's digest and size. A URI spelled with the
template's own name in place of the skill name (`Triage_Issues` for `triage-issues`) is answered too.
The skills come from the hook (`ToolHook.skills()`, the template catalogue's), so they change when the
templates do; the front announces `resources` list changes with the tools'.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolreel.core.skill import SKILL_AUTHORITY, SKILL_FILE, Skill, find_skill
from toolreel.gateway.links import era_result

__all__ = ["SKILLS_EXTENSION", "GetSkillParams", "install", "is_local", "read_skill_file", "skill_resources"]

SKILLS_EXTENSION: Final = "io.modelcontextprotocol/skills"
_PREFIX: Final = f"skill://{SKILL_AUTHORITY}/"
_MIME: Final = {SKILL_FILE: "text/markdown", "template.yaml": "application/yaml"}

Skills = Callable[[], Sequence[Skill]]


class GetSkillParams(types.RequestParams):
    uri: str


def install(server: Server[Any], skills: Skills) -> None:
    """Declare the extension (no optional feature: an empty settings object) and serve its two methods."""
    server.extensions[SKILLS_EXTENSION] = {}

    async def list_skills(ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams) -> dict[str, Any]:
        # One page: a catalogue of templates is small, and an entry is never split across pages.
        return _cacheable(ctx, {"skills": [skill.entry() for skill in skills()]})

    async def get_skill(ctx: ServerRequestContext[Any, Any], params: GetSkillParams) -> dict[str, Any]:
        found = find_skill(skills(), params.uri)
        if found is None or found[1].path != SKILL_FILE:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"skills/get: toolreel serves no skill at {params.uri!r}; skills/list names the ones it has",
            )
        return _cacheable(ctx, {"skill": found[0].entry()})

    server.add_request_handler("skills/list", types.PaginatedRequestParams, list_skills)
    server.add_request_handler("skills/get", GetSkillParams, get_skill)


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
