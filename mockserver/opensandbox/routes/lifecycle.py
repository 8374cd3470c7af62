"""The lifecycle server's routes (served under ``/v1`` and bare), its auth and ``X-Request-ID`` wrapper.

Known deviations from the real 1.1.1 server:

* The Kubernetes-like profile answers a create at once with ``Pending`` (the real one blocks until
  the pod runs); its endpoints answer 404 ``KUBERNETES::POD_IP_NOT_AVAILABLE`` until ready.
* A ``networkPolicy`` whose targets the reference engine rejects gives 400
  ``SANDBOX::INVALID_PARAMETER`` (the real server starts a sidecar that fails, then 500s).
* Bodies over 1 MiB get 413 (the real server has no limit); pools and templates answer 501;
  diagnostics are not served.
"""

from __future__ import annotations

import re
from datetime import UTC
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from contracts.opensandbox import PolicyError
from mockserver.asgi.middleware import notes
from mockserver.core import ApiError

from . import egress
from .models import MAX_PAGE_SIZE, SandboxRecord, iso, parse_create
from .profiles import EGRESS_PORT, EXECD_PORT, SERVER_VERSION
from .validation import Checker, RequestValidationError, error, json_body

if TYPE_CHECKING:
    from .mock import OpenSandboxMock

API_KEY_HEADER = "open-sandbox-api-key"
DIRECT_PREFIX = "/direct"
EXEMPT_PATHS = ("/health", "/version", "/docs", "/redoc", "/openapi.json")
_PROXY_PATH = re.compile(r"^(/v1)?/sandboxes/[^/]+/proxy/\d+(/|$)")
TENANT_KEY = "opensandbox_tenant"
MISSING_KEY = {
    "code": "MISSING_API_KEY",
    "message": "Authentication credentials are missing. Provide API key via OPEN-SANDBOX-API-KEY header.",
}
INVALID_KEY = {
    "code": "INVALID_API_KEY",
    "message": "Authentication credentials are invalid. Check your API key and try again.",
}


def tenant_of(request: Request) -> str:
    """Return the tenant the auth layer resolved for this request."""
    return str(request.scope.get("state", {}).get(TENANT_KEY) or "default")


class LifecycleGate:
    """Stamp ``X-Request-ID`` on every response and authenticate lifecycle requests by API key.

    ``keys`` maps API keys to tenants; an empty mapping turns authentication off. With one key
    (single-tenant) the proxy routes are exempt, as on the real server; with several they are not.
    """

    def __init__(self, app: ASGIApp, keys: dict[str, str], new_id: Any) -> None:
        self.app = app
        self.keys = keys
        self.new_id = new_id

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        request_id = (headers.get("x-request-id") or "").strip() or self.new_id()
        path = str(scope.get("path", ""))
        lifecycle = not path.startswith(("/_mock", DIRECT_PREFIX))

        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = [(b"x-request-id", request_id.encode("latin-1"))]
                if lifecycle:
                    extra.append((b"vary", b"Origin"))
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        denied = self._check(path, headers, scope) if lifecycle else None
        if denied is not None:
            await JSONResponse(denied, status_code=401)(scope, receive, stamped)
            return
        await self.app(scope, receive, stamped)

    def _check(self, path: str, headers: dict[str, str], scope: Scope) -> dict[str, str] | None:
        if not self.keys or path.startswith(EXEMPT_PATHS):
            return None
        multi = len(self.keys) > 1
        if not multi and ".." not in path and _PROXY_PATH.match(path):
            return None
        key = headers.get(API_KEY_HEADER)
        if not key:
            return MISSING_KEY
        if key not in self.keys:
            return INVALID_KEY
        scope.setdefault("state", {})[TENANT_KEY] = self.keys[key]
        return None


def _query_int(check: Checker, request: Request, name: str, default: int, *, le: int | None = None) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        check.add("int_parsing", ["query", name], raw)
        return default
    if value < 1:
        check.add("greater_than_equal", ["query", name], raw, "Input should be greater than or equal to 1", ge=1)
    elif le is not None and value > le:
        check.add("less_than_equal", ["query", name], raw, f"Input should be less than or equal to {le}", le=le)
    return value


