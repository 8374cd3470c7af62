"""The providers' OpenAPI documents as Schemathesis contracts: load, bind to a target, run, list deviations.

Documents (:data:`SPECS`):

* ``opensandbox-lifecycle``: the lifecycle API exactly as opensandbox-server 1.1.1 serves it
  (``harness/specs/opensandbox/lifecycle-1.1.1.yaml``), authenticated with ``OPEN-SANDBOX-API-KEY``;
* ``opensandbox-execd`` and ``opensandbox-egress``: the in-sandbox execd (port 44772) and egress sidecar
  (port 18080) documents, served at a sandbox's endpoint: :func:`bind_contract` creates a sandbox, asks the
  lifecycle ``endpoints`` API where the port is reachable (and which headers it needs) and deletes the
  sandbox afterwards;
* ``tensorlake``: the TensorLake lifecycle document the mock serves at ``/openapi.json``
  (``mockserver/tensorlake/openapi.json``), authenticated with ``Authorization: Bearer``.

The OpenSandbox documents are copies of the public 1.1.1 documents, shipped as package data so an installed
sandproof needs no checkout. None of the documents declares OpenAPI links, so :data:`LINKS` adds them in
memory (the files on disk stay as published): create → get, delete, pause, … by the new resource's id, which
is what the link scenarios chain. Schemathesis's own link inference is switched off so the scenarios are
exactly these. In a scenario the create request comes from :attr:`ApiSpec.scenario_bodies` when the document's
schema cannot express what a valid create needs (the per-operation run fuzzes the create body itself).

:class:`SchemaContract` runs one document: ``run_operation`` fuzzes an operation with positive data,
``run_stateful`` runs link scenarios, and every response goes through :data:`CHECK_NAMES` minus the
exclusions below. What the runs create is deleted afterwards. Against a real cloud service only ``GET``
operations run. Schemathesis and Hypothesis write nothing to disk (no example database, no crash cache).

Every check a target fails for a reason we accept is listed in :data:`SCHEMA_DEVIATIONS`, per document,
operation and check: the real server contradicting its own document (and the mock matching it), a documented
5xx, or what the mock does not emulate (applied only when the target is a sandproof mock).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

import httpx

from mockserver.core.journal import GENERATED_HEADER

if TYPE_CHECKING:
    from hypothesis import settings as Settings
    from schemathesis import Case as AnyCase
    from schemathesis import Response
    from schemathesis.schemas import BaseSchema

    Case = AnyCase[Any]

    from harness.targets import Target

__all__ = [
    "ALL_CHECKS",
    "CHECK_NAMES",
    "CLOUD_SKIP",
    "EGRESS_SANDBOX_REQUEST",
    "LINKS",
    "SANDBOX_REQUEST",
    "SCHEMA_DEVIATIONS",
    "SPECS",
    "ApiSpec",
    "Endpoint",
    "SandboxUnavailable",
    "SchemaContract",
    "SchemaDeviation",
    "auth_headers",
    "bind_contract",
    "deviations_markdown",
    "excluded_checks",
    "hypothesis_settings",
    "is_sandproof_mock",
    "load_document",
    "operation_labels",
    "register_schema_deviations",
    "sandbox_endpoints",
    "skip_reason",
    "stale_deviation_entries",
    "target_skip_reason",
]

DeviationKind = Literal["deviation", "documented", "not-emulated", "finding"]

#: The checks every operation's responses must pass, by Schemathesis name.
CHECK_NAMES: tuple[str, ...] = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
)
ALL_CHECKS = "*"
EXECD_PORT = 44772
EGRESS_PORT = 18080
REQUEST_TIMEOUT = 30.0
#: The sandbox the execd contract runs in (and link scenarios create).
SANDBOX_REQUEST: dict[str, Any] = {
    "image": {"uri": "python:3.11-slim"},
    "entrypoint": ["sleep", "infinity"],
    "timeout": 3600,
    "resourceLimits": {"cpu": "500m", "memory": "512Mi"},
    "metadata": {"purpose": "sandproof-schemathesis"},
}
#: The sandbox the egress contract runs in: a sandbox has an egress sidecar only when created with a policy.
EGRESS_SANDBOX_REQUEST: dict[str, Any] = {
    **SANDBOX_REQUEST,
    "networkPolicy": {"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]},
}


# --- documents ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Link:
    """OpenAPI links from one operation's responses to others, all fed the same parameters."""

    source: str
    statuses: tuple[str, ...]
    targets: tuple[str, ...]
    parameters: Mapping[str, str]


