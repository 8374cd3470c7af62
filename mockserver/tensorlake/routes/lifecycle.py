"""Lifecycle routes of the TensorLake mock: parse the request, call one operation of :mod:`..model.lifecycle`, render.

Both route trees are served: the flat cloud paths (``/sandboxes...``, what ``TENSORLAKE_SANDBOX_API_URL``
selects) and the same paths under ``/v1/namespaces/{ns}`` (what a localhost ``api_url`` selects; the log
routes always use it). The rules, bodies and waits are the model's (:mod:`..model.lifecycle`); this module
only turns HTTP into a :class:`~..model.lifecycle.Call` and awaits the waits the model decides. The key was
checked before routing (:mod:`.gate`), which left the tenant in the scope. The handlers are module functions
of the context; :data:`ROWS` is the table :func:`lifecycle_routes` binds under both trees.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from mockserver.asgi.blocking import offload
from mockserver.asgi.handlers import Row, bind
from mockserver.asgi.middleware import notes
from mockserver.asgi.requests import read_json
from mockserver.core.clock import VirtualClock

from ..model import lifecycle as ops
from ..model.lifecycle import Call, Outcome
from ..model.operations import TensorLakeModel
from ..model.urls import Origin
from .common import query_lists, render, settle
from .gate import TENANT_KEY

__all__ = ["OPENAPI_PATH", "ROWS", "LifecycleContext", "call_of", "lifecycle_routes"]

OPENAPI_PATH = Path(__file__).parents[1] / "openapi.json"


@dataclass(frozen=True)
class LifecycleContext:
    """What the lifecycle routes use: the model the operations act on and the clock their waits run on."""

    model: TensorLakeModel
    clock: VirtualClock


_CALL_HEADERS = frozenset({b"host", b"x-tensorlake-request-timeout-ms", b"x-tensorlake-request-timeout-grace-ms"})


def call_of(request: Request) -> Call:
    """Return the model's view of a lifecycle request (read straight from the ASGI scope: one pass, no URL).

    The tenant is the one the gate (:mod:`.gate`) authenticated and left in the scope.
    """
    scope = request.scope
    found: dict[bytes, str] = {}
    for name, value in scope.get("headers") or ():
        if name in _CALL_HEADERS and name not in found:
            found[name] = value.decode("latin-1")
    host = found.get(b"host") or f"{request.url.hostname}:{request.url.port}"
    return Call(
        tenant=scope["state"][TENANT_KEY],
        origin=Origin(str(scope.get("scheme") or "http"), host),
        query=query_lists(request) if scope.get("query_string") else {},
        timeout_ms=found.get(b"x-tensorlake-request-timeout-ms"),
        grace_ms=found.get(b"x-tensorlake-request-timeout-grace-ms"),
        notes=notes(scope),
    )


async def answer(ctx: LifecycleContext, outcome: Outcome) -> Response:
    """Await the model's waits on the context's clock, then render its answer."""
    return render(await settle(outcome, ctx.clock))


async def openapi(request: Request) -> Response:
    """Serve the OpenAPI document of the lifecycle routes."""
    return Response(OPENAPI_PATH.read_bytes(), media_type="application/json")


# -- sandboxes -----------------------------------------------------------------------------------


async def create(ctx: LifecycleContext, request: Request) -> Response:
    """Create a sandbox (waiting on the virtual clock until it runs unless ``wait`` is false)."""
    call = call_of(request)
    return await answer(ctx, ops.create(ctx.model, call, await read_json(request, empty={})))


async def list_sandboxes(ctx: LifecycleContext, request: Request) -> Response:
    """List the tenant's sandboxes."""
    return render(ops.list_sandboxes(ctx.model, call_of(request)))


async def get(ctx: LifecycleContext, request: Request) -> Response:
    """Return one sandbox by id or name."""
    return render(ops.get(ctx.model, call_of(request), request.path_params["sid"]))


async def patch(ctx: LifecycleContext, request: Request) -> Response:
    """Update a sandbox atomically and return its full SandboxInfo."""
    call = call_of(request)
    return render(ops.patch(ctx.model, call, request.path_params["sid"], await read_json(request)))


async def delete(ctx: LifecycleContext, request: Request) -> Response:
    """Terminate a sandbox."""
    return render(ops.delete(ctx.model, call_of(request), request.path_params["sid"]))


async def suspend(ctx: LifecycleContext, request: Request) -> Response:
    """Suspend a named sandbox: 200 once suspended, 202 while it is still suspending."""
    return await answer(ctx, ops.suspend(ctx.model, call_of(request), request.path_params["sid"]))


async def resume(ctx: LifecycleContext, request: Request) -> Response:
    """Resume a suspended sandbox: 200 once running, 202 while it is still resuming."""
    return await answer(ctx, ops.resume(ctx.model, call_of(request), request.path_params["sid"]))


async def copy(ctx: LifecycleContext, request: Request) -> Response:
    """Clone a running sandbox ``times`` times."""
    return render(ops.copy(ctx.model, call_of(request), request.path_params["sid"]))


