"""The client config file (SPEC §1) and the commands that read it (`serve --config`, `config check`).

Parsing is tested on the real `load_config`; the commands run as subprocesses, so exit codes and
stderr are what a user sees.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fixtures._zygote import launch_command
from tests.gw import TOOLREEL, fixture_entry, gateway_env, write_config
from toolreel.core.errors import ConfigError
from toolreel.upstreams.config import DEFAULT_TIMEOUT, load_config, parse_config

ENV = {"API_TOKEN": "tok-123", "HOME_DIR": "/home/me"}


def _load(tmp_path: Path, data: Any, environ: dict[str, str] | None = None) -> Any:
    path = tmp_path / "client.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return load_config(path, environ=ENV if environ is None else environ)


def _error(tmp_path: Path, data: Any, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, data, environ)
    return str(caught.value)


# --- shapes ----------------------------------------------------------------------------------------------------


def test_mcp_servers_shape_gives_stdio_http_and_sse_servers(tmp_path: Path) -> None:
    cfg = _load(
        tmp_path,
        {
            "mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "server-filesystem", "/tmp"], "env": {"A": "1"}, "cwd": "/tmp"},
                "api": {"url": "https://example.test/mcp", "headers": {"Authorization": "Bearer ${env:API_TOKEN}"}},
                "old": {"url": "https://example.test/sse", "type": "sse"},
                "legacy": {"url": "https://example.test/sse2", "transport": "sse"},
            }
        },
    )
    by_name = {s.name: s for s in cfg.servers}
    assert [s.name for s in cfg.servers] == ["fs", "api", "old", "legacy"]
    fs = by_name["fs"]
    assert (fs.transport, fs.command, fs.args, dict(fs.env), fs.cwd) == (
        "stdio",
        "npx",
        ("-y", "server-filesystem", "/tmp"),
        {"A": "1"},
        "/tmp",
    )
    assert by_name["api"].transport == "http"
    assert dict(by_name["api"].headers) == {"Authorization": "Bearer tok-123"}
    assert by_name["old"].transport == "sse"
    assert by_name["legacy"].transport == "sse"


def test_vscode_servers_shape_with_types(tmp_path: Path) -> None:
    cfg = _load(
        tmp_path,
        {
            "servers": {
                "local": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"]},
                "remote": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
                "events": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
            }
        },
    )
    assert [(s.name, s.transport) for s in cfg.servers] == [("local", "stdio"), ("remote", "http"), ("events", "sse")]
    assert cfg.servers[0].args == ("mcp-server-time",)


def test_env_references_in_both_spellings_are_expanded_everywhere(tmp_path: Path) -> None:
    cfg = _load(
        tmp_path,
        {
            "mcpServers": {
                "s": {
                    "command": "${HOME_DIR}/bin/server",
                    "args": ["--token", "${env:API_TOKEN}", "mixed-${API_TOKEN}-end"],
                    "env": {"TOKEN": "${env:API_TOKEN}"},
                }
            }
        },
    )
    server = cfg.servers[0]
    assert server.command == "/home/me/bin/server"
    assert server.args == ("--token", "tok-123", "mixed-tok-123-end")
    assert dict(server.env) == {"TOKEN": "tok-123"}
    assert "tok-123" in cfg.secret_values()


def test_missing_env_variable_names_variable_file_and_path(tmp_path: Path) -> None:
    message = _error(tmp_path, {"mcpServers": {"fs": {"command": "x", "args": ["${env:NOPE_NOT_SET}"]}}})
    assert "NOPE_NOT_SET" in message
    assert "client.json" in message
    assert "mcpServers.fs.args" in message


def test_extension_keys_timeout_tools_disabled(tmp_path: Path) -> None:
    cfg = _load(
        tmp_path,
        {
            "mcpServers": {
                "a": {"command": "x", "timeout": 2.5, "tools": ["echo", "add"], "disabled": False},
                "b": {"command": "y", "disabled": True},
                "c": {"command": "z"},
            }
        },
    )
    a, b, c = cfg.servers
    assert a.timeout == 2.5 and a.policy.tools == ("echo", "add") and not a.disabled
    assert b.disabled and [s.name for s in cfg.enabled] == ["a", "c"]
    assert c.timeout == DEFAULT_TIMEOUT == 60 and c.policy.tools is None


@pytest.mark.parametrize(
    ("entry", "path"),
    [
        ({"command": "x", "timeout": -1}, "mcpServers.s.timeout"),
        ({"command": "x", "timeout": "10"}, "mcpServers.s.timeout"),
        ({"command": "x", "tools": "echo"}, "mcpServers.s.tools"),
        ({"command": "x", "disabled": "yes"}, "mcpServers.s.disabled"),
        ({"command": "x", "args": "--flag"}, "mcpServers.s.args"),
        ({"command": "x", "args": ["ok", 3]}, "mcpServers.s.args[1]"),
        ({"command": "x", "env": {"A": 1}}, "mcpServers.s.env.A"),
        ({"command": ""}, "mcpServers.s.command"),
        ({"url": "ftp://example.test"}, "mcpServers.s.url"),
        ({"url": "http://x", "type": "websocket"}, "mcpServers.s.type"),
        ({"command": "x", "bogus": 1}, "mcpServers.s.bogus"),
        ({}, "mcpServers.s"),
    ],
)
def test_bad_entry_error_names_file_and_json_path(tmp_path: Path, entry: dict[str, Any], path: str) -> None:
    message = _error(tmp_path, {"mcpServers": {"s": entry}})
    assert str(tmp_path / "client.json") in message
    assert path in message


@pytest.mark.parametrize("name", ["a__b", "has space", "dot.ted", "", "sl/ash"])
def test_bad_server_names_are_refused(tmp_path: Path, name: str) -> None:
    message = _error(tmp_path, {"mcpServers": {name: {"command": "x"}}})
    assert f"mcpServers.{name}" in message
    assert "[A-Za-z0-9_-]" in message


@pytest.mark.parametrize("name", ["fs", "my-server", "Server_2", "a_b"])
def test_good_server_names_are_accepted(tmp_path: Path, name: str) -> None:
    assert _load(tmp_path, {"mcpServers": {name: {"command": "x"}}}).servers[0].name == name


def test_not_a_config_object_is_refused(tmp_path: Path) -> None:
    assert "mcpServers" in _error(tmp_path, {"other": {}})
    assert "mcpServers" in _error(tmp_path, ["not", "an", "object"])
    assert "mcpServers" in _error(tmp_path, {"mcpServers": ["x"]})


def test_invalid_json_error_gives_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "client.json"
    # (a trailing comma is JSONC, which VS Code writes and toolreel reads: a missing comma is an error in both)
    path.write_text('{"mcpServers": {\n  "a": {"command": "x" "args": []}\n}}', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(path) in str(caught.value) and "line 2" in str(caught.value)


def test_parse_config_without_file_still_names_path() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"servers": {"x": {"command": 5}}}, environ={})
    assert "servers.x.command" in str(caught.value)


# --- the commands ----------------------------------------------------------------------------------------------


def _run(args: list[str], tmp_path: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = gateway_env(f"sqlite:///{tmp_path / 'store.db'}")
    return subprocess.run(
        launch_command([str(TOOLREEL), *args]),
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.slow
def test_serve_with_bad_config_exits_2_with_one_line_naming_file_and_path(tmp_path: Path) -> None:
    bad = write_config(tmp_path / "bad.json", {"fs": {"command": "x", "args": "not-a-list"}})
    done = _run(["serve", "--config", str(bad)], tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""  # stdout is the protocol channel
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert str(bad) in lines[0] and "mcpServers.fs.args" in lines[0]


@pytest.mark.slow
def test_serve_with_missing_config_file_exits_2(tmp_path: Path) -> None:
    done = _run(["serve", "--config", str(tmp_path / "nope.json")], tmp_path)
    assert done.returncode == 2
    assert "nope.json" in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["serve", "--name", "bad__name", "--", "python", "-m", "fixtures.features"],
        ["serve", "--config", "client.json", "--", "python", "-m", "fixtures.features"],
        ["serve"],
        ["serve", "--http", "not-a-port", "--", "python", "-m", "fixtures.features"],
    ],
)
@pytest.mark.slow
def test_serve_usage_errors_exit_2(tmp_path: Path, args: list[str]) -> None:
    write_config(tmp_path / "client.json", {"feat": fixture_entry("features")})
    args = [str(tmp_path / a) if a == "client.json" else a for a in args]
    done = _run(args, tmp_path)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.strip() and done.stdout == ""


@pytest.mark.slow
def test_config_check_of_bad_config_exits_2(tmp_path: Path) -> None:
    bad = write_config(tmp_path / "bad.json", {"a__b": {"command": "x"}})
    done = _run(["config", "check", str(bad)], tmp_path)
    assert done.returncode == 2
    assert "mcpServers.a__b" in done.stderr and str(bad) in done.stderr


@pytest.mark.slow
def test_config_check_lists_tools_of_a_fixture_server(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "ok.json", {"feat": fixture_entry("features"), "ids": fixture_entry("ids")})
    done = _run(["config", "check", str(cfg)], tmp_path)
    assert done.returncode == 0, done.stderr
    for name in ("feat__echo", "feat__add", "ids__create_user"):
        assert name in done.stdout


@pytest.mark.slow
def test_config_check_json_honours_tools_allowlist_and_disabled(tmp_path: Path) -> None:
    narrow = {**fixture_entry("features"), "tools": ["echo", "add"]}
    off = {**fixture_entry("ids"), "disabled": True}
    cfg = write_config(tmp_path / "ok.json", {"feat": fixture_entry("features"), "narrow": narrow, "off": off})
    done = _run(["config", "check", "--json", str(cfg)], tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    servers = {s["name"]: s for s in report["servers"]}
    assert servers["feat"]["state"] == "ready" and "feat__slow" in servers["feat"]["tools"]
    assert sorted(servers["narrow"]["tools"]) == ["narrow__add", "narrow__echo"]
    assert servers["off"]["state"] == "disabled" and not servers["off"].get("tools")


@pytest.mark.slow
def test_config_check_reports_a_server_that_cannot_start(tmp_path: Path) -> None:
    cfg = write_config(
        tmp_path / "ok.json", {"feat": fixture_entry("features"), "broken": fixture_entry("crash_at_start")}
    )
    done = _run(["config", "check", "--timeout", "20", str(cfg)], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "feat__echo" in done.stdout
    assert "missing FOO" in done.stdout  # the stderr tail of the server that failed


# --- VS Code files: JSONC, envFile, ${workspaceFolder}, ${input:ID} ---------------------------------------------------

VSCODE_JSONC = """{
  // servers of this workspace
  "servers": {
    "notes": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "${workspaceFolder}/notes",],
      "envFile": "${workspaceFolder}/.env",
      "env": {"MODE": "fast", "SHARED": "from-env",},  /* env wins over envFile */
    },
  },
}
"""


def test_a_vscode_jsonc_file_with_comments_trailing_commas_and_an_env_file_loads(tmp_path: Path) -> None:
    (tmp_path / ".vscode").mkdir()
    (tmp_path / ".env").write_text("API_KEY=k-123\nSHARED=from-file\n# a comment\n", encoding="utf-8")
    path = tmp_path / ".vscode" / "mcp.json"
    path.write_text(VSCODE_JSONC, encoding="utf-8")
    (server,) = load_config(path, environ={}).servers
    assert server.args[-1] == f"{tmp_path.resolve()}/notes"  # the folder holding .vscode/
    assert dict(server.env) == {"API_KEY": "k-123", "SHARED": "from-env", "MODE": "fast"}


def test_a_missing_env_file_is_named(tmp_path: Path) -> None:
    message = _error(tmp_path, {"servers": {"s": {"command": "x", "envFile": "nope.env"}}})
    assert "servers.s.envFile" in message and "nope.env" in message and "does not exist" in message


def test_a_vscode_input_prompt_is_refused_with_the_key_and_what_to_do(tmp_path: Path) -> None:
    data = {"servers": {"gh": {"command": "x", "env": {"GITHUB_TOKEN": "${input:github_token}"}}}}
    message = _error(tmp_path, data)
    assert "servers.gh.env.GITHUB_TOKEN" in message
    assert "${input:github_token}" in message and "${env:VAR}" in message


def test_a_file_that_is_neither_json_nor_jsonc_gets_the_json_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"mcpServers": {"a": {"command": "x"}}\n  oops\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"line 2, column 3"):
        load_config(path, environ={})
