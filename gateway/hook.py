"""The seam between the gateway's pipe and the layers above it (recording, the management tools).

`Front` calls a `ToolHook` at each extension point with one frozen value per call (`LocalCall`,
`UpstreamCall`), so a hook's signature can grow without breaking the others, as temporal's
interceptors take one `*Input` each. The default forwards and adds nothing, so the pipe works
alone. `Send` is how a hook forwards: resolved arguments in, the upstream's result out.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc

from toolreel.core.skill import Skill
from toolreel.gateway.links import ClientLink
from toolreel.upstreams.upstream import Upstream

__all__ = ["Forward", "LocalCall", "Send", "ToolHook", "UpstreamCall"]

Send = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
# (the calling client's LocalCall, listed tool name, arguments) -> the result its own tools/call would get
Forward = Callable[["LocalCall", str, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class LocalCall:
    """A call of a tool the gateway may serve itself (a management tool, a `reel__` template)."""

    name: str
    arguments: dict[str, Any]
    link: ClientLink
    ctx: Any = None  # the MCP request context, when the call came over MCP (None from the web view)
    exchange: Any = None  # a stateless-era client's exchange: how the gateway asks it something meanwhile


@dataclass(frozen=True, slots=True)
class UpstreamCall:
    """A call on its way to an upstream: `listed` is the name the client called, `tool` the upstream's own."""

    link: ClientLink
    listed: str
    upstream: Upstream
    tool: str
    arguments: dict[str, Any]
    send: Send


class ToolHook:
    """Extension points for the layers above the pipe (recording, management tools)."""

    # Set by the front: a layer above calls a tool exactly as a client's tools/call would (Code Mode).
    forward: Forward | None = None

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()

    async def tools_ready(self) -> None:
        """Return once `extra_tools` lists everything there is (a first listing must be complete)."""

    def extra_tools(self) -> list[dict[str, Any]]:
        return []

    def tool_listing(self, upstream: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The tools a client is listed: the upstreams' (as the hub names them) and the hook's own."""
        return [*upstream, *self.extra_tools()]

    def execution_tasks(self) -> Any:
        """The runs of templates served as tasks (gateway.tasks.ExecutionTasks), if this gateway runs any."""
        return None

    def skills(self) -> Sequence[Skill]:
        """The skills the gateway serves itself (Skills extension): one per template."""
        return ()

    async def call_local(self, call: LocalCall) -> dict[str, Any] | None:
        """Answer a tool the gateway serves itself; None when `call.name` is not one."""
        return None

    async def call_upstream(self, call: UpstreamCall) -> dict[str, Any]:
        """Forward one upstream call; recording wraps `call.send(arguments) -> result`."""
        return await call.send(call.arguments)

    def link_closed(self, link: ClientLink) -> None:
        """A client's session ended: release what was kept for it."""
