"""What the web view asks of the process that serves it.

`UiBackend` is the seam: the gateway implements it over its own management tools (runs go to
its engine and upstreams); `StoreBackend` serves `toolreel ui` on its own, over a store alone:
it shows and templatizes, and queues nothing it cannot drive.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from toolreel.core.errors import ExecutionError, NotFoundError
from toolreel.core.model import TemplateDraft

if TYPE_CHECKING:
    from toolreel.core.model import TemplateRecord
    from toolreel.core.store import Store
    from toolreel.core.template import Template

__all__ = ["RunRequest", "SaveRequest", "StoreBackend", "UiBackend", "save_reviewed"]


@dataclass(frozen=True, slots=True)
class SaveRequest:
    """A template the person reviewed, ready to store (already validated)."""

    name: str
    definition: Mapping[str, Any]
    description: str | None
    source_executions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RunRequest:
    name: str
    inputs: Mapping[str, Any]
    version: int | None = None


class UiBackend(Protocol):
    """The actions behind the page's buttons; reads go to `store()` directly."""

    async def store(self) -> Store:
        """The store, opened (StoreError, saying what to do, when it cannot be)."""
        ...

    async def flush(self) -> None:
        """Write what this process recorded but has not stored yet, so a page shows it."""
        ...

    async def save_template(self, request: SaveRequest) -> TemplateRecord: ...

    async def run_template(self, request: RunRequest) -> str:
        """Start a run without waiting for it; returns the execution id."""
        ...

    async def cancel(self, execution_id: str) -> None: ...

    async def resume(self, execution_id: str, response: str | None) -> None: ...

    async def retry(self, execution_id: str) -> None: ...


_NO_ENGINE = (
    "this web view runs without upstreams (toolreel ui): {what} from the view of `toolreel serve --http`, "
    "or with `toolreel {command}`"
)


class StoreBackend:
    """`toolreel ui`: the store alone. Runs, cancels and resumes need upstreams and an engine."""

    def __init__(self, open_store: Callable[[], Store]) -> None:
        self._open_store = open_store
        self._store: Store | None = None
        self._lock = anyio.Lock()

    async def store(self) -> Store:
        async with self._lock:
            if self._store is None:
                self._store = await anyio.to_thread.run_sync(self._open_store)
            return self._store

    async def flush(self) -> None:
        return None

    async def save_template(self, request: SaveRequest) -> TemplateRecord:
        store = await self.store()
        return await anyio.to_thread.run_sync(lambda: save_reviewed(store, request))

    async def run_template(self, request: RunRequest) -> str:
        raise ExecutionError(_NO_ENGINE.format(what="run it", command=f"run {request.name}"))

    async def cancel(self, execution_id: str) -> None:
        raise ExecutionError(_NO_ENGINE.format(what="cancel it", command=f"executions cancel {execution_id}"))

    async def resume(self, execution_id: str, response: str | None) -> None:
        raise ExecutionError(_NO_ENGINE.format(what="resume it", command=f"executions resume {execution_id}"))

    async def retry(self, execution_id: str) -> None:
        raise ExecutionError(_NO_ENGINE.format(what="retry it", command=f"executions retry {execution_id}"))

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


def save_reviewed(store: Store, request: SaveRequest) -> TemplateRecord:
    """Validate (schema, refs, cycles through saved templates) and store a new version; blocking."""
    from toolreel.core.template_io import check_template_cycles, parse_template, stored_template

    template = parse_template(request.definition, source=f"template {request.name!r}")

    def lookup(name: str) -> Template | None:
        try:
            return stored_template(store.get_template(name))
        except NotFoundError:
            return None

    check_template_cycles(template, lookup)  # a `template` step may not lead back to this one
    return store.save_template(
        TemplateDraft(request.name, request.definition, request.description, tuple(request.source_executions))
    )
