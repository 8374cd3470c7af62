"""Generate the TensorLake OpenAPI document (``openapi.json``) from the record declarations.

The schemas are pydantic's JSON Schemas of :mod:`.model.bodies` and :mod:`.model.wire` (requests, validation mode) and
:mod:`.model.answers` (answers, serialisation mode), written in OpenAPI 3.0's dialect (``nullable``, boolean
``exclusiveMinimum``); the operations are :data:`OPERATIONS`, one line per route and method, served again under
``/v1/namespaces/{ns}``. The mock serves the committed file (generating it costs time a request should not
pay); a test fails when the file is not what this module generates.

    python -m mockserver.tensorlake.openapi           # print the document
    python -m mockserver.tensorlake.openapi --write   # rewrite mockserver/tensorlake/openapi.json
    python -m mockserver.tensorlake.openapi --check   # exit 1 when the committed file is stale
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from .model import answers, bodies, wire
from .model.settings import LIMITS

__all__ = ["DOCUMENT_PATH", "OPERATIONS", "Operation", "document", "main", "rendered"]

DOCUMENT_PATH = Path(__file__).with_name("openapi.json")
REF = "#/components/schemas/{model}"

INFO = {
    "title": "TensorLake sandbox API (sandproof mock)",
    "version": "0.5.163",
    "description": (
        "The lifecycle API of TensorLake sandboxes as the sandproof mock serves it, written from the wire behaviour "
        "of the tensorlake SDK 0.5.161-0.5.163. Every path is also served under /v1/namespaces/{ns}. The sandbox "
        "proxy and the in-sandbox management API are routed by Host header and are not described here; sandbox "
        "pools are not implemented (501). Numbers have upper bounds (maximum) the mock enforces with 400 "
        "invalid_value; IPv4 CIDRs in network policies must not have host bits set."
    ),
}

#: What each error status means, wherever it is answered (an operation may say more).
ERRORS = {
    "400": "invalid request",
    "401": "missing or malformed bearer key",
    "404": "no such sandbox or snapshot",
    "409": "conflict with the current state or a taken name",
    "413": "request body over 1 MiB",
}


@dataclass(frozen=True)
class Operation:
    """One route and method: its id, its answers (status -> description, or (description, schema)) and inputs."""

    method: str
    path: str
    operation_id: str
    answers: dict[str, str | tuple[str, str | None]]
    body: tuple[str, bool] | None = None
    query: tuple[tuple[str, dict[str, Any]], ...] = ()
    summary: str | None = None
    description: str | None = None
    id_description: str = "sandbox id or name"
    extra_params: tuple[dict[str, Any], ...] = field(default=())


def _bounded(key: str, minimum: int = 0) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "maximum": LIMITS[key]}


_WAIT = (("wait_ms", _bounded("wait_ms")),)

#: Every lifecycle route, in document order.
OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "get",
        "/sandboxes",
        "listSandboxes",
        {"200": ("sandboxes", "ListSandboxesResponse"), "401": ""},
        summary="List the tenant's sandboxes",
    ),
    Operation(
        "post",
        "/sandboxes",
        "createSandbox",
        {
            "200": ("running, or pending when the clock is manual", "CreateSandboxResponse"),
            "202": ("accepted (wait: false)", "CreateSandboxResponse"),
            "400": "",
            "401": "",
            "404": "",
            "409": "",
            "413": "",
            "422": ("the sandbox failed to start", "LifecycleFailure"),
            "501": "pool claims are not implemented",
            "504": ("still pending when the request budget ran out", "LifecycleFailure"),
        },
        body=("CreateSandboxRequest", False),
        summary="Create a sandbox (blocking unless wait is false)",
    ),
    Operation("get", "/sandboxes/{sid}", "getSandbox", {"200": ("the sandbox", "SandboxInfo"), "401": "", "404": ""}),
    Operation(
        "patch",
        "/sandboxes/{sid}",
        "updateSandbox",
        {"200": ("the updated sandbox", "SandboxInfo"), "400": "", "401": "", "404": "", "409": "", "413": ""},
        body=("UpdateSandboxRequest", True),
    ),
    Operation(
        "delete",
        "/sandboxes/{sid}",
        "deleteSandbox",
        {"200": ("the terminated sandbox", "SandboxInfo"), "401": "", "404": ""},
    ),
    Operation(
        "post",
        "/sandboxes/{sid}/suspend",
        "suspendSandbox",
        {
            "200": ("suspended", "SandboxInfo"),
            "202": ("still suspending", "SandboxInfo"),
            "400": "invalid request, or an ephemeral (unnamed) sandbox, which cannot be suspended",
            "401": "",
            "404": "",
            "409": "",
        },
        query=_WAIT,
        description=(
            "Only named sandboxes can be suspended: an ephemeral (unnamed) sandbox answers 400 ephemeral_sandbox, "
            "a sandbox that is not running 409 invalid_state."
        ),
    ),
    Operation(
        "post",
        "/sandboxes/{sid}/resume",
        "resumeSandbox",
        {
            "200": ("running", "SandboxInfo"),
            "202": ("still resuming", "SandboxInfo"),
            "400": "",
            "401": "",
            "404": "",
            "409": "",
        },
        query=_WAIT,
    ),
    Operation(
        "post",
        "/sandboxes/{sid}/snapshot",
        "snapshotSandbox",
        {"200": ("snapshot started", "CreateSnapshotResponse"), "400": "", "401": "", "404": "", "409": "", "413": ""},
        body=("SnapshotRequest", False),
    ),
    Operation(
        "get",
        "/sandboxes/{sid}/snapshots",
        "listSandboxSnapshots",
        {"200": ("snapshots", "ListSnapshotsResponse"), "401": "", "404": ""},
    ),
    Operation(
        "post",
        "/sandboxes/{sid}/copy",
        "copySandbox",
        {"200": ("copies", "CopySandboxResponse"), "400": "", "401": "", "404": "", "409": ""},
        query=(("times", _bounded("times", 1)),),
    ),
    Operation(
        "post",
        "/sandboxes/{sid}/file_systems",
        "attachFileSystem",
        {"200": ("the sandbox", "SandboxInfo"), "400": "", "401": "", "404": "", "409": "", "413": ""},
        body=("FileSystemMount", True),
    ),
    Operation(
        "delete",
        "/sandboxes/{sid}/file_systems",
        "detachFileSystem",
        {"200": ("the sandbox", "SandboxInfo"), "400": "", "401": "", "404": "", "413": ""},
        body=("DetachFileSystem", True),
    ),
    Operation(
        "get",
        "/sandboxes/{sid}/logs",
        "getSandboxLogs",
        {"200": ("log lines", "LogsResponse"), "400": "", "401": "", "404": ""},
        query=(
            ("level", {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 6}}),
            ("processId", {"type": "string"}),
            ("body", {"type": "string"}),
            ("head", _bounded("head")),
            ("tail", _bounded("tail")),
            ("nextToken", {"type": "string"}),
        ),
    ),
    Operation(
        "get",
        "/sandboxes/{sid}/processes",
        "listLogProcesses",
        {"200": ("processes that logged", "LogProcessesResponse"), "401": "", "404": ""},
    ),
    Operation("get", "/snapshots", "listSnapshots", {"200": ("snapshots", "ListSnapshotsResponse"), "401": ""}),
    Operation(
        "get", "/snapshots/{snap}", "getSnapshot", {"200": ("the snapshot", "SnapshotInfo"), "401": "", "404": ""}
    ),
    Operation("delete", "/snapshots/{snap}", "deleteSnapshot", {"204": ("deleted", None), "401": "", "404": ""}),
    Operation(
        "get",
        "/archived-sandboxes",
        "listArchivedSandboxes",
        {"200": ("archived sandboxes, newest first", "ListArchivedResponse"), "400": "", "401": ""},
        query=(
            ("limit", _bounded("limit", 1)),
            ("cursor", {"type": "string"}),
            ("direction", {"type": "string", "enum": ["forward", "backward"]}),
        ),
    ),
    Operation(
        "get",
        "/archived-sandboxes/{sid}",
        "getArchivedSandbox",
        {"200": ("the archived sandbox", "ArchivedSandboxInfo"), "401": "", "404": ""},
        id_description="sandbox id",
    ),
)

#: The request records the operations take (validation mode) and the answers they give (serialisation mode).
REQUESTS: tuple[type[BaseModel], ...] = (
    bodies.CreateRequest,
    bodies.UpdateRequest,
    wire.FileSystemMount,
    bodies.DetachFileSystem,
    bodies.SnapshotRequest,
)


def _openapi30(node: Any) -> Any:
    """Return a JSON Schema (2020-12, as pydantic writes it) in OpenAPI 3.0's dialect, titles and null defaults gone."""
    if isinstance(node, list):
        return [_openapi30(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _openapi30(value) for key, value in node.items() if key != "title"}
    if out.get("default", 0) is None:
        del out["default"]
    options = out.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options and len(options) == 2:
        del out["anyOf"]
        (kept,) = [option for option in options if option != {"type": "null"}]
        out = ({"allOf": [kept]} if "$ref" in kept else dict(kept)) | out | {"nullable": True}
    if isinstance(out.get("exclusiveMinimum"), int | float) and not isinstance(out["exclusiveMinimum"], bool):
        out["minimum"], out["exclusiveMinimum"] = out["exclusiveMinimum"], True
    if "const" in out:
        out["enum"] = [out.pop("const")]
    return out


#: Schemas named otherwise in the document than in Python.
RENAMES = {"NetworkConfigBody": "NetworkConfig"}


def _docstrings() -> set[str]:
    """Return the docstrings of the declarations (pydantic would describe each schema with its class's)."""
    found = set()
    for module in (wire, bodies, answers):
        for value in vars(module).values():
            if isinstance(value, type) and value.__doc__:
                found.add(inspect.cleandoc(value.__doc__))
    return found


def _defs(models: tuple[type[BaseModel], ...], mode: JsonSchemaMode) -> dict[str, Any]:
    """Return the named schemas of ``models`` and what they refer to, in one mode."""
    _, top = models_json_schema([(model, mode) for model in models], ref_template=REF)
    defs: dict[str, Any] = top.get("$defs", {})
    return defs


def _without(node: Any, key: str, drop: Callable[[Any], bool]) -> Any:
    if isinstance(node, list):
        return [_without(item, key, drop) for item in node]
    if isinstance(node, dict):
        return {k: _without(v, key, drop) for k, v in node.items() if not (k == key and drop(v))}
    return node


def _schemas() -> dict[str, Any]:
    """Return the component schemas: every declared record and the records they name.

    A request states its defaults, an answer none; a record both use (a GPU request, a mount) is the request's.
    """
    docs = _docstrings()
    requests = _defs(REQUESTS, "validation")
    shown = _without(_defs(answers.ANSWERS, "serialization"), "default", lambda _: True)
    merged: dict[str, Any] = {}
    for name, schema in {**shown, **requests}.items():
        if name in requests and name in shown and _without(requests[name], "default", lambda _: True) != shown[name]:
            raise ValueError(f"{name} is described two ways (request and answer); give one of them its own name")
        merged[RENAMES.get(name, name)] = schema
    text = json.dumps(_without(merged, "description", lambda text: text in docs))
    for old, new in RENAMES.items():
        text = text.replace(REF.format(model=old) + '"', REF.format(model=new) + '"')
    schemas: dict[str, Any] = _openapi30(json.loads(text))
    own = schemas["ArchivedSandboxInfo"]
    schemas["ArchivedSandboxInfo"] = {"allOf": [{"$ref": REF.format(model="SandboxInfo")}, own]}
    return schemas


def _answer(status: str, spec: str | tuple[str, str | None]) -> dict[str, Any]:
    description, schema = spec if isinstance(spec, tuple) else (spec or ERRORS[status], "Error")
    out: dict[str, Any] = {"description": description}
    if schema is not None:
        out["content"] = {"application/json": {"schema": {"$ref": REF.format(model=schema)}}}
    return out


def _operation(op: Operation, namespaced: bool) -> dict[str, Any]:
    params: list[dict[str, Any]] = []
    if namespaced:
        params.append(
            {"name": "ns", "in": "path", "required": True, "schema": {"type": "string"}, "description": "namespace"}
        )
    for name in ("sid", "snap"):
        if "{" + name + "}" in op.path:
            param = {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            params.append(param | ({"description": op.id_description} if name == "sid" else {}))
    for name, schema in op.query:
        param = {"name": name, "in": "query", "required": False, "schema": schema}
        params.append(param | ({"style": "form", "explode": True} if schema["type"] == "array" else {}))
    out: dict[str, Any] = {"operationId": op.operation_id + ("InNamespace" if namespaced else "")}
    if op.summary:
        out["summary"] = op.summary
    if params:
        out["parameters"] = params
    if op.body is not None:
        name, required = op.body
        out["requestBody"] = {
            "required": required,
            "content": {"application/json": {"schema": {"$ref": REF.format(model=name)}}},
        }
    out["responses"] = {status: _answer(status, spec) for status, spec in op.answers.items()}
    if op.description:
        out["description"] = op.description
    return out


def document() -> dict[str, Any]:
    """Return the OpenAPI document of the lifecycle routes."""
    paths: dict[str, dict[str, Any]] = {}
    for prefix in ("", "/v1/namespaces/{ns}"):
        for op in OPERATIONS:
            paths.setdefault(prefix + op.path, {})[op.method] = _operation(op, bool(prefix))
    # Each flat path, then its namespaced twin.
    ordered: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        for path in (op.path, "/v1/namespaces/{ns}" + op.path):
            ordered.setdefault(path, paths[path])
    return {
        "openapi": "3.0.3",
        "info": INFO,
        "servers": [{"url": "http://127.0.0.1:8911"}],
        "security": [{"bearerAuth": []}],
        "paths": ordered,
        "components": {
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer"}},
            "schemas": {"Error": {}, **_schemas()},
        },
    }


def rendered() -> str:
    """Return the document as the committed file holds it."""
    return json.dumps(document(), indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print, write or check the document."""
    parser = argparse.ArgumentParser(
        prog="python -m mockserver.tensorlake.openapi", description=__doc__.splitlines()[0]
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help=f"rewrite {DOCUMENT_PATH.name}")
    mode.add_argument("--check", action="store_true", help="exit 1 when the committed file is stale")
    args = parser.parse_args(argv)
    text = rendered()
    if args.write:
        DOCUMENT_PATH.write_text(text, encoding="utf-8")
    elif args.check:
        if DOCUMENT_PATH.read_text(encoding="utf-8") != text:
            print(f"{DOCUMENT_PATH} is stale: run python -m mockserver.tensorlake.openapi --write", file=sys.stderr)
            return 1
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