@dataclass(frozen=True)
class Cleanup:
    """A request that creates something, and how to delete it: ``{prefix}`` is the path's first group."""

    method: str
    path: re.Pattern[str]
    key: str
    delete: str


@dataclass(frozen=True)
class ApiSpec:
    """One OpenAPI document under contract and how its operations are reported.

    ``package``/``resource`` locate the packaged document, ``row`` is the fidelity-matrix row, ``port`` the
    sandbox port serving it (None: served by the provider's API itself), ``stateful_paths`` the operations
    of the link scenarios, ``cleanups`` how to delete what requests create, ``scenario_bodies`` the request
    bodies a scenario sends to an operation instead of generated ones.
    """

    name: str
    provider: str
    package: str
    resource: str
    row: str
    port: int | None = None
    stateful_paths: str | None = None
    cleanups: tuple[Cleanup, ...] = ()
    scenario_bodies: Mapping[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)

    def document(self) -> dict[str, Any]:
        """Return a fresh copy of the document with :data:`LINKS` added."""
        raw = copy.deepcopy(_raw_document(self.package, self.resource))
        _add_links(raw, LINKS.get(self.name, ()))
        return raw


@cache
def _raw_document(package: str, resource: str) -> dict[str, Any]:
    """Read a packaged JSON or YAML document once."""
    text = resources.files(package).joinpath(resource).read_text(encoding="utf-8")
    if resource.endswith(".json"):
        data: Any = json.loads(text)
    else:
        from schemathesis.core.deserialization import deserialize_yaml

        data = deserialize_yaml(text)  # Schemathesis's loader: timestamps stay strings, as in JSON
    if not isinstance(data, dict):
        raise ValueError(f"{package}/{resource} is not an OpenAPI document")
    return data


_V1_SANDBOX_OPS = (
    "get_sandbox_v1_sandboxes__sandbox_id__get",
    "delete_sandbox_v1_sandboxes__sandbox_id__delete",
    "patch_sandbox_metadata_v1_sandboxes__sandbox_id__metadata_patch",
    "pause_sandbox_v1_sandboxes__sandbox_id__pause_post",
    "resume_sandbox_v1_sandboxes__sandbox_id__resume_post",
    "renew_sandbox_expiration_v1_sandboxes__sandbox_id__renew_expiration_post",
    "create_snapshot_v1_sandboxes__sandbox_id__snapshots_post",
    "get_sandbox_endpoint_v1_sandboxes__sandbox_id__endpoints__port__get",
    "get_network_policy_v1_sandboxes__sandbox_id__networkpolicy_get",
    "replace_network_policy_v1_sandboxes__sandbox_id__networkpolicy_put",
    "patch_network_policy_v1_sandboxes__sandbox_id__networkpolicy_patch",
    "delete_network_policy_v1_sandboxes__sandbox_id__networkpolicy_delete",
)
_TL_SANDBOX_OPS = (
    "getSandbox",
    "updateSandbox",
    "deleteSandbox",
    "suspendSandbox",
    "resumeSandbox",
    "snapshotSandbox",
    "listSandboxSnapshots",
    "copySandbox",
    "attachFileSystem",
    "detachFileSystem",
    "getSandboxLogs",
    "listLogProcesses",
)

#: The links each document gets in memory (by operationId); the stateful contracts follow them.
LINKS: dict[str, tuple[Link, ...]] = {
    "opensandbox-lifecycle": (
        Link(
            "create_sandbox_v1_sandboxes_post",
            ("202",),
            _V1_SANDBOX_OPS,
            {"sandbox_id": "$response.body#/id"},
        ),
        Link(
            "create_snapshot_v1_sandboxes__sandbox_id__snapshots_post",
            ("202",),
            ("get_snapshot_v1_snapshots__snapshot_id__get", "delete_snapshot_v1_snapshots__snapshot_id__delete"),
            {"snapshot_id": "$response.body#/id"},
        ),
    ),
    "opensandbox-execd": (
        Link("createSession", ("200",), ("runInSession", "deleteSession"), {"sessionId": "$response.body#/session_id"}),
    ),
    "tensorlake": (
        # No snapshot links: they would make snapshotSandbox (a POST with a path id) the only scenario root
        # Schemathesis trusts, since it takes createSandbox's snapshot_id/template_id fields for foreign keys.
        Link("createSandbox", ("200", "202"), _TL_SANDBOX_OPS, {"sid": "$response.body#/sandbox_id"}),
    ),
}


