"""The client config file: the `mcpServers` / `servers` JSON that MCP hosts already use.

`load_config` validates everything before anything starts and raises one `ConfigError`
naming the file, the JSON path (`mcpServers.fs.args`) and what is wrong.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import json5

from toolreel.core.errors import ConfigError
from toolreel.upstreams.tool_policy import ToolPolicy, parse_policy

__all__ = ["GatewayConfig", "OAuthSettings", "ServerConfig", "load_config", "opaque", "parse_config", "wrap_config"]

Transport = Literal["stdio", "http", "sse"]

SERVER_NAME_RE = re.compile(r"[A-Za-z0-9_-]+")
_ENV_RE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")
_INPUT_RE = re.compile(r"\$\{input:[^}]*\}")  # VS Code's prompted inputs
_KNOWN_KEYS = frozenset(
    {
        "command",
        "args",
        "env",
        "cwd",
        "url",
        "headers",
        "type",
        "transport",
        "timeout",
        "tools",
        "excludeTools",
        "toolsOverride",
        "confirm",
        "disabled",
        "pin",
        "protocol",
        "envFile",
        "description",
        "name",
        "alwaysAllow",
        "autoApprove",
        "oauth",
    }
)  # the last few are keys hosts write for their own use: accepted and ignored
DEFAULT_TIMEOUT = 60.0
# `auto` searches when the upstream tools' definitions pass this many tokens (cl100k): about a tenth of
# a 200k context, where hosts that offer tool search switch to it.
DEFAULT_SEARCH_THRESHOLD = 20_000


@dataclass(frozen=True, slots=True)
class OAuthSettings:
    """A server's `oauth` config key: a pre-registered client and the scopes to ask for."""

    client_id: str | None = None
    client_secret: str | None = None
    scopes: tuple[str, ...] = ()
    client_metadata_url: str | None = None  # a Client ID Metadata Document (https) this client publishes


@dataclass(frozen=True, slots=True)
class ServerConfig:
    name: str
    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    policy: ToolPolicy = field(default_factory=ToolPolicy)  # tools, excludeTools, toolsOverride, confirm
    disabled: bool = False
    pin: bool = False  # a tool whose definition changed since first seen is held until approved (upstreams.pins)
    # Era spoken to this upstream. auto: a lone stdio client's own era, else the stateless one where spoken.
    protocol: Literal["auto", "legacy", "modern"] = "auto"
    oauth: OAuthSettings | None = None  # `oauth`: a pre-registered client and scopes (HTTP servers)
    source: str | None = field(default=None, compare=False, repr=False)  # the config file it came from
    # The entry as written in the file (`${env:VAR}` unexpanded): what a template remembers of it.
    entry: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    def describe(self) -> str:
        if self.transport == "stdio":
            return shlex.join([self.command or "", *self.args])
        return f"{self.transport} {self.url}"


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    servers: tuple[ServerConfig, ...]
    source: str | None = None
    # `"toolreel": {"tools": "all" | "search" | "auto", "searchThreshold": N}`: how the tools are listed
    tools: Literal["all", "search", "auto"] = "all"
    search_threshold: int = (
        DEFAULT_SEARCH_THRESHOLD  # tokens of the upstream tools' definitions past which `auto` searches
    )

    @property
    def enabled(self) -> tuple[ServerConfig, ...]:
        return tuple(s for s in self.servers if not s.disabled)

    def secret_values(self) -> list[str]:
        """Values from `headers` and `env` that are never stored in clear (SPEC §3).

        Every header value counts, and the password or token a URL carries. An env value counts
        when its name looks secret, or when it is long and opaque (>= 12 characters, no spaces, not
        a path, URL or number): redacting short values such as `true`, `8080` or `/tmp` from every
        stored string would mangle recordings.
        """
        # here, not at the top: `toolreel serve` reads its config before the servers are spawned (`prespawn`)
        from toolreel.core.secrets import is_secret_key, url_secrets

        values: list[str] = []
        for server in self.servers:
            values.extend(server.headers.values())
            if server.oauth is not None and server.oauth.client_secret:
                values.append(server.oauth.client_secret)
            values.extend(url_secrets(server.url or ""))
            values.extend(v for k, v in server.env.items() if is_secret_key(k) or _opaque(v))
        return values


