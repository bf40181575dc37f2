"""The servers a template needs: those its tool steps (and its child templates' steps) call, and those
it remembers. One place for the rule, used by `toolreel run`/`worker` and the gateway's on-demand start.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence

from toolreel.core.errors import ConfigError, NotFoundError
from toolreel.core.names import server_part
from toolreel.core.template import Template
from toolreel.upstreams.config import GatewayConfig, ServerConfig
from toolreel.upstreams.remembered import remembered_config

__all__ = ["TemplateLoader", "config_for", "remembered_servers", "servers_called", "template_family"]

TemplateLoader = Callable[[str, int | None], Template]
"""A saved template by name and version (None: the latest); raises NotFoundError."""


def template_family(template: Template, load: TemplateLoader) -> list[Template]:
    """The template and every child template it runs (at any depth), each once, nearest first. A child that
    is not saved is left out: the run reports it in its step."""
    family: list[Template] = []
    queue, seen = [template], set()
    while queue:
        each = queue.pop(0)
        if each.name in seen:
            continue
        seen.add(each.name)
        family.append(each)
        for spec in each.steps:
            if spec.template is not None and spec.template not in seen:
                with contextlib.suppress(NotFoundError):
                    queue.append(load(spec.template, spec.template_version))
    return family


def servers_called(family: Iterable[Template]) -> set[str] | None:
    """The servers of the tool steps; a script step calls the servers its template remembers, or any (None)."""
    needed: set[str] = set()
    for member in family:
        if any(spec.script is not None for spec in member.steps):
            if not member.servers:
                return None
            needed.update(member.servers)
        needed.update(server_part(spec.tool) for spec in member.steps if spec.tool)
    return needed


def config_for(config: GatewayConfig, family: Sequence[Template]) -> GatewayConfig:
    """`config`'s servers that `family` calls; all of them when that cannot be told (a script's code names
    its tools) or when a called server is not in it (the run then names what is missing)."""
    needed = servers_called(family)
    if needed is None:
        return config
    kept = tuple(server for server in config.servers if server.name in needed)
    if {server.name for server in kept} != needed:
        return config
    return GatewayConfig(servers=kept, source=config.source)


def remembered_servers(
    templates: Iterable[Template], skip: Callable[[ConfigError], None] | None = None
) -> dict[str, tuple[str, ServerConfig]]:
    """Server name -> (the template that remembers it, its config); where two templates remember a server
    of one name, the first met is kept. A template whose servers cannot be used raises ConfigError naming
    it, unless `skip` is given (then `skip` hears of it and the others are still read)."""
    found: dict[str, tuple[str, ServerConfig]] = {}
    for each in templates:
        if not each.servers:
            continue
        try:
            remembered = remembered_config(each.name, each.servers)
        except ConfigError as exc:
            if skip is None:
                raise
            skip(exc)
            continue
        for server in remembered.servers:
            found.setdefault(server.name, (each.name, server))
    return found
