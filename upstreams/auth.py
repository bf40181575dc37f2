"""Signing in to OAuth-protected HTTP upstreams, on the `mcp` SDK's client auth (`mcp.client.auth`).

The SDK runs the flow (metadata discovery with each era's fallbacks, Client ID Metadata Documents or
dynamic registration, PKCE, `iss`, resource indicators, scopes from `WWW-Authenticate`, step-up,
refresh); this module gives it what it leaves to the application:
- `SecretTokens`, its `TokenStorage`: tokens and client registrations encrypted at rest (Fernet), with
  the key in the OS keyring when one is available, else in a 0600 key file beside the store;
- `Loopback`, the redirect target on 127.0.0.1 that receives the authorization code;
- `oauth_auth`, the `httpx2.Auth` for one server: interactive (a browser, or `--auth-follow`) for
  `toolreel auth login` and `toolreel call`, or unattended for a gateway and a worker, where a
  needed sign-in raises `SignInNeeded` naming the command to run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import socket
import sys
import time
import webbrowser
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from toolreel.core.errors import ToolreelError, UpstreamError
from toolreel.upstreams.config import OAuthSettings, ServerConfig

__all__ = [
    "OAuthSettings",
    "SecretTokens",
    "SignInNeeded",
    "SignInPlace",
    "SignInStatus",
    "auth_dir",
    "follow_store",
    "interactive_auth",
    "sign_in_command",
    "sign_in_error",
    "sign_in_place",
    "signed_in",
    "storage_name",
    "unattended_auth",
]

logger = logging.getLogger("toolreel.auth")

KEYRING_SERVICE = "toolreel"
KEY_FILE = "toolreel-auth.key"
AUTH_KEY_ENV = "TOOLREEL_AUTH_KEY"
KEPT_PREFIX = "sign_in/"  # a sign-in's row in a PostgreSQL store
TOKENS_DIR = "toolreel-auth"
CALLBACK_PATH = "/callback"
LOGIN_TIMEOUT = 300.0  # seconds a sign-in waits for the browser to come back
REFRESH_MARGIN_SECONDS = 60.0  # the most a token is refreshed before it expires
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_-]")


class SignInNeeded(UpstreamError):
    """A server needs a (new) sign-in, which only a person can give: the message names the command."""

    code = "sign_in_needed"

    def __init__(self, server: str, command: str, cause: str = "") -> None:
        self.server, self.command = server, command
        detail = f" ({cause})" if cause else ""
        super().__init__(f"sign-in needed for server {server!r}{detail}: run `{command}`", server=server)


@dataclass(frozen=True, slots=True)
class SignInStatus:
    server: str
    url: str
    signed_in: bool
    scopes: str | None
    expires_at: float | None
    refreshable: bool
    client_id: str | None


def sign_in_command(server: str, config: str | None) -> str:
    where = f" --config {config}" if config else ""
    return f"toolreel auth login {server}{where}"


def storage_name(server: str | None, url: str) -> str:
    """Sign-ins are kept per config server name; a bare URL (`toolreel call URL`) by a digest of it."""
    if server:
        return _SAFE_NAME.sub("_", server)
    return "url-" + hashlib.sha256(url.encode()).hexdigest()[:16]


def auth_dir(db: str | None) -> Path:
    """Beside the store (`--db`, else TOOLREEL_DB, else the default file): the SQLite file's folder, else
    (PostgreSQL, memory) the user data directory, where the default store lives. No SQLAlchemy is loaded."""
    url = _store_url(db)
    path = url.removeprefix("sqlite:///").split("?")[0] if url.startswith("sqlite:///") else ""
    if path and path != ":memory:":
        return Path(path).parent
    return _user_data_dir()


def _user_data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("toolreel"))


_followed: list[str | None] = [None]  # the `--db` of this process's command (`follow_store`)


def follow_store(db: str | None) -> None:
    """The store a command was given (`--db`): its gateway's, run's or worker's upstreams sign in there."""
    _followed[0] = db


def _store_url(db: str | None) -> str:
    return db or _followed[0] or os.environ.get("TOOLREEL_DB") or ""


