"""The SDK's streamable HTTP transport, able to write what pydantic cannot: a lone UTF-16 surrogate.

A server that cuts a string mid-emoji sends `"\\ud83d"`; Python keeps it, pydantic refuses to encode it,
and the SDK's handshake-era transport then answers the POST with an empty 200. This subclass writes such a
message with `json` instead, as the same escape the server sent (the stateless era's transport already
does). `install()` makes the session manager build these transports.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import mcp.server.streamable_http_manager as manager_module
import mcp_types as types
from mcp.server.streamable_http import (
    CONTENT_TYPE_JSON,
    MCP_SESSION_ID_HEADER,
    EventMessage,
    StreamableHTTPServerTransport,
)
from pydantic_core import PydanticSerializationError
from starlette.responses import Response

from toolreel.upstreams.wire import dump_message

__all__ = ["EscapingTransport", "install"]


class EscapingTransport(StreamableHTTPServerTransport):
    def _create_json_response(
        self,
        response_message: types.JSONRPCMessage | None,
        status_code: HTTPStatus = HTTPStatus.OK,
        headers: dict[str, str] | None = None,
    ) -> Response:
        try:
            return super()._create_json_response(response_message, status_code, headers)
        except PydanticSerializationError:
            assert response_message is not None  # None serializes
            response_headers = {"Content-Type": CONTENT_TYPE_JSON, **(headers or {})}
            if self.mcp_session_id:
                response_headers[MCP_SESSION_ID_HEADER] = self.mcp_session_id
            return Response(
                dump_message(response_message).rstrip(b"\n"), status_code=status_code, headers=response_headers
            )

    def _create_event_data(self, event_message: EventMessage) -> dict[str, Any]:
        try:
            return super()._create_event_data(event_message)
        except PydanticSerializationError:
            event = {"event": "message", "data": dump_message(event_message.message).decode().rstrip("\n")}
            if event_message.event_id:
                event["id"] = event_message.event_id
            return event


def install() -> None:
    """Sessions created from now on use `EscapingTransport` (the manager looks the class up at each one)."""
    setattr(manager_module, "StreamableHTTPServerTransport", EscapingTransport)  # noqa: B010 - a module's global
