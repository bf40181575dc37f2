"""What `toolreel serve` skips loading at start leaves nothing missing: a deferred package's
re-exports resolve on first use, a model defined while validators are deferred validates and
serializes like any other, and what loads later (the secret scanner, the web view's page) is
there when named. Each check runs in a fresh interpreter, whose imports are its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each check is a fresh interpreter


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_deferred_package_imports_its_submodules_without_running_its_init() -> None:
    out = _run(
        """
        import sys
        from toolreel.gateway.launch import _REEXPORTING_PACKAGES, _defer_package_init
        for name in _REEXPORTING_PACKAGES:
            _defer_package_init(name)
        from mcp.server.lowlevel.server import Server
        from mcp.client.session import ClientSession
        print("mcp.server.mcpserver" in sys.modules, "mcp.client.client" in sys.modules)
        """
    )
    assert out == "False False"


def test_a_re_export_of_a_deferred_package_runs_its_init_then() -> None:
    out = _run(
        """
        import sys
        from toolreel.gateway.launch import _REEXPORTING_PACKAGES, _defer_package_init
        for name in _REEXPORTING_PACKAGES:
            _defer_package_init(name)
        import mcp.server.lowlevel
        from mcp.server import MCPServer
        from mcp import ClientSession, Tool
        import mcp.client
        print(MCPServer.__module__, ClientSession.__name__, Tool.__name__, mcp.client.Client.__name__)
        try:
            mcp.no_such_name
        except AttributeError:
            print("missing")
        """
    )
    assert out.splitlines() == ["mcp.server.mcpserver.server ClientSession Tool Client", "missing"]


def test_models_defined_with_deferred_validators_work_and_the_defaults_come_back() -> None:
    out = _run(
        """
        from pydantic import BaseModel, TypeAdapter
        from toolreel.gateway.launch import _validators_built_on_first_use
        with _validators_built_on_first_use():
            class Point(BaseModel):
                x: int
                tags: list[str] = []
            points = TypeAdapter(list[Point])
        print(Point.__pydantic_complete__, points.pydantic_complete)
        print(Point.model_validate({"x": "3"}).x, points.validate_python([{"x": 1}])[0].x)
        print(points.dump_json([Point(x=2)]).decode())
        class Later(BaseModel):
            y: int
        print(Later.__pydantic_complete__, TypeAdapter(list[int]).pydantic_complete)
        """
    )
    assert out.splitlines() == ["False False", "3 1", '[{"x":2,"tags":[]}]', "True True"]


_WIRE_SAMPLES = """
SAMPLES = {
    "CallToolResult": {"content": [{"type": "text", "text": "hi"}], "isError": False, "structuredContent": {"a": 1}},
    "ListToolsResult": {
        "tools": [{"name": "t", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}}]
    },
    "InitializeResult": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}
    },
}
import mcp_types
for name, sample in SAMPLES.items():
    cls = getattr(mcp_types, name)
    print(name, cls.__pydantic_complete__, cls.model_validate(sample).model_dump_json(by_alias=True, exclude_none=True))
print(mcp_types.client_request_adapter.validate_python({"method": "ping"}).method)
"""


def test_sdk_wire_types_loaded_the_serve_way_validate_on_first_use_as_when_built_at_once() -> None:
    eager = _run(_WIRE_SAMPLES).splitlines()
    serve_way = """
from toolreel.gateway.launch import _REEXPORTING_PACKAGES, _defer_package_init, _load_for_good
for name in _REEXPORTING_PACKAGES:
    _defer_package_init(name)
_load_for_good("toolreel.gateway.serve")
"""
    served = _run(serve_way + _WIRE_SAMPLES).splitlines()
    assert [line.split(" ", 2)[1] for line in eager[:3]] == ["True"] * 3
    assert [line.split(" ", 2)[1] for line in served[:3]] == ["False"] * 3  # deferred until this first use
    assert [line.split(" ", 2)[::2] for line in served[:3]] == [line.split(" ", 2)[::2] for line in eager[:3]]
    assert served[3] == eager[3] == "ping"


def test_the_servers_are_spawned_before_the_secret_scanner_and_dotenv_load(tmp_path: Path) -> None:
    """`toolreel serve` reads its config and spawns its stdio servers first: what reading needs, no more."""
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"mcpServers": {"one": {"command": sys.executable, "args": ["-c", "pass"]}}}))
    out = _run(
        f"""
        import json, sys
        from toolreel.upstreams import prespawn
        prespawn.prespawn(["serve", "--config", {str(config)!r}])
        spawned = prespawn.take("one")
        spawned.process.wait(timeout=30)
        later = ("dotenv", "toolreel.core.secrets", "re2", "pydantic", "mcp", "anyio")
        print(json.dumps(sorted(m for m in sys.modules if any(m == x or m.startswith(x + ".") for x in later))))
        """
    )
    assert json.loads(out) == []


def test_the_web_views_page_loads_when_first_named() -> None:
    """A stdio gateway saves templates through `toolreel.ui` and serves no page: importing the package does
    not load the page's app (Starlette routes, the review and its dry replay), naming it does."""
    out = _run(
        """
        import sys
        import toolreel.ui
        from toolreel.ui import SaveRequest, save_reviewed
        print("toolreel.ui._app" in sys.modules, "toolreel.replayer" in sys.modules)
        from toolreel.ui import ui_app, ui_authorized
        print(ui_app.__module__, ui_authorized.__module__, toolreel.ui.COOKIE == toolreel.ui._auth.COOKIE)
        """
    )
    assert out.splitlines() == ["False False", "toolreel.ui._app toolreel.ui._auth True"]