# --- encrypted storage -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SignInPlace:
    """Where one store's sign-ins live, each an encrypted record: files beside a SQLite store (`directory`),
    or rows of a PostgreSQL store (`db`), which every gateway and worker on that database reads. `identity`
    names the key in the keyring; `key_file` holds it where there is no keyring nor `TOOLREEL_AUTH_KEY`."""

    identity: str
    key_file: Path
    directory: Path | None = None
    db: str | None = None

    def read(self, name: str) -> bytes | None:
        if self.db is not None:
            value = _kept_store(self.db).get_kept(KEPT_PREFIX + name)
            return value.encode() if value is not None else None
        path = self._path(name)
        return path.read_bytes() if path.exists() else None

    def write(self, name: str, data: bytes) -> None:
        if self.db is not None:
            _kept_store(self.db).put_kept(KEPT_PREFIX + name, data.decode())
            return
        path = self._path(name)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = path.with_suffix(".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, path)

    def delete(self, name: str) -> bool:
        if self.db is not None:
            return bool(_kept_store(self.db).drop_kept(KEPT_PREFIX + name))
        path = self._path(name)
        existed = path.exists()
        path.unlink(missing_ok=True)
        return existed

    def names(self) -> list[str]:
        if self.db is not None:
            return [key.removeprefix(KEPT_PREFIX) for key in _kept_store(self.db).kept_keys(KEPT_PREFIX)]
        assert self.directory is not None
        return sorted(path.stem for path in (self.directory / TOKENS_DIR).glob("*.fernet"))

    def _path(self, name: str) -> Path:
        assert self.directory is not None
        return self.directory / TOKENS_DIR / f"{name}.fernet"


def sign_in_place(db: str | None) -> SignInPlace:
    """Sign-ins follow the store: rows of a PostgreSQL store, else files beside the SQLite store."""
    url = _store_url(db)
    if url.startswith(("postgresql", "postgres:")):
        from toolreel.core.store import display_url

        identity = f"db:{display_url(url)}"  # never the password
        digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
        # this host's own key (no shared TOOLREEL_AUTH_KEY) lives in its user data directory, whatever store
        # this process followed before
        return SignInPlace(identity, _user_data_dir() / f"toolreel-auth-{digest}.key", db=url)
    directory = auth_dir(db)
    return SignInPlace(f"tokens:{directory.resolve()}", directory / KEY_FILE, directory=directory)


_stores: dict[str, Any] = {}


def _kept_store(url: str) -> Any:
    """One store per database for this process's sign-ins (opened at the first use)."""
    if url not in _stores:
        from toolreel.core.store import open_store

        _stores[url] = open_store(url)
    return _stores[url]


def _keyring() -> Any | None:
    """The OS keyring, when the `keyring` library finds a usable backend (not on a headless server)."""
    try:
        import keyring
        from keyring.backends import fail
    except ImportError:
        return None
    backend = keyring.get_keyring()
    if isinstance(backend, fail.Keyring) or getattr(backend, "priority", 0) <= 0:
        return None
    return backend


def _fernet(place: SignInPlace) -> Any:
    """The key that encrypts every sign-in of a store: TOOLREEL_AUTH_KEY (one key several hosts share), else
    the OS keyring, else a 0600 key file (beside a SQLite store; in the user data directory for PostgreSQL)."""
    from cryptography.fernet import Fernet

    given = os.environ.get(AUTH_KEY_ENV)
    if given:
        try:
            return Fernet(given.encode())
        except ValueError:
            raise ToolreelError(
                f"{AUTH_KEY_ENV} is not a key: it must be 32 url-safe base64-encoded bytes, as "
                "`python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'` prints"
            ) from None
    backend = _keyring()
    if backend is not None:
        key = backend.get_password(KEYRING_SERVICE, place.identity)
        if key is None:
            key = Fernet.generate_key().decode()
            backend.set_password(KEYRING_SERVICE, place.identity, key)
        return Fernet(key.encode())
    path = place.key_file
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return Fernet(path.read_bytes().strip())
    with os.fdopen(fd, "wb") as out:
        key_bytes = Fernet.generate_key()
        out.write(key_bytes)
    return Fernet(key_bytes)


class SecretTokens:
    """The SDK's `TokenStorage` for one server: one encrypted record (tokens, registration, expiry)."""

    def __init__(self, place: SignInPlace, name: str, url: str, preset_client: Any | None = None) -> None:
        self.place, self.name, self.url = place, name, url
        self._preset_client = preset_client  # a pre-registered client: never stored, read from the config

    def _decrypted(self) -> dict[str, Any]:
        data = self.place.read(self.name)
        if data is None:
            return {}
        from cryptography.fernet import InvalidToken

        try:
            record: dict[str, Any] = json.loads(_fernet(self.place).decrypt(data))
        except (InvalidToken, ValueError):
            logger.warning("the sign-in kept for %s cannot be read (another key?); sign in again", self.name)
            return {}
        return record

    def _read(self) -> dict[str, Any]:
        record = self._decrypted()
        return record if record.get("url") == self.url else {}  # the server moved: that sign-in is not for it

    def stored_url(self) -> str | None:
        """The URL this record's sign-in is for (listing sign-ins without a config)."""
        url = self._decrypted().get("url")
        return str(url) if url else None

    def _write(self, record: dict[str, Any]) -> None:
        self.place.write(self.name, _fernet(self.place).encrypt(json.dumps({**record, "url": self.url}).encode()))

    def record(self) -> dict[str, Any]:
        return self._read()

    def expires_at(self) -> float | None:
        value = self._read().get("expires_at")
        return float(value) if value is not None else None

    def refresh_at(self) -> float | None:
        """When the kept access token is treated as spent: a little before it expires, so that a request
        carrying it still arrives in time (a quarter of its lifetime, at most a minute, early)."""
        record = self._read()
        expires_at, lifetime = record.get("expires_at"), (record.get("tokens") or {}).get("expires_in")
        if expires_at is None:
            return None
        return float(expires_at) - min(REFRESH_MARGIN_SECONDS, float(lifetime or 0) / 4)

    def forget(self) -> bool:
        return self.place.delete(self.name)

    # TokenStorage -----------------------------------------------------------------------------------------
    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        tokens = self._read().get("tokens")
        return OAuthToken.model_validate(tokens) if tokens else None

    async def set_tokens(self, tokens: Any) -> None:
        record = self._read()
        record["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        record["expires_at"] = time.time() + tokens.expires_in if tokens.expires_in else None
        self._write(record)

    async def get_client_info(self) -> Any:
        if self._preset_client is not None:
            return self._preset_client
        from mcp.shared.auth import OAuthClientInformationFull

        info = self._read().get("client_info")
        return OAuthClientInformationFull.model_validate(info) if info else None

    async def set_client_info(self, client_info: Any) -> None:
        if self._preset_client is not None:
            return
        record = self._read()
        record["client_info"] = client_info.model_dump(mode="json", exclude_none=True)
        self._write(record)

    def status(self) -> SignInStatus:
        record = self._read()
        tokens = record.get("tokens") or {}
        client = record.get("client_info") or {}
        return SignInStatus(
            server=self.name,
            url=self.url,
            signed_in=bool(tokens.get("access_token")),
            scopes=tokens.get("scope"),
            expires_at=record.get("expires_at"),
            refreshable=bool(tokens.get("refresh_token")),
            client_id=client.get("client_id") or (self._preset_client.client_id if self._preset_client else None),
        )


# --- the loopback redirect -----------------------------------------------------------------------------------


class Loopback:
    """`http://127.0.0.1:PORT/callback`: receives the authorization response once."""

    def __init__(self, port: int = 0) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.port = self.sock.getsockname()[1]
        self.redirect_uri = f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"
        self._answer: dict[str, str] | None = None
        self._arrived = anyio.Event()

    def app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import PlainTextResponse
        from starlette.routing import Route

        async def callback(request: Request) -> PlainTextResponse:
            self._answer = dict(request.query_params)
            self._arrived.set()
            if "error" in self._answer:
                return PlainTextResponse(f"toolreel: sign-in refused ({self._answer['error']}).", status_code=400)
            return PlainTextResponse("toolreel: signed in. You can close this window.")

        return Starlette(routes=[Route(CALLBACK_PATH, callback)])

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[Loopback]:
        import uvicorn

        server = uvicorn.Server(uvicorn.Config(self.app(), log_level="warning", lifespan="off", access_log=False))
        setattr(server, "install_signal_handlers", lambda: None)  # noqa: B010 - the caller owns signals
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [self.sock])
            try:
                yield self
            finally:
                server.should_exit = True
                tg.cancel_scope.deadline = anyio.current_time() + 5

    async def result(self) -> Any:
        from mcp.client.auth import AuthorizationCodeResult, OAuthFlowError

        with anyio.fail_after(LOGIN_TIMEOUT):
            await self._arrived.wait()
        answer = self._answer or {}
        if "code" not in answer:
            raise OAuthFlowError(f"the authorization server refused: {answer.get('error', 'no code')}")
        return AuthorizationCodeResult(code=answer["code"], state=answer.get("state"), iss=answer.get("iss"))


# --- the SDK's provider --------------------------------------------------------------------------------------


def _client_metadata(settings: OAuthSettings, redirect_uri: str) -> Any:
    from mcp.shared.auth import OAuthClientMetadata

    return OAuthClientMetadata(
        client_name="toolreel",
        redirect_uris=[redirect_uri],  # type: ignore[list-item]  # pydantic reads the URL
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
        scope=" ".join(settings.scopes) or None,
    )


def _preset_client(settings: OAuthSettings, redirect_uri: str) -> Any | None:
    if settings.client_id is None:
        return None
    from mcp.shared.auth import OAuthClientInformationFull

    return OAuthClientInformationFull(
        client_id=settings.client_id,
        client_secret=settings.client_secret,
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        token_endpoint_auth_method="client_secret_basic" if settings.client_secret else "none",
        grant_types=["authorization_code", "refresh_token"],
    )


def _redirect_port(storage: SecretTokens) -> int:
    """A registered client keeps its redirect URI: sign in again on the port it was registered with."""
    info = storage.record().get("client_info") or {}
    for uri in info.get("redirect_uris") or ():
        match = re.match(r"http://127\.0\.0\.1:(\d+)/", str(uri))
        if match:
            return int(match.group(1))
    return 0


def _provider(
    url: str,
    storage: SecretTokens,
    settings: OAuthSettings,
    redirect_uri: str,
    redirect: Callable[[str], Awaitable[None]],
    callback: Callable[[], Awaitable[Any]],
) -> Any:
    from mcp.client.auth import OAuthClientProvider

    preset = _preset_client(settings, redirect_uri)
    if preset is not None:
        storage._preset_client = preset

    class _Provider(OAuthClientProvider):
        """The SDK's provider, refreshing where it would otherwise ask a person to sign in again.

        - It is told when a kept access token expires (the SDK keeps that only in memory, so after a restart
          it would send a spent token), and it refreshes a little before that (`SecretTokens.refresh_at`).
        - When the server still answers 401 to a token our clock thought good (clock skew, a slow request),
          it refreshes and retries once before the SDK's full sign-in, as it would at expiry.
        """

        async def _initialize(self) -> None:
            await super()._initialize()
            self.context.token_expiry_time = storage.refresh_at()

        async def _handle_token_response(self, response: Any) -> None:
            await super()._handle_token_response(response)
            self.context.token_expiry_time = storage.refresh_at()

        async def _handle_refresh_response(self, response: Any) -> bool:
            refreshed = await super()._handle_refresh_response(response)
            if refreshed:
                self.context.token_expiry_time = storage.refresh_at()
            return refreshed

        async def _auth_flow(self, request: Any) -> AsyncGenerator[Any, Any]:
            flow = super()._auth_flow(request)
            outgoing = await flow.__anext__()
            while True:
                incoming = yield outgoing
                if outgoing is request and incoming.status_code == 401 and self.context.can_refresh_token():
                    answer = yield await self._refresh_token()
                    if await self._handle_refresh_response(answer):
                        self._add_auth_header(request)
                        incoming = yield request  # the SDK's flow goes on from this answer (a sign-in on a 401)
                try:
                    outgoing = await flow.asend(incoming)
                except StopAsyncIteration:
                    return

    return _Provider(
        server_url=url,
        client_metadata=_client_metadata(settings, redirect_uri),
        storage=storage,
        redirect_handler=redirect,
        callback_handler=callback,
        client_metadata_url=settings.client_metadata_url,
    )


@contextlib.asynccontextmanager
async def interactive_auth(
    url: str, storage: SecretTokens, settings: OAuthSettings, *, follow: bool
) -> AsyncIterator[Any]:
    """An `httpx2.Auth` that signs in when the server asks: the URL opens in a browser (and is printed on
    stderr), or with `follow` is fetched by toolreel itself, following redirects to the loopback."""
    loopback = Loopback(_redirect_port(storage))
    async with loopback.serving():

        async def redirect(authorization_url: str) -> None:
            if follow:
                await _follow(authorization_url)
                return
            print(f"toolreel: sign in at {authorization_url}", file=sys.stderr)
            opened = False
            with contextlib.suppress(webbrowser.Error):
                opened = await anyio.to_thread.run_sync(webbrowser.open, authorization_url)
            if not opened and not sys.stdin.isatty():  # nobody to open it: say so now, not after a long wait
                from mcp.client.auth import OAuthFlowError

                raise OAuthFlowError("no browser could be opened and no one is at a terminal to open the URL")

        yield _provider(url, storage, settings, loopback.redirect_uri, redirect, loopback.result)


async def _follow(authorization_url: str) -> None:
    """Fetch the authorization URL and follow its redirects to the loopback (servers that approve alone)."""
    import httpx2

    async with httpx2.AsyncClient(follow_redirects=True, timeout=30.0) as client:
        response = await client.get(authorization_url)
    if response.status_code >= 400:
        from mcp.client.auth import OAuthFlowError

        raise OAuthFlowError(f"the authorization page answered HTTP {response.status_code}; sign in with a browser")


class _ExpectedSignIn(logging.Filter):
    """The SDK logs every failed flow with its traceback; a sign-in only a person can give is reported by
    toolreel itself, with the command to run (the upstream's status, the tool error, the paused run)."""

    def filter(self, record: logging.LogRecord) -> bool:
        raised = record.exc_info[1] if record.exc_info else None
        return raised is None or sign_in_error(raised) is None


_SDK_FLOW_LOG = logging.getLogger("mcp.client.auth.oauth2")
_QUIET = _ExpectedSignIn()


def unattended_auth(
    url: str,
    storage: SecretTokens,
    settings: OAuthSettings,
    server: str,
    command: str,
    on_needed: Callable[[SignInNeeded], None] | None = None,
) -> Any:
    """An `httpx2.Auth` that uses and refreshes the stored sign-in, and raises `SignInNeeded` when a person
    must sign in again (no sign-in yet, a refused refresh, a new scope). `on_needed` hears it first: raised
    inside a request, it ends the transport, and the request itself only sees its connection close."""

    if _QUIET not in _SDK_FLOW_LOG.filters:
        _SDK_FLOW_LOG.addFilter(_QUIET)

    def needed() -> SignInNeeded:
        exc = SignInNeeded(server, command)
        if on_needed is not None:
            on_needed(exc)
        return exc

    async def refuse(_url: str) -> None:
        raise needed()

    async def never() -> Any:
        raise needed()

    redirect_uri = f"http://127.0.0.1:{_redirect_port(storage) or 1}{CALLBACK_PATH}"
    return _provider(url, storage, settings, redirect_uri, refuse, never)


def sign_in_error(exc: BaseException) -> SignInNeeded | None:
    """The `SignInNeeded` inside what an SDK transport raised (groups, causes), if that is why it failed."""
    if isinstance(exc, SignInNeeded):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = sign_in_error(inner)
            if found is not None:
                return found
    cause = exc.__cause__ or exc.__context__
    return sign_in_error(cause) if cause is not None else None


def signed_in(server: ServerConfig, on_needed: Callable[[SignInNeeded], None] | None = None) -> Any | None:
    """The unattended auth of an HTTP upstream of a gateway or a run: its kept sign-in, refreshed as
    needed; None when its config sends an Authorization header of its own."""
    if server.url is None or any(key.lower() == "authorization" for key in server.headers):
        return None
    storage = SecretTokens(sign_in_place(None), storage_name(server.name, server.url), server.url)
    command = sign_in_command(server.name, server.source)
    return unattended_auth(server.url, storage, server.oauth or OAuthSettings(), server.name, command, on_needed)
