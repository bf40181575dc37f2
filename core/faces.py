"""`lazy_face`: a package's public names, each imported from its module when first used (PEP 562).

Every product module imports some `core` module, and a command imports only what it uses: a package
whose face would otherwise import its whole tree (`core`, `recorder`, `ui`) names where each public
name lives instead, and the package's `__getattr__` imports that module on the first lookup.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping

__all__ = ["lazy_face"]


def lazy_face(package: str, homes: Mapping[str, str]) -> Callable[[str], object]:
    """The `__getattr__` of `package`: `homes` maps a public name to its module, relative to the package."""

    def __getattr__(name: str) -> object:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{homes[name]}"), name)
        setattr(sys.modules[package], name, value)  # once: later lookups find it directly
        return value

    return __getattr__
