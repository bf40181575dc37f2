"""Servers a template remembers: config entries that start them again, with no secret in them.

`portable_entry` turns a running server's config back into a client config entry: the entry as
the user wrote it (a wrapped server: its command line), the working directory it ran in, and every
secret value (secret-named or opaque `env` values, header values, secret values inside `args`)
replaced by a `${env:VAR}` reference the replaying process expands. `remembered_config` parses them
back into a `GatewayConfig`, naming the template and the server when one can no longer be used.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping
from typing import Any

from toolreel.core.errors import ConfigError
from toolreel.core.secrets import is_secret_key, url_secrets
from toolreel.upstreams.config import GatewayConfig, ServerConfig, opaque, parse_config

__all__ = ["env_references", "portable_entry", "remembered_config"]

_REF_RE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")
_NOT_VAR = re.compile(r"[^A-Za-z0-9_]")
_CREDENTIALS_RE = re.compile(r"://[^/@\s:]+:[^/@\s]+@")  # a URL carrying a password (postgres://u:p@host)
# Keys of an entry that say how to start and talk to the server; the rest (hosts' own keys) is left out.
_KEPT = ("type", "transport", "command", "args", "env", "cwd", "url", "headers", "timeout", "tools", "protocol")


def portable_entry(server: ServerConfig, secrets: Collection[str] = ()) -> dict[str, Any]:
    """The entry that starts `server` again; `secrets` are the gateway's secret values (never written)."""
    raw = dict(server.entry) if server.entry is not None else _from_fields(server)
    entry = {key: raw[key] for key in _KEPT if key in raw}
    if server.transport == "stdio":
        entry["cwd"] = entry.get("cwd") or server.cwd or os.getcwd()  # relative args meant the gateway's directory
        entry["env"] = {k: _env_value(k, v) for k, v in dict(raw.get("env") or {}).items()}
        entry["args"] = [_hide(server.name, f"ARG{i}", a, secrets) for i, a in enumerate(raw.get("args") or [])]
    else:
        entry["headers"] = {k: _header_value(server.name, k, v) for k, v in dict(raw.get("headers") or {}).items()}
        url = raw.get("url")
        if isinstance(url, str):  # a token in the query or a password in the URL: a reference, never the value
            entry["url"] = _hide(server.name, "URL", url, url_secrets(url))
    return {k: v for k, v in entry.items() if v not in ({}, [])}


def env_references(entries: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The environment variables the entries refer to: what a replaying process must have set."""
    found: dict[str, None] = {}
    stack: list[Any] = [dict(entries)]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            found.update(dict.fromkeys(_REF_RE.findall(value)))
        elif isinstance(value, Mapping):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return sorted(found)


def remembered_config(template: str, entries: Mapping[str, Mapping[str, Any]]) -> GatewayConfig:
    """The servers `template` remembers, as a config; a ConfigError names the template and the server."""
    try:
        return parse_config({"mcpServers": {k: dict(v) for k, v in entries.items()}}, source=f"template {template!r}")
    except ConfigError as exc:
        raise ConfigError(
            f"template {template!r} remembers a server it cannot start: {exc}; pass --config with that server"
        ) from None


def _from_fields(server: ServerConfig) -> dict[str, Any]:
    """A server with no written entry (`toolreel serve -- COMMAND`): its command line."""
    if server.transport == "stdio":
        return {"command": server.command, "args": list(server.args), "env": dict(server.env), "cwd": server.cwd}
    return {"type": server.transport, "url": server.url, "headers": dict(server.headers)}


def _env_value(key: str, value: Any) -> Any:
    if not isinstance(value, str) or _REF_RE.search(value):
        return value  # already a reference (or not a string: the parser will say so)
    variable = key if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key) else _var(key)  # the variable it was set as
    secret = is_secret_key(key) or opaque(value) or _CREDENTIALS_RE.search(value) is not None
    return f"${{env:{variable}}}" if secret else value


def _header_value(server: str, key: str, value: Any) -> Any:
    if not isinstance(value, str) or _REF_RE.search(value):
        return value
    return f"${{env:{_var(f'{server}_{key}')}}}"  # every header value is a secret (SPEC §3)


def _hide(server: str, label: str, value: Any, secrets: Collection[str]) -> Any:
    if not isinstance(value, str) or _REF_RE.search(value):
        return value
    for secret in secrets:
        if secret and secret in value:
            value = value.replace(secret, f"${{env:{_var(f'{server}_{label}')}}}")
    return value


def _var(text: str) -> str:
    name = _NOT_VAR.sub("_", text).upper()
    return name if not name[:1].isdigit() else f"_{name}"
