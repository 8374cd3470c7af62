"""Lifecycle routes of the TensorLake mock: parse the request, call the model, serialise the answer.

Both route trees are served: the flat cloud paths (``/sandboxes...``, what ``TENSORLAKE_SANDBOX_API_URL``
selects) and the same paths under ``/v1/namespaces/{ns}`` (what a localhost ``api_url`` selects; the log
routes always use it). Every call needs ``Authorization: Bearer <key>``; the key names the tenant.

Known deviations from the real service: any bearer key is accepted unless the mock was given a set of
``api_keys`` (each key is its own project);
sandbox pools are not implemented (501 ``not_supported``); the log routes return the output lines of
commands run through the mock's management API.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from mockserver.asgi.middleware import notes
from mockserver.asgi.requests import read_json
from mockserver.core.errors import ApiError

from .records import ROUTING_HINT, Sandbox, owner_id
from .validate import SNAPSHOT_TYPES, bad, parse_create

if TYPE_CHECKING:
    from .mock import TensorLakeMock

Handler = Callable[[Request], Awaitable[Response]]
OPENAPI_PATH = Path(__file__).with_name("openapi.json")
DEFAULT_TIMEOUT_MS = 300_000
LOOPBACK_NAMES = frozenset({"localhost"})


def bearer_key(request: Request) -> str | None:
    """Return the bearer key of a request, if it has one."""
    header = request.headers.get("authorization", "")
    scheme, _, key = header.partition(" ")
    return key.strip() or None if scheme.lower() == "bearer" else None


@functools.lru_cache(maxsize=256)
def is_loopback_host(hostname: str) -> bool:
    """Tell whether ``hostname`` is ``localhost`` or a loopback/IP literal the SDK talks to directly."""
    if hostname in LOOPBACK_NAMES:
        return True
    try:
        ipaddress.ip_address(hostname.strip("[]"))
    except ValueError:
        return False
    return True


def _int_query(request: Request, key: str, *, minimum: int = 0) -> int | None:
    raw = request.query_params.get(key)
    if raw is None:
        return None
    if not (raw.isascii() and raw.isdigit()) or int(raw) < minimum:
        raise bad("invalid_query", f"query parameter {key} must be an integer >= {minimum}")
    return int(raw)


def _dispatch(handlers: dict[str, Handler]) -> Handler:
    """Return one endpoint that calls the handler of the request's method (so 405s list every method)."""

    async def endpoint(request: Request) -> Response:
        return await handlers["GET" if request.method == "HEAD" else request.method](request)

    return endpoint


