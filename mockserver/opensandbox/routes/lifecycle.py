"""The lifecycle server's routes, served under ``/v1`` and bare: parse, call :mod:`..model.lifecycle`, render.

Every route serves one method; HEAD is not served (405), as on the real server."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp

from mockserver.asgi.middleware import notes
from mockserver.asgi.render import JsonBody

from .. import openapi
from ..model import egress, endpoints, lifecycle
from ..model import pools as pools_model
from ..model.config import ServerConfig
from ..model.store import OpenSandboxState
from .render import json_body, tenant_of

__all__ = ["LifecycleContext", "lifecycle_routes"]


@dataclass(frozen=True)
class LifecycleContext:
    """What the lifecycle routes use: the state, the server settings and the app serving proxied ports."""

    state: OpenSandboxState
    config: ServerConfig
    proxy_app: ASGIApp


def _sandbox_id(request: Request) -> str:
    """Return the path's sandbox id, noted (with the tenant) for the journal."""
    sandbox_id = str(request.path_params["sandbox_id"])
    notes(request.scope).sandbox_id = sandbox_id
    notes(request.scope).tenant = tenant_of(request)
    return sandbox_id


def lifecycle_routes(ctx: LifecycleContext) -> list[BaseRoute]:
    """Return every lifecycle route under ``/v1`` and bare, with the server-proxy mounts."""
    state, config = ctx.state, ctx.config

    async def openapi_document(request: Request) -> Response:
        name = request.path_params.get("name", "lifecycle")
        if name not in openapi.DOCUMENTS:
            return JSONResponse({"detail": "Not Found"}, status_code=404)
        return JSONResponse(openapi.document(name))

    async def health(request: Request) -> Response:
        return JSONResponse(lifecycle.health())

    async def version(request: Request) -> Response:
        return JSONResponse(lifecycle.version())

    async def pools(request: Request) -> Response:
        body = await json_body(request) if request.method in ("POST", "PUT") else None
        pools_model.pool_call(request.method, request.path_params.get("name"), body)

    async def templates(request: Request) -> Response:
        body = await json_body(request) if request.method == "POST" else None
        pools_model.template_call(request.method, body)

    async def metrics_event(request: Request) -> Response:
        lifecycle.metrics_event(state, await json_body(request))
        return Response(status_code=204)

    async def create(request: Request) -> Response:
        body = await json_body(request)
        request_notes = notes(request.scope)
        request_notes.tenant = tenant_of(request)
        sb, answer = lifecycle.create_sandbox(state, tenant_of(request), body, config)
        request_notes.unknown_fields.extend(sb.spec.unknown_fields)
        request_notes.sandbox_id = sb.id
        return JSONResponse(answer, status_code=202)

    async def list_sandboxes(request: Request) -> Response:
        return JsonBody(lifecycle.list_sandboxes(state, tenant_of(request), request.query_params.multi_items()))

    async def get(request: Request) -> Response:
        return JsonBody(lifecycle.get_sandbox(state, tenant_of(request), _sandbox_id(request)))

    async def delete(request: Request) -> Response:
        lifecycle.delete_sandbox(state, tenant_of(request), _sandbox_id(request))
        return Response(status_code=204)

    async def pause(request: Request) -> Response:
        lifecycle.pause_sandbox(state, tenant_of(request), _sandbox_id(request))
        return Response(status_code=202)

    async def resume(request: Request) -> Response:
        lifecycle.resume_sandbox(state, tenant_of(request), _sandbox_id(request))
        return Response(status_code=202)

    async def renew(request: Request) -> Response:
        body = await json_body(request)
        return JSONResponse(lifecycle.renew_expiration(state, tenant_of(request), _sandbox_id(request), body))

    async def patch_metadata(request: Request) -> Response:
        body = await json_body(request)
        return JSONResponse(lifecycle.patch_metadata(state, tenant_of(request), _sandbox_id(request), body))

    async def create_snapshot(request: Request) -> Response:
        body = await json_body(request, required=False)
        made = lifecycle.create_snapshot(state, tenant_of(request), _sandbox_id(request), body, config.snapshot_seconds)
        return JSONResponse(made.body, status_code=202, headers={"Location": made.location})

    async def list_snapshots(request: Request) -> Response:
        return JSONResponse(lifecycle.list_snapshots(state, tenant_of(request), request.query_params.multi_items()))

    async def get_snapshot(request: Request) -> Response:
        return JSONResponse(lifecycle.get_snapshot(state, tenant_of(request), request.path_params["snapshot_id"]))

    async def delete_snapshot(request: Request) -> Response:
        lifecycle.delete_snapshot(state, tenant_of(request), request.path_params["snapshot_id"])
        return Response(status_code=204)

    async def endpoint(request: Request) -> Response:
        answer = endpoints.resolve_endpoint(
            state,
            config,
            tenant_of(request),
            _sandbox_id(request),
            str(request.path_params["port"]),
            request.query_params.multi_items(),
            host=request.headers.get("host"),
            path=request.url.path,
        )
        return JSONResponse(answer)

    async def network_policy(request: Request) -> Response:
        body = None if request.method == "GET" else await json_body(request)
        answer = egress.network_policy(state, config, tenant_of(request), _sandbox_id(request), request.method, body)
        return JSONResponse(answer)

    out: list[BaseRoute] = [
        _route(openapi.SERVED_AT["lifecycle"], openapi_document, "GET"),
        _route("/openapi/{name}.json", openapi_document, "GET"),
        _route("/health", health, "GET"),
        _route("/version", version, "GET"),
        _route("/v1/metrics/events", metrics_event, "POST"),
    ]
    for prefix in ("/v1", ""):
        p = f"{prefix}/sandboxes"
        one = f"{p}/{{sandbox_id}}"
        out += [
            Mount(f"{one}/proxy/{{port:int}}", app=ctx.proxy_app),
            _route(p, create, "POST"),
            _route(p, list_sandboxes, "GET"),
            _route(one, get, "GET"),
            _route(one, delete, "DELETE"),
            _route(f"{one}/metadata", patch_metadata, "PATCH"),
            _route(f"{one}/pause", pause, "POST"),
            _route(f"{one}/resume", resume, "POST"),
            _route(f"{one}/renew-expiration", renew, "POST"),
            _route(f"{one}/snapshots", create_snapshot, "POST"),
            _route(f"{one}/endpoints/{{port}}", endpoint, "GET"),
            *(_route(f"{one}/networkpolicy", network_policy, m) for m in egress.POLICY_METHODS),
            _route(f"{prefix}/snapshots", list_snapshots, "GET"),
            _route(f"{prefix}/snapshots/{{snapshot_id}}", get_snapshot, "GET"),
            _route(f"{prefix}/snapshots/{{snapshot_id}}", delete_snapshot, "DELETE"),
            _route(f"{prefix}/pools", pools, "POST"),
            _route(f"{prefix}/pools", pools, "GET"),
            _route(f"{prefix}/pools/{{name}}", pools, "GET"),
            _route(f"{prefix}/pools/{{name}}", pools, "PUT"),
            _route(f"{prefix}/pools/{{name}}", pools, "DELETE"),
            _route(f"{prefix}/templates", templates, "POST"),
            _route(f"{prefix}/templates", templates, "GET"),
            _route(f"{prefix}/templates/{{name}}", templates, "GET"),
            _route(f"{prefix}/templates/{{name}}", templates, "DELETE"),
        ]
    return out


def _route(path: str, endpoint: Any, method: str) -> Route:
    """Return a route for one method and no other (Starlette adds HEAD to GET routes; the real server does not).

    Routes are listed per method in the real server's order: a 405's ``Allow`` names the methods of the
    first route whose path matches, as on the real server.
    """
    route = Route(path, endpoint, methods=[method])
    assert route.methods is not None
    route.methods.discard("HEAD")
    return route
