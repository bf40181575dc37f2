"""The servers a template remembers: entries that start them again and hold no secret value."""

from __future__ import annotations

import json

import pytest

from toolreel.core.errors import ConfigError
from toolreel.upstreams.config import parse_config, wrap_config
from toolreel.upstreams.remembered import env_references, portable_entry, remembered_config

ARG_SECRET = "tok_live_5f3a9c2e81d4"


def _entries() -> dict[str, dict[str, object]]:
    config = parse_config(
        {
            "mcpServers": {
                "api": {
                    "url": "https://x.test/mcp",
                    "headers": {"Authorization": "Bearer abc123", "X-Team": "${env:TEAM}"},
                },
                "fs": {
                    "command": "npx",
                    "args": ["-y", "srv", f"--token={ARG_SECRET}"],
                    "env": {
                        "GITHUB_TOKEN": "ghp_abcdefghijklmnop",
                        "MODE": "fast",
                        "DB": "${env:DB_URL}",
                        "CACHE": "redis://cache:s3cret@localhost:6379",
                    },
                    "cwd": "/srv",
                    "alwaysAllow": ["read"],
                },
            }
        },
        environ={"TEAM": "core", "DB_URL": "postgres://db"},
    )
    secrets = [ARG_SECRET, *config.secret_values()]
    return {server.name: portable_entry(server, secrets) for server in config.servers}


def test_secret_values_become_env_references_and_written_references_stay() -> None:
    entries = _entries()
    assert entries["api"] == {
        "url": "https://x.test/mcp",
        "headers": {"Authorization": "${env:API_AUTHORIZATION}", "X-Team": "${env:TEAM}"},
    }
    assert entries["fs"] == {
        "command": "npx",
        "args": ["-y", "srv", "--token=${env:FS_ARG2}"],
        "env": {
            "GITHUB_TOKEN": "${env:GITHUB_TOKEN}",
            "MODE": "fast",
            "DB": "${env:DB_URL}",
            "CACHE": "${env:CACHE}",
        },
        "cwd": "/srv",
    }
    text = json.dumps(entries)
    assert "abc123" not in text and "ghp_" not in text and ARG_SECRET not in text and "postgres://db" not in text
    assert "s3cret" not in text
    assert env_references(entries) == ["API_AUTHORIZATION", "CACHE", "DB_URL", "FS_ARG2", "GITHUB_TOKEN", "TEAM"]


def test_a_wrapped_server_is_remembered_as_its_command_line_in_its_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/tmp")
    (server,) = wrap_config(["python", "-m", "srv", "--flag"], name="srv").servers
    assert portable_entry(server) == {"command": "python", "args": ["-m", "srv", "--flag"], "cwd": "/tmp"}


def test_a_missing_variable_names_the_template_and_the_server() -> None:
    with pytest.raises(ConfigError, match=r"template 'nightly'.*mcpServers\.api\.headers.*API_AUTHORIZATION"):
        remembered_config("nightly", _entries())


def test_a_token_in_an_http_servers_url_is_remembered_as_a_reference() -> None:
    config = parse_config(
        {"mcpServers": {"api": {"url": "https://x.test/mcp?api_key=k3y-v4lue-0123&region=eu"}}}, environ={}
    )
    entry = portable_entry(config.servers[0], config.secret_values())
    assert "k3y-v4lue-0123" not in json.dumps(entry)
    assert entry["url"] == "https://x.test/mcp?api_key=${env:API_URL}&region=eu"
    assert env_references({"api": entry}) == ["API_URL"]
