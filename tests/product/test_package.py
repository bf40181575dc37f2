"""The distribution installs one import name, `toolreel`, and knows its version."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import toolreel

REPO = Path(__file__).resolve().parents[2]
PRODUCT = ("core", "gateway", "recorder", "replayer", "templatizer", "ui", "upstreams")


@pytest.mark.slow
def test_version_is_printed_by_the_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolreel", "--version"], capture_output=True, text=True, timeout=60, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"toolreel {toolreel.__version__}"
    assert toolreel.__version__[0].isdigit()


def test_the_version_is_the_distributions() -> None:
    """One version: the package's `__version__` is what the installed distribution declares."""
    assert importlib.metadata.version("toolreel") == toolreel.__version__


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


def _imports_inside(package: str) -> dict[str, set[str]]:
    """`{module: {modules of the same package it imports}}` over every import statement (top-level,
    inside functions, under TYPE_CHECKING): a circle through any of them still ties the modules together."""
    import ast

    folder = REPO / package
    modules = {".".join(path.relative_to(folder).with_suffix("").parts) for path in folder.rglob("*.py")}
    prefix = f"toolreel.{package}."
    graph: dict[str, set[str]] = {module: set() for module in modules}
    for module in modules:
        path = folder.joinpath(*module.split(".")).with_suffix(".py")
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name.removeprefix(prefix) for alias in node.names if alias.name.startswith(prefix)]
            elif isinstance(node, ast.ImportFrom) and node.module == prefix[:-1]:  # from the package's face
                targets = [alias.name if alias.name in modules else "__init__" for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(prefix):
                inner = node.module.removeprefix(prefix)
                targets = [inner, *(f"{inner}.{alias.name}" for alias in node.names)]
            graph[module] |= {target for target in targets if target in modules and target != module}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(frozenset(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("package", PRODUCT)
def test_no_import_circle_inside_a_package(package: str) -> None:
    """Modules of one package form no circle (a ring of imports, at any depth, TYPE_CHECKING ones included):
    a seam (a protocol, a value) unties what would otherwise import each other."""
    found = _circles(_imports_inside(package))
    assert found == [], f"import circle in {package}: {[sorted(c) for c in found]}"