def _add_links(raw: dict[str, Any], links: Iterable[Link]) -> None:
    """Add ``links`` to the responses of their source operations; raise KeyError for an unknown operationId."""
    operations: dict[str, dict[str, Any]] = {}
    for item in raw.get("paths", {}).values():
        for method, operation in item.items():
            if isinstance(operation, dict) and "operationId" in operation and method != "parameters":
                operations[operation["operationId"]] = operation
    for link in links:
        source = operations[link.source]
        for status in link.statuses:
            response = source["responses"][status]
            added = response.setdefault("links", {})
            for target in link.targets:
                if target not in operations:
                    raise KeyError(f"link target {target!r} is not an operationId of the document")
                added[target] = {"operationId": target, "parameters": dict(link.parameters)}


_OS_SANDBOXES = re.compile(r"^((?:/v1)?)/sandboxes$")
_OS_SNAPSHOTS = re.compile(r"^((?:/v1)?)/sandboxes/[^/]+/snapshots$")
_TL_PREFIX = r"^((?:/v1/namespaces/[^/]+)?)"

SPECS: dict[str, ApiSpec] = {
    spec.name: spec
    for spec in (
        ApiSpec(
            "opensandbox-lifecycle",
            "opensandbox",
            "harness",
            "specs/opensandbox/lifecycle-1.1.1.yaml",
            "openapi-lifecycle",
            stateful_paths=r"^/v1/(sandboxes|snapshots)",
            scenario_bodies={"POST /v1/sandboxes": (SANDBOX_REQUEST, EGRESS_SANDBOX_REQUEST)},
            cleanups=(
                Cleanup("POST", _OS_SANDBOXES, "id", "{prefix}/sandboxes/{id}"),
                Cleanup("POST", _OS_SNAPSHOTS, "id", "{prefix}/snapshots/{id}"),
            ),
        ),
        ApiSpec(
            "opensandbox-execd",
            "opensandbox",
            "harness",
            "specs/opensandbox/execd.yaml",
            "openapi-execd",
            port=EXECD_PORT,
            stateful_paths=r"^/session",
        ),
        ApiSpec(
            "opensandbox-egress",
            "opensandbox",
            "harness",
            "specs/opensandbox/egress.yaml",
            "openapi-egress",
            port=EGRESS_PORT,
        ),
        ApiSpec(
            "tensorlake",
            "tensorlake",
            "mockserver.tensorlake",
            "openapi.json",
            "openapi-lifecycle",
            stateful_paths=r"^/sandboxes",
            cleanups=(
                Cleanup("POST", re.compile(_TL_PREFIX + r"/sandboxes$"), "sandbox_id", "{prefix}/sandboxes/{id}"),
                Cleanup(
                    "POST", re.compile(_TL_PREFIX + r"/sandboxes/[^/]+/copy$"), "sandbox_id", "{prefix}/sandboxes/{id}"
                ),
                Cleanup(
                    "POST",
                    re.compile(_TL_PREFIX + r"/sandboxes/[^/]+/snapshot$"),
                    "snapshot_id",
                    "{prefix}/snapshots/{id}",
                ),
            ),
        ),
    )
}


def load_document(name: str) -> dict[str, Any]:
    """Return a fresh copy of a document (links added) by its :data:`SPECS` name."""
    return SPECS[name].document()


@cache
def operation_labels(name: str) -> tuple[str, ...]:
    """Return the ``METHOD /path`` labels of a document's operations, in document order."""
    methods = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
    raw = _raw_document(SPECS[name].package, SPECS[name].resource)
    return tuple(
        f"{method.upper()} {path}"
        for path, item in raw.get("paths", {}).items()
        for method in item
        if method in methods
    )


# --- deviations ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SchemaDeviation:
    """Checks a document's operations fail for an accepted reason; ``checks=("*",)`` skips the operations.

    ``kind``: ``deviation`` (the real server contradicts its document and the mock matches it),
    ``documented`` (a documented 5xx), ``not-emulated`` (the mock does not serve it; only on sandproof
    mocks) or ``finding`` (a mock bug being fixed; only on sandproof mocks).
    """

    spec: str
    operations: tuple[str, ...]
    checks: tuple[str, ...]
    kind: DeviationKind
    real: str
    mock: str
    reason: str

    @property
    def mock_only(self) -> bool:
        """Tell whether the entry applies only to sandproof mocks."""
        return self.kind in ("not-emulated", "finding")

    def applies(self, spec: str, label: str, *, mock: bool) -> bool:
        """Tell whether this entry covers ``label`` of ``spec`` on a target that is (or is not) a mock."""
        return spec == self.spec and label in self.operations and (mock or not self.mock_only)