def _query_bool(check: Checker, request: Request, name: str) -> bool:
    raw = request.query_params.get(name)
    if raw is None:
        return False
    value = check.boolean(raw, ["query", name])
    return bool(value)


class LifecycleRoutes:
    """Serve the lifecycle API of one mock."""

    def __init__(self, mock: OpenSandboxMock) -> None:
        self.mock = mock
        self.state = mock.state

    def routes(self) -> list[BaseRoute]:
        """Return every lifecycle route under ``/v1`` and bare, plus the proxy mounts."""
        out: list[BaseRoute] = [
            Route("/health", self.health, methods=["GET"]),
            Route("/version", self.version, methods=["GET"]),
            Route("/v1/metrics/events", self.metrics_event, methods=["POST"]),
        ]
        for prefix in ("/v1", ""):
            p = f"{prefix}/sandboxes"
            out += [
                Mount(f"{p}/{{sandbox_id}}/proxy/{{port:int}}", app=self.mock.proxy_app),
                Route(p, self.create, methods=["POST"]),
                Route(p, self.list, methods=["GET"]),
                Route(f"{p}/{{sandbox_id}}", self.get, methods=["GET"]),
                Route(f"{p}/{{sandbox_id}}", self.delete, methods=["DELETE"]),
                Route(f"{p}/{{sandbox_id}}/metadata", self.patch_metadata, methods=["PATCH"]),
                Route(f"{p}/{{sandbox_id}}/pause", self.pause, methods=["POST"]),
                Route(f"{p}/{{sandbox_id}}/resume", self.resume, methods=["POST"]),
                Route(f"{p}/{{sandbox_id}}/renew-expiration", self.renew, methods=["POST"]),
                Route(f"{p}/{{sandbox_id}}/snapshots", self.create_snapshot, methods=["POST"]),
                Route(f"{p}/{{sandbox_id}}/endpoints/{{port}}", self.endpoint, methods=["GET"]),
                Route(
                    f"{p}/{{sandbox_id}}/networkpolicy",
                    self.network_policy,
                    methods=["GET", "PUT", "PATCH", "DELETE"],
                ),
                Route(f"{prefix}/snapshots", self.list_snapshots, methods=["GET"]),
                Route(f"{prefix}/snapshots/{{snapshot_id}}", self.get_snapshot, methods=["GET"]),
                Route(f"{prefix}/snapshots/{{snapshot_id}}", self.delete_snapshot, methods=["DELETE"]),
                Route(f"{prefix}/pools", self.unsupported, methods=["GET", "POST"]),
                Route(f"{prefix}/pools/{{name}}", self.unsupported, methods=["GET", "PUT", "DELETE"]),
                Route(f"{prefix}/templates", self.unsupported, methods=["GET", "POST"]),
                Route(f"{prefix}/templates/{{name}}", self.unsupported, methods=["GET", "DELETE"]),
            ]
        return out

    def _sandbox(self, request: Request) -> SandboxRecord:
        sandbox_id = request.path_params["sandbox_id"]
        notes(request.scope).sandbox_id = sandbox_id
        notes(request.scope).tenant = tenant_of(request)
        return self.state.find(sandbox_id, tenant_of(request))

    async def health(self, request: Request) -> Response:
        """Answer the health check."""
        return JSONResponse({"status": "healthy"})

    async def version(self, request: Request) -> Response:
        """Answer the server version."""
        return JSONResponse({"version": SERVER_VERSION})

    async def unsupported(self, request: Request) -> Response:
        """Answer 501 for pool and template management (not configured on this runtime)."""
        kind = "Pool" if "/pools" in request.url.path else "Template"
        raise ApiError(501, "SANDBOX::API_NOT_SUPPORTED", f"{kind} management is not supported in this runtime.")

    async def metrics_event(self, request: Request) -> Response:
        """Accept an SDK telemetry event."""
        body = await json_body(request)
        check = Checker()
        data = check.obj(body, ["body"])
        check.raise_if_any()
        assert data is not None
        if "eventType" not in data:
            check.add("missing", ["body", "eventType"], data)
        elif data["eventType"] != "sandbox.create":
            check.add(
                "literal_error",
                ["body", "eventType"],
                data["eventType"],
                "Input should be 'sandbox.create'",
                expected="'sandbox.create'",
            )
        if "createDurationMs" not in data:
            check.add("missing", ["body", "createDurationMs"], data)
        else:
            check.integer(data["createDurationMs"], ["body", "createDurationMs"], ge=0)
        if "success" not in data:
            check.add("missing", ["body", "success"], data)
        else:
            check.boolean(data["success"], ["body", "success"])
        check.raise_if_any()
        with self.state.lock:
            self.state.metrics_events.append(data)
        return Response(status_code=204)

    async def create(self, request: Request) -> Response:
        """Create a sandbox (202)."""
        spec = parse_create(await json_body(request), self.state.profile.name)
        request_notes = notes(request.scope)
        request_notes.unknown_fields.extend(spec.unknown_fields)
        request_notes.tenant = tenant_of(request)
        sb = self.state.create(tenant_of(request), spec)
        request_notes.sandbox_id = sb.id
        return JSONResponse(sb.create_response(), status_code=202)

    async def list(self, request: Request) -> Response:
        """List the tenant's sandboxes with filters and pagination."""
        check = Checker()
        page = _query_int(check, request, "page", 1)
        size = _query_int(check, request, "pageSize", 20, le=MAX_PAGE_SIZE)
        check.raise_if_any()
        metadata: dict[str, str] = {}
        raw = request.query_params.get("metadata")
        if raw:
            try:
                metadata = dict(parse_qsl(raw, keep_blank_values=True, strict_parsing=True))
            except ValueError as exc:
                raise ApiError(400, "INVALID_METADATA_FORMAT", f"Invalid metadata format: {exc}") from exc
        states = request.query_params.getlist("state")
        return JSONResponse(self.state.list(tenant_of(request), states, metadata, page, size))

    async def get(self, request: Request) -> Response:
        """Return one sandbox."""
        return JSONResponse(self._sandbox(request).to_json())

    async def delete(self, request: Request) -> Response:
        """Delete a sandbox (204)."""
        sb = self._sandbox(request)
        self.state.delete(sb.tenant, sb.id)
        return Response(status_code=204)

    async def pause(self, request: Request) -> Response:
        """Pause a sandbox (202)."""
        sb = self._sandbox(request)
        self.state.pause(sb.tenant, sb.id)
        return Response(status_code=202)

    async def resume(self, request: Request) -> Response:
        """Resume a sandbox (202)."""
        sb = self._sandbox(request)
        self.state.resume(sb.tenant, sb.id)
        return Response(status_code=202)

    async def renew(self, request: Request) -> Response:
        """Set a new expiry time."""
        body = await json_body(request)
        check = Checker()
        data = check.obj(body, ["body"])
        check.raise_if_any()
        assert data is not None
        if "expiresAt" not in data:
            check.add("missing", ["body", "expiresAt"], data)
        check.raise_if_any()
        when = check.datetime_value(data["expiresAt"], ["body", "expiresAt"])
        check.raise_if_any()
        assert when is not None
        sb = self._sandbox(request)
        try:
            when = when.astimezone(UTC)
        except OverflowError:
            # The real server normalises to UTC after the sandbox lookup and does not catch the overflow.
            return PlainTextResponse("Internal Server Error", status_code=500)
        new = self.state.renew(sb.tenant, sb.id, when)
        return JSONResponse({"expiresAt": iso(new)})

    async def patch_metadata(self, request: Request) -> Response:
        """Merge-patch the metadata."""
        body = await json_body(request)
        check = Checker()
        if not isinstance(body, dict):
            check.add("dict_type", ["body"], body)
        else:
            for key, value in body.items():
                if value is not None:
                    check.string(value, ["body", key])
        check.raise_if_any()
        sb = self._sandbox(request)
        return JSONResponse(self.state.patch_metadata(sb.tenant, sb.id, body).to_json())

    async def create_snapshot(self, request: Request) -> Response:
        """Snapshot a sandbox (202 with ``Location``)."""
        body = await json_body(request, required=False)
        name: str | None = None
        if body is not None:
            check = Checker()
            data = check.obj(body, ["body"])
            check.raise_if_any()
            assert data is not None
            if data.get("name") is not None:
                name = check.string(data["name"], ["body", "name"], min_length=1)
            check.raise_if_any()
        sb = self._sandbox(request)
        snap = self.state.create_snapshot(sb.tenant, sb.id, name, self.mock.snapshot_seconds)
        return JSONResponse(
            snap.to_json(self.mock.clock.now()),
            status_code=202,
            headers={"Location": f"/v1/snapshots/{snap.id}"},
        )

    async def list_snapshots(self, request: Request) -> Response:
        """List the tenant's snapshots."""
        check = Checker()
        page = _query_int(check, request, "page", 1)
        size = _query_int(check, request, "pageSize", 20, le=MAX_PAGE_SIZE)
        check.raise_if_any()
        q = request.query_params
        return JSONResponse(
            self.state.list_snapshots(
                tenant_of(request), q.get("sandboxId"), q.get("name"), q.getlist("state"), page, size
            )
        )

    async def get_snapshot(self, request: Request) -> Response:
        """Return one snapshot."""
        snap = self.state.find_snapshot(tenant_of(request), request.path_params["snapshot_id"])
        return JSONResponse(snap.to_json(self.mock.clock.now()))

    async def delete_snapshot(self, request: Request) -> Response:
        """Delete one snapshot (204)."""
        self.state.delete_snapshot(tenant_of(request), request.path_params["snapshot_id"])
        return Response(status_code=204)

    async def endpoint(self, request: Request) -> Response:
        """Return where a sandbox port is reachable: directly, or through the server proxy."""
        check = Checker()
        raw_port = request.path_params["port"]
        try:
            port = int(raw_port)
        except ValueError:
            raise RequestValidationError([error("int_parsing", ["path", "port"], raw_port)]) from None
        use_proxy = _query_bool(check, request, "use_server_proxy")
        expires = request.query_params.get("expires")
        if expires is not None:
            check.integer(expires, ["query", "expires"])
        check.raise_if_any()
        if use_proxy and expires is not None:
            raise ApiError(
                400,
                "SANDBOX::INVALID_PARAMETER",
                "use_server_proxy cannot be combined with expires; signed endpoints require the gateway route.",
            )
        if expires is not None and self.state.profile.name == "docker":
            raise ApiError(
                400,
                "SANDBOX::API_NOT_SUPPORTED",
                "Signed routes (expires parameter) are not supported when runtime.type='docker'. "
                "Use the Kubernetes runtime for signed routes.",
            )
        if not 1 <= port <= 65535:
            raise ApiError(400, "DOCKER::INVALID_PORT", "Port must be between 1 and 65535.")
        sb = self._sandbox(request)
        self.mock.require_pod_ip(sb)
        host = request.headers.get("host") or self.mock.default_host
        if use_proxy:
            mount = request.url.path.split("/sandboxes/", 1)[0]
            body: dict[str, Any] = {"endpoint": f"{host}{mount}/sandboxes/{sb.id}/proxy/{port}"}
        else:
            body = {"endpoint": f"{host}{DIRECT_PREFIX}/{sb.id}/{port}"}
        headers = self.mock.endpoint_headers(port)
        if headers:
            body["headers"] = headers
        return JSONResponse(body)

    async def network_policy(self, request: Request) -> Response:
        """Read or change the policy through the server (proxied to the sandbox's sidecar)."""
        sb = self._sandbox(request)
        if not sb.has_sidecar or sb.state != "Running":
            raise ApiError(
                502,
                "BACKEND_CONNECTION_FAILED",
                f"Could not connect to the backend sandbox {self.mock.backend_address(EGRESS_PORT)}: "
                "All connection attempts failed",
            )
        enforcement = self.mock.enforcement_mode
        if request.method == "GET":
            return JSONResponse(egress.status_body(sb, enforcement, with_policy=True))
        body = await json_body(request)
        try:
            if request.method == "PATCH":
                egress.apply_patch(sb, body)
            elif request.method == "DELETE":
                egress.apply_delete(sb, body)
            else:
                egress.apply_put(sb, body)
        except PolicyError as exc:
            raise ApiError(400, "SANDBOX::INVALID_PARAMETER", f"invalid policy: {exc}") from exc
        return JSONResponse(egress.status_body(sb, enforcement, with_policy=True))


__all__ = ["DIRECT_PREFIX", "EXECD_PORT", "LifecycleGate", "LifecycleRoutes", "tenant_of"]