class LifecycleRoutes:
    """Serve the sandbox, snapshot, archive and log routes of one :class:`TensorLakeMock`."""

    def __init__(self, mock: TensorLakeMock) -> None:
        self.mock = mock
        self.model = mock.model

    def routes(self) -> list[BaseRoute]:
        """Return the routes for both trees."""
        table: list[tuple[str, dict[str, Handler]]] = [
            ("/sandboxes", {"GET": self.list_sandboxes, "POST": self.create}),
            ("/sandboxes/{sid}", {"GET": self.get, "PATCH": self.patch, "DELETE": self.delete}),
            ("/sandboxes/{sid}/suspend", {"POST": self.suspend}),
            ("/sandboxes/{sid}/resume", {"POST": self.resume}),
            ("/sandboxes/{sid}/snapshot", {"POST": self.snapshot}),
            ("/sandboxes/{sid}/snapshots", {"GET": self.sandbox_snapshots}),
            ("/sandboxes/{sid}/copy", {"POST": self.copy}),
            ("/sandboxes/{sid}/file_systems", {"POST": self.file_systems, "DELETE": self.file_systems}),
            ("/sandboxes/{sid}/logs", {"GET": self.logs}),
            ("/sandboxes/{sid}/processes", {"GET": self.log_processes}),
            ("/snapshots", {"GET": self.list_snapshots}),
            ("/snapshots/{snap}", {"GET": self.get_snapshot, "DELETE": self.delete_snapshot}),
            ("/archived-sandboxes", {"GET": self.list_archived}),
            ("/archived-sandboxes/{sid}", {"GET": self.get_archived}),
            ("/sandbox-pools", dict.fromkeys(("GET", "POST"), self.pools)),
            ("/sandbox-pools/{rest:path}", dict.fromkeys(("GET", "POST", "PUT", "DELETE"), self.pools)),
        ]
        routes: list[BaseRoute] = [Route("/openapi.json", self.openapi, methods=["GET"])]
        for prefix in ("", "/v1/namespaces/{ns}"):
            routes += [Route(prefix + path, _dispatch(fns), methods=list(fns)) for path, fns in table]
        return routes

    async def openapi(self, request: Request) -> Response:
        """Serve the OpenAPI document of the lifecycle routes."""
        return Response(OPENAPI_PATH.read_bytes(), media_type="application/json")

    # -- helpers ---------------------------------------------------------------------------------

    def tenant(self, request: Request) -> tuple[str, str]:
        """Return ``(owner, namespace)``; 401 without a bearer key."""
        key = bearer_key(request)
        if key is None:
            raise ApiError(401, "unauthorized", "missing or malformed Authorization: Bearer <api key>")
        if not self.mock.key_is_valid(key):
            raise ApiError(401, "invalid_api_key", "the API key is not valid")
        namespace = str(request.path_params.get("ns", "default"))
        owner = owner_id(key)
        notes(request.scope).tenant = f"{owner}/{namespace}"
        sid = request.path_params.get("sid")
        if sid is not None:
            notes(request.scope).sandbox_id = str(sid)
        return owner, namespace

    def urls(self, request: Request, sandbox_id: str) -> tuple[str, str]:
        """Return ``(sandbox_url, ingress_endpoint)`` as seen from the client's side of this request."""
        scheme = request.url.scheme
        host = request.headers.get("host") or f"{request.url.hostname}:{request.url.port}"
        hostname, _, port = host.rpartition(":") if host.count(":") == 1 else (host, "", "")
        suffix = f":{port}" if port else ""
        domain = self.mock.ingress_domain
        ingress = f"{scheme}://{domain}{suffix}"
        if is_loopback_host(hostname):
            return f"{scheme}://{host}", ingress
        return f"{scheme}://{sandbox_id}.{domain}{suffix}", ingress

    def info(self, request: Request, sb: Sandbox) -> dict[str, Any]:
        """Return the SandboxInfo of ``sb`` for this request."""
        sandbox_url, ingress = self.urls(request, sb.id)
        return sb.info(sandbox_url=sandbox_url, ingress_endpoint=ingress)

    def sandbox_json(self, request: Request, sb: Sandbox, status: int = 200) -> JSONResponse:
        """Answer the SandboxInfo of ``sb`` (read under the model lock, so it is never half-updated)."""
        with self.model.lock:
            self.model.settle(sb)
            body = self.info(request, sb)
        notes(request.scope).sandbox_id = sb.id
        return JSONResponse(body, status_code=status)

    def create_body(self, request: Request, sb: Sandbox, status: str | None = None) -> dict[str, Any]:
        """Return the CreateSandboxResponse of ``sb``."""
        sandbox_url, ingress = self.urls(request, sb.id)
        state = status or sb.status
        body: dict[str, Any] = {"sandbox_id": sb.id, "status": state, "ingress_endpoint": ingress}
        if sb.name is not None:
            body["name"] = sb.name
        if state == "running":
            body["sandbox_url"] = sandbox_url
            body["routing_hint"] = ROUTING_HINT
        if state == "pending":
            body["pending_reason"] = sb.pending_reason or "scheduling"
        return body

    # -- sandboxes -------------------------------------------------------------------------------

    async def create(self, request: Request) -> Response:
        """Create a sandbox, waiting (on the virtual clock) until it runs unless ``wait`` is false."""
        owner, namespace = self.tenant(request)
        req = parse_create(await read_json(request, empty={}), self.model.resolve)
        notes(request.scope).unknown_fields.extend(req.unknown)
        sb, outcome = self.model.create(owner, namespace, req)
        notes(request.scope).sandbox_id = sb.id
        if outcome is not None and outcome.kind == "failed":
            failure = {
                "sandbox_id": sb.id,
                "status": "failed",
                "reason": outcome.reason,
                "termination_reason": outcome.reason,
                "error_details": outcome.error_details,
            }
            return JSONResponse(failure, status_code=outcome.status)
        if outcome is not None and outcome.kind == "timeout":
            return JSONResponse({"sandbox_id": sb.id, "status": "timeout"}, status_code=504)
        if not req.wait:
            return JSONResponse(self.create_body(request, sb, "pending"), status_code=202)
        budget = self.mock.request_budget(request)
        waited = await self.mock.wait_until(sb.ready_at, budget)
        with self.model.lock:
            self.model.settle(sb)
            if sb.status == "pending" and waited >= budget > 0:
                return JSONResponse({"sandbox_id": sb.id, "status": "timeout"}, status_code=504)
            return JSONResponse(self.create_body(request, sb))

    async def list_sandboxes(self, request: Request) -> Response:
        """List the tenant's sandboxes."""
        owner, namespace = self.tenant(request)
        with self.model.lock:
            items = [self.info(request, sb) for sb in self.model.list_sandboxes(owner, namespace)]
        return JSONResponse({"sandboxes": items})

    async def get(self, request: Request) -> Response:
        """Return one sandbox by id or name."""
        owner, namespace = self.tenant(request)
        return self.sandbox_json(request, self.model.find(owner, namespace, request.path_params["sid"]))

    async def patch(self, request: Request) -> Response:
        """Update a sandbox atomically and return its full SandboxInfo."""
        owner, namespace = self.tenant(request)
        body = await read_json(request)
        with self.model.lock:
            sb, unknown = self.model.patch(owner, namespace, request.path_params["sid"], body)
            notes(request.scope).unknown_fields.extend(unknown)
            return self.sandbox_json(request, sb)

    async def delete(self, request: Request) -> Response:
        """Terminate a sandbox."""
        owner, namespace = self.tenant(request)
        sb = self.model.delete(owner, namespace, request.path_params["sid"])
        return self.sandbox_json(request, sb)

    async def suspend(self, request: Request) -> Response:
        """Suspend a named sandbox: 200 once suspended, 202 while it is still suspending."""
        owner, namespace = self.tenant(request)
        wait_ms = _int_query(request, "wait_ms")
        sb = self.model.suspend(owner, namespace, request.path_params["sid"])
        if wait_ms:
            await self.mock.wait_until(sb.transition_at, wait_ms / 1000)
        self.model.settle(sb)
        return self.sandbox_json(request, sb, 200 if sb.status == "suspended" else 202)

    async def resume(self, request: Request) -> Response:
        """Resume a suspended sandbox: 200 once running, 202 while it is still resuming."""
        owner, namespace = self.tenant(request)
        wait_ms = _int_query(request, "wait_ms")
        sb = self.model.resume(owner, namespace, request.path_params["sid"])
        if wait_ms:
            await self.mock.wait_until(sb.transition_at, wait_ms / 1000)
        self.model.settle(sb)
        return self.sandbox_json(request, sb, 200 if sb.status == "running" else 202)

    async def copy(self, request: Request) -> Response:
        """Clone a running sandbox ``times`` times."""
        owner, namespace = self.tenant(request)
        times = _int_query(request, "times", minimum=1) or 1
        if times > 32:
            raise bad("invalid_query", "times must be at most 32")
        source, copies = self.model.copy(owner, namespace, request.path_params["sid"], times)
        return JSONResponse(
            {"source_sandbox_id": source.id, "sandboxes": [self.create_body(request, c) for c in copies]}
        )

    async def file_systems(self, request: Request) -> Response:
        """Attach (POST) or detach (DELETE) a file-system mount."""
        owner, namespace = self.tenant(request)
        body = await read_json(request)
        sid = request.path_params["sid"]
        if request.method == "POST":
            sb = self.model.attach(owner, namespace, sid, body)
        else:
            sb = self.model.detach(owner, namespace, sid, body)
        return self.sandbox_json(request, sb)

    # -- snapshots -------------------------------------------------------------------------------

    async def snapshot(self, request: Request) -> Response:
        """Checkpoint a running sandbox."""
        owner, namespace = self.tenant(request)
        body = await read_json(request, empty={})
        if not isinstance(body, dict):
            raise bad("invalid_type", "request body must be a JSON object")
        snapshot_type = body.get("snapshot_type")
        if snapshot_type is not None and (not isinstance(snapshot_type, str) or snapshot_type not in SNAPSHOT_TYPES):
            raise bad("invalid_snapshot_type", "snapshot_type must be 'memory' or 'filesystem'")
        snap = self.model.snapshot(owner, namespace, request.path_params["sid"], snapshot_type)
        return JSONResponse({"snapshot_id": snap.id, "status": snap.status_at(self.mock.clock.now())})

    async def get_snapshot(self, request: Request) -> Response:
        """Return one snapshot."""
        owner, namespace = self.tenant(request)
        snap = self.model.get_snapshot(owner, namespace, request.path_params["snap"])
        return JSONResponse(snap.info(self.mock.clock.now()))

    async def list_snapshots(self, request: Request) -> Response:
        """List the tenant's snapshots."""
        owner, namespace = self.tenant(request)
        now = self.mock.clock.now()
        return JSONResponse({"snapshots": [s.info(now) for s in self.model.list_snapshots(owner, namespace)]})

    async def sandbox_snapshots(self, request: Request) -> Response:
        """List the snapshots taken from one sandbox."""
        owner, namespace = self.tenant(request)
        sb = self.model.find(owner, namespace, request.path_params["sid"])
        now = self.mock.clock.now()
        snaps = self.model.list_snapshots(owner, namespace, sb.id)
        return JSONResponse({"snapshots": [s.info(now) for s in snaps]})

    async def delete_snapshot(self, request: Request) -> Response:
        """Delete a snapshot."""
        owner, namespace = self.tenant(request)
        self.model.delete_snapshot(owner, namespace, request.path_params["snap"])
        return Response(status_code=204)

    # -- archive, logs, pools --------------------------------------------------------------------

    async def list_archived(self, request: Request) -> Response:
        """List archived (terminated) sandboxes, newest first, with cursor paging."""
        owner, namespace = self.tenant(request)
        limit = _int_query(request, "limit", minimum=1) or 100
        cursor = request.query_params.get("cursor")
        direction = request.query_params.get("direction", "forward")
        if direction not in ("forward", "backward"):
            raise bad("invalid_query", "direction must be 'forward' or 'backward'")
        with self.model.lock:
            items = self.model.archived(owner, namespace)
            if direction == "backward":
                items.reverse()
            start = next((i + 1 for i, s in enumerate(items) if s.id == cursor), 0) if cursor else 0
            page = items[start : start + limit]
            body: dict[str, Any] = {
                "sandboxes": [self.info(request, s) for s in page],
                "prev_cursor": None,
                "next_cursor": page[-1].id if start + limit < len(items) and page else None,
            }
        return JSONResponse(body)

    async def get_archived(self, request: Request) -> Response:
        """Return one archived sandbox."""
        owner, namespace = self.tenant(request)
        sid = request.path_params["sid"]
        with self.model.lock:
            sb = self.model.archive.get(sid)
            if sb is None or sb.owner != owner or sb.namespace != namespace:
                raise ApiError(404, "sandbox_not_found", f"archived sandbox {sid!r} not found")
            return JSONResponse(self.info(request, sb))

    async def logs(self, request: Request) -> Response:
        """Return the persisted log lines of a sandbox, filtered like the real log endpoint."""
        owner, namespace = self.tenant(request)
        sb = self.model.find(owner, namespace, request.path_params["sid"])
        q = request.query_params
        raw_levels = q.getlist("level")
        if not all(v.isascii() and v.isdigit() and 1 <= int(v) <= 6 for v in raw_levels):
            raise bad("invalid_query", "level must be an integer from 1 (trace) to 6 (fatal)")
        levels = {int(v) for v in raw_levels}
        entries = self.mock.logs_of(sb)
        if levels:
            entries = [e for e in entries if e["level"] in levels]
        if q.get("processId"):
            entries = [e for e in entries if e["processId"] == q["processId"]]
        if q.get("body"):
            entries = [e for e in entries if q["body"] in e["body"]]
        head, tail = _int_query(request, "head"), _int_query(request, "tail")
        if head is not None:
            entries = entries[:head]
        if tail is not None:
            entries = entries[-tail:] if tail else []
        return JSONResponse({"logs": [e["signal"] for e in entries], "nextToken": None})

    async def log_processes(self, request: Request) -> Response:
        """Return the processes that wrote log lines, with counts and first/last times."""
        owner, namespace = self.tenant(request)
        sb = self.model.find(owner, namespace, request.path_params["sid"])
        return JSONResponse({"processes": self.mock.log_processes_of(sb)})

    async def pools(self, request: Request) -> Response:
        """Refuse sandbox pools, which this mock does not implement."""
        self.tenant(request)
        raise ApiError(501, "not_supported", "sandbox pools are not implemented by this mock")