def _both(method: str, path: str) -> tuple[str, str]:
    """Return the ``/v1`` and bare labels of a lifecycle operation."""
    return f"{method} /v1{path}", f"{method} {path}"


def _lifecycle(*pairs: tuple[str, str]) -> tuple[str, ...]:
    """Return the labels of lifecycle operations under both prefixes."""
    return tuple(label for method, path in pairs for label in _both(method, path))


_NETWORK_POLICY = _lifecycle(*((m, "/sandboxes/{sandbox_id}/networkpolicy") for m in ("GET", "PUT", "PATCH", "DELETE")))
_POOLS_TEMPLATES = _lifecycle(
    ("POST", "/pools"),
    ("GET", "/pools"),
    ("GET", "/pools/{pool_name}"),
    ("PUT", "/pools/{pool_name}"),
    ("DELETE", "/pools/{pool_name}"),
    ("POST", "/templates"),
    ("GET", "/templates"),
    ("GET", "/templates/{template_id}"),
    ("DELETE", "/templates/{template_id}"),
)
_CODE_INTERPRETER = (
    "GET /code/contexts",
    "DELETE /code/contexts",
    "GET /code/contexts/{context_id}",
    "DELETE /code/contexts/{context_id}",
    "POST /code/context",
    "POST /code",
    "DELETE /code",
)
_EXECD_RUNTIME_ERRORS = (
    "POST /session",
    "POST /session/{sessionId}/run",
    "POST /command",
    "DELETE /command",
    "GET /files/info",
    "DELETE /files",
    "POST /files/permissions",
    "POST /files/mv",
    "GET /files/search",
    "POST /files/replace",
    "POST /files/upload",
    "GET /files/download",
    "GET /directories/list",
    "POST /directories",
    "DELETE /directories",
)
_CREDENTIAL_VAULT = (
    "POST /credential-vault",
    "GET /credential-vault",
    "PATCH /credential-vault",
    "DELETE /credential-vault",
    "GET /credential-vault/credentials",
    "GET /credential-vault/credentials/{credential_name}",
    "GET /credential-vault/bindings",
    "GET /credential-vault/bindings/{binding_name}",
)

