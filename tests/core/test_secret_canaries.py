"""Canary secrets planted through every path must never reach the store, an export, `--json` output, stderr
(`-v` included, over stdio and HTTP) or the web view's JSON.

Each canary is unique to the test run. A recording session (the stdio gateway with `-v`, an HTTP upstream whose
URL and headers carry tokens) and a replay (`toolreel run`, a secret input, an input named `api_key`, an
idempotent step, the config's `env` returned by a tool) plant them; then every column of every table of the
store (SQLite and PostgreSQL), the SQLite files' bytes, the exported template, `--json` output and stderr are
swept. The bar is 0 found.
"""

from __future__ import annotations

import json
import secrets
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from fixtures._zygote import launch_command
from fixtures.leaky import password_for, token_for
from tests.gw import (
    REPO,
    TOOLREEL,
    call,
    fixture_entry,
    fixture_http_server,
    gateway_env,
    http_gateway,
    stdio_gateway,
    text_of,
    write_config,
)
from tests.ui_data import web_view
from toolreel.core.model import TemplateDraft
from toolreel.core.secrets import REDACTED
from toolreel.core.store import open_store

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


class Canaries:
    """Unique secret strings, one per path, and the places they must not be found."""

    def __init__(self) -> None:
        tag = secrets.token_hex(6)
        self.env_token = f"CANARY-env-{tag}-0001"  # config env, returned by a tool
        self.header = f"CANARY-header-{tag}-0002"  # an HTTP upstream's Authorization header
        self.url_token = f"CANARY-url-{tag}-0003"  # a token in an HTTP upstream's URL
        self.api_key = f"CANARY-apikey-{tag}-0004"  # an argument under a secret key, copied by a ref
        self.login_seed = f"login{tag}"
        self.reveal_seed = f"reveal{tag}"
        self.error_seed = f"error{tag}"
        self.input_key = f"CANARY-inputkey-{tag}-0005"  # a replay input named api_key
        self.secret_input = f"CANARY-secretin-{tag}-0006"  # a replay input declared secret: true
        self.replay_seed = f"replay{tag}"

    def values(self) -> dict[str, str]:
        return {
            "env": self.env_token,
            "header": self.header,
            "url": self.url_token,
            "api_key": self.api_key,
            "login token": token_for(self.login_seed),
            "text password": password_for(self.reveal_seed),
            "error api_key": password_for(self.error_seed),
            "input api_key": self.input_key,
            "secret input": self.secret_input,
            "replay login token": token_for(self.replay_seed),
        }

    def found_in(self, text: str, where: str) -> list[str]:
        return [f"{name} in {where}" for name, value in self.values().items() if value in text]


def sweep_store(url: str, canaries: Canaries) -> list[str]:
    """Every column of every table, read back as text."""
    engine = sa.create_engine(url)
    found: list[str] = []
    try:
        meta = sa.MetaData()
        meta.reflect(engine)
        assert {"executions", "steps", "templates", "idempotency"} <= set(meta.tables)
        with engine.connect() as conn:
            for table in meta.tables.values():
                for row in conn.execute(sa.select(table)).mappings():
                    for column, value in row.items():
                        found += canaries.found_in(str(value), f"{table.name}.{column}")
    finally:
        engine.dispose()
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        for file in (path, path.with_name(path.name + "-wal")):
            if file.exists():
                found += canaries.found_in(file.read_bytes().decode("utf-8", "replace"), f"the file {file.name}")
    return found


