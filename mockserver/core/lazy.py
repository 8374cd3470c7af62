"""Packages that import their public names on first use: one ``__getattr__`` and ``__dir__`` for them all.

A package lists, per public name, the module that defines it (relative to the package, ``".mock"``, or
absolute) and delegates its module-level ``__getattr__`` and ``__dir__`` here, so ``import mockserver.tensorlake``
loads no submodule until a name is used. A name found is stored in the package, so it is looked up once.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["lazy_dir", "lazy_name"]


def lazy_name(package: str, homes: Mapping[str, str], name: str) -> Any:
    """Return ``name`` of ``package`` from the module ``homes[name]``; AttributeError if it is not listed."""
    home = homes.get(name)
    if home is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home, package), name)
    setattr(sys.modules[package], name, value)
    return value


def lazy_dir(package: str, public: Iterable[str]) -> list[str]:
    """Return what ``dir(package)`` lists: what it holds now and every public name, loaded or not."""
    return sorted({*vars(sys.modules[package]), *public})
