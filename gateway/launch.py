"""The `toolreel` console script.

`toolreel serve` spawns its stdio upstreams before the command line framework and the MCP SDK are
imported (most of a second of CPU): the servers start while the gateway is still loading.
"""

from __future__ import annotations

import sys

from gateway.prespawn import prespawn

__all__ = ["main"]


def main() -> None:
    prespawn(sys.argv[1:])
    from gateway.cli import main as run_cli

    run_cli()
