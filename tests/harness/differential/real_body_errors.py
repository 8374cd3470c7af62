"""Run by the real server's interpreter (``.venv-oss/bin/python``): the 422 detail its own models give each body.

Reads ``[[model, body], ...]`` as JSON on stdin and writes, for each, FastAPI's 422 entries (``None`` when the body
passes): the model from ``opensandbox_server.api.schema`` validated as FastAPI validates a body parameter
(``validate_python(body, from_attributes=True)``, errors without URL, ``loc`` behind ``"body"``) and encoded with
FastAPI's own ``jsonable_encoder``. Nothing here imports sandproof.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from fastapi.encoders import jsonable_encoder
from opensandbox_server.api import schema
from pydantic import TypeAdapter, ValidationError

KINDS: dict[str, Any] = {
    "list[NetworkRule]": list[schema.NetworkRule],
    "list[str]": list[str],
    "PatchSandboxMetadataRequest": schema.PatchSandboxMetadataRequest,
}


_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


def detail(kind: str, body: Any) -> list[dict[str, Any]] | None:
    """Return the 422 entries of ``body`` for the model named ``kind``, or None."""
    if kind not in _ADAPTERS:
        _ADAPTERS[kind] = TypeAdapter(KINDS.get(kind) or getattr(schema, kind))
    try:
        _ADAPTERS[kind].validate_python(body, from_attributes=True)
    except ValidationError as exc:
        return jsonable_encoder([{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)])
    return None


if __name__ == "__main__":
    json.dump([detail(kind, body) for kind, body in json.load(sys.stdin)], sys.stdout)
