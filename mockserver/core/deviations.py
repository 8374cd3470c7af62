"""The mocks' known deviations, as their module docstrings state them: one source for every rendering of them.

A module's docstring may carry a paragraph (or a bullet list) that starts with ``Known deviations``; a module may
also name, in ``DEVIATING_OPERATIONS``, the operations of a served OpenAPI document that deviation concerns
(``{"lifecycle": ("POST /sandboxes", ...)}``). ``docs/deviations.md`` is rendered from the paragraphs, and the
OpenSandbox mock marks the operations of the documents it serves with them.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType

__all__ = ["Deviation", "deviation_text", "deviations_of"]

_START = re.compile(r"^Known deviations[^:(]*(?:\([^)]*\))?:", re.MULTILINE)


@dataclass(frozen=True)
class Deviation:
    """One module's known deviations: its text and the document operations it concerns."""

    module: str
    text: str
    operations: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def deviation_text(doc: str) -> str | None:
    """Return the known-deviations text of a docstring (its paragraph, or its bullets joined), or None."""
    match = _START.search(doc)
    if match is None:
        return None
    text = doc[match.end() :]
    paragraphs = text.strip("\n").split("\n\n")
    if text.startswith("\n") or not paragraphs[0].strip():
        bullets = [p for p in paragraphs if p.lstrip().startswith(("*", "-"))]
        items = [" ".join(i.split()) for p in bullets for i in re.split(r"^\s*[*-] ", p, flags=re.M) if i.strip()]
        return "; ".join(items)
    return " ".join(paragraphs[0].split())


def _modules(package: str) -> list[ModuleType]:
    root = importlib.import_module(package)
    names = [package] + [m.name for m in pkgutil.walk_packages(root.__path__, prefix=f"{package}.")]
    return [importlib.import_module(name) for name in sorted(names)]


def deviations_of(package: str) -> list[Deviation]:
    """Return the known deviations of every module of ``package`` (subpackages included) that states some."""
    found = []
    for module in _modules(package):
        text = deviation_text(module.__doc__ or "")
        if text is not None:
            operations = getattr(module, "DEVIATING_OPERATIONS", {})
            found.append(Deviation(module.__name__, text, {k: tuple(v) for k, v in operations.items()}))
    return found
