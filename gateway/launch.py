"""The `toolreel` console script.

`toolreel serve` spawns its stdio upstreams before the command line framework and the MCP SDK are
imported (most of a second of CPU): the servers start while the gateway is still loading.
"""

from __future__ import annotations

import gc
import sys

from gateway.prespawn import prespawn

__all__ = ["main"]


def main() -> None:
    argv = sys.argv[1:]
    prespawn(argv)
    if argv[:1] == ["serve"]:
        _load_for_good("gateway.serve")
    from gateway.cli import main as run_cli

    run_cli()


def _load_for_good(module: str) -> None:
    """Import the gateway (the SDK's ~550 pydantic models: most of its start-up CPU) without
    cyclic collections: everything it allocates lives as long as the process, so collecting
    finds nothing and costs about a sixth of the import. Frozen afterwards, those objects are
    not scanned again by the collections that serving triggers."""
    gc.disable()
    try:
        __import__(module)
    finally:
        gc.freeze()
        gc.enable()
