"""toolreel: a recording MCP gateway.

Every tool call an agent makes through the gateway is recorded as a step of a DAG; a session
saved as a template replays in auto mode, with new inputs, without the LLM.

The packages: `toolreel.core` (model, refs, templates, store), `toolreel.upstreams` is
reached through `toolreel.gateway` (the MCP face), `toolreel.recorder`, `toolreel.templatizer`
and `toolreel.replayer`.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__: str = version("toolreel")
except PackageNotFoundError:  # pragma: no cover - running from a tree that was never installed
    __version__ = "0.0.0+unknown"
