"""What a server's JSON-RPC error answer means: the server's own error (kept, code, message and data, to the
tool result the agent and the recording see), an error MCP defines for the client to act on (passed on as
it is), or, told by what happened rather than by the code, a lost transport."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

__all__ = ["HTTP_ABANDONED", "SERVER_ERROR_META", "ServerErrorAnswer"]

SERVER_ERROR_META = "toolreel/server_error"
_CLIENT_ACTS_ON = frozenset(
    {
        # JSON-RPC's own "invalid request" (the SDK's answer when a request cannot be served on this transport,
        # e.g. a server that can only push its question to a stateless-era client): the protocol's, not the tool's
        types.INVALID_REQUEST,
        types.HEADER_MISMATCH,
        types.MISSING_REQUIRED_CLIENT_CAPABILITY,
        types.UNSUPPORTED_PROTOCOL_VERSION,
        types.URL_ELICITATION_REQUIRED,
    }
)

# What the SDK's HTTP client says when it gives up on a request's stream (it answers the call itself,
# with -32000): a transport loss, like the dispatcher's "Connection closed" once the stream has ended.
HTTP_ABANDONED = ("SSE stream ", "server answered a request with 202")


class ServerErrorAnswer(MCPError):
    """A server's own JSON-RPC error answer to a request: neither a transport loss nor a timeout. Still an
    MCPError, so it passes to the client as it came for listings, resources and prompts; a tools/call
    turns it into the tool error the agent, the recording and `retry_on: [tool_error]` see."""

    def __init__(self, server: str, error: types.ErrorData) -> None:
        super().__init__(error.code, error.message, error.data)
        self.server = server

    @property
    def for_the_client(self) -> bool:
        """An error MCP defines for the client to act on (a capability it lacks, a URL to open, a header or
        version to fix): passed on as the error it is, not turned into a tool's failure."""
        return self.code in _CLIENT_ACTS_ON

    def tool_result(self, tool: str) -> dict[str, Any]:
        """The answer as an `isError` result, its code, message and data kept (`_meta["toolreel/server_error"]`)."""
        error = self.error
        detail: dict[str, Any] = {"server": self.server, "code": error.code, "message": error.message}
        if error.data is not None:
            detail["data"] = error.data
        text = f"server {self.server!r}, tool {tool!r}: error {error.code}: {error.message}"
        return {"content": [{"type": "text", "text": text}], "isError": True, "_meta": {SERVER_ERROR_META: detail}}
