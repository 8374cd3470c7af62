"""Things built on first use: packages that import their public names late, and mappings read late.

A package lists, per public name, the module that defines it (relative to the package, ``".mock"``, or
absolute) and delegates its module-level ``__getattr__`` and ``__dir__`` here, so ``import mockserver.tensorlake``
loads no submodule until a name is used. A name found is stored in the package, so it is looked up once.
:class:`LazyMapping` is a mapping whose contents a function gives on first read (a mock's fault catalogue:
building its app neither reads the fault methods' signatures nor loads the catalogue module).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

__all__ = ["LazyMapping", "lazy_dir", "lazy_name"]

K = TypeVar("K")
V = TypeVar("V")


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


class LazyMapping(Mapping[K, V]):
    """A mapping whose contents ``load()`` gives on first read; later reads use them as they were."""

    def __init__(self, load: Callable[[], Mapping[K, V]]) -> None:
        """Keep ``load`` for the first read."""
        self._load = load
        self._loaded: Mapping[K, V] | None = None

    def _contents(self) -> Mapping[K, V]:
        if self._loaded is None:
            self._loaded = self._load()
        return self._loaded

    def __getitem__(self, key: K) -> V:
        """Return the value of ``key``, loading the contents first if need be."""
        return self._contents()[key]

    def __iter__(self) -> Iterator[K]:
        """Iterate over the keys, loading the contents first if need be."""
        return iter(self._contents())

    def __len__(self) -> int:
        """Return the number of keys, loading the contents first if need be."""
        return len(self._contents())
