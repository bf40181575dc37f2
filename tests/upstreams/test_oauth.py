"""Signing in to OAuth-protected upstreams (SPEC §10, §14), against `fixtures/guarded.py`: an MCP server
and authorization server on 127.0.0.1 built on the SDK's server auth modules, which approves without a
person so the test drives the loopback redirect (`--auth-follow`). Also the conformance suite's client
auth scenarios against `toolreel call`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from fixtures._zygote import launch_command
from tests.conformance import NODE, SPEC_2025, SUITE_ENTRY, SUITE_PREFIX
from tests.gw import (
    REPO,
    TOOLREEL,
    call,
    fixture_entry,
    fixture_http_server,
    gateway_env,
    status,
    stdio_gateway,
    text_of,
    wait_until,
)
from toolreel.core.errors import ConfigError
from toolreel.upstreams.auth import KEY_FILE, TOKENS_DIR
from toolreel.upstreams.config import parse_config

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(400)]


async def _toolreel(args: Sequence[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[bytes]:
    return await anyio.run_process(
        launch_command([str(TOOLREEL), *args]), check=False, env=dict(env), stdin=subprocess.DEVNULL
    )


def _env(tmp_path: Path) -> dict[str, str]:
    return gateway_env(f"sqlite:///{tmp_path / 'store' / 'toolreel.db'}")


def _config(tmp_path: Path, url: str, **servers: Any) -> Path:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"notes": {"url": url}, **servers}}))
    return path


def _kept_tokens(tmp_path: Path) -> list[str]:
    """Every token kept for the sign-ins under the store's folder, decrypted with the key file."""
    from cryptography.fernet import Fernet

    folder = tmp_path / "store"
    fernet = Fernet((folder / KEY_FILE).read_bytes())
    tokens = []
    for path in (folder / TOKENS_DIR).glob("*.fernet"):
        record = json.loads(fernet.decrypt(path.read_bytes()))
        kept = record.get("tokens") or {}
        tokens += [kept[key] for key in ("access_token", "refresh_token") if key in kept]
    return tokens


def _access_token(tmp_path: Path) -> str:
    tokens = _kept_tokens(tmp_path)
    assert len(tokens) == 2  # one sign-in: its access token, then its refresh token
    return tokens[0]


