"""Putting a question to the client whose call is running, in that client's own era.

The gateway's own tools ask too: the save-confirmation form, a template's `approve` step. A
handshake-era client gets the question pushed mid-call (`elicitation/create` on the call's stream);
a 2026-07-28 client gets it as an `InputRequiredResult` and answers with its retry (gateway.exchange),
as many rounds as there are questions. `Front` knows which, and sets the way to ask for the call it
serves (`asking_through`); a tool asks through `elicit` without knowing the era. A client that
declared no elicitation, or is gone, cannot be asked: `elicit` says so with None and the tool does
what it does for such clients.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

__all__ = ["AskFn", "asking_through", "elicit", "sample"]

AskFn = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]

_asker: contextvars.ContextVar[AskFn | None] = contextvars.ContextVar("toolreel_asker", default=None)


@contextlib.contextmanager
def asking_through(ask: AskFn | None) -> Iterator[None]:
    """Within this block (and the tasks it starts), questions go to the caller through `ask`."""
    token = _asker.set(ask)
    try:
        yield
    finally:
        _asker.reset(token)


async def elicit(message: str, schema: Mapping[str, Any]) -> types.ElicitResult | None:
    """The calling client's answer to a form; None when no client can be asked."""
    ask = _asker.get()
    if ask is None:
        return None
    params = {"mode": "form", "message": message, "requestedSchema": dict(schema)}
    try:
        answer = await ask("elicitation/create", params)
        return types.ElicitResult.model_validate(answer)
    except (MCPError, ValidationError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        return None


async def sample(prompt: str, max_tokens: int) -> tuple[str, str | None] | None:
    """The calling client's model's answer (`sampling/createMessage`) as (text, model); None when no client
    can be asked (none, gone, or without the sampling capability)."""
    ask = _asker.get()
    if ask is None:
        return None
    params = {"messages": [{"role": "user", "content": {"type": "text", "text": prompt}}], "maxTokens": max_tokens}
    try:
        answer = await ask("sampling/createMessage", params)
    except (MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        return None
    content = answer.get("content")
    blocks = content if isinstance(content, list) else [content]
    text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
    model = answer.get("model")
    return text, model if isinstance(model, str) else None
