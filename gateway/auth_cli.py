"""`toolreel call` and `toolreel auth login / status / logout` (SPEC §10, §14).

`call` connects to one MCP server as the gateway would (a URL, or a server of the config), signing
in when it answers 401, and lists its tools or calls one. `auth` keeps the sign-ins that the
gateway, `toolreel run` and `toolreel worker` then use unattended.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer

from toolreel._cli import DbOption, JsonOption, fail
from toolreel.core.errors import ConfigError, ToolreelError
from toolreel.upstreams.auth import OAuthSettings, SecretTokens, sign_in_place, storage_name
from toolreel.upstreams.config import ServerConfig, load_config
from toolreel.upstreams.sign_in import interactive_auth

__all__ = ["auth_app", "register"]

auth_app = typer.Typer(help="Sign in to OAuth-protected HTTP servers.", no_args_is_help=True)
ConfigOption = Annotated[Path | None, typer.Option("--config", "-c", help="mcpServers / servers JSON file.")]
FollowOption = Annotated[
    bool, typer.Option("--auth-follow", help="Follow the authorization URL here instead of opening a browser.")
]
CALL_TIMEOUT = 60.0


@dataclass(frozen=True, slots=True)
class Target:
    """What `call` and `auth login` connect to."""

    name: str | None
    url: str | None
    server: ServerConfig | None  # a config entry (stdio ones have no URL)
    oauth: OAuthSettings

    def storage(self, db: str | None) -> SecretTokens:
        assert self.url is not None
        return SecretTokens(sign_in_place(db), storage_name(self.name, self.url), self.url)


def register(app: typer.Typer) -> None:
    app.command("call")(call)
    app.add_typer(auth_app, name="auth")


def _target(target: str, config: Path | None, client_id: str | None, secret_env: str | None) -> Target:
    secret = None
    if secret_env is not None:
        secret = os.environ.get(secret_env)
        if not secret:
            raise ConfigError(f"environment variable {secret_env} (from --client-secret-env) is not set")
    if target.startswith(("http://", "https://")):
        return Target(None, target, None, OAuthSettings(client_id=client_id, client_secret=secret))
    if config is None:
        raise ConfigError(f"{target!r} is not a URL: give --config with a server of that name, or a URL")
    servers = {s.name: s for s in load_config(config).servers}
    server = servers.get(target)
    if server is None:
        known = ", ".join(servers) or "none"
        raise ConfigError(f"no server {target!r} in {config}; its servers: {known}")
    oauth = server.oauth or OAuthSettings()
    if client_id is not None:
        oauth = replace(oauth, client_id=client_id, client_secret=secret)
    return Target(target, server.url, server, oauth)


@contextlib.asynccontextmanager
async def _session(target: Target, db: str | None, follow: bool) -> AsyncIterator[Any]:
    """An initialized `ClientSession` to the target; over HTTP with the SDK's OAuth in its HTTP client."""
    from mcp import ClientSession

    if target.url is None:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        assert target.server is not None
        server = target.server
        params = StdioServerParameters(
            command=server.command or "", args=list(server.args), env=dict(server.env) or None, cwd=server.cwd
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session
        return
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = dict(target.server.headers) if target.server is not None else {}
    async with (
        interactive_auth(target.url, target.storage(db), target.oauth, follow=follow) as auth,
        httpx2.AsyncClient(auth=auth, headers=headers, timeout=httpx2.Timeout(30.0, read=300.0)) as http,
        streamable_http_client(target.url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _dump(value: Any) -> Any:
    return value.model_dump(by_alias=True, mode="json", exclude_none=True)


async def _call(target: Target, tool: str | None, arguments: dict[str, Any], db: str | None, follow: bool) -> int:
    with anyio.fail_after(CALL_TIMEOUT * 5):  # a person may be signing in
        async with _session(target, db, follow) as session:
            if tool is None:
                listed = await session.list_tools()
                print(json.dumps([_dump(t) for t in listed.tools], indent=2, ensure_ascii=False))
                return 0
            result = await session.call_tool(tool, arguments)
            print(json.dumps(_dump(result), indent=2, ensure_ascii=False))
            return 1 if result.is_error else 0


def _connection_failure(exc: BaseException) -> str | None:
    """What went wrong connecting or signing in, from the exception group an SDK transport raises."""
    from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, OAuthTokenError
    from mcp.shared.exceptions import MCPError

    leaves: list[BaseException] = []

    def collect(error: BaseException) -> None:
        if isinstance(error, BaseExceptionGroup):
            for inner in error.exceptions:
                collect(inner)
        else:
            leaves.append(error)

    collect(exc)
    known = (OAuthFlowError, OAuthRegistrationError, OAuthTokenError, MCPError, OSError, ToolreelError, TimeoutError)
    for leaf in leaves:
        if isinstance(leaf, known):
            return f"{type(leaf).__name__}: {leaf}"
    name = type(leaves[0]).__name__ if leaves else type(exc).__name__
    return f"{name}: {leaves[0] if leaves else exc}" if name.startswith(("HTTP", "Connect", "Read")) else None


def call(
    target: Annotated[str, typer.Argument(help="A server URL, or a server name of --config.")],
    tool: Annotated[str | None, typer.Argument(help="The tool to call; without it, the tools are listed.")] = None,
    args: Annotated[str | None, typer.Option("--args", help="The tool's arguments as a JSON object.")] = None,
    config: ConfigOption = None,
    auth_follow: FollowOption = False,
    client_id: Annotated[str | None, typer.Option("--client-id", help="A pre-registered OAuth client.")] = None,
    client_secret_env: Annotated[
        str | None, typer.Option("--client-secret-env", help="The variable holding that client's secret.")
    ] = None,
    db: DbOption = None,
) -> None:
    """Connect to one MCP server as the gateway would (signing in if needed); list its tools or call one."""
    try:
        arguments = json.loads(args) if args else {}
        if not isinstance(arguments, dict):
            raise ConfigError("--args must be a JSON object")
        resolved = _target(target, config, client_id, client_secret_env)
    except json.JSONDecodeError as exc:
        raise fail(f"--args is not JSON: {exc}") from None
    except ToolreelError as exc:
        raise fail(str(exc)) from None
    try:
        code = anyio.run(_call, resolved, tool, arguments, db, auth_follow)
    except Exception as exc:
        reason = _connection_failure(exc)
        if reason is None:
            raise
        raise fail(f"cannot reach {target}: {reason}", 2) from None
    raise typer.Exit(code)


@auth_app.command("login")
def login(
    server: Annotated[str, typer.Argument(help="A server name of --config (or a URL).")],
    config: ConfigOption = None,
    auth_follow: FollowOption = False,
    db: DbOption = None,
) -> None:
    """Sign in to a server (opens the browser, or prints the URL), and keep the tokens encrypted."""
    try:
        target = _target(server, config, None, None)
        if target.url is None:
            raise ConfigError(f"server {server!r} is a stdio server: only HTTP servers sign in")
        storage = target.storage(db)
        storage.forget()  # a login starts afresh: the old grant may be the reason for it
    except ToolreelError as exc:
        raise fail(str(exc)) from None

    async def sign_in() -> None:
        async with _session(target, db, auth_follow) as session:
            await session.list_tools()

    try:
        anyio.run(sign_in)
    except Exception as exc:
        reason = _connection_failure(exc)
        if reason is None:
            raise
        raise fail(f"signing in to {server} failed: {reason}", 2) from None
    status = storage.status()
    if not status.signed_in:
        typer.echo(f"{server}: the server did not ask for a sign-in; nothing to keep")
        return
    typer.echo(f"signed in to {server} (scopes: {status.scopes or 'none'}, {_expiry(status.expires_at)})")


def _expiry(expires_at: float | None) -> str:
    if expires_at is None:
        return "no expiry"
    left = expires_at - time.time()
    return f"expires in {int(left)} s" if left > 0 else "expired (refreshed on next use)"


@auth_app.command("status")
def status(config: ConfigOption = None, json_out: JsonOption = False, db: DbOption = None) -> None:
    """Which servers are signed in, with scopes and expiry (never a token)."""
    place = sign_in_place(db)
    rows = []
    try:
        if config is not None:
            for server in load_config(config).servers:
                if server.url is not None:
                    storage = SecretTokens(place, storage_name(server.name, server.url), server.url)
                    rows.append(asdict(storage.status()))
        else:
            for name in place.names():
                url = SecretTokens(place, name, "").stored_url()
                if url is not None:
                    rows.append(asdict(SecretTokens(place, name, url).status()))
    except ToolreelError as exc:
        raise fail(str(exc)) from None
    if json_out:
        typer.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        state = "signed in" if row["signed_in"] else "not signed in"
        detail = f" (scopes: {row['scopes'] or 'none'}, {_expiry(row['expires_at'])})" if row["signed_in"] else ""
        typer.echo(f"{row['server']}: {state}{detail} — {row['url']}")
    if not rows:
        typer.echo("no sign-ins", err=True)


@auth_app.command("logout")
def logout(
    server: Annotated[str, typer.Argument(help="A server name of --config (or a URL).")],
    config: ConfigOption = None,
    db: DbOption = None,
) -> None:
    """Forget a server's sign-in (its tokens and registration)."""
    try:
        target = _target(server, config, None, None)
    except ToolreelError as exc:
        raise fail(str(exc)) from None
    if target.url is None or not target.storage(db).forget():
        raise fail(f"{server} was not signed in", 1)
    typer.echo(f"signed out of {server}")
