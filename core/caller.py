"""The seam between the engines and the upstreams: calling a tool by its listed name.

The gateway's upstream pool implements `ToolCaller`; the replayer and `toolreel run`
only see this protocol, so they run the same way in a gateway, a worker or a test.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Approver", "ModelAnswer", "ProgressFn", "Sampler", "ToolCall", "ToolCaller"]

ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call through the seam, as one value: a field added here reaches every `ToolCaller`
    without each implementation repeating (and keeping in step) a longer signature."""

    name: str  # as listed: `server__tool`
    arguments: Mapping[str, Any]
    timeout: float | None = None  # seconds; None: the server's own
    progress: ProgressFn | None = None


class ToolCaller(Protocol):
    async def call_tool(self, call: ToolCall) -> dict[str, Any]:
        """Call `call.name` and return the CallToolResult wire dict.

        An `isError` result is returned, not raised. Raises `UpstreamTimeout` when `call.timeout`
        (or the server's own) passes, `UpstreamError` (with `.transient`) when the server is
        unreachable, crashed or restarting, or the tool is unknown.
        """
        ...

    def server_of(self, name: str) -> str | None:
        """The server that serves listed tool `name`, or None if no server lists it."""
        ...


class Approver(Protocol):
    async def approve(self, prompt: str, form: Mapping[str, Any] | None = None) -> bool | dict[str, Any] | None:
        """Ask a person. True/False is their answer; None means nobody can be asked now
        (no client with elicitation): the execution pauses. With `form` (a flat object schema) the
        person is asked for those fields: an accepted answer is their values (checked by the caller)."""
        ...


@dataclass(frozen=True, slots=True)
class ModelAnswer:
    """A model's answer to an `llm` step: its text, the model that gave it, and how it was asked."""

    text: str
    model: str | None
    via: str  # `sampling`, `endpoint` or `recorded`


class Sampler(Protocol):
    async def sample(self, prompt: str, *, max_tokens: int) -> ModelAnswer | None:
        """Ask the model of the client that started the run (MCP sampling, in its era); None when that
        client cannot be asked (no sampling capability, or gone)."""
        ...
