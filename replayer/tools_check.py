"""`toolreel templates check`: the saved templates whose tools changed definition since they were saved.

Each tool step of a saved template keeps `tool_digest` (core.tool_digest). The check starts the servers of a
config (`--config`), else the servers the templates remember (as `toolreel run` and workers do), and compares
each step's digest with the definition its server lists now. A template whose servers cannot start is
reported as not checked, with why; a tool no server lists is reported as missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolreel.core.errors import ConfigError
from toolreel.core.store import Store
from toolreel.core.template import Template
from toolreel.core.template_io import stored_template
from toolreel.core.tool_digest import changed_parts
from toolreel.upstreams.config import GatewayConfig, ServerConfig
from toolreel.upstreams.hub import Hub, open_upstreams
from toolreel.upstreams.remembered import remembered_config

__all__ = ["TemplateCheck", "check_templates"]

START_WAIT = 30.0  # seconds the servers have to start


@dataclass(frozen=True, slots=True)
class TemplateCheck:
    """One saved template: its tool steps whose tool changed (`step -> parts`) or is listed by no server."""

    name: str
    version: int
    changed: dict[str, tuple[str, list[str]]] = field(default_factory=dict)  # step -> (tool, parts that differ)
    missing: dict[str, str] = field(default_factory=dict)  # step -> tool
    not_checked: str | None = None  # why the template could not be checked

    @property
    def clean(self) -> bool:
        return not self.changed and not self.missing and self.not_checked is None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "changed": [{"step": s, "tool": t, "parts": p} for s, (t, p) in self.changed.items()],
            "missing": [{"step": s, "tool": t} for s, t in self.missing.items()],
            "not_checked": self.not_checked,
        }


async def check_templates(store: Store, config: GatewayConfig | None) -> list[TemplateCheck]:
    templates = [(record.version, stored_template(record)) for record in store.list_templates()]
    unstartable: dict[str, str] = {}
    servers: dict[str, ServerConfig] = {}
    if config is None:
        for _, template in templates:
            try:
                remembered = remembered_config(template.name, template.servers)
            except ConfigError as exc:
                unstartable[template.name] = str(exc)
                continue
            for server in remembered.servers:
                servers.setdefault(server.name, server)
        config = GatewayConfig(servers=tuple(servers.values()), source=None)
    async with open_upstreams(config) as hub:
        await hub.wait_settled(START_WAIT)
        return [_check(hub, version, template, unstartable.get(template.name)) for version, template in templates]


def _check(hub: Hub, version: int, template: Template, not_checked: str | None) -> TemplateCheck:
    check = TemplateCheck(template.name, version, not_checked=not_checked)
    if not_checked is not None:
        return check
    for spec in template.steps:
        if spec.tool is None or spec.tool_digest is None:
            continue
        tool = hub.tool_definition(spec.tool)
        if tool is None:
            check.missing[spec.name] = spec.tool
        elif parts := changed_parts(spec.tool_digest, tool):
            check.changed[spec.name] = (spec.tool, parts)
    return check
