"""Sign-ins follow the store (SPEC §10): files beside a SQLite store named by `--db`, encrypted rows of a
PostgreSQL store that every gateway and worker on that database shares, each reading them with the key
from TOOLREEL_AUTH_KEY (else the keyring, else a 0600 key file), never in clear."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import anyio
import psycopg
import pytest
from cryptography.fernet import Fernet
from mcp.shared.auth import OAuthToken
from sqlalchemy import make_url

from fixtures._zygote import launch_command
from tests.gw import TOOLREEL, call, fixture_http_server, gateway_env, status, stdio_gateway, text_of, wait_until
from tests.pg import PgCluster
from toolreel.upstreams.auth import AUTH_KEY_ENV, KEY_FILE, TOKENS_DIR, SecretTokens, follow_store, sign_in_place

pytestmark = [pytest.mark.anyio]

CANARIES = ("access-canary-7f3a9", "refresh-canary-c41e2")


@pytest.fixture
def pg_store(pg_cluster: PgCluster) -> Iterator[str]:
    url = pg_cluster.create_database()
    yield url
    pg_cluster.drop_database(url.rsplit("/", 1)[1])


@pytest.fixture
def followed() -> Iterator[None]:
    yield
    follow_store(None)


def _token() -> OAuthToken:
    return OAuthToken(
        access_token=CANARIES[0], refresh_token=CANARIES[1], token_type="Bearer", expires_in=3600, scope="notes"
    )


def _kept_rows(url: str) -> list[tuple[str, str]]:
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        return [(str(k), str(v)) for k, v in conn.execute("SELECT key, value FROM meta WHERE key LIKE 'sign_in/%'")]


@pytest.mark.postgres
@pytest.mark.slow
async def test_a_postgresql_store_keeps_sign_ins_as_encrypted_rows_any_process_with_the_key_reads(
    pg_store: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(AUTH_KEY_ENV, Fernet.generate_key().decode())
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    written = SecretTokens(sign_in_place(pg_store), "notes", "http://127.0.0.1:1/mcp")
    await written.set_tokens(_token())
    rows = _kept_rows(pg_store)
    read = await SecretTokens(sign_in_place(pg_store), "notes", "http://127.0.0.1:1/mcp").get_tokens()
    names = sign_in_place(pg_store).names()
    monkeypatch.setenv(AUTH_KEY_ENV, Fernet.generate_key().decode())  # a host given another key
    unreadable = await SecretTokens(sign_in_place(pg_store), "notes", "http://127.0.0.1:1/mcp").get_tokens()
    forgotten = written.forget()
    assert [key for key, _ in rows] == ["sign_in/notes"] and names == ["notes"]
    assert all(canary not in value for _, value in rows for canary in CANARIES)  # encrypted in the row
    assert read is not None and (read.access_token, read.refresh_token) == CANARIES
    assert unreadable is None  # another key reads nothing (and says so on the log), it does not fail
    assert forgotten and _kept_rows(pg_store) == [] and sign_in_place(pg_store).names() == []
    assert list((tmp_path / "data").rglob("*")) == []  # the key came from the environment: no file written


@pytest.mark.postgres
@pytest.mark.slow
def test_without_a_shared_key_a_postgresql_stores_key_is_a_0600_file_of_this_host(
    pg_store: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(AUTH_KEY_ENV, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setattr("toolreel.upstreams.auth._keyring", lambda: None)  # as on a headless server
    place = sign_in_place(pg_store)
    SecretTokens(place, "notes", "http://127.0.0.1:1/mcp")._write({"tokens": {"access_token": CANARIES[0]}})
    assert place.key_file.parent == tmp_path / "data" / "toolreel" and place.key_file.stat().st_mode & 0o777 == 0o600
    password = make_url(pg_store).password
    assert password is None or str(password) not in place.identity  # the keyring's account name: no password


def test_sign_ins_live_beside_the_sqlite_store_the_command_was_given(tmp_path: Path, followed: None) -> None:
    db = f"sqlite:///{tmp_path / 'elsewhere' / 'toolreel.db'}"
    follow_store(db)  # what `--db` does for a gateway, `run`, `resume` and `worker`
    place = sign_in_place(None)
    assert place.directory == tmp_path / "elsewhere" and place.key_file == tmp_path / "elsewhere" / KEY_FILE
    assert place.db is None


def test_a_bad_shared_key_is_refused_with_what_a_key_is(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from toolreel.core.errors import ToolreelError

    monkeypatch.setenv(AUTH_KEY_ENV, "not-a-key")
    storage = SecretTokens(sign_in_place(f"sqlite:///{tmp_path / 'toolreel.db'}"), "notes", "http://127.0.0.1:1/mcp")
    with pytest.raises(ToolreelError, match="32 url-safe base64-encoded bytes"):
        storage._write({"tokens": {}})
    assert not (tmp_path / "toolreel-auth").exists()


async def test_two_processes_writing_one_sign_in_at_once_each_replace_it_whole(tmp_path: Path) -> None:
    """A `toolreel auth login` and a gateway's retry write one server's record at once: each write replaces
    it whole, neither fails for the other's temporary file, and no temporary file is left behind."""
    place = sign_in_place(f"sqlite:///{tmp_path / 'toolreel.db'}")

    def write_many(writer: str) -> None:
        for i in range(300):
            place.write("notes", f"{writer}-{i}".encode())

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for writer in ("login", "gateway"):
                tg.start_soon(anyio.to_thread.run_sync, write_many, writer)
    assert place.read("notes") in (b"login-299", b"gateway-299")
    assert place.directory is not None
    assert [path.name for path in (place.directory / TOKENS_DIR).iterdir()] == ["notes.fernet"]


