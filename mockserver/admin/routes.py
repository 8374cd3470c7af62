"""The ``/_mock`` admin service's routes: parse, call :mod:`mockserver.admin.operations`, render.

Every mock serves the same verbs (reset, snapshot/restore, seed, clock, faults, journal, DNS, sandboxes), its
named fault catalogue (``/_mock/faults/catalogue``) and the dashboard at ``/_mock/ui`` (static files in
``mockserver/admin/ui/``, built only on these verbs; behind an admin token, open ``/_mock/ui?token=...`` once
and the page's calls carry it as the guard's cookie); a provider adds its own under ``/_mock/<provider>/...``
through ``extra``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from mockserver.admin.guard import ADMIN_TOKEN_COOKIE
from mockserver.asgi.middleware import ADMIN_PREFIX
from mockserver.asgi.requests import read_json
from mockserver.core.errors import ApiError
from mockserver.core.mock import MockCore

from . import operations

if TYPE_CHECKING:
    from .catalogue import NamedFault

__all__ = ["ADMIN_PREFIX", "SNAPSHOT_LIMIT", "UI_ASSETS", "admin_routes", "ui_asset"]

#: The largest snapshot ``POST /_mock/restore`` takes (a whole state is bigger than an API request).
SNAPSHOT_LIMIT = 512 * 1024 * 1024
#: The dashboard's files and their media types.
UI_ASSETS: dict[str, str] = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}


def ui_asset(name: str) -> bytes:
    """Return one of the dashboard's files (a name from :data:`UI_ASSETS`)."""
    if name not in UI_ASSETS:
        raise KeyError(name)
    return resources.files("mockserver.admin").joinpath("ui", name).read_bytes()