def load_config(path: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> GatewayConfig:
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the config file ({exc.strerror}); check the path", file=source) from None
    return parse_config(_json_or_jsonc(text, source), source=source, environ=environ)


def _json_or_jsonc(text: str, source: str) -> Any:
    """Plain JSON first (exact errors, fast); else JSONC as VS Code writes it (comments, trailing
    commas), read by json5, a superset. A file that is neither gets the JSON error, line and column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        error = exc
    try:
        return json5.loads(text)
    except ValueError:
        raise ConfigError(
            f"not valid JSON (nor JSONC) at line {error.lineno}, column {error.colno}: {error.msg}", file=source
        ) from None


def parse_config(data: Any, *, source: str | None = None, environ: Mapping[str, str] | None = None) -> GatewayConfig:
    env = os.environ if environ is None else environ
    if not isinstance(data, dict):
        raise ConfigError("the config must be a JSON object with 'mcpServers' or 'servers'", file=source)
    key = "mcpServers" if "mcpServers" in data else "servers" if "servers" in data else None
    if key is None:
        raise ConfigError("no 'mcpServers' (Claude Desktop, Cursor) or 'servers' (VS Code) object found", file=source)
    entries = data[key]
    if not isinstance(entries, dict):
        raise ConfigError(f"must be an object of server name -> settings, not {_kind(entries)}", file=source, path=key)
    servers = tuple(_parse_server(name, entry, f"{key}.{name}", source, env) for name, entry in entries.items())
    return GatewayConfig(servers=servers, source=source, **_own_settings(data.get("toolreel"), source))


def _own_settings(value: Any, source: str | None) -> dict[str, Any]:
    """The file's `toolreel` object: settings of the gateway itself, beside the servers."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"must be an object, not {_kind(value)}", file=source, path="toolreel")
    unknown = sorted(set(value) - {"tools", "searchThreshold"})
    if unknown:
        raise ConfigError(
            f"unknown key {unknown[0]!r}; known keys: searchThreshold, tools",
            file=source,
            path=f"toolreel.{unknown[0]}",
        )
    settings: dict[str, Any] = {}
    if "tools" in value:
        settings["tools"] = _choice(value["tools"], ("all", "search", "auto"), "toolreel.tools", source)
    threshold = value.get("searchThreshold")
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 0:
            raise ConfigError(
                f"must be a whole number of tokens, not {threshold!r}", file=source, path="toolreel.searchThreshold"
            )
        settings["search_threshold"] = threshold
    return settings


def _choice(value: Any, allowed: tuple[str, ...], path: str, source: str | None) -> str:
    if isinstance(value, str) and value in allowed:
        return value
    choices = ", ".join(repr(a) for a in allowed[:-1]) + f" or {allowed[-1]!r}"
    raise ConfigError(f"must be {choices}, not {value!r}", file=source, path=path)


def wrap_config(command: Sequence[str], name: str | None = None) -> GatewayConfig:
    """The one-server config of `toolreel serve -- COMMAND ARGS...`."""
    if not command:
        raise ConfigError("nothing to wrap: give the server command after '--'")
    server_name = name or _derive_name(command)
    if not SERVER_NAME_RE.fullmatch(server_name) or "__" in server_name:
        raise ConfigError(f"server name {server_name!r} must match [A-Za-z0-9_-]+ without '__'", path="--name")
    return GatewayConfig(
        servers=(ServerConfig(name=server_name, transport="stdio", command=command[0], args=tuple(command[1:])),),
        source=None,
    )


def _derive_name(command: Sequence[str]) -> str:
    """`npx -y @modelcontextprotocol/server-memory` -> `server-memory`; `uvx mcp-server-time` -> `mcp-server-time`."""
    launchers = {"npx", "uvx", "uv", "node", "python", "python3", "pipx", "bunx", "deno", "docker", "run", "-m"}
    candidates = [part for part in command if not part.startswith("-") and Path(part).name not in launchers]
    base = Path(candidates[0] if candidates else command[0]).name
    base = base.split("@")[0] or base.lstrip("@").split("/")[-1]
    for suffix in (".py", ".js", ".mjs", ".ts"):
        base = base.removesuffix(suffix)
    cleaned = re.sub(r"_{2,}", "_", re.sub(r"[^A-Za-z0-9_-]", "-", base)).strip("-_")
    return cleaned[:40] or "server"


def _parse_server(name: str, entry: Any, path: str, source: str | None, env: Mapping[str, str]) -> ServerConfig:
    if not SERVER_NAME_RE.fullmatch(name) or "__" in name:
        raise ConfigError(
            f"server name {name!r} must match [A-Za-z0-9_-]+ and not contain '__' (it separates server and tool)",
            file=source,
            path=path,
        )
    if not isinstance(entry, dict):
        raise ConfigError(f"must be an object, not {_kind(entry)}", file=source, path=path)
    unknown = sorted(set(entry) - _KNOWN_KEYS)
    if unknown:
        raise ConfigError(
            f"unknown key {unknown[0]!r}; known keys: {', '.join(sorted(_KNOWN_KEYS - {'name'}))}",
            file=source,
            path=f"{path}.{unknown[0]}",
        )
    expanded = _expand(entry, path, source, env)
    if "envFile" in expanded:
        expanded["env"] = {**_env_file(expanded["envFile"], f"{path}.envFile", source), **(expanded.get("env") or {})}
    transport = _transport(expanded, path, source)
    common: dict[str, Any] = {
        "name": name,
        "transport": transport,
        "timeout": _timeout(expanded.get("timeout"), f"{path}.timeout", source),
        "policy": parse_policy(expanded, path, source),
        "disabled": _bool(expanded.get("disabled", False), f"{path}.disabled", source),
        "pin": _bool(expanded.get("pin", False), f"{path}.pin", source),
        "protocol": _protocol(expanded.get("protocol", "auto"), f"{path}.protocol", source),
        "entry": dict(entry),
        "source": source,
    }
    if transport == "stdio":
        command = expanded.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ConfigError("a stdio server needs a non-empty 'command' string", file=source, path=f"{path}.command")
        return ServerConfig(
            command=command,
            args=tuple(_strings(expanded.get("args", []), f"{path}.args", source)),
            env=_string_map(expanded.get("env", {}), f"{path}.env", source),
            cwd=_optional_str(expanded.get("cwd"), f"{path}.cwd", source),
            **common,
        )
    url = expanded.get("url")
    if not isinstance(url, str) or not re.match(r"https?://", url):
        raise ConfigError("needs a 'url' starting with http:// or https://", file=source, path=f"{path}.url")
    headers = _string_map(expanded.get("headers", {}), f"{path}.headers", source)
    oauth = _oauth(expanded["oauth"], f"{path}.oauth", source) if "oauth" in expanded else None
    return ServerConfig(url=url, headers=headers, oauth=oauth, **common)


def _oauth(value: Any, path: str, source: str | None) -> OAuthSettings:
    """`"oauth": {"clientId": ..., "clientSecret": "${env:VAR}", "scopes": [...], "clientMetadataUrl": ...}`."""
    if not isinstance(value, dict):
        raise ConfigError(f"must be an object, not {_kind(value)}", file=source, path=path)
    known = {"clientId", "clientSecret", "scopes", "clientMetadataUrl"}
    unknown = sorted(set(value) - known)
    if unknown:
        raise ConfigError(
            f"unknown key {unknown[0]!r}; known keys: {', '.join(sorted(known))}",
            file=source,
            path=f"{path}.{unknown[0]}",
        )
    secret = _optional_str(value.get("clientSecret"), f"{path}.clientSecret", source)
    client_id = _optional_str(value.get("clientId"), f"{path}.clientId", source)
    if secret and not client_id:
        raise ConfigError("a clientSecret needs its clientId", file=source, path=f"{path}.clientSecret")
    return OAuthSettings(
        client_id=client_id,
        client_secret=secret,
        scopes=tuple(_strings(value.get("scopes", []), f"{path}.scopes", source)),
        client_metadata_url=_optional_str(value.get("clientMetadataUrl"), f"{path}.clientMetadataUrl", source),
    )


def _transport(entry: Mapping[str, Any], path: str, source: str | None) -> Transport:
    declared = entry.get("type", entry.get("transport"))
    key = "type" if "type" in entry else "transport"
    if declared is None:
        if "command" in entry:
            return "stdio"
        if "url" in entry:
            return "http"
        raise ConfigError("needs either 'command' (stdio) or 'url' (HTTP/SSE)", file=source, path=path)
    aliases: dict[str, Transport] = {
        "stdio": "stdio",
        "http": "http",
        "streamable-http": "http",
        "streamableHttp": "http",
        "streamable_http": "http",
        "sse": "sse",
    }
    if declared not in aliases:
        raise ConfigError(
            f"unknown transport {declared!r}; use 'stdio', 'http' or 'sse'", file=source, path=f"{path}.{key}"
        )
    return aliases[declared]


def _env_file(value: Any, path: str, source: str | None) -> dict[str, str]:
    """VS Code's `envFile`: a dotenv file whose variables the server gets (its `env` wins over them);
    a relative path is read from the config file's folder."""
    if not isinstance(value, str) or not value:
        raise ConfigError("must be the path of a dotenv file", file=source, path=path)
    file = Path(value)
    if not file.is_absolute() and source is not None:
        file = Path(source).parent / file
    if not file.is_file():
        raise ConfigError(
            f"the env file {str(file)!r} does not exist; fix the path or remove envFile", file=source, path=path
        )
    from dotenv import dotenv_values  # only for a config that names a dotenv file

    return {key: val for key, val in dotenv_values(file).items() if val is not None}


def _workspace_folder(source: str) -> str:
    """VS Code's `${workspaceFolder}`: the folder holding `.vscode/` for a workspace file, else the file's folder."""
    folder = Path(source).resolve().parent
    return str(folder.parent if folder.name == ".vscode" else folder)


def _expand(value: Any, path: str, source: str | None, env: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        prompt = _INPUT_RE.search(value)
        if prompt is not None:
            raise ConfigError(
                f"{prompt.group(0)} asks VS Code to prompt for a value, which toolreel cannot do; set an environment "
                f"variable and write ${{env:VAR}} instead",
                file=source,
                path=path,
            )

        def substitute(match: re.Match[str]) -> str:
            variable = match.group(1)
            if variable == "workspaceFolder" and variable not in env and source is not None:
                return _workspace_folder(source)
            if variable not in env:
                raise ConfigError(
                    f"environment variable {variable} is not set (referenced as {match.group(0)}); set it or "
                    "remove the reference",
                    file=source,
                    path=path,
                )
            return env[variable]

        return _ENV_RE.sub(substitute, value)
    if isinstance(value, dict):
        return {k: _expand(v, f"{path}.{k}", source, env) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, f"{path}[{i}]", source, env) for i, v in enumerate(value)]
    return value


def _strings(value: Any, path: str, source: str | None) -> list[str]:
    if not isinstance(value, list):
        raise ConfigError(f"must be a list of strings, not {_kind(value)}", file=source, path=path)
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise ConfigError(f"must be a string, not {_kind(item)}", file=source, path=f"{path}[{index}]")
    return list(value)


def _string_map(value: Any, path: str, source: str | None) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigError(f"must be an object of strings, not {_kind(value)}", file=source, path=path)
    for key, item in value.items():
        if not isinstance(item, str):
            raise ConfigError(f"must be a string, not {_kind(item)}", file=source, path=f"{path}.{key}")
    return dict(value)


def _optional_str(value: Any, path: str, source: str | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ConfigError(f"must be a string, not {_kind(value)}", file=source, path=path)


def _timeout(value: Any, path: str, source: str | None) -> float:
    if value is None:
        return DEFAULT_TIMEOUT
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"must be a positive number of seconds, not {value!r}", file=source, path=path)
    return float(value)


def _bool(value: Any, path: str, source: str | None) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"must be true or false, not {value!r}", file=source, path=path)
    return value


def _protocol(value: Any, path: str, source: str | None) -> Literal["auto", "legacy", "modern"]:
    if value == "auto":
        return "auto"
    if value == "legacy":
        return "legacy"
    if value == "modern":
        return "modern"
    raise ConfigError(f"must be 'auto', 'legacy' or 'modern', not {value!r}", file=source, path=path)


def _opaque(value: str) -> bool:
    if len(value) < 12 or any(c.isspace() for c in value) or value.startswith(("/", ".", "~")):
        return False
    return not (re.match(r"[a-z][a-z0-9+.-]*://", value) or re.fullmatch(r"[0-9.:,-]+", value))


def opaque(value: str) -> bool:
    """A long, opaque value (>= 12 characters, no spaces, not a path, URL or number): treated as a secret."""
    return _opaque(value)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )
