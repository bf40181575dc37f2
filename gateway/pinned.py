"""A live call to a held tool of a pinned server (upstreams.pins): asked about, or refused.

The calling client is asked, in its own era (elicitation, or an `InputRequiredResult` for a 2026-07-28
client), whether to accept the tool's new definition, shown with what changed. A yes approves it and the call
goes on; a no, or a client that cannot be asked, gets a tool error that says what changed and how to approve.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.shared.exceptions import MCPError

from toolreel.upstreams.hub import Route, error_result
from toolreel.upstreams.pins import Pins
from toolreel.upstreams.upstream import AskFn

__all__ = ["check_pinned"]

_SCHEMA = {"type": "object", "properties": {}}


async def check_pinned(pins: Pins, route: Route, listed: str, ask: AskFn | None) -> dict[str, Any] | None:
    """None when the call may go on; else the tool error that refuses it (nothing is sent)."""
    server, tool = route.upstream.name, route.name
    if not route.upstream.config.pin:
        return None
    if not await pins.wait_loaded():
        return error_result(
            f"refused: tool {listed!r} of pinned server {server!r} is checked against the definitions the store keeps, "
            "and the store is not open yet; nothing was sent. Try again once it is (toolreel__status says)."
        )
    parts = pins.held(server, tool)
    if parts is None:
        return None
    now = pins.definition(server, tool) or {}
    shown = "; ".join(f"{part} is now {json.dumps(now.get(part), sort_keys=True)[:300]}" for part in parts)
    what = f"tool {listed!r} of pinned server {server!r} changed its definition since it was first seen ({shown})"
    if ask is not None:
        question = {
            "mode": "form",
            "message": f"{what}. Accept the new definition and call it?",
            "requestedSchema": _SCHEMA,
        }
        try:
            answer = await ask("elicitation/create", question)
        except MCPError:
            answer = {}
        if answer.get("action") == "accept":
            pins.approve(server, tool)
            return None
    return error_result(
        f"refused: {what}; nothing was sent. Approve it by accepting the question a client with elicitation is "
        "asked on its next call (toolreel__status lists held tools under 'pinned_changed')."
    )