def _version() -> str:
    """Return sandproof's installed version (for the HAR ``creator``)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sandproof")
    except PackageNotFoundError:
        return "0"


_BULKY = frozenset({"headers", "body", "response_headers", "response_body"})


def admin_routes(
    core: MockCore, extra: Sequence[BaseRoute] = (), named: Mapping[str, NamedFault] | None = None
) -> list[BaseRoute]:
    """Return the admin routes of ``core``, prefixed with ``/_mock``, followed by ``extra``.

    ``named`` is the provider's fault catalogue (:mod:`mockserver.admin.catalogue`), listed at
    ``GET /_mock/faults/catalogue`` and armed with ``POST /_mock/faults/catalogue/{name}``.
    """
    faults_by_name: Mapping[str, NamedFault] = named if named is not None else {}

    async def reset(request: Request) -> Response:
        core.reset()
        return JSONResponse({"reset": True})

    async def snapshot(request: Request) -> Response:
        return JSONResponse(core.snapshot())

    async def restore(request: Request) -> Response:
        return JSONResponse(operations.restore(core, await read_json(request, limit=SNAPSHOT_LIMIT)))

    async def seed(request: Request) -> Response:
        return JSONResponse(operations.seed(core, await read_json(request)))

    async def clock(request: Request) -> Response:
        return JSONResponse(core.clock.dump())

    async def advance(request: Request) -> Response:
        return JSONResponse(operations.advance(core, await read_json(request)))

    async def clock_mode(request: Request) -> Response:
        return JSONResponse(operations.set_clock_mode(core, await read_json(request)))

    async def faults(request: Request) -> Response:
        if request.method == "GET":
            everything = request.query_params.get("all") in ("1", "true")
            return JSONResponse([r.to_json() for r in (core.faults.history() if everything else core.faults.rules())])
        if request.method == "DELETE":
            core.faults.clear()
            return JSONResponse({"cleared": True})
        return JSONResponse(operations.add_fault(core, await read_json(request)), status_code=201)

    async def fault(request: Request) -> Response:
        operations.remove_fault(core, int(request.path_params["rule_id"]))
        return Response(status_code=204)

    async def catalogue(request: Request) -> Response:
        from .catalogue import describe  # loaded with the first catalogue request, not with the app

        return JSONResponse(describe(faults_by_name))

    async def arm_fault(request: Request) -> Response:
        from .catalogue import arm

        body = await read_json(request, empty={})
        return JSONResponse(arm(faults_by_name, request.path_params["name"], body), status_code=201)

    async def journal(request: Request) -> Response:
        if request.method == "DELETE":
            core.journal.clear()
            return JSONResponse({"cleared": True})
        entries = operations.journal_query(core, request.query_params)
        found = core.journal.to_json(entries)
        if request.query_params.get("brief") in ("1", "true"):
            found = [{k: v for k, v in e.items() if k not in _BULKY} for e in found]
        return JSONResponse(found)

    async def journal_export(request: Request) -> Response:
        # Imported on first use, as is the scenario export: serving starts without the export formats.
        from .export import EXPORT_FORMATS, cassette_lines, har_log

        chosen = request.query_params.get("format", "har")
        if chosen not in EXPORT_FORMATS:
            raise ApiError(400, "invalid_query", f"format must be one of {', '.join(EXPORT_FORMATS)}, not {chosen!r}")
        entries = operations.journal_query(core, request.query_params)
        base = str(request.base_url).rstrip("/")
        name = f"sandproof-{core.provider}-journal"
        if chosen == "har":
            body = json.dumps(har_log(entries, base, _version()), ensure_ascii=False)
            disposition = f'attachment; filename="{name}.har"'
        else:
            body = cassette_lines(entries, core.provider, base)
            disposition = f'attachment; filename="{name}.jsonl"'
        return Response(body, media_type=EXPORT_FORMATS[chosen], headers={"content-disposition": disposition})

    async def journal_entry(request: Request) -> Response:
        return JSONResponse(operations.journal_entry(core, int(request.path_params["seq"])).to_json())

    async def unknown(request: Request) -> Response:
        return JSONResponse(core.journal.unknown_fields())

    async def sandboxes(request: Request) -> Response:
        return JSONResponse(operations.sandboxes(core))

    async def scenario(request: Request) -> Response:
        from .scenario import export_scenario

        document = export_scenario(core, core.pinned_keys())
        filename = f"sandproof-{core.provider}-scenario.json"
        return JSONResponse(document, headers={"content-disposition": f'inline; filename="{filename}"'})

    async def ui(request: Request) -> Response:
        name = request.path_params.get("asset", "index.html")
        if name not in UI_ASSETS:
            return JSONResponse({"code": "not_found", "message": f"no dashboard file {name}"}, status_code=404)
        page = Response(ui_asset(name), media_type=UI_ASSETS[name], headers={"cache-control": "no-cache"})
        token = request.query_params.get("token")
        if token:  # only reached when the admin guard accepted it: the page's own calls then carry it
            page.set_cookie(ADMIN_TOKEN_COOKIE, token, path=ADMIN_PREFIX, httponly=True, samesite="strict")
        return page

    async def dns(request: Request) -> Response:
        if request.method == "GET":
            return JSONResponse(core.dns.dump())
        return JSONResponse(operations.set_dns(core, request.method, await read_json(request)))

    p = ADMIN_PREFIX
    return [
        Route(f"{p}/reset", reset, methods=["POST"]),
        Route(f"{p}/snapshot", snapshot, methods=["GET"]),
        Route(f"{p}/restore", restore, methods=["POST"]),
        Route(f"{p}/seed", seed, methods=["POST"]),
        Route(f"{p}/clock", clock, methods=["GET"]),
        Route(f"{p}/clock/advance", advance, methods=["POST"]),
        Route(f"{p}/clock/mode", clock_mode, methods=["POST"]),
        Route(f"{p}/faults", faults, methods=["GET", "POST", "DELETE"]),
        Route(f"{p}/faults/{{rule_id:int}}", fault, methods=["DELETE"]),
        Route(f"{p}/faults/catalogue", catalogue, methods=["GET"]),
        Route(f"{p}/faults/catalogue/{{name}}", arm_fault, methods=["POST"]),
        Route(f"{p}/journal", journal, methods=["GET", "DELETE"]),
        Route(f"{p}/journal/unknown", unknown, methods=["GET"]),
        Route(f"{p}/journal/export", journal_export, methods=["GET"]),
        Route(f"{p}/journal/{{seq:int}}", journal_entry, methods=["GET"]),
        Route(f"{p}/dns", dns, methods=["GET", "PUT", "POST"]),
        Route(f"{p}/sandboxes", sandboxes, methods=["GET"]),
        Route(f"{p}/scenario", scenario, methods=["GET"]),
        Route(f"{p}/ui", ui, methods=["GET"]),
        Route(f"{p}/ui/{{asset}}", ui, methods=["GET"]),
        *extra,
    ]
