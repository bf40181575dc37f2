"""Where sign-ins to OAuth-protected HTTP upstreams are kept, on the `mcp` SDK's client auth (`mcp.client.auth`).

The SDK runs the flow (`upstreams.sign_in` gives it the redirect target and the `httpx2.Auth`); this module
keeps what it leaves to the application: `SecretTokens`, its `TokenStorage`: tokens and client registrations
encrypted at rest (Fernet), with the key in the OS keyring when one is available, else in a 0600 key file
beside the store; and `SignInNeeded`, what a call that needs a person's sign-in raises.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolreel.core.errors import ToolreelError, UpstreamError
from toolreel.upstreams.config import OAuthSettings

__all__ = [
    "OAuthSettings",
    "SecretTokens",
    "SignInNeeded",
    "SignInPlace",
    "SignInStatus",
    "auth_dir",
    "follow_store",
    "sign_in_command",
    "sign_in_place",
    "storage_name",
]

logger = logging.getLogger("toolreel.auth")

KEYRING_SERVICE = "toolreel"
KEY_FILE = "toolreel-auth.key"
AUTH_KEY_ENV = "TOOLREEL_AUTH_KEY"
KEPT_PREFIX = "sign_in/"  # a sign-in's row in a PostgreSQL store
TOKENS_DIR = "toolreel-auth"
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
        # A temporary file of its own (0600): two processes writing one sign-in at once (a login and a
        # gateway) must each replace the record whole, never rename the other's half-written file away.
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(temporary, path)
        except BaseException:  # cleanup only, re-raised: no temporary file is left behind
            Path(temporary).unlink(missing_ok=True)
            raise

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

    def __init__(
        self, place: SignInPlace, name: str, url: str, preset_client: Any | None = None, *, attended: bool = True
    ) -> None:
        self.place, self.name, self.url = place, name, url
        self._preset_client = preset_client  # a pre-registered client: never stored, read from the config
        # Unattended (a gateway, a worker), a flow that registers a client ends asking for a person: keeping
        # that client would only overwrite the one a `toolreel auth login` is registering meanwhile.
        self.attended = attended

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
        if self._preset_client is not None or not self.attended:
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
