"""The gateway: the MCP server face of toolreel, its management tools and the command line.

`main` is the `toolreel` command. The rest is entered by module, so that a command loads only
what it needs (`toolreel serve` spawns its servers before the MCP SDK is even imported):
`gateway.serve.run_gateway` serves a config over stdio or HTTP, `gateway.front.Front` is the MCP
server that forwards to the upstream pool (`toolreel.upstreams`), and `gateway.management`
builds the recording and management layer above it.
"""

from toolreel.gateway.launch import main

__all__ = ["main"]
