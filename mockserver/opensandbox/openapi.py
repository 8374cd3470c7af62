"""The OpenAPI documents the OpenSandbox mock serves, with the operations it answers differently marked.

``GET /openapi.json`` is the lifecycle document the mock implements (the published 1.1.1 document, as the
real server serves it at the same path); ``GET /openapi/execd.json`` and ``GET /openapi/egress.json`` are the
execd (port 44772) and egress sidecar (port 18080) documents. They are package data
(``mockserver/opensandbox/specs/``). Every operation a known deviation concerns carries an
``x-sandproof-deviation`` list of ``{"module", "deviation"}``, built from the same module docstrings as
``docs/deviations.md`` (:mod:`mockserver.core.deviations`); a lifecycle operation is marked under ``/v1`` and bare.

Known deviations: the execd and egress documents are served by the lifecycle server itself (the real one
serves only its own document; the real execd and sidecar serve none), with no key needed, like
``/openapi.json``; ``/docs`` and ``/redoc`` are not served.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from importlib import resources
from typing import Any

from mockserver.core.deviations import deviations_of

__all__ = ["DOCUMENTS", "EXTENSION", "SERVED_AT", "document", "unknown_deviating_operations"]

#: The documents by name, as packaged.
DOCUMENTS = {"lifecycle": "lifecycle-1.1.1.json", "execd": "execd.json", "egress": "egress.json"}
#: Where the mock serves each document.
SERVED_AT = {"lifecycle": "/openapi.json", "execd": "/openapi/execd.json", "egress": "/openapi/egress.json"}
#: The extension that marks an operation the mock answers differently.
EXTENSION = "x-sandproof-deviation"
_METHODS = ("get", "put", "post", "delete", "patch")


def _published(name: str) -> dict[str, Any]:
    text = resources.files(__package__ or "mockserver.opensandbox").joinpath("specs", DOCUMENTS[name]).read_text()
    data: dict[str, Any] = json.loads(text)
    return data


def _operations(doc: dict[str, Any], name: str, label: str) -> list[dict[str, Any]]:
    """Return the operations of ``doc`` a label (``"POST /sandboxes"``) names: bare and under ``/v1``."""
    method, path = label.split(" ", 1)
    prefixes = ("", "/v1") if name == "lifecycle" else ("",)
    found = [doc["paths"].get(prefix + path, {}).get(method.lower()) for prefix in prefixes]
    return [op for op in found if isinstance(op, dict)]


@cache
def _marked(name: str) -> dict[str, Any]:
    doc = _published(name)
    for deviation in deviations_of("mockserver.opensandbox"):
        for label in deviation.operations.get(name, ()):
            for operation in _operations(doc, name, label):
                operation.setdefault(EXTENSION, []).append({"module": deviation.module, "deviation": deviation.text})
    return doc


def document(name: str) -> dict[str, Any]:
    """Return a copy of the served document ``name`` (one of :data:`DOCUMENTS`) with its deviations marked."""
    if name not in DOCUMENTS:
        raise KeyError(name)
    return copy.deepcopy(_marked(name))


def unknown_deviating_operations() -> list[str]:
    """Return the ``DEVIATING_OPERATIONS`` labels that name no operation of their document (stale entries)."""
    problems = []
    for deviation in deviations_of("mockserver.opensandbox"):
        for name, labels in deviation.operations.items():
            if name not in DOCUMENTS:
                problems.append(f"{deviation.module}: no document {name!r}")
                continue
            doc = _published(name)
            problems += [f"{deviation.module}: {name} {label}" for label in labels if not _operations(doc, name, label)]
    return problems
