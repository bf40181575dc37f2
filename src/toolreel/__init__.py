"""toolreel: a recording MCP gateway.

Every tool call an agent makes through the gateway is recorded as a step of a DAG; a session
saved as a template replays in auto mode, with new inputs, without the LLM.

The packages: `toolreel.core` (model, refs, templates, store), `toolreel.upstreams` is
reached through `toolreel.gateway` (the MCP face), `toolreel.recorder`, `toolreel.templatizer`
and `toolreel.replayer`.
"""

from __future__ import annotations

__all__ = ["__version__"]

# The one place of the version: pyproject.toml reads it from here (setuptools' `attr:`), the gateway
# names itself with it to clients and servers, and `toolreel --version` prints it without reading
# the installed distribution's metadata (a noticeable part of a command's start).
__version__ = "0.1.0"
