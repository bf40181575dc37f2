"""The gateway's hook assembled in one place (as mitmproxy's `default_addons`): the recording hook and the
layers of tools over it. The layers import the management kit, never this module, so no circle ties them."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from toolreel.core import store_peek
from toolreel.gateway.management import Extension, GatewayHook
from toolreel.gateway.scripts import ScriptTools
from toolreel.gateway.tools_runs import RunTools
from toolreel.gateway.tools_search import SearchTools
from toolreel.gateway.tools_templates import TemplateTools
from toolreel.upstreams.auth import follow_store

if TYPE_CHECKING:
    from toolreel.core.store import Store
    from toolreel.gateway.search import ToolsMode
    from toolreel.upstreams.config import GatewayConfig
    from toolreel.upstreams.hub import Hub

__all__ = ["hook_factory"]


def hook_factory(
    config: GatewayConfig,
    *,
    db: str | None,
    annotate: bool,
    record: bool,
    max_concurrency: int,
    retain: float | None = None,
    tools: ToolsMode | None = None,
) -> Callable[[Hub], GatewayHook]:
    def opener() -> Store:
        from toolreel.core.store import open_store

        return open_store(db)

    follow_store(db)  # its upstreams' sign-ins live with this store

    def build(hub: Hub) -> GatewayHook:
        hook = GatewayHook(
            hub,
            opener,
            secret_values=config.secret_values(),
            annotate=annotate,
            record=record,
            peek=lambda: store_peek.peek(db),
            db=db,
        )
        hook.extend(*_extensions(hook, max_concurrency=max_concurrency, retain=retain, tools=tools))
        return hook

    return build


def _extensions(
    hook: GatewayHook, *, max_concurrency: int, retain: float | None, tools: ToolsMode | None = None
) -> list[Extension]:
    """The layers over recording, assembled here alone (as mitmproxy's `default_addons`): the template
    catalogue, runs, tool search, scripts, and with `--retain` the pruning of old executions while serving."""
    layers: list[Extension] = [
        TemplateTools(hook),
        RunTools(hook, max_concurrency),
        SearchTools(hook, tools),
        ScriptTools(hook),
    ]
    if retain is not None:
        layers.append(_Retention(hook, retain))
    return layers


class _Retention(Extension):
    """`--retain D`: old finished executions pruned while serving."""

    def __init__(self, hook: GatewayHook, age: float) -> None:
        self.hook, self.age = hook, age

    def service(self) -> contextlib.AbstractAsyncContextManager[None]:
        from toolreel.core.retention import retaining

        return retaining(self.hook.store, self.age)