#: Every accepted check failure, per document, operation and check.
SCHEMA_DEVIATIONS: tuple[SchemaDeviation, ...] = (
    SchemaDeviation(
        "opensandbox-lifecycle",
        _NETWORK_POLICY,
        ("status_code_conformance", "not_a_server_error"),
        "deviation",
        "documents only 200 and 422, yet answers 404 `DOCKER::SANDBOX_NOT_FOUND` for an unknown sandbox, 502 "
        "`BACKEND_CONNECTION_FAILED` when the sandbox has no egress sidecar and 400 for a policy the sidecar rejects",
        "the same statuses and bodies",
        "The server proxies these calls to the sandbox's egress sidecar; its document was generated from "
        "handlers that declare no error responses. Content type and body schemas are still checked.",
    ),
    SchemaDeviation(
        "opensandbox-lifecycle",
        _lifecycle(("POST", "/sandboxes")),
        ("status_code_conformance",),
        "deviation",
        "answers 404 `SNAPSHOT::NOT_FOUND` when `snapshotId` names no snapshot; 404 is not documented for create",
        "the same 404",
        "The snapshot lookup raises before the handler's documented responses apply.",
    ),
    SchemaDeviation(
        "opensandbox-lifecycle",
        _lifecycle(("POST", "/sandboxes/{sandbox_id}/pause"), ("POST", "/sandboxes/{sandbox_id}/resume")),
        ("content_type_conformance", "response_schema_conformance"),
        "deviation",
        "documents the 202 as `application/json`, yet sends it with no body and no content type",
        "the same empty 202",
        "The handlers return a bare `Response(status_code=202)`; FastAPI documented its default JSON response.",
    ),
    SchemaDeviation(
        "opensandbox-lifecycle",
        _lifecycle(("POST", "/sandboxes/{sandbox_id}/renew-expiration")),
        ("not_a_server_error", "content_type_conformance"),
        "deviation",
        "a valid `expiresAt` whose UTC conversion overflows (year 1 with a positive offset, year 9999 with a "
        "negative one) crashes the handler: a plain-text 500 `Internal Server Error`",
        "the same 500, after the sandbox lookup (404 first for an unknown sandbox, as on the server)",
        "pydantic accepts the time; `ensure_future_expiration` calls `astimezone(UTC)` unguarded. Status and "
        "the JSON bodies of every other answer are still checked.",
    ),
    SchemaDeviation(
        "opensandbox-lifecycle",
        _POOLS_TEMPLATES,
        ("not_a_server_error",),
        "documented",
        "the Docker runtime answers the documented 501 `SANDBOX::API_NOT_SUPPORTED`",
        "the same 501",
        "Pools and templates need the Kubernetes runtime. The 501 is documented; status, content type and "
        "body are still checked.",
    ),
    SchemaDeviation(
        "opensandbox-execd",
        _CODE_INTERPRETER,
        (ALL_CHECKS,),
        "not-emulated",
        "code interpreting through a Jupyter kernel",
        "not served (404)",
        "The mock has no code interpreter; commands, sessions, files and metrics are emulated.",
    ),
    SchemaDeviation(
        "opensandbox-execd",
        ("GET /metrics/watch",),
        (ALL_CHECKS,),
        "not-emulated",
        "an endless SSE stream of metrics, one event a second",
        "not served (404)",
        "An endless stream cannot be fuzzed request by request; `GET /metrics` is emulated.",
    ),
    SchemaDeviation(
        "opensandbox-execd",
        _EXECD_RUNTIME_ERRORS,
        ("not_a_server_error",),
        "documented",
        "answers its documented 500 `RUNTIME_ERROR` for what the operating system refuses: a missing `cwd`, an "
        "unknown session, a directory given to `DELETE /files`, `chmod` of a missing file, moving `/`, a path "
        "with a NUL byte (EINVAL), …",
        "the same 500s",
        "execd's error model: request-shape errors are 400, failures of the underlying system call are 500. The "
        "500 is documented for each of these operations and its `ErrorResponse` body is still checked.",
    ),
    SchemaDeviation(
        "opensandbox-execd",
        ("POST /files/replace",),
        ("status_code_conformance",),
        "deviation",
        "answers 404 `FILE_NOT_FOUND` for a missing file; the operation documents only 200, 400 and 500",
        "the same 404",
        "The handler's `handleFileError` maps a missing file to 404 for every file route.",
    ),
    SchemaDeviation(
        "opensandbox-execd",
        ("POST /files/replace",),
        ("content_type_conformance", "response_schema_conformance"),
        "deviation",
        "documents a JSON map of replacement counts, yet without `verbose=true` answers an empty 200 with no "
        "content type",
        "the same empty 200 (the counts with `verbose=true`)",
        "execd's handler calls `RespondSuccess(nil)` unless `verbose` is set. With `verbose=true` the body is "
        "JSON and still checked whenever the generated query sets it.",
    ),
    SchemaDeviation(
        "opensandbox-egress",
        _CREDENTIAL_VAULT,
        (ALL_CHECKS,),
        "not-emulated",
        "the sandbox-local Credential Vault",
        "not served (404)",
        "The mock's sidecar emulates the egress policy only.",
    ),
)


def stale_deviation_entries() -> list[str]:
    """Return the deviation entries naming an operation or check their document lacks (a typo or a stale entry)."""
    problems = []
    for entry in SCHEMA_DEVIATIONS:
        known = set(operation_labels(entry.spec))
        problems += [f"{entry.spec}: {label}" for label in entry.operations if label not in known]
        bad = [c for c in entry.checks if c not in (*CHECK_NAMES, ALL_CHECKS)]
        problems += [f"{entry.spec}: unknown check {c}" for c in bad]
    return problems


def excluded_checks(spec: str, label: str, *, mock: bool) -> frozenset[str]:
    """Return the check names not run for ``label`` of ``spec`` (``"*"`` when the operation is skipped)."""
    return frozenset(
        check for entry in SCHEMA_DEVIATIONS if entry.applies(spec, label, mock=mock) for check in entry.checks
    )


def skip_reason(spec: str, label: str, *, mock: bool) -> str | None:
    """Return why ``label`` of ``spec`` is not tested at all on this target, or None."""
    for entry in SCHEMA_DEVIATIONS:
        if entry.applies(spec, label, mock=mock) and ALL_CHECKS in entry.checks:
            return f"{entry.kind}: {entry.reason}"
    return None