async def _expired(url: str, token: str) -> None:
    """Wait until the guarded server refuses `token`: its real lifetime is over (no clock to move: it is the
    server's own)."""

    async def refused() -> bool:
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
        async with httpx.AsyncClient() as client:
            answer = await client.post(url, headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        return answer.status_code == 401

    await wait_until(refused, 60, "the access token to expire")


def _files_holding(root: Path, secret: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


@pytest.fixture
async def guarded(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    env = getattr(request, "param", None) or {}
    async with fixture_http_server("guarded", env=env) as url:
        yield url


async def _login(config: Path, env: Mapping[str, str]) -> subprocess.CompletedProcess[bytes]:
    done = await _toolreel(["auth", "login", "notes", "--config", str(config), "--auth-follow"], env)
    assert done.returncode == 0, done.stderr.decode()
    return done


async def test_login_by_loopback_keeps_the_tokens_encrypted_and_call_uses_them(tmp_path: Path, guarded: str) -> None:
    config, env = _config(tmp_path, guarded), _env(tmp_path)
    with anyio.fail_after(300):
        before = await _toolreel(["call", "notes", "add", "--args", '{"a": 1, "b": 2}', "--config", str(config)], env)
        login = await _login(config, env)
        called = await _toolreel(["call", "notes", "add", "--args", '{"a": 1, "b": 2}', "--config", str(config)], env)
        shown = await _toolreel(["auth", "status", "--config", str(config), "--json"], env)
    assert before.returncode != 0  # nobody signed in, and no browser to sign in with: refused, nothing kept
    assert b"signed in to notes (scopes: notes" in login.stdout
    assert called.returncode == 0, called.stderr.decode()
    assert json.loads(called.stdout)["structuredContent"] == {"sum": 3.0}
    (row,) = json.loads(shown.stdout)
    assert row["signed_in"] and row["scopes"] == "notes" and row["refreshable"] and row["expires_at"] > 0
    tokens = _kept_tokens(tmp_path)
    assert len(tokens) == 2
    key = tmp_path / "store" / KEY_FILE
    assert key.stat().st_mode & 0o777 == 0o600
    outputs = b"".join(p.stdout + p.stderr for p in (before, login, called, shown))
    for token in tokens:
        assert _files_holding(tmp_path, token) == []  # not in clear in any file: store, key, records
        assert token.encode() not in outputs


async def test_logout_forgets_the_sign_in(tmp_path: Path, guarded: str) -> None:
    config, env = _config(tmp_path, guarded), _env(tmp_path)
    with anyio.fail_after(300):
        await _login(config, env)
        out = await _toolreel(["auth", "logout", "notes", "--config", str(config)], env)
        again = await _toolreel(["auth", "logout", "notes", "--config", str(config)], env)
        shown = await _toolreel(["auth", "status", "--config", str(config), "--json"], env)
    assert out.returncode == 0 and b"signed out of notes" in out.stdout
    assert again.returncode == 1 and b"was not signed in" in again.stderr
    assert json.loads(shown.stdout)[0]["signed_in"] is False


@pytest.mark.parametrize("guarded", [{"FIXTURE_TOKEN_TTL": "1"}], indirect=True)
async def test_an_expired_access_token_is_refreshed_without_a_person(tmp_path: Path, guarded: str) -> None:
    config, env = _config(tmp_path, guarded), _env(tmp_path)
    with anyio.fail_after(300):
        await _login(config, env)
        first = _kept_tokens(tmp_path)
        await _expired(guarded, _access_token(tmp_path))  # it lives one second
        # no --auth-follow: a sign-in would print its URL and wait for a browser, and this would time out
        called = await _toolreel(["call", "notes", "echo", "--args", '{"text": "hi"}', "--config", str(config)], env)
    assert called.returncode == 0, called.stderr.decode()
    assert b"sign in at" not in called.stderr
    assert set(_kept_tokens(tmp_path)).isdisjoint(first)  # both rotated by the refresh


# a real lifetime of 3 s: the refreshed token must still be good when the retried request arrives on a busy machine
@pytest.mark.parametrize("guarded", [{"FIXTURE_TOKEN_TTL": "3", "FIXTURE_TOKEN_CLAIMED_TTL": "3600"}], indirect=True)
async def test_a_token_the_server_rejects_before_its_time_is_refreshed_not_signed_in_again(
    tmp_path: Path, guarded: str
) -> None:
    config, env = _config(tmp_path, guarded), _env(tmp_path)
    with anyio.fail_after(300):
        await _login(config, env)
        first = _kept_tokens(tmp_path)
        await _expired(guarded, _access_token(tmp_path))  # the server said an hour, but it lives three seconds
        called = await _toolreel(["call", "notes", "echo", "--args", '{"text": "hi"}', "--config", str(config)], env)
    assert called.returncode == 0, called.stderr.decode()  # the 401 led to a refresh, not to a sign-in
    assert b"sign in at" not in called.stderr
    assert set(_kept_tokens(tmp_path)).isdisjoint(first)


async def test_a_gateway_lists_the_others_and_names_the_sign_in_command_until_signed_in(
    tmp_path: Path, guarded: str
) -> None:
    config = _config(tmp_path, guarded, feat=fixture_entry("features"))
    env = _env(tmp_path)
    command = f"toolreel auth login notes --config {config}"
    with anyio.fail_after(300):
        async with stdio_gateway(["--config", str(config)], env) as gw:

            async def started() -> bool:  # feat ready, notes failed for want of a sign-in
                states = {u["name"]: u["state"] for u in (await status(gw))["upstreams"]}
                return states == {"feat": "ready", "notes": "failed"}

            await wait_until(started, 120, "feat ready and notes refused")
            kept_before = sorted((tmp_path / "store" / TOKENS_DIR).glob("*"))  # a refused flow keeps no client
            names = {t.name for t in (await gw.client.list_tools()).tools}
            refused = await call(gw, "notes__add", {"a": 1, "b": 2})
            upstream = {u["name"]: u for u in (await status(gw))["upstreams"]}["notes"]
            await _login(config, env)

            async def listed() -> bool:
                return "notes__add" in {t.name for t in (await gw.client.list_tools()).tools}

            await wait_until(listed, 90, "the signed-in server's tools")  # picked up on its next retry
            added = await call(gw, "notes__add", {"a": 1, "b": 2})
    assert "feat__echo" in names and "notes__add" not in names and kept_before == []
    assert refused.is_error and command in text_of(refused) and "sign-in needed for server 'notes'" in text_of(refused)
    assert command in upstream["last_error"]
    assert not added.is_error and (added.structured_content or {})["sum"] == 3


def test_the_oauth_key_is_validated_and_its_secret_is_redacted() -> None:
    entry = {"url": "https://x.test/mcp", "oauth": {"clientId": "c1", "clientSecret": "s3cr3t-value", "scopes": ["a"]}}
    config = parse_config({"mcpServers": {"x": entry}})
    oauth = config.servers[0].oauth
    assert oauth is not None and oauth.client_id == "c1" and oauth.scopes == ("a",)
    assert "s3cr3t-value" in config.secret_values()
    for bad, path in (
        ({"clientSecret": "s"}, "mcpServers.x.oauth.clientSecret"),
        ({"scope": ["a"]}, "mcpServers.x.oauth.scope"),
        ("yes", "mcpServers.x.oauth"),
    ):
        with pytest.raises(ConfigError) as caught:
            parse_config({"mcpServers": {"x": {"url": "https://x.test/mcp", "oauth": bad}}})
        assert caught.value.path == path


def _conformance_available() -> bool:
    return NODE.exists() and (SUITE_PREFIX[SPEC_2025] / SUITE_ENTRY).exists()


@pytest.mark.skipif(not _conformance_available(), reason="the conformance suite is installed by .ci/run")
async def test_the_conformance_suites_client_auth_scenarios_pass_against_toolreel_call(tmp_path: Path) -> None:
    client = f"{sys.executable} {REPO / 'tests' / 'conformance_auth_client.py'}"
    suite = SUITE_PREFIX[SPEC_2025] / SUITE_ENTRY
    out = tmp_path / "out"
    env = {**os.environ, "TOOLREEL_DB": f"sqlite:///{tmp_path / 'toolreel.db'}"}
    command = [str(NODE), str(suite), "client", "--command", client, "--suite", "auth", "--timeout", "240000"]
    with anyio.fail_after(380):
        done = await anyio.run_process([*command, "-o", str(out)], check=False, env=env, cwd=tmp_path)
    checks: dict[str, list[str]] = {}
    for path in out.rglob("checks.json"):
        scenario = path.parent.name.rsplit("-2", 1)[0]
        checks[scenario] = [c["status"] for c in json.loads(path.read_text())]
    failed = {name: statuses for name, statuses in checks.items() if "FAILURE" in statuses}
    assert len(checks) >= 14, done.stderr.decode()[-3000:]
    assert failed == {}, done.stderr.decode()[-3000:]


async def _save_greeting(config: Path, env: Mapping[str, str]) -> None:
    """A recording against the signed-in server, saved as the template `greet`."""
    async with stdio_gateway(["--config", str(config)], env) as gw:

        async def ready() -> bool:
            state: str = (await status(gw))["upstreams"][0]["state"]
            return state == "ready"

        await wait_until(ready, 120, "the signed-in server ready")
        echoed = await call(gw, "notes__echo", {"text": "hello"})
        assert not echoed.is_error, text_of(echoed)
        saved = await call(gw, "toolreel__save_template", {"name": "greet", "description": "Say hello."})
        assert not saved.is_error, text_of(saved)


@pytest.mark.parametrize("guarded", [{"FIXTURE_TOKEN_TTL": "2"}], indirect=True)
async def test_a_replay_refreshes_an_expired_sign_in_by_itself(tmp_path: Path, guarded: str) -> None:
    config, env = _config(tmp_path, guarded), _env(tmp_path)
    with anyio.fail_after(300):
        await _login(config, env)
        await _save_greeting(config, env)
        before = _kept_tokens(tmp_path)
        await _expired(guarded, _access_token(tmp_path))  # it lives two seconds
        ran = await _toolreel(["run", "greet", "-i", "text=bye", "--config", str(config), "--json"], env)
    assert ran.returncode == 0, ran.stderr.decode()
    assert json.loads(ran.stdout)["output"] == {"result": "bye"}  # the new input, replayed
    assert b"sign in at" not in ran.stderr
    assert set(_kept_tokens(tmp_path)).isdisjoint(before)  # refreshed: both tokens rotated


async def _save_two_server_template(gw: Any) -> None:
    """`visit`: a call to the unguarded server (a counter: how often it ran), then one to the guarded one."""

    async def ready() -> bool:
        return {u["state"] for u in (await status(gw))["upstreams"]} == {"ready"}

    await wait_until(ready, 120, "both servers ready")
    for name, arguments in (("feat__counter", {"key": "visits"}), ("notes__echo", {"text": "hello"})):
        done = await call(gw, name, arguments)
        assert not done.is_error, text_of(done)
    saved = await call(gw, "toolreel__save_template", {"name": "visit", "description": "Count, then echo."})
    assert not saved.is_error, text_of(saved)


def _paused_for_sign_in(summary: Mapping[str, Any], command: str) -> bool:
    prompt = summary.get("prompt") or {}
    return (
        summary["status"] == "paused"
        and prompt.get("reason") == "sign_in_needed"
        and prompt.get("server") == "notes"
        and prompt.get("command") == command
        and "sign-in needed for server 'notes'" in prompt.get("message", "")
    )


async def _show(execution_id: str, env: Mapping[str, str]) -> dict[str, Any]:
    shown = await _toolreel(["executions", "show", execution_id, "--json"], env)
    assert shown.returncode == 0, shown.stderr.decode()
    found: dict[str, Any] = json.loads(shown.stdout)
    return found


REVOKED = Path(tempfile.gettempdir()) / f"toolreel-test-revoked-{os.getpid()}"


@pytest.mark.parametrize("guarded", [{"FIXTURE_REVOKE_FILE": str(REVOKED)}], indirect=True)
async def test_a_revoked_sign_in_pauses_runs_and_resume_finishes_them_after_a_new_login(
    tmp_path: Path, guarded: str
) -> None:
    """`toolreel run`, a `reel__*` call and `toolreel worker` meet a revoked grant: each run pauses on the
    guarded step with the reason `sign_in_needed`; after `auth login`, `executions resume` (or the resume
    tool) finishes each, and the step that had run before the pause is not run again."""
    revoke, counts = REVOKED, tmp_path / "counts.json"
    feat = fixture_entry("features", env={"FIXTURE_COUNTER_FILE": str(counts)})
    config, env = _config(tmp_path, guarded, feat=feat), _env(tmp_path)
    command = f"toolreel auth login notes --config {config}"
    with anyio.fail_after(360):
        await _login(config, env)
        async with stdio_gateway(["--config", str(config)], env) as gw:
            await _save_two_server_template(gw)
            revoke.touch()  # the person revokes toolreel's access at the server: tokens and refreshes refused
            try:
                ran, reeled, queued_id = await _three_paused_runs(gw, config, env, tmp_path)
                queued_summary = await _show(queued_id, env)
                refused = await _toolreel(["executions", "resume", queued_id, "--response", "yes"], env)
            finally:
                revoke.unlink(missing_ok=True)
            await _login(config, env)  # a new grant
            reel_summary = json.loads(text_of(reeled))
            assert "execution_id" in reel_summary, reel_summary
            reel_id = reel_summary["execution_id"]

            async def notes_back() -> bool:
                return {u["state"] for u in (await status(gw))["upstreams"]} == {"ready"}

            await wait_until(notes_back, 120, "the gateway's guarded server back after the sign-in")
            resumed_reel = await call(gw, "toolreel__resume_execution", {"id": reel_id})
        assert ran.returncode == 3, ran.stderr.decode()  # paused
        ran_summary = json.loads(ran.stdout)
        resumed = [
            await _toolreel(["executions", "resume", run_id, "--config", str(config), "--json"], env)
            for run_id in (ran_summary["execution_id"], queued_id)
        ]
    assert _paused_for_sign_in(ran_summary, command), ran_summary
    assert b"OAuth flow error" not in ran.stderr  # said once, by toolreel, not as the SDK's traceback
    assert not reeled.is_error and _paused_for_sign_in(reel_summary, command), reel_summary
    assert _paused_for_sign_in(queued_summary, command), (queued_summary, (tmp_path / "worker.err").read_text())
    assert not resumed_reel.is_error, text_of(resumed_reel)
    for done in resumed:
        assert done.returncode == 0, done.stdout.decode()[-2000:] + done.stderr.decode()[-2000:]
    finished = [json.loads(text_of(resumed_reel)), *(json.loads(done.stdout) for done in resumed)]
    assert [(f["status"], f["output"]) for f in finished] == [("succeeded", {"result": "bye"})] * 3
    assert refused.returncode != 0 and b"waits for a sign-in, not an answer" in refused.stderr
    # The recording's call and one per run: a step that ran before its run paused did not run again.
    assert json.loads(counts.read_text()) == {"visits": 4}


async def _three_paused_runs(
    gw: Any, config: Path, env: Mapping[str, str], tmp_path: Path
) -> tuple[subprocess.CompletedProcess[bytes], Any, str]:
    """`visit` run by `toolreel run`, by a `reel__visit` call, and queued for a `toolreel worker`."""
    ran = await _toolreel(["run", "visit", "-i", "text=bye", "--config", str(config), "--json"], env)
    reeled = await call(gw, "reel__visit", {"text": "bye"})
    queued = await _toolreel(["run", "visit", "-i", "text=bye", "--detach", "--json"], env)
    assert queued.returncode == 0, queued.stderr.decode()
    queued_id: str = json.loads(queued.stdout)["execution_id"]
    with (tmp_path / "worker.err").open("wb") as err:
        worker = await anyio.open_process(
            launch_command([str(TOOLREEL), "worker", "--config", str(config), "--poll", "0.1"]), env=env, stderr=err
        )
    try:
        await wait_until(lambda: _worker_stopped(queued_id, env), 120, "the worker's run to stop")
    finally:
        worker.terminate()
        await worker.wait()
    return ran, reeled, queued_id


async def _worker_stopped(execution_id: str, env: Mapping[str, str]) -> bool:
    shown = await _toolreel(["executions", "show", execution_id, "--json"], env)
    return shown.returncode == 0 and json.loads(shown.stdout)["status"] not in ("pending", "running")


async def test_a_sign_in_registers_afresh_when_the_kept_client_was_made_for_another_redirect(
    tmp_path: Path, guarded: str
) -> None:
    """Another process kept a client while this sign-in was starting (a gateway's retry, on another loopback port):
    the server would refuse this sign-in's redirect with that client, so the sign-in registers its own."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import OAuthClientInformationFull

    from toolreel.upstreams.auth import SecretTokens, sign_in_place
    from toolreel.upstreams.config import OAuthSettings
    from toolreel.upstreams.sign_in import interactive_auth

    storage = SecretTokens(sign_in_place(f"sqlite:///{tmp_path / 'store' / 'toolreel.db'}"), "notes", guarded)
    elsewhere = OAuthClientInformationFull.model_validate(
        {"client_id": "kept-elsewhere", "redirect_uris": ["http://127.0.0.1:9/callback"]}
    )
    with anyio.fail_after(120):
        async with interactive_auth(guarded, storage, OAuthSettings(), follow=True) as auth:
            await storage.set_client_info(elsewhere)  # after this sign-in chose its loopback port
            async with (
                httpx2.AsyncClient(auth=auth) as http,
                Client(streamable_http_client(guarded, http_client=http)) as client,
            ):
                tools = await client.list_tools()
    assert "add" in {tool.name for tool in tools.tools}
    kept = await storage.get_client_info()
    assert kept is not None and kept.client_id != "kept-elsewhere"