async def _toolreel(args: Sequence[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[bytes]:
    return await anyio.run_process(
        launch_command([str(TOOLREEL), *args]), check=False, env=dict(env), stdin=subprocess.DEVNULL
    )


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.timeout(400)
async def test_a_gateway_on_another_host_uses_the_sign_in_kept_in_the_shared_database(
    pg_store: str, tmp_path: Path
) -> None:
    """One host signs in with `--db` PostgreSQL; a gateway of another (its own data directory, the shared
    key) serves the signed-in server at once; a host without the key is not signed in."""
    key = Fernet.generate_key().decode()
    hosts = {
        name: gateway_env(pg_store, XDG_DATA_HOME=str(tmp_path / name), **({AUTH_KEY_ENV: key} if keyed else {}))
        for name, keyed in (("a", True), ("b", True), ("c", False))
    }
    for env in hosts.values():
        env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"  # headless hosts: no keyring
    async with fixture_http_server("guarded") as url:
        config = tmp_path / "servers.json"
        config.write_text(json.dumps({"mcpServers": {"notes": {"url": url}}}))
        with anyio.fail_after(300):
            login = await _toolreel(
                ["auth", "login", "notes", "--config", str(config), "--db", pg_store, "--auth-follow"], hosts["a"]
            )
            assert login.returncode == 0, login.stderr.decode()
            shown = {
                name: await _toolreel(["auth", "status", "--config", str(config), "--db", pg_store, "--json"], env)
                for name, env in hosts.items()
            }
            async with stdio_gateway(["--config", str(config), "--db", pg_store], hosts["b"]) as gw:

                async def ready() -> bool:
                    return bool((await status(gw))["upstreams"][0]["state"] == "ready")

                await wait_until(ready, 120, "the signed-in server ready on host b")
                added = await call(gw, "notes__add", {"a": 1, "b": 2})
    signed = {name: json.loads(done.stdout)[0]["signed_in"] for name, done in shown.items()}
    assert signed == {"a": True, "b": True, "c": False}
    assert not added.is_error, text_of(added)
    assert (added.structured_content or {})["sum"] == 3
    assert [key for key, _ in _kept_rows(pg_store)] == ["sign_in/notes"]
    assert _fernet_files(tmp_path) == []  # rows, not files


def _fernet_files(root: Path) -> list[Path]:
    return [path for path in root.rglob("*.fernet") if path.is_file()]
