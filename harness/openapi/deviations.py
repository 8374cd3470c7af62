"""The checks a document's operations fail for an accepted reason: the table, its staleness check and its Markdown."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from harness.openapi.specs import SPECS, operation_labels

__all__ = [
    "ALL_CHECKS",
    "CHECK_NAMES",
    "SCHEMA_DEVIATIONS",
    "DeviationKind",
    "SchemaDeviation",
    "deviations_markdown",
    "register_schema_deviations",
    "stale_deviation_entries",
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
        _lifecycle(("GET", "/snapshots")),
        ("not_a_server_error", "content_type_conformance"),
        "deviation",
        "a page whose offset, (page - 1) * pageSize, is past SQLite's largest integer crashes the query: a "
        "plain-text 500 `Internal Server Error`",
        "the same 500",
        "`repositories/snapshots/sqlite.py` binds the offset to `LIMIT ? OFFSET ?` and does not catch the "
        "overflow; the document allows any page. Status and the JSON bodies of every other answer are still checked.",
    ),
    SchemaDeviation(
        "opensandbox-lifecycle",
        _POOLS_TEMPLATES,
        ("not_a_server_error",),
        "documented",
        "the Docker runtime answers the documented 501, `KUBERNETES::POOL_NOT_SUPPORTED` for pools and "
        "`FSB::API_NOT_SUPPORTED` for templates, after validating a create or update body (422)",
        "the same 422s and 501s",
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
        "answers its documented 500 `RUNTIME_ERROR` for what the operating system refuses: a session's missing "
        "`cwd` (a command's is a 400 since execd 1.0.11), an unknown session, a directory given to `DELETE /files`, `chmod` of a missing file, moving `/`, a path "
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
    """Register every entry but the documented 5xx ones with :mod:`harness.reporting.report`; return how many."""
    from harness.reporting.report import register_deviation

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