def _cell(text: str) -> str:
    """Escape a value for a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def deviations_markdown(table: Iterable[SchemaDeviation] = SCHEMA_DEVIATIONS) -> str:
    """Render the schema deviations as a Markdown table."""
    lines = [
        "| Document | Operations | Checks not run | Kind | Real server | Mock | Reason |",
        "|---|---|---|---|---|---|---|",
    ]
    for d in table:
        operations = ", ".join(f"`{label}`" for label in d.operations)
        checks = "all (skipped)" if ALL_CHECKS in d.checks else ", ".join(f"`{c}`" for c in d.checks)
        cells = (d.spec, operations, checks, d.kind, d.real, d.mock, d.reason)
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def register_schema_deviations() -> int:
    """Register every entry but the documented 5xx ones with :mod:`harness.report`; return how many."""
    from harness.report import register_deviation

    count = 0
    for d in SCHEMA_DEVIATIONS:
        if d.kind == "documented":
            continue
        spec = SPECS[d.spec]
        checks = "all checks" if ALL_CHECKS in d.checks else ", ".join(d.checks)
        shown = ", ".join(d.operations[:3]) + (f" (+{len(d.operations) - 3} more)" if len(d.operations) > 3 else "")
        register_deviation(
            spec.provider, spec.row, f"{shown}: {checks} not run; real: {d.real}; mock: {d.mock}", d.reason
        )
        count += 1
    return count


# --- binding to a target ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    """Where a document is served and the headers every request needs."""

    base_url: str
    headers: Mapping[str, str] = field(default_factory=dict)


def auth_headers(provider: str, api_key: str | None) -> dict[str, str]:
    """Return the API-key headers of ``provider`` (none without a key)."""
    if not api_key:
        return {}
    if provider == "opensandbox":
        return {"OPEN-SANDBOX-API-KEY": api_key}
    if provider == "tensorlake":
        return {"Authorization": f"Bearer {api_key}"}
    raise ValueError(f"unknown provider {provider!r}")


class SandboxUnavailable(RuntimeError):
    """Raise when the target cannot create the sandbox a document is served in."""


@contextmanager
def sandbox_endpoints(lifecycle: Endpoint, ports: Iterable[int]) -> Iterator[dict[int, Endpoint]]:
    """Create an OpenSandbox sandbox, yield its port endpoints, then delete it.

    The sandbox gets an egress policy (so an egress sidecar) when the egress port is asked for. Each endpoint
    comes from ``GET /v1/sandboxes/{id}/endpoints/{port}``: a scheme-less ``host:port/path`` plus the headers
    the sandbox port requires.
    """
    ports = list(ports)
    request = EGRESS_SANDBOX_REQUEST if EGRESS_PORT in ports else SANDBOX_REQUEST
    with httpx.Client(base_url=lifecycle.base_url, headers=dict(lifecycle.headers), timeout=REQUEST_TIMEOUT) as client:
        created = client.post("/v1/sandboxes", json=request)
        if created.status_code != 202:
            raise SandboxUnavailable(
                f"the target cannot create the sandbox this document is served in: {created.status_code} "
                f"{created.text[:300]}"
            )
        sandbox_id = str(created.json()["id"])
        try:
            endpoints: dict[int, Endpoint] = {}
            for port in ports:
                answer = client.get(f"/v1/sandboxes/{sandbox_id}/endpoints/{port}")
                if answer.status_code != 200:
                    raise RuntimeError(f"endpoint of port {port} answered {answer.status_code}: {answer.text[:300]}")
                body = answer.json()
                endpoint = str(body["endpoint"])
                url = endpoint if "://" in endpoint else f"{httpx.URL(lifecycle.base_url).scheme}://{endpoint}"
                endpoints[port] = Endpoint(
                    url.rstrip("/"), {str(k): str(v) for k, v in (body.get("headers") or {}).items()}
                )
            yield endpoints
        finally:
            client.delete(f"/v1/sandboxes/{sandbox_id}")


CLOUD_SKIP = "fuzzed writes are not sent to a real cloud service; only GET operations run there"


def is_sandproof_mock(target: Target, provider: str) -> bool:
    """Tell whether the target serves sandproof's admin API for ``provider`` (so it is one of our mocks)."""
    try:
        return target.admin_available(provider)
    except Exception:
        return False


