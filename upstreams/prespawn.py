"""Starting stdio upstreams before the gateway has finished importing itself.

The MCP SDK takes most of a second to import; servers take about as long to start. So
`toolreel serve` spawns its stdio upstreams first, from its raw argv, with nothing but
the standard library and the config parser loaded, and the upstream sessions adopt those
processes when the event loop is up. Restarts spawn normally.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO

from toolreel.core.errors import ConfigError
from toolreel.upstreams import keeper
from toolreel.upstreams.config import GatewayConfig, ServerConfig, load_config, wrap_config

__all__ = ["Spawned", "child_command", "prespawn", "spawn", "take"]


@dataclass(frozen=True, slots=True)
class Spawned:
    process: subprocess.Popen[bytes]
    stderr: IO[str]


_spawned: dict[str, Spawned] = {}


def child_command(command: str, args: Sequence[str]) -> list[str]:
    """Run the child under `setpriv --pdeathsig TERM` where available, so it ends even when
    the gateway is SIGKILLed (no orphans); plain exit paths close it normally."""
    setpriv = shutil.which("setpriv")
    if setpriv is None or os.environ.get("TOOLREEL_NO_PDEATHSIG"):
        return [command, *args]
    return [setpriv, "--pdeathsig", "TERM", "--", shutil.which(command) or command, *args]


def spawn(server: ServerConfig, stderr: IO[str]) -> subprocess.Popen[bytes]:
    """Start a stdio server in its own process group, which the keeper ends if the gateway dies."""
    assert server.command is not None
    process = subprocess.Popen(
        child_command(server.command, server.args),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env={**os.environ, **server.env},
        cwd=server.cwd,
        start_new_session=True,  # its own process group: stopping it stops what it started
    )
    keeper.keep(process.pid)
    return process


def prespawn(argv: Sequence[str]) -> None:
    """Spawn the stdio upstreams `toolreel serve` will use; silently nothing on any doubt
    (typer parses the command line properly right after and reports errors)."""
    config = _config_from_argv(argv)
    if config is None:
        return
    for server in config.enabled:
        if server.transport == "stdio" and server.name not in _spawned:
            stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8")  # noqa: SIM115 - owned by the upstream
            try:
                _spawned[server.name] = Spawned(spawn(server, stderr), stderr)
            except OSError:
                stderr.close()  # the normal start reports the error with its context


def take(name: str) -> Spawned | None:
    return _spawned.pop(name, None)


def _config_from_argv(argv: Sequence[str]) -> GatewayConfig | None:
    args = list(argv)
    if not args or args[0] != "serve":
        return None
    command = args[args.index("--") + 1 :] if "--" in args else []
    options = args[1 : args.index("--")] if "--" in args else args[1:]
    try:
        if command:
            name = _option(options, "--name")
            return wrap_config(command, name)
        path = _option(options, "--config") or _option(options, "-c")
        return load_config(path) if path else None
    except ConfigError:
        return None


def _option(options: list[str], flag: str) -> str | None:
    for index, option in enumerate(options):
        if option == flag and index + 1 < len(options):
            return options[index + 1]
        if option.startswith(flag + "="):
            return option.split("=", 1)[1]
    return None
