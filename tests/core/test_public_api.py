"""Each package's public face is its `__init__` and its `__all__`: every public name the package
defines or re-exports is listed, and every listed name exists (httpx pins its face the same way)."""

from __future__ import annotations

import importlib
import types

import pytest

PACKAGES = (
    "toolreel",
    "toolreel.core",
    "toolreel.core.store",
    "toolreel.upstreams",
    "toolreel.gateway",
    "toolreel.recorder",
    "toolreel.templatizer",
    "toolreel.replayer",
)


@pytest.mark.parametrize("name", PACKAGES)
def test_the_public_names_of_a_package_are_its_all(name: str) -> None:
    package = importlib.import_module(name)
    declared = getattr(package, "__all__", None)
    assert declared is not None, f"{name} has no __all__"
    public = {attr for attr, value in vars(package).items() if attr[0].islower() or attr[0].isupper()}
    public = {attr for attr in public if _own(name, getattr(package, attr)) and attr != "TYPE_CHECKING"}
    assert sorted(public - set(declared)) == [], f"{name} defines public names that its __all__ does not list"
    assert len(set(declared)) == len(declared)
    for attr in declared:
        assert hasattr(package, attr), f"{name}.__all__ names {attr}, which it lacks"


def _own(package: str, value: object) -> bool:
    """Defined in this package (or a plain constant): what it imports to use is not its face."""
    if isinstance(value, types.ModuleType):
        return False
    module = getattr(value, "__module__", None)
    return module is None or module == package or module.startswith(package + ".")


@pytest.mark.parametrize("name", ["toolreel.core", "toolreel.recorder", "toolreel.ui"])
def test_a_face_loaded_on_first_use_refuses_a_name_it_does_not_have(name: str) -> None:
    package = importlib.import_module(name)
    with pytest.raises(AttributeError, match=f"module '{name}' has no attribute 'no_such_name'"):
        package.no_such_name  # noqa: B018 - the lookup is the test