def target_skip_reason(name: str, label: str, target: Target) -> str | None:
    """Return why operation ``label`` of document ``name`` is not run against ``target``, or None."""
    if target.kind == "cloud" and not label.startswith("GET "):
        return CLOUD_SKIP
    return skip_reason(name, label, mock=is_sandproof_mock(target, SPECS[name].provider))


@contextmanager
def bind_contract(name: str, target: Target) -> Iterator[SchemaContract]:
    """Yield the document ``name`` bound to ``target`` (creating a sandbox for execd and egress); clean up after."""
    spec = SPECS[name]
    lifecycle = Endpoint(target.url(spec.provider), auth_headers(spec.provider, target.api_key(spec.provider)))
    mock = is_sandproof_mock(target, spec.provider)
    if spec.port is None:
        contract = SchemaContract(spec, lifecycle, mock=mock, cloud=target.kind == "cloud")
        try:
            yield contract
        finally:
            contract.close()
        return
    with sandbox_endpoints(lifecycle, [spec.port]) as endpoints:
        contract = SchemaContract(spec, endpoints[spec.port], mock=mock)
        try:
            yield contract
        finally:
            contract.close()


# --- running ------------------------------------------------------------------------------------------


def _config(endpoint: Endpoint) -> Any:
    """Return a Schemathesis configuration: positive data only, no inference, nothing written to disk."""
    import schemathesis

    return schemathesis.Config.from_dict(
        {
            "base-url": endpoint.base_url,
            "headers": {**dict(endpoint.headers), GENERATED_HEADER: "1"},
            "request-timeout": REQUEST_TIMEOUT,
            "cache": {"enabled": False},
            "generation": {"mode": "positive", "database": "none", "with-security-parameters": False},
            "phases": {"stateful": {"inference": {"algorithms": []}}},
            "analysis": {"constants": {"enabled": False}},
        }
    )


def _build_schema(document: dict[str, Any], endpoint: Endpoint) -> BaseSchema:
    """Return a Schemathesis schema of ``document`` that sends its requests to ``endpoint``."""
    import schemathesis

    schema: BaseSchema = schemathesis.openapi.from_dict(document, config=_config(endpoint))
    return schema


@lru_cache(maxsize=8)
def _bound_schema(name: str, base_url: str, headers: tuple[tuple[str, str], ...]) -> BaseSchema:
    """Return the (shared) schema of a :data:`SPECS` document bound to a base URL and headers."""
    return _build_schema(SPECS[name].document(), Endpoint(base_url, {**dict(headers), GENERATED_HEADER: "1"}))


def _check_functions() -> dict[str, Callable[..., Any]]:
    """Return the Schemathesis check functions by name."""
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_headers_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    found = {
        "not_a_server_error": not_a_server_error,
        "status_code_conformance": status_code_conformance,
        "content_type_conformance": content_type_conformance,
        "response_headers_conformance": response_headers_conformance,
        "response_schema_conformance": response_schema_conformance,
    }
    return {name: found[name] for name in CHECK_NAMES}


def hypothesis_settings(max_examples: int, **overrides: Any) -> Settings:
    """Return the active profile's settings with ``max_examples``, no example database and no shrinking."""
    from hypothesis import HealthCheck, Phase, settings

    return settings(
        settings(),
        max_examples=max_examples,
        database=None,
        deadline=None,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=list(HealthCheck),
        **overrides,
    )