async def file_systems(ctx: LifecycleContext, request: Request) -> Response:
    """Attach (POST) or detach (DELETE) a file-system mount."""
    call = call_of(request)
    body = await read_json(request)
    sid = request.path_params["sid"]
    mount = ops.attach if request.method == "POST" else ops.detach
    return render(mount(ctx.model, call, sid, body))


# -- snapshots -----------------------------------------------------------------------------------


async def snapshot(ctx: LifecycleContext, request: Request) -> Response:
    """Checkpoint a running sandbox (in a worker thread: a runtime's files are real I/O, see the model)."""
    call = call_of(request)
    body = await read_json(request, empty={})
    return render(await offload(True, ops.snapshot, ctx.model, call, request.path_params["sid"], body))


async def get_snapshot(ctx: LifecycleContext, request: Request) -> Response:
    """Return one snapshot."""
    return render(ops.get_snapshot(ctx.model, call_of(request), request.path_params["snap"]))


async def list_snapshots(ctx: LifecycleContext, request: Request) -> Response:
    """List the tenant's snapshots."""
    return render(ops.list_snapshots(ctx.model, call_of(request)))


async def sandbox_snapshots(ctx: LifecycleContext, request: Request) -> Response:
    """List the snapshots taken from one sandbox."""
    return render(ops.list_snapshots(ctx.model, call_of(request), request.path_params["sid"]))


async def delete_snapshot(ctx: LifecycleContext, request: Request) -> Response:
    """Delete a snapshot."""
    return render(ops.delete_snapshot(ctx.model, call_of(request), request.path_params["snap"]))


# -- archive, logs, pools ------------------------------------------------------------------------


async def list_archived(ctx: LifecycleContext, request: Request) -> Response:
    """List archived (terminated) sandboxes, newest first, with cursor paging."""
    return render(ops.list_archived(ctx.model, call_of(request)))


async def get_archived(ctx: LifecycleContext, request: Request) -> Response:
    """Return one archived sandbox."""
    return render(ops.get_archived(ctx.model, call_of(request), request.path_params["sid"]))


async def logs(ctx: LifecycleContext, request: Request) -> Response:
    """Return the persisted log lines of a sandbox, filtered like the real log endpoint."""
    return render(ops.logs(ctx.model, call_of(request), request.path_params["sid"]))


async def log_processes(ctx: LifecycleContext, request: Request) -> Response:
    """Return the processes that wrote log lines, with counts and first/last times."""
    return render(ops.log_processes(ctx.model, call_of(request), request.path_params["sid"]))


async def pools(ctx: LifecycleContext, request: Request) -> Response:
    """Refuse sandbox pools, which this mock does not implement."""
    return render(ops.pools(ctx.model, call_of(request)))


#: The lifecycle routes of one tree, in the order they match.
ROWS: tuple[Row[LifecycleContext], ...] = (
    Row("/sandboxes", "GET", list_sandboxes),
    Row("/sandboxes", "POST", create),
    Row("/sandboxes/{sid}", "GET", get),
    Row("/sandboxes/{sid}", "PATCH", patch),
    Row("/sandboxes/{sid}", "DELETE", delete),
    Row("/sandboxes/{sid}/suspend", "POST", suspend),
    Row("/sandboxes/{sid}/resume", "POST", resume),
    Row("/sandboxes/{sid}/snapshot", "POST", snapshot),
    Row("/sandboxes/{sid}/snapshots", "GET", sandbox_snapshots),
    Row("/sandboxes/{sid}/copy", "POST", copy),
    Row("/sandboxes/{sid}/file_systems", "POST", file_systems),
    Row("/sandboxes/{sid}/file_systems", "DELETE", file_systems),
    Row("/sandboxes/{sid}/logs", "GET", logs),
    Row("/sandboxes/{sid}/processes", "GET", log_processes),
    Row("/snapshots", "GET", list_snapshots),
    Row("/snapshots/{snap}", "GET", get_snapshot),
    Row("/snapshots/{snap}", "DELETE", delete_snapshot),
    Row("/archived-sandboxes", "GET", list_archived),
    Row("/archived-sandboxes/{sid}", "GET", get_archived),
    *(Row("/sandbox-pools", method, pools) for method in ("GET", "POST")),
    *(Row("/sandbox-pools/{rest:path}", method, pools) for method in ("GET", "POST", "PUT", "DELETE")),
)


def lifecycle_routes(ctx: LifecycleContext, rows: tuple[Row[LifecycleContext], ...] = ROWS) -> list[BaseRoute]:
    """Return ``/openapi.json`` and the lifecycle routes of ``rows`` on both trees (flat and namespaced)."""
    routes: list[BaseRoute] = [Route("/openapi.json", openapi, methods=["GET"])]
    return routes + bind(ctx, rows, per_method=False, prefixes=("", "/v1/namespaces/{ns}"))
