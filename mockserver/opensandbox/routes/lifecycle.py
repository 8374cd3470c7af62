"""The lifecycle server's routes, served under ``/v1`` and bare: parse, call :mod:`..model.lifecycle`, render.

Each handler takes the :class:`LifecycleContext` and the request; :data:`ROWS` and :data:`SANDBOX_ROWS` list
them in the real server's order and :func:`~mockserver.asgi.handlers.bind` makes one route per method of
them. HEAD is not served (405), as on the real server, and a 405's ``Allow`` names the methods of the first
route whose path matches, as on the real server."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount
from starlette.types import ASGIApp

from mockserver.asgi.handlers import Row, bind
from mockserver.asgi.middleware import notes
from mockserver.asgi.render import JsonBody

from .. import openapi
from ..model import egress, endpoints, lifecycle
from ..model import pools as pools_model
from ..model.config import ServerConfig
from ..model.operations import OpenSandboxModel
from .render import json_body, tenant_of

__all__ = ["ROWS", "SANDBOX_ROWS", "LifecycleContext", "lifecycle_routes"]


@dataclass(frozen=True)
class LifecycleContext:
    """What the lifecycle routes use: the state, the server settings and the app serving proxied ports."""

    state: OpenSandboxModel
    config: ServerConfig
    proxy_app: ASGIApp


def _sandbox_id(request: Request) -> str:
    """Return the path's sandbox id, noted (with the tenant) for the journal."""
    sandbox_id = str(request.path_params["sandbox_id"])
    notes(request.scope).sandbox_id = sandbox_id
    notes(request.scope).tenant = tenant_of(request)
    return sandbox_id


async def openapi_document(ctx: LifecycleContext, request: Request) -> Response:
    """Return an OpenAPI document the server publishes (the lifecycle one unless the path names another)."""
    name = request.path_params.get("name", "lifecycle")
    if name not in openapi.DOCUMENTS:
        return JSONResponse({"detail": "Not Found"}, status_code=404)
    return JSONResponse(openapi.document(name))


async def health(ctx: LifecycleContext, request: Request) -> Response:
    """Return the server's health."""
    return JSONResponse(lifecycle.health())


async def version(ctx: LifecycleContext, request: Request) -> Response:
    """Return the server's version."""
    return JSONResponse(lifecycle.version())


async def pools(ctx: LifecycleContext, request: Request) -> Response:
    """Answer a pool call (the body model's 422, else the Docker runtime's 501)."""
    body = await json_body(request) if request.method in ("POST", "PUT") else None
    pools_model.pool_call(request.method, request.path_params.get("name"), body)


async def templates(ctx: LifecycleContext, request: Request) -> Response:
    """Answer a template call (the body model's 422, else the Docker runtime's 501)."""
    body = await json_body(request) if request.method == "POST" else None
    pools_model.template_call(request.method, body)


async def metrics_event(ctx: LifecycleContext, request: Request) -> Response:
    """Take a metrics event."""
    lifecycle.metrics_event(ctx.state, await json_body(request))
    return Response(status_code=204)


async def create(ctx: LifecycleContext, request: Request) -> Response:
    """Create a sandbox (202), noting its id, its tenant and the body's unknown fields."""
    body = await json_body(request)
    request_notes = notes(request.scope)
    request_notes.tenant = tenant_of(request)
    sb, answer = lifecycle.create_sandbox(ctx.state, tenant_of(request), body, ctx.config)
    request_notes.unknown_fields.extend(sb.spec.unknown_fields)
    request_notes.sandbox_id = sb.id
    return JSONResponse(answer, status_code=202)


async def list_sandboxes(ctx: LifecycleContext, request: Request) -> Response:
    """Return a page of the caller's sandboxes."""
    return JsonBody(lifecycle.list_sandboxes(ctx.state, tenant_of(request), request.query_params.multi_items()))


async def get(ctx: LifecycleContext, request: Request) -> Response:
    """Return one sandbox."""
    return JsonBody(lifecycle.get_sandbox(ctx.state, tenant_of(request), _sandbox_id(request)))


async def delete(ctx: LifecycleContext, request: Request) -> Response:
    """Delete a sandbox (204)."""
    lifecycle.delete_sandbox(ctx.state, tenant_of(request), _sandbox_id(request))
    return Response(status_code=204)


async def pause(ctx: LifecycleContext, request: Request) -> Response:
    """Pause a sandbox (202)."""
    lifecycle.pause_sandbox(ctx.state, tenant_of(request), _sandbox_id(request))
    return Response(status_code=202)


async def resume(ctx: LifecycleContext, request: Request) -> Response:
    """Resume a sandbox (202)."""
    lifecycle.resume_sandbox(ctx.state, tenant_of(request), _sandbox_id(request))
    return Response(status_code=202)


