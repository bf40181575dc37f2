"""FastMCP 4.1's documented proxy (`create_proxy`) in front of one stdio server, served over stdio.

Usage: .tools/fastmcp-venv/bin/python bench/_fastmcp_proxy.py COMMAND [ARGS...]
Runs in FastMCP's own venv (.ci/fastmcp-setup.sh), not the project's: bench/proxy.py compares toolreel with it.
"""

from __future__ import annotations

import sys

from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit("usage: _fastmcp_proxy.py COMMAND [ARGS...]")
    # One backend as a transport (not an mcpServers config, which respawns backends per call when it holds two).
    backend = StdioTransport(command=argv[0], args=argv[1:])
    create_proxy(backend, name="fastmcp-bench-proxy").run(transport="stdio", show_banner=False)


if __name__ == "__main__":
    main(sys.argv[1:])
