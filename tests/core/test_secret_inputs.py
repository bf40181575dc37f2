"""Secret inputs (SPEC §7, §10): read from an environment variable or a file, never typed, never stored.

Templates are parsed by the real loader; `toolreel run` runs as a user runs it, against the features
fixture server, and what the store holds is read back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fixtures._zygote import launch_command
from fixtures.servers import REPO_ROOT, fixture_command
from tests.callers import fixture_env
from toolreel.core.model import TemplateDraft
from toolreel.core.secrets import REDACTED
from toolreel.core.store import open_store
from toolreel.core.template_io import load_template_text, template_to_dict, tool_input_schema

TOKEN = "tok-Vq83nX2p-secret"
KEY = "key-Lm29Pq7s-secret"
TEMPLATE: dict[str, Any] = {
    "name": "signed",
    "inputs": {
        "text": {"type": "string"},
        "token": {"type": "string", "secret": {"env": "TR_TOKEN"}},
        "key": {"type": "string", "secret": True},
    },
    "steps": [
        {"name": "say", "tool": "features__echo", "input": {"text": "{{@input.text}}|{{@input.token}}|{{@input.key}}"}}
    ],
    "output": "@say",
}


def test_secret_sources_round_trip_and_are_not_listed_in_the_tool_schema() -> None:
    template = load_template_text(json.dumps(TEMPLATE))
    token = template.inputs["token"]
    assert token.secret and token.secret_source is not None and str(token.secret_source) == "env:TR_TOKEN"
    assert template.inputs["key"].secret and template.inputs["key"].secret_source is None
    assert template_to_dict(template)["inputs"]["token"]["secret"] == {"env": "TR_TOKEN"}
    assert template_to_dict(template)["inputs"]["key"]["secret"] is True
    schema = tool_input_schema(template)
    assert set(schema["properties"]) == {"text"} and schema["required"] == ["text"]


@pytest.mark.parametrize(
    "secret",
    [{"env": "A", "file": "/x"}, {}, {"path": "/x"}, "yes"],
)
def test_a_secret_source_is_exactly_one_of_env_or_file(secret: Any) -> None:
    bad = {**TEMPLATE, "inputs": {"text": {"type": "string"}, "token": {"secret": secret}, "key": {"secret": True}}}
    with pytest.raises(Exception, match="token"):
        load_template_text(json.dumps(bad))


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    command, *args = fixture_command("features")
    server = {"command": command, "args": args, "cwd": str(REPO_ROOT), "env": fixture_env(tmp_path)}
    (tmp_path / "config.json").write_text(json.dumps({"mcpServers": {"features": server}}))
    db = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(db) as store:
        store.save_template(TemplateDraft("signed", TEMPLATE))
    (tmp_path / "key.txt").write_text(KEY + "\n", encoding="utf-8")
    return {
        **os.environ,
        "TOOLREEL_DB": db,
        "TOOLREEL_CONFIG": str(tmp_path / "config.json"),
        "PYTHONPATH": str(REPO_ROOT),
        "TR_TOKEN": TOKEN,
    }


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        launch_command([sys.executable, "-m", "toolreel.replayer", "run", "signed", *args]),
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_run_reads_secrets_from_their_sources_and_stores_them_redacted(env: dict[str, str], tmp_path: Path) -> None:
    done = _run(env, "-i", "text=hi", "--secret", f"key=file:{tmp_path / 'key.txt'}", "--json")
    assert done.returncode == 0, done.stderr
    view = json.loads(done.stdout)
    # the tool echoed both secrets, exactly: what `run` prints is redacted like everything it shows
    assert view["status"] == "succeeded" and view["output"] == f"hi|{REDACTED}|{REDACTED}"
    with open_store(env["TOOLREEL_DB"]) as store:
        execution = store.get_execution(view["execution_id"])
        stored = json.dumps([execution.inputs, [s.resolved_input for s in store.get_steps(execution.id)]])
    assert execution.inputs["text"] == "hi" and TOKEN not in stored and KEY not in stored


@pytest.mark.slow
def test_secrets_cannot_be_typed_and_bad_sources_are_named(env: dict[str, str], tmp_path: Path) -> None:
    typed = _run(env, "-i", "text=hi", "-i", f"key={KEY}")
    assert typed.returncode == 2 and "key is a secret input and is never typed on a command line" in typed.stderr
    unknown = _run(env, "-i", "text=hi", "--secret", "text=env:TR_TOKEN")
    assert unknown.returncode == 2 and "has no secret input 'text'" in unknown.stderr
    shape = _run(env, "-i", "text=hi", "--secret", "key=vault:x")
    assert shape.returncode == 2 and "write NAME=env:VAR or NAME=file:PATH" in shape.stderr
    missing_file = _run(env, "-i", "text=hi", "--secret", f"key=file:{tmp_path / 'nope'}")
    assert missing_file.returncode == 2 and "cannot read the file" in missing_file.stderr
    no_env = {k: v for k, v in env.items() if k != "TR_TOKEN"}
    unset = _run(no_env, "-i", "text=hi", "--secret", f"key=file:{tmp_path / 'key.txt'}")
    assert unset.returncode == 2 and "environment variable TR_TOKEN is not set" in unset.stderr
    for done in (typed, unknown, shape, missing_file, unset):
        assert KEY not in done.stderr and TOKEN not in done.stderr


@pytest.mark.slow
@pytest.mark.anyio
async def test_reel_tool_hides_secrets_reads_its_source_and_tool_calls_cannot_pass_them(tmp_path: Path) -> None:
    from tests.gw import call, fixture_entry, gateway_env, status, stdio_gateway, text_of, wait_until, write_config

    template = {
        "name": "signed_env",
        "inputs": {"text": {"type": "string"}, "token": {"type": "string", "secret": {"env": "TR_TOKEN"}}},
        "steps": [{"name": "say", "tool": "features__echo", "input": {"text": "{{@input.text}}|{{@input.token}}"}}],
        "output": "@say",
    }
    db = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(db) as store:
        store.save_template(TemplateDraft("signed_env", template))
    config = write_config(tmp_path / "client.json", {"features": fixture_entry("features")})
    async with stdio_gateway(["--config", str(config)], gateway_env(db, TR_TOKEN=TOKEN)) as s:
        await status(s)  # the store opens in the background; the catalogue follows it

        async def tools() -> dict[str, Any]:
            return {t.name: t for t in (await s.client.list_tools()).tools}

        async def reel_listed() -> bool:
            return "reel__signed_env" in await tools()

        await wait_until(reel_listed, 30, "reel__signed_env in tools/list")
        listed = await tools()
        assert set(listed["reel__signed_env"].input_schema["properties"]) == {"text"}
        ran = await call(s, "reel__signed_env", {"text": "hi"})
        assert not ran.is_error and f"hi|{TOKEN}" in text_of(ran), text_of(ran)
        passed = await call(
            s, "toolreel__run_template", {"name": "signed_env", "inputs": {"text": "hi", "token": "typed-by-llm"}}
        )
        assert passed.is_error and "never typed on a command line nor passed in a tool call" in text_of(passed)