class SchemaContract:
    """One document bound to an :class:`Endpoint`: run its operations and link scenarios, then clean up.

    ``mock`` applies the mock-only deviations; ``cloud`` sends only ``GET`` requests (no fuzzed writes to a
    paid service). Resources the runs create are deleted by :meth:`close`.
    """

    def __init__(
        self,
        spec: ApiSpec,
        endpoint: Endpoint,
        *,
        mock: bool = True,
        cloud: bool = False,
    ) -> None:
        self.spec = spec
        self.endpoint = endpoint
        self.mock = mock
        self.cloud = cloud
        self.schema = _bound_schema(spec.name, endpoint.base_url, tuple(sorted(endpoint.headers.items())))
        self._checks = _check_functions()
        self._created: list[str] = []
        self.failures: list[BaseException] = []
        self.calls = 0

    def labels(self) -> list[str]:
        """Return the labels of the document's operations."""
        from schemathesis.core.result import Ok

        return [result.ok().label for result in self.schema.get_all_operations() if isinstance(result, Ok)]

    def skip_reason(self, label: str) -> str | None:
        """Return why ``label`` is not run against this target, or None."""
        if self.cloud and not label.startswith("GET "):
            return CLOUD_SKIP
        return skip_reason(self.spec.name, label, mock=self.mock)

    def checks_for(self, label: str) -> list[Callable[..., Any]]:
        """Return the check functions run on ``label``'s responses."""
        excluded = excluded_checks(self.spec.name, label, mock=self.mock)
        return [check for name, check in self._checks.items() if name not in excluded]

    def _operation(self, label: str) -> Any:
        """Return the Schemathesis operation for a ``METHOD /path`` label."""
        method, _, path = label.partition(" ")
        return self.schema[path][method]

    def call_and_validate(self, case: Case) -> Response:
        """Send one case, remember what it created, and run the operation's checks on the response."""
        response = case.call()
        self.calls += 1
        self.note_created(case, response)
        case.validate_response(response, checks=self.checks_for(case.operation.label))
        return response

    def note_created(self, case: Case, response: Response) -> None:
        """Remember the delete path of anything the case created."""
        if not 200 <= response.status_code < 300:
            return
        path = case.formatted_path
        for rule in self.spec.cleanups:
            match = rule.path.match(path)
            if case.method.upper() != rule.method or match is None:
                continue
            try:
                body = json.loads(response.content)
            except ValueError:
                return
            if isinstance(body, dict) and isinstance(body.get(rule.key), str):
                self._created.append(rule.delete.format(prefix=match.group(1), id=body[rule.key]))
            return

    def run_operation(self, label: str, max_examples: int) -> None:
        """Fuzz one operation with ``max_examples`` positive cases; raise on the first failing check."""
        from hypothesis import given

        operation = self._operation(label)

        @hypothesis_settings(max_examples)
        @given(case=operation.as_strategy())
        def fuzz(case: Case) -> None:
            self.call_and_validate(case)

        fuzz()

    def state_machine(self) -> type[Any]:
        """Return a Schemathesis state machine over the linked operations that runs this contract's checks."""
        from hypothesis import strategies as st

        schema = _build_schema(self.spec.document(), self.endpoint)  # its own schema: the hook stays local
        bodies = self.spec.scenario_bodies

        def scenario_body(context: Any, strategy: Any) -> Any:
            label = context.operation.label if context.operation is not None else ""
            return st.sampled_from([copy.deepcopy(b) for b in bodies[label]]) if label in bodies else strategy

        schema.hooks.register_hook_with_name(scenario_body, "before_generate_body")
        if self.spec.stateful_paths:
            schema = schema.include(path_regex=self.spec.stateful_paths)
        skipped = [label for label in self.labels() if self.skip_reason(label)]
        for label in skipped:
            method, _, path = label.partition(" ")
            schema = schema.exclude(method=method, path=path)
        base = schema.as_state_machine()
        contract = self

        class ContractStateMachine(base):  # type: ignore[misc, valid-type]
            def after_call(self, response: Response, case: Case) -> None:
                super().after_call(response, case)
                contract.calls += 1
                contract.note_created(case, response)

            def validate_response(self, response: Response, case: Case, *args: Any, **kwargs: Any) -> None:
                try:
                    case.validate_response(response, checks=contract.checks_for(case.operation.label))
                except BaseException as exc:
                    contract.failures.append(exc)
                    raise

        return ContractStateMachine

    def run_stateful(self, max_examples: int, steps: int = 8) -> None:
        """Run ``max_examples`` link scenarios of up to ``steps`` calls; raise on the first failing check."""
        from hypothesis.errors import Flaky

        machine = self.state_machine()
        self.failures.clear()
        try:
            machine.run(settings=hypothesis_settings(max_examples, stateful_step_count=steps))
        except Flaky:
            # Replaying a scenario against a server whose state moved on draws differently (a name now taken,
            # a link target gone); that is only a failure when a check failed on the way.
            if self.failures:
                raise self.failures[0] from None

    def close(self) -> None:
        """Delete what the runs created (best effort)."""
        created, self._created = self._created, []
        if not created:
            return
        with httpx.Client(
            base_url=self.endpoint.base_url, headers=dict(self.endpoint.headers), timeout=REQUEST_TIMEOUT
        ) as client:
            for path in reversed(created):
                try:
                    client.delete(path)
                except httpx.HTTPError:
                    continue
