"""Lifecycle routes of the TensorLake mock: parse the request, call one :class:`LifecycleApi` method, render.

Both route trees are served: the flat cloud paths (``/sandboxes...``, what ``TENSORLAKE_SANDBOX_API_URL``
selects) and the same paths under ``/v1/namespaces/{ns}`` (what a localhost ``api_url`` selects; the log
routes always use it). The rules, bodies and waits are the model's (:mod:`..model.lifecycle`); this module
only turns HTTP into a :class:`~..model.lifecycle.Call` and awaits the waits the model decides.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from mockserver.asgi.blocking import offload
from mockserver.asgi.middleware import notes
from mockserver.asgi.requests import read_json
from mockserver.core.clock import VirtualClock

from ..model.lifecycle import Call, LifecycleApi, Outcome
from ..model.urls import Origin
from .common import query_lists, render, settle

__all__ = ["OPENAPI_PATH", "LifecycleContext", "LifecycleRoutes"]

Handler = Callable[[Request], Awaitable[Response]]
OPENAPI_PATH = Path(__file__).parents[1] / "openapi.json"


@dataclass(frozen=True)
class LifecycleContext:
    """What the lifecycle routes use: the model's lifecycle API and the clock its waits run on."""

    api: LifecycleApi
    clock: VirtualClock


def _dispatch(handlers: dict[str, Handler]) -> Handler:
    """Return one endpoint that calls the handler of the request's method (so 405s list every method)."""

    async def endpoint(request: Request) -> Response:
        return await handlers["GET" if request.method == "HEAD" else request.method](request)

    return endpoint


_CALL_HEADERS = frozenset(
    {b"host", b"authorization", b"x-tensorlake-request-timeout-ms", b"x-tensorlake-request-timeout-grace-ms"}
)


def call_of(request: Request) -> Call:
    """Return the model's view of a lifecycle request (read straight from the ASGI scope: one pass, no URL)."""
    scope = request.scope
    found: dict[bytes, str] = {}
    for name, value in scope.get("headers") or ():
        if name in _CALL_HEADERS and name not in found:
            found[name] = value.decode("latin-1")
    host = found.get(b"host") or f"{request.url.hostname}:{request.url.port}"
    return Call(
        authorization=found.get(b"authorization"),
        origin=Origin(str(scope.get("scheme") or "http"), host),
        namespace=str(request.path_params.get("ns", "default")),
        query=query_lists(request) if scope.get("query_string") else {},
        timeout_ms=found.get(b"x-tensorlake-request-timeout-ms"),
        grace_ms=found.get(b"x-tensorlake-request-timeout-grace-ms"),
        notes=notes(scope),
    )


class LifecycleRoutes:
    """Serve the sandbox, snapshot, archive and log routes of one :class:`LifecycleApi`."""

    def __init__(self, context: LifecycleContext) -> None:
        self.api = context.api
        self.clock = context.clock

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

    async def answer(self, outcome: Outcome) -> Response:
        """Await the model's waits, then render its answer."""
        return render(await settle(outcome, self.clock))

    async def openapi(self, request: Request) -> Response:
        """Serve the OpenAPI document of the lifecycle routes."""
        return Response(OPENAPI_PATH.read_bytes(), media_type="application/json")

    # -- sandboxes -------------------------------------------------------------------------------

    async def create(self, request: Request) -> Response:
        """Create a sandbox (waiting on the virtual clock until it runs unless ``wait`` is false)."""
        call = call_of(request)
        self.api.tenant(call)
        return await self.answer(self.api.create(call, await read_json(request, empty={})))

    async def list_sandboxes(self, request: Request) -> Response:
        """List the tenant's sandboxes."""
        return render(self.api.list_sandboxes(call_of(request)))

    async def get(self, request: Request) -> Response:
        """Return one sandbox by id or name."""
        return render(self.api.get(call_of(request), request.path_params["sid"]))

    async def patch(self, request: Request) -> Response:
        """Update a sandbox atomically and return its full SandboxInfo."""
        call = call_of(request)
        self.api.tenant(call)
        return render(self.api.patch(call, request.path_params["sid"], await read_json(request)))

    async def delete(self, request: Request) -> Response:
        """Terminate a sandbox."""
        return render(self.api.delete(call_of(request), request.path_params["sid"]))

    async def suspend(self, request: Request) -> Response:
        """Suspend a named sandbox: 200 once suspended, 202 while it is still suspending."""
        return await self.answer(self.api.suspend(call_of(request), request.path_params["sid"]))

    async def resume(self, request: Request) -> Response:
        """Resume a suspended sandbox: 200 once running, 202 while it is still resuming."""
        return await self.answer(self.api.resume(call_of(request), request.path_params["sid"]))

    async def copy(self, request: Request) -> Response:
        """Clone a running sandbox ``times`` times."""
        return render(self.api.copy(call_of(request), request.path_params["sid"]))

    async def file_systems(self, request: Request) -> Response:
        """Attach (POST) or detach (DELETE) a file-system mount."""
        call = call_of(request)
        self.api.tenant(call)
        body = await read_json(request)
        sid = request.path_params["sid"]
        return render(
            self.api.attach(call, sid, body) if request.method == "POST" else self.api.detach(call, sid, body)
        )

    # -- snapshots -------------------------------------------------------------------------------

    async def snapshot(self, request: Request) -> Response:
        """Checkpoint a running sandbox (in a worker thread: a runtime's files are real I/O, see the model)."""
        call = call_of(request)
        self.api.tenant(call)
        body = await read_json(request, empty={})
        return render(await offload(True, self.api.snapshot, call, request.path_params["sid"], body))

    async def get_snapshot(self, request: Request) -> Response:
        """Return one snapshot."""
        return render(self.api.get_snapshot(call_of(request), request.path_params["snap"]))

    async def list_snapshots(self, request: Request) -> Response:
        """List the tenant's snapshots."""
        return render(self.api.list_snapshots(call_of(request)))

    async def sandbox_snapshots(self, request: Request) -> Response:
        """List the snapshots taken from one sandbox."""
        return render(self.api.list_snapshots(call_of(request), request.path_params["sid"]))

    async def delete_snapshot(self, request: Request) -> Response:
        """Delete a snapshot."""
        return render(self.api.delete_snapshot(call_of(request), request.path_params["snap"]))

    # -- archive, logs, pools --------------------------------------------------------------------

    async def list_archived(self, request: Request) -> Response:
        """List archived (terminated) sandboxes, newest first, with cursor paging."""
        return render(self.api.list_archived(call_of(request)))

    async def get_archived(self, request: Request) -> Response:
        """Return one archived sandbox."""
        return render(self.api.get_archived(call_of(request), request.path_params["sid"]))

    async def logs(self, request: Request) -> Response:
        """Return the persisted log lines of a sandbox, filtered like the real log endpoint."""
        return render(self.api.logs(call_of(request), request.path_params["sid"]))

    async def log_processes(self, request: Request) -> Response:
        """Return the processes that wrote log lines, with counts and first/last times."""
        return render(self.api.log_processes(call_of(request), request.path_params["sid"]))

    async def pools(self, request: Request) -> Response:
        """Refuse sandbox pools, which this mock does not implement."""
        return render(self.api.pools(call_of(request)))
