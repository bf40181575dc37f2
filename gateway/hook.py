"""The seam between the gateway's pipe and the layers above it (recording, the management tools).

`Front` calls a `ToolHook` at each extension point; the default forwards and adds nothing, so the
pipe works alone. `Send` is how the hook forwards a call: resolved arguments in, the upstream's
result out.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc

from toolreel.gateway.links import ClientLink
from toolreel.upstreams.upstream import Upstream

__all__ = ["Send", "ToolHook"]

Send = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


class ToolHook:
    """Extension points for the layers above the pipe (recording, management tools)."""

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()

    async def tools_ready(self) -> None:
        """Return once `extra_tools` lists everything there is (a first listing must be complete)."""

    def extra_tools(self) -> list[dict[str, Any]]:
        return []

    async def call_local(
        self, name: str, arguments: dict[str, Any], ctx: Any, link: ClientLink
    ) -> dict[str, Any] | None:
        """Answer a tool the gateway serves itself; None when `name` is not one."""
        return None

    async def call_upstream(
        self, link: ClientLink, listed: str, upstream: Upstream, tool: str, arguments: dict[str, Any], send: Send
    ) -> dict[str, Any]:
        """Forward one upstream call; recording wraps `send(arguments) -> result`."""
        result: dict[str, Any] = await send(arguments)
        return result

    def link_closed(self, link: ClientLink) -> None:
        """A client's session ended: release what was kept for it."""
