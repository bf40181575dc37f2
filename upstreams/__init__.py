"""The upstream connection pool, shared by the gateway and the replayer.

A client config (`config`) becomes a `Hub` of upstream MCP sessions (`hub`, `upstream`,
`stdio_upstream`, `pipes`), started in parallel and reused for every call; `names` maps the names
that `core.names`' `server__tool` rule would make too long or illegal; `prespawn` starts stdio
servers before the rest loads, and `keeper` ends their process groups if this process dies. It
imports nothing from the gateway, recorder, templatizer or replayer.
"""

# Only the light modules here: `toolreel serve` imports `prespawn` (through this package) before
# the MCP SDK, to start the servers while the rest loads; the hub is `toolreel.upstreams.hub`.
from toolreel.upstreams.config import GatewayConfig, ServerConfig, load_config, parse_config, wrap_config
from toolreel.upstreams.names import listed_name, split_prefixed

__all__ = [
    "GatewayConfig",
    "ServerConfig",
    "listed_name",
    "load_config",
    "parse_config",
    "split_prefixed",
    "wrap_config",
]
