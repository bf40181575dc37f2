"""The `toolreel` console script.

`toolreel serve` spawns its stdio upstreams before the command line framework and the MCP SDK are
imported (most of a second of CPU): the servers start while the gateway is still loading. The
servers need that CPU too (two cores shared with five starting servers), so what the gateway
does not load, it does not take from them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import types
from collections.abc import Iterator
from typing import Any

from toolreel._loading import loading

__all__ = ["main"]

# Packages whose `__init__` re-exports their whole tree (the high-level server, the HTTP client,
# the web stack): the gateway imports the submodules it uses by their full names and needs none
# of those re-exports, which cost about a tenth of a second of CPU at every start.
_REEXPORTING_PACKAGES = ("mcp", "mcp.server", "mcp.client")


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["serve"]:  # the other commands start no upstream, and import only what they use
        from toolreel.gateway._trim import use_system_allocator

        use_system_allocator()  # first: it may start this process again (gateway/_trim.py)
        with loading():
            from toolreel.upstreams.prespawn import prespawn

            prespawn(argv)
        for name in _REEXPORTING_PACKAGES:
            _defer_package_init(name)
        _load_for_good("toolreel.gateway.serve")
    elif not argv or any(flag in argv for flag in _HELP_FLAGS):
        _load_help_renderer()
    with loading():
        from toolreel.gateway.cli import main as run_cli

    run_cli()


_HELP_FLAGS = ("--help", "-h")


class _Markdown:
    """Stands in for `rich.markdown.Markdown` in Typer's help renderer: making one makes the real one."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        from rich.markdown import Markdown

        return Markdown(*args, **kwargs)


class _Traceback:
    """Stands in for `rich.traceback.Traceback` in Typer's help renderer: it only calls `from_exception`."""

    @classmethod
    def from_exception(cls, *args: Any, **kwargs: Any) -> Any:
        from rich.traceback import Traceback

        return Traceback.from_exception(*args, **kwargs)


def _load_help_renderer() -> None:
    """Typer's help renderer (`typer.rich_utils`) imports `rich.markdown` (and `markdown_it`) and
    `rich.traceback` (and `rich.pretty`, `attrs`) when it loads, for help written in Markdown and for
    pretty tracebacks: about a third of `toolreel --help`'s CPU, for neither (the help is Rich markup,
    pretty exceptions are off). It is loaded here with stand-ins that load the real class when used;
    the stand-ins leave `sys.modules` at once, so any other importer gets the real modules."""
    if "typer.rich_utils" in sys.modules:
        return
    stand_ins = {"rich.markdown": ("Markdown", _Markdown), "rich.traceback": ("Traceback", _Traceback)}
    placed = [name for name in stand_ins if name not in sys.modules]
    for name in placed:
        module = types.ModuleType(name)
        setattr(module, *stand_ins[name])
        sys.modules[name] = module
    try:
        importlib.import_module("typer.rich_utils")
    finally:
        for name in placed:
            del sys.modules[name]


def _load_for_good(module: str) -> None:
    """Import the gateway (the SDK's ~550 pydantic models: most of its start-up CPU) without
    cyclic collections: everything it allocates lives as long as the process, so collecting
    finds nothing and costs about a sixth of the import. Frozen afterwards, those objects are
    not scanned again by the collections that serving triggers."""
    with loading(), _validators_built_on_first_use():
        __import__(module)


def _defer_package_init(name: str) -> None:
    """Register package `name` with its `__path__` set but its `__init__` not yet run: imports of
    its submodules work as usual, and the first lookup of anything else on the package (a
    re-exported name) runs the real `__init__` then, so nothing is missing, only later."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def __getattr__(attr: str) -> Any:  # PEP 562: called only for names the module lacks
        del package.__dict__["__getattr__"]  # once: the real module takes over
        loader.exec_module(package)
        return getattr(package, attr)

    package.__dict__["__getattr__"] = __getattr__
    sys.modules[name] = package
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, package)


@contextlib.contextmanager
def _validators_built_on_first_use() -> Iterator[None]:
    """Pydantic builds the validator and serializer of every model and module-level `TypeAdapter`
    as it is defined: for the SDK's wire types, about a quarter of the gateway's start-up CPU,
    mostly for types a gateway never validates (it forwards their JSON). Defined in this block,
    they are built on first use instead: pydantic's own `defer_build`, made the default, which
    the SDK's definitions do not override. It takes two pydantic internals; a pydantic without
    them simply builds everything at once, as before."""
    try:
        from pydantic import TypeAdapter
        from pydantic._internal._config import config_defaults
    except ImportError:  # pragma: no cover - another pydantic layout
        yield
        return
    adapter_default = TypeAdapter.__dict__.get("_defer_build")
    if config_defaults.get("defer_build") is not False or not isinstance(adapter_default, property):
        yield  # pragma: no cover - another pydantic layout
        return
    config_defaults["defer_build"] = True
    setattr(TypeAdapter, "_defer_build", property(lambda _adapter: True))  # noqa: B010 - a private slot
    try:
        yield
    finally:
        config_defaults["defer_build"] = False
        setattr(TypeAdapter, "_defer_build", adapter_default)  # noqa: B010
