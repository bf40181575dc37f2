"""The distribution installs one import name, `toolreel`, and knows its version."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import toolreel

REPO = Path(__file__).resolve().parents[1]
PRODUCT = ("core", "gateway", "recorder", "replayer", "templatizer", "ui", "upstreams")


@pytest.mark.slow
def test_version_is_printed_by_the_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolreel", "--version"], capture_output=True, text=True, timeout=60, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"toolreel {toolreel.__version__}"
    assert toolreel.__version__[0].isdigit()


@pytest.mark.slow
def test_the_wheel_adds_only_the_toolreel_import_name(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), REPO],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("toolreel-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == {"toolreel"}
    for package in PRODUCT:  # every product folder is in it, under the one name
        assert f"toolreel/{package}/__init__.py" in names
    assert "toolreel/py.typed" in names
    assert "toolreel/core/store/__init__.py" in names
    for asset in ("index.html", "app.js", "vendor/dagre.esm.js", "vendor/dagre.LICENSE"):  # the web view, offline
        assert f"toolreel/ui/static/{asset}" in names


def test_every_product_module_is_packaged() -> None:
    """A subpackage added to a product folder must be listed in pyproject's packages."""
    listed = {line.strip().strip('",') for line in (REPO / "pyproject.toml").read_text().splitlines()}
    for package in PRODUCT:
        for init in (REPO / package).rglob("__init__.py"):
            dotted = ".".join(("toolreel", *init.parent.relative_to(REPO).parts))
            assert dotted in listed, f"{dotted} is missing from [tool.setuptools] packages"


def _imports_between_packages() -> dict[str, set[str]]:
    """`{package: {other packages it imports}}` over every import statement, at any depth."""
    import ast

    graph: dict[str, set[str]] = {}
    for package in PRODUCT:
        used: set[str] = set()
        for path in (REPO / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                for name in names:
                    parts = name.split(".")
                    if parts[0] == "toolreel" and len(parts) > 1 and parts[1] != package:
                        used.add(parts[1])
        graph[package] = used
    return graph


def test_no_import_cycle_between_the_packages() -> None:
    graph = _imports_between_packages()
    assert graph["core"] == set(), "the core imports nothing from the packages above it"
    assert graph["upstreams"] <= {"core"}, "the upstream pool is shared: it must not import its users"
    done: set[str] = set()

    def visit(package: str, path: tuple[str, ...]) -> None:
        assert package not in path, f"import cycle: {' -> '.join((*path, package))}"
        if package in done:
            return
        for other in graph.get(package, ()):
            visit(other, (*path, package))
        done.add(package)

    for package in graph:
        visit(package, ())
