"""The web view's actions in a gateway: a thin adapter over the typed services every front uses.

Runs go to the gateway's `Runs` (its engine and upstreams), started without waiting; resuming and
retrying drive the run in a task group of the gateway's (a page that goes away must not cancel the run
it resumed). Templates are saved through the `Catalogue` as the person reviewed them, then offered as
`reel__<name>` like any other.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

import anyio
import anyio.abc

from toolreel.core.errors import ExecutionError
from toolreel.gateway.management import Extension, GatewayHook
from toolreel.gateway.runs import RetryRun, StartRun
from toolreel.gateway.tools_runs import RunTools
from toolreel.gateway.tools_templates import TemplateTools
from toolreel.ui import RunRequest, SaveRequest

if TYPE_CHECKING:
    from toolreel.core.model import Execution, TemplateRecord
    from toolreel.core.store import Store

__all__ = ["GatewayUiBackend"]

QUICK_ANSWER = 1.0  # seconds a resume is awaited, so that a refusal reaches the page as an error


class GatewayUiBackend(Extension):
    """The web view's actions over the gateway's `Runs` and `Catalogue`; a layer of the hook, for the task
    group its resumed runs live in. The page is no MCP client: approvals of runs it starts pause (no
    client can be asked), and are answered from the page."""

    def __init__(self, hook: GatewayHook) -> None:
        self.hook = hook
        self.runs = _layer(hook, RunTools).runs
        self.catalogue = _layer(hook, TemplateTools).catalogue
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
        return await self.catalogue.save(request)

    async def run_template(self, request: RunRequest) -> str:
        execution = await self.runs.start(StartRun(request.name, request.inputs, request.version, wait=False))
        return execution.id

    async def cancel(self, execution_id: str) -> None:
        await self.runs.cancel(execution_id)

    async def resume(self, execution_id: str, response: str | None) -> None:
        await self._drive(execution_id, lambda: self.runs.resume(execution_id, response))

    async def retry(self, execution_id: str) -> None:
        await self._drive(execution_id, lambda: self.runs.retry(RetryRun(execution_id)))

    async def _drive(self, execution_id: str, drive_run: Callable[[], Awaitable[Execution]]) -> None:
        """Resume or retry in the gateway's task group (the page may go away), awaited briefly so that a
        refusal reaches the page as an error."""
        await self.store()
        with anyio.move_on_after(30.0):
            await self._up.wait()
        if self._tg is None:
            raise ExecutionError("the gateway is still starting; try again in a moment", execution_id=execution_id)
        done = anyio.Event()
        outcome: list[BaseException] = []

        async def drive() -> None:
            try:
                await drive_run()
            except ExecutionError as exc:
                outcome.append(exc)
            finally:
                done.set()

        self._tg.start_soon(drive)
        with anyio.move_on_after(QUICK_ANSWER):
            await done.wait()
        if outcome:
            raise outcome[0]


_L = TypeVar("_L", bound=Extension)


def _layer(hook: GatewayHook, kind: type[_L]) -> _L:
    """The hook's layer of `kind` (the assembly adds one of each)."""
    for extension in hook.extensions:
        if isinstance(extension, kind):
            return extension
    raise ExecutionError(f"this gateway has no {kind.__name__}: the web view needs the template and run layers")
