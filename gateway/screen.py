"""What a client sends is checked before the SDK's server loop (or the HTTP transport) acts on it.

The SDK reads a request whose `id` is an array, an object, a bool, a fraction or null as a notification
(and so never answers it), and a `notifications/cancelled` naming such an id breaks its lookup. Here each
message from a client is read once more where pydantic's fast reader refuses it or took it for a
notification, and a bad one becomes a JSON-RPC error to send back (or, for a notification, nothing).
"""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as types

from toolreel.upstreams.wire import BadMessage, check_message, parse_line, valid_id

__all__ = ["screen_client_message"]

logger = logging.getLogger("toolreel.screen")


def screen_client_message(line: bytes) -> types.JSONRPCMessage | BadMessage | None:
    """A client line as the SDK's message; BadMessage to answer with; None to drop (a bad notification).

    pydantic's reader is the fast path. What it refuses (lone surrogates, which it cannot read, and
    real mistakes), and what it reads as a notification although the line has an `id` (a request
    whose id is an array, an object, a bool, a fraction or null), is checked with `json` instead.
    """
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError:  # pydantic's ValidationError included
        message = None
    if isinstance(message, types.JSONRPCNotification):
        if b'"id"' not in line and _notification_usable(message):
            return message
    elif message is not None:
        return message
    try:
        value = parse_line(line)
    except BadMessage as bad:
        return _refused(line, bad, None)
    try:
        check_message(value)
        checked = types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except BadMessage as bad:
        return _refused(line, bad, value)
    except ValueError as exc:
        return _refused(line, BadMessage(types.INVALID_REQUEST, f"Invalid Request: {_first_error(exc)}"), value)
    if isinstance(checked, types.JSONRPCNotification) and not _notification_usable(checked):
        return _refused(line, BadMessage(types.INVALID_PARAMS, "not a notification MCP defines"), value)
    return checked


def _refused(line: bytes, bad: BadMessage, value: Any) -> BadMessage | None:
    logger.warning("malformed message from a client (%s): %r", bad.message, line[:200])
    is_notification = isinstance(value, dict) and "method" in value and "id" not in value
    return None if is_notification else bad


def _notification_usable(message: types.JSONRPCNotification) -> bool:
    """Every MCP notification's method starts `notifications/` (a `tools/call` without an id is a request
    missing its id, which handlers written for requests must not see), and `notifications/cancelled`
    names a request by a usable id (the SDK looks it up in a dict)."""
    if not message.method.startswith("notifications/"):
        return False
    if message.method != "notifications/cancelled":
        return True
    return isinstance(message.params, dict) and valid_id(message.params.get("requestId"))


def _first_error(exc: ValueError) -> str:
    text = str(exc).splitlines()
    return text[1].strip() if len(text) > 1 else (text[0] if text else "not a JSON-RPC message")