def _cli(env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        launch_command([str(TOOLREEL), *args]),
        cwd=REPO,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def canaries() -> Iterator[Canaries]:
    yield Canaries()


def _config(tmp_path: Path, canaries: Canaries, http_url: str) -> Path:
    leaky = fixture_entry("leaky", env={"LEAKY_API_TOKEN": canaries.env_token})
    remote = {
        "url": f"{http_url}?token={canaries.url_token}",
        "headers": {"Authorization": f"Bearer {canaries.header}"},
    }
    return write_config(tmp_path / "mcp.json", {"leaky": leaky, "remote": remote})


async def _record(config: Path, env: Mapping[str, str], canaries: Canaries) -> tuple[str, str]:
    """An agent session planting every recording canary; returns (execution id, the gateway's stderr)."""
    async with stdio_gateway(["-v", "--config", str(config)], env) as gw:
        first = await call(gw, "leaky__echoall", {"api_key": canaries.api_key, "note": "hello"})
        assert not first.is_error, text_of(first)
        copied = await call(gw, "leaky__echoall", {"copy": "@echoall_1.api_key"})
        assert canaries.api_key in text_of(copied)  # the agent gets the value: only the store must not
        assert not (await call(gw, "leaky__login", {"seed": canaries.login_seed})).is_error
        passed = await call(gw, "leaky__echoall", {"session_token": "@login_1.session_token"})
        assert token_for(canaries.login_seed) in text_of(passed)
        assert text_of(await call(gw, "leaky__env", {"name": "LEAKY_API_TOKEN"})) == canaries.env_token
        assert password_for(canaries.reveal_seed) in text_of(
            await call(gw, "leaky__reveal", {"seed": canaries.reveal_seed})
        )
        assert (await call(gw, "leaky__leak_error", {"seed": canaries.error_seed})).is_error
        remote = await call(gw, "remote__login", {"seed": canaries.login_seed + "r"})
        assert not remote.is_error, text_of(remote)
        execution = str((remote.meta or {})["toolreel/execution"])
        inputs = {"api_key": canaries.api_key, "note": f"uses {canaries.env_token}"}
        saved = await call(gw, "toolreel__save_template", {"name": "leak", "inputs": inputs})
        assert not saved.is_error, text_of(saved)
        assert gw.gateway is not None
        return execution, gw.gateway.stderr()


REPLAY_TEMPLATE: dict[str, Any] = {
    "name": "replay",
    "inputs": {"api_key": {"type": "string"}, "pin": {"type": "string", "secret": True}, "seed": {"type": "string"}},
    "steps": [
        {"name": "keyed", "tool": "leaky__echoall", "input": {"key": "@input.api_key"}},
        {"name": "pinned", "tool": "leaky__echoall", "input": {"value": "@input.pin"}, "idempotency_key": "pin-once"},
        {
            "name": "keyed_by_pin",  # a secret input inside an idempotency key: stored as a keyed hash
            "tool": "leaky__echoall",
            "input": {"note": "once per pin"},
            "idempotency_key": "pin-{{@input.pin}}",
            "idempotency_scope": "global",
        },
        {"name": "env", "tool": "leaky__env", "input": {"name": "LEAKY_API_TOKEN"}},
        {"name": "login", "tool": "leaky__login", "input": {"seed": "@input.seed"}},
        {"name": "copy", "tool": "leaky__echoall", "input": {"copy": "@login.session_token"}},
    ],
    "output": {"env": "@env", "copied": "@copy.copy"},
}


async def test_no_canary_reaches_the_store_exports_output_or_stderr(
    tmp_path: Path, store_url: str, canaries: Canaries
) -> None:
    env = gateway_env(store_url)
    async with fixture_http_server("leaky") as http_url:
        config = _config(tmp_path, canaries, http_url)
        execution, stderr = await _record(config, env, canaries)
        found = canaries.found_in(stderr, "the gateway's stderr")

        store = open_store(store_url)
        try:
            steps = {step.name: step for step in store.get_steps(execution)}
            # a ref under a secret-named key is structure: kept as written, its value redacted
            assert steps["echoall_3"].input == {"session_token": "@login_1.session_token"}
            assert steps["echoall_3"].resolved_input == {"session_token": REDACTED}
            assert steps["echoall_2"].input == {"copy": "@echoall_1.api_key"}
            store.save_template(TemplateDraft("replay", REPLAY_TEMPLATE))
        finally:
            store.close()

        exported = _cli(env, "templates", "export", "leak", "--json")
        assert exported.returncode == 0, exported.stderr
        found += canaries.found_in(exported.stdout + exported.stderr, "the exported template")

        # a secret input never comes on the command line: from the environment, as a user gives it
        run_args = ["-i", f"api_key={canaries.input_key}", "--secret", "pin=env:CANARY_PIN"]
        run_args += ["-i", f"seed={canaries.replay_seed}", "--json", "--config", str(config)]
        replayed = _cli({**env, "CANARY_PIN": canaries.secret_input}, "run", "replay", *run_args)
        assert replayed.returncode == 0, replayed.stderr
        found += canaries.found_in(replayed.stdout, "`run --json` output")
        found += canaries.found_in(replayed.stderr, "`run` stderr")
        view = json.loads(replayed.stdout)
        assert view["status"] == "succeeded", view
    found += sweep_store(store_url, canaries)
    assert not found, "canaries found:\n" + "\n".join(found)


async def _record_http(gateway: Any, canaries: Canaries) -> str:
    """The recording canaries again, through `serve --http -v`: its debug log holds every answer's bytes."""
    async with gateway.connect() as client:
        first = await call(client, "leaky__echoall", {"api_key": canaries.api_key, "password": canaries.api_key})
        assert not first.is_error, text_of(first)
        assert not (await call(client, "leaky__login", {"seed": canaries.login_seed})).is_error
        copied = await call(client, "leaky__echoall", {"copy": "@login_1.session_token"})
        assert token_for(canaries.login_seed) in text_of(copied)
        await call(client, "leaky__reveal", {"seed": canaries.reveal_seed})
        await call(client, "leaky__leak_error", {"seed": canaries.error_seed})
        await call(client, "leaky__env", {"name": "LEAKY_API_TOKEN"})
        return str((copied.meta or {})["toolreel/execution"])


async def test_no_canary_reaches_http_debug_logs_views_or_the_web_view(tmp_path: Path, canaries: Canaries) -> None:
    store_url = f"sqlite:///{tmp_path / 'store.db'}"
    env = gateway_env(store_url)
    async with fixture_http_server("leaky") as http_url:
        config = _config(tmp_path, canaries, http_url)
        async with http_gateway(["-v", "--config", str(config)], env) as gateway:
            recorded = await _record_http(gateway, canaries)
            found = canaries.found_in(gateway.gateway.stderr(), "`serve --http -v` stderr")
        store = open_store(store_url)
        store.save_template(TemplateDraft("replay", REPLAY_TEMPLATE))
        store.close()
        run_args = ["-i", f"api_key={canaries.input_key}", "--secret", "pin=env:CANARY_PIN"]
        run_args += ["-i", f"seed={canaries.replay_seed}", "--json", "--config", str(config)]
        replays = []
        for _ in range(2):  # the second run finds the first's result by the hashed key
            replayed = _cli({**env, "CANARY_PIN": canaries.secret_input}, "run", "replay", *run_args)
            assert replayed.returncode == 0, replayed.stderr
            found += canaries.found_in(replayed.stdout + replayed.stderr, "`run --json`")
            replays.append(json.loads(replayed.stdout)["execution_id"])
    for execution in (recorded, *replays):
        shown = _cli(env, "executions", "show", execution, "--json")
        assert shown.returncode == 0, shown.stderr
        found += canaries.found_in(shown.stdout + shown.stderr, f"`executions show {execution} --json`")
    async with web_view(store_url) as base, httpx.AsyncClient(base_url=base, timeout=30) as http:
        for path in ["/ui/api/executions", "/ui/api/templates", "/ui/api/templates/replay"] + [
            f"/ui/api/executions/{execution}" for execution in (recorded, *replays)
        ]:
            answer = await http.get(path)
            assert answer.status_code == 200, (path, answer.text)
            found += canaries.found_in(answer.text, f"the web view's {path}")
    found += sweep_store(store_url, canaries)
    assert not found, "canaries found:\n" + "\n".join(found)
    engine = sa.create_engine(store_url)
    try:
        with engine.connect() as conn:
            keys = [row[0] for row in conn.execute(sa.text("SELECT key FROM idempotency"))]
            step_keys = {row[0] for row in conn.execute(sa.text("SELECT idempotency_key FROM steps")) if row[0]}
    finally:
        engine.dispose()
    hashed = [key for key in keys if "hmac-sha256:" in key]
    assert len(hashed) == 1 and len(keys) == 3, keys  # one global key for both runs; pin-once per execution
    assert any(key.startswith("hmac-sha256:") for key in step_keys) and "pin-once" in step_keys, step_keys