async def renew(ctx: LifecycleContext, request: Request) -> Response:
    """Set a sandbox's expiration."""
    body = await json_body(request)
    return JSONResponse(lifecycle.renew_expiration(ctx.state, tenant_of(request), _sandbox_id(request), body))


async def patch_metadata(ctx: LifecycleContext, request: Request) -> Response:
    """Merge a patch into a sandbox's metadata."""
    body = await json_body(request)
    return JSONResponse(lifecycle.patch_metadata(ctx.state, tenant_of(request), _sandbox_id(request), body))


async def create_snapshot(ctx: LifecycleContext, request: Request) -> Response:
    """Start a snapshot of a sandbox (202, with its ``Location``)."""
    body = await json_body(request, required=False)
    seconds = ctx.config.snapshot_seconds
    made = lifecycle.create_snapshot(ctx.state, tenant_of(request), _sandbox_id(request), body, seconds)
    return JSONResponse(made.body, status_code=202, headers={"Location": made.location})


async def list_snapshots(ctx: LifecycleContext, request: Request) -> Response:
    """Return a page of the caller's snapshots."""
    return JSONResponse(lifecycle.list_snapshots(ctx.state, tenant_of(request), request.query_params.multi_items()))


async def get_snapshot(ctx: LifecycleContext, request: Request) -> Response:
    """Return one snapshot."""
    return JSONResponse(lifecycle.get_snapshot(ctx.state, tenant_of(request), request.path_params["snapshot_id"]))


async def delete_snapshot(ctx: LifecycleContext, request: Request) -> Response:
    """Delete a snapshot (204)."""
    lifecycle.delete_snapshot(ctx.state, tenant_of(request), request.path_params["snapshot_id"])
    return Response(status_code=204)


async def endpoint(ctx: LifecycleContext, request: Request) -> Response:
    """Return the endpoint of a sandbox's port."""
    answer = endpoints.resolve_endpoint(
        ctx.state,
        ctx.config,
        tenant_of(request),
        _sandbox_id(request),
        str(request.path_params["port"]),
        request.query_params.multi_items(),
        host=request.headers.get("host"),
        path=request.url.path,
    )
    return JSONResponse(answer)


async def network_policy(ctx: LifecycleContext, request: Request) -> Response:
    """Read or change a sandbox's egress policy."""
    body = None if request.method == "GET" else await json_body(request)
    answer = egress.network_policy(
        ctx.state, ctx.config, tenant_of(request), _sandbox_id(request), request.method, body
    )
    return JSONResponse(answer)


Rows = list[Row[LifecycleContext]]
_ONE = "/sandboxes/{sandbox_id}"

#: The routes served once, at their own paths.
ROWS: Rows = [
    Row(openapi.SERVED_AT["lifecycle"], "GET", openapi_document),
    Row("/openapi/{name}.json", "GET", openapi_document),
    Row("/health", "GET", health),
    Row("/version", "GET", version),
    Row("/v1/metrics/events", "POST", metrics_event),
]

#: The routes served under ``/v1`` and bare, each set after the mount of its sandboxes' proxied ports.
SANDBOX_ROWS: Rows = [
    Row("/sandboxes", "POST", create),
    Row("/sandboxes", "GET", list_sandboxes),
    Row(_ONE, "GET", get),
    Row(_ONE, "DELETE", delete),
    Row(f"{_ONE}/metadata", "PATCH", patch_metadata),
    Row(f"{_ONE}/pause", "POST", pause),
    Row(f"{_ONE}/resume", "POST", resume),
    Row(f"{_ONE}/renew-expiration", "POST", renew),
    Row(f"{_ONE}/snapshots", "POST", create_snapshot),
    Row(f"{_ONE}/endpoints/{{port}}", "GET", endpoint),
    *(Row(f"{_ONE}/networkpolicy", method, network_policy) for method in egress.POLICY_METHODS),
    Row("/snapshots", "GET", list_snapshots),
    Row("/snapshots/{snapshot_id}", "GET", get_snapshot),
    Row("/snapshots/{snapshot_id}", "DELETE", delete_snapshot),
    Row("/pools", "POST", pools),
    Row("/pools", "GET", pools),
    Row("/pools/{name}", "GET", pools),
    Row("/pools/{name}", "PUT", pools),
    Row("/pools/{name}", "DELETE", pools),
    Row("/templates", "POST", templates),
    Row("/templates", "GET", templates),
    Row("/templates/{name}", "GET", templates),
    Row("/templates/{name}", "DELETE", templates),
]


def lifecycle_routes(ctx: LifecycleContext) -> list[BaseRoute]:
    """Return every lifecycle route under ``/v1`` and bare, with the server-proxy mounts."""
    out = bind(ctx, ROWS, per_method=True)
    for prefix in ("/v1", ""):
        out.append(Mount(f"{prefix}{_ONE}/proxy/{{port:int}}", app=ctx.proxy_app))
        out += bind(ctx, SANDBOX_ROWS, per_method=True, prefixes=(prefix,))
    return out
