"""The lifecycle server's routes, served under ``/v1`` and bare: parse, call :mod:`..model.lifecycle`, render."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp

from mockserver.asgi.middleware import notes
from mockserver.asgi.render import JsonBody

from ..model import egress, endpoints, lifecycle
from ..model.config import ServerConfig
from ..model.state import OpenSandboxState
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

    async def health(request: Request) -> Response:
        return JSONResponse(lifecycle.health())

    async def version(request: Request) -> Response:
        return JSONResponse(lifecycle.version())

    async def unsupported(request: Request) -> Response:
        lifecycle.unsupported(request.url.path)

    async def metrics_event(request: Request) -> Response:
        lifecycle.metrics_event(state, await json_body(request))
        return Response(status_code=204)

    async def create(request: Request) -> Response:
        body = await json_body(request)
        request_notes = notes(request.scope)
        request_notes.tenant = tenant_of(request)
        sb, answer = lifecycle.create_sandbox(state, tenant_of(request), body)
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
        Route("/health", health, methods=["GET"]),
        Route("/version", version, methods=["GET"]),
        Route("/v1/metrics/events", metrics_event, methods=["POST"]),
    ]
    for prefix in ("/v1", ""):
        p = f"{prefix}/sandboxes"
        out += [
            Mount(f"{p}/{{sandbox_id}}/proxy/{{port:int}}", app=ctx.proxy_app),
            Route(p, create, methods=["POST"]),
            Route(p, list_sandboxes, methods=["GET"]),
            Route(f"{p}/{{sandbox_id}}", get, methods=["GET"]),
            Route(f"{p}/{{sandbox_id}}", delete, methods=["DELETE"]),
            Route(f"{p}/{{sandbox_id}}/metadata", patch_metadata, methods=["PATCH"]),
            Route(f"{p}/{{sandbox_id}}/pause", pause, methods=["POST"]),
            Route(f"{p}/{{sandbox_id}}/resume", resume, methods=["POST"]),
            Route(f"{p}/{{sandbox_id}}/renew-expiration", renew, methods=["POST"]),
            Route(f"{p}/{{sandbox_id}}/snapshots", create_snapshot, methods=["POST"]),
            Route(f"{p}/{{sandbox_id}}/endpoints/{{port}}", endpoint, methods=["GET"]),
            Route(f"{p}/{{sandbox_id}}/networkpolicy", network_policy, methods=list(egress.POLICY_METHODS)),
            Route(f"{prefix}/snapshots", list_snapshots, methods=["GET"]),
            Route(f"{prefix}/snapshots/{{snapshot_id}}", get_snapshot, methods=["GET"]),
            Route(f"{prefix}/snapshots/{{snapshot_id}}", delete_snapshot, methods=["DELETE"]),
            Route(f"{prefix}/pools", unsupported, methods=["GET", "POST"]),
            Route(f"{prefix}/pools/{{name}}", unsupported, methods=["GET", "PUT", "DELETE"]),
            Route(f"{prefix}/templates", unsupported, methods=["GET", "POST"]),
            Route(f"{prefix}/templates/{{name}}", unsupported, methods=["GET", "DELETE"]),
        ]
    return out
