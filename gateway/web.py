"""The web view's actions in a gateway: through the gateway's own management tools.

Runs go to the gateway's engine and upstreams (`toolreel__run_template` with `wait: false`),
cancel and resume likewise; resuming drives the run in a task group of the gateway's (a page
that goes away must not cancel the run it resumed). Templates are saved as the person reviewed
them, then offered as `reel__<name>` like any other.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from toolreel.core.errors import ExecutionError
from toolreel.gateway.hook import LocalCall
from toolreel.gateway.links import ClientLink
from toolreel.gateway.management import Extension, GatewayHook
from toolreel.ui import RunRequest, SaveRequest, save_reviewed

if TYPE_CHECKING:
    from toolreel.core.model import TemplateRecord
    from toolreel.core.store import Store

__all__ = ["GatewayUiBackend"]

LINK_KEY = "toolreel web view"
QUICK_ANSWER = 1.0  # seconds a resume is awaited, so that a refusal reaches the page as an error


class GatewayUiBackend(Extension):
    """The web view's actions, through the gateway's own management tools; a layer of the hook, for
    the task group its resumed runs live in."""

    def __init__(self, hook: GatewayHook) -> None:
        self.hook = hook
        # The page is a client of its own: approvals it starts pause (a page cannot be elicited).
        self.link = ClientLink(key=LINK_KEY)
        self._tg: anyio.abc.TaskGroup | None = None
        self._up = anyio.Event()
        hook.extend(self)

    def service(self) -> contextlib.AbstractAsyncContextManager[None]:
        return self._serving()

    @contextlib.asynccontextmanager
    async def _serving(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            self._up.set()
            try:
                yield
            finally:
                self._tg = None
                tg.cancel_scope.cancel()

    async def store(self) -> Store:
        return await self.hook.ready_store()

    async def flush(self) -> None:
        await self.hook.recorder.writer.flush()

    async def save_template(self, request: SaveRequest) -> TemplateRecord:
        store = await self.store()
        record: TemplateRecord = await anyio.to_thread.run_sync(save_reviewed, store, request)
        return record

    async def run_template(self, request: RunRequest) -> str:
        arguments: dict[str, Any] = {"name": request.name, "inputs": dict(request.inputs), "wait": False}
        if request.version is not None:
            arguments["version"] = request.version
        answer = await self._call("toolreel__run_template", arguments)
        return str(answer["execution_id"])

    async def cancel(self, execution_id: str) -> None:
        await self._call("toolreel__cancel_execution", {"id": execution_id})

    async def resume(self, execution_id: str, response: str | None) -> None:
        arguments: dict[str, Any] = {"id": execution_id}
        if response is not None:
            arguments["response"] = response
        await self._drive("toolreel__resume_execution", arguments)

    async def retry(self, execution_id: str) -> None:
        await self._drive("toolreel__retry_execution", {"id": execution_id})

    async def _drive(self, tool: str, arguments: dict[str, Any]) -> None:
        """Resume or retry in the gateway's task group (the page may go away), awaited briefly so that a
        refusal reaches the page as an error."""
        execution_id = arguments["id"]
        await self.store()
        with anyio.move_on_after(30.0):
            await self._up.wait()
        if self._tg is None:
            raise ExecutionError("the gateway is still starting; try again in a moment", execution_id=execution_id)
        done = anyio.Event()
        outcome: list[BaseException] = []

        async def drive() -> None:
            try:
                await self._call(tool, arguments)
            except ExecutionError as exc:
                outcome.append(exc)
            finally:
                done.set()

        self._tg.start_soon(drive)
        with anyio.move_on_after(QUICK_ANSWER):
            await done.wait()
        if outcome:
            raise outcome[0]

    async def _call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self.hook.call_local(LocalCall(tool, arguments, self.link))
        if result is None:  # pragma: no cover - the tools are installed with the hook
            raise ExecutionError(f"{tool} is not available in this gateway")
        if result.get("isError"):
            text = " ".join(str(item.get("text", "")) for item in result.get("content") or [])
            raise ExecutionError(text or f"{tool} failed")
        structured: dict[str, Any] = result.get("structuredContent") or {}
        return structured
