"""execd's code-interpreter routes (port 44772): contexts and runs, on a runtime with the ``code`` capability.

Parsing and refusals are :mod:`..model.code`'s; the contexts are the runtime's
(:class:`~..execution.CodeContexts`). Where the runtime has no code contexts (the command emulator) every
route answers :func:`~..model.code.not_supported` (501 ``NOT_SUPPORTED``, naming ``--runtime linux``)
before it reads the request.

Each handler takes the :class:`~.streams.ExecdContext` and the request; :data:`ROWS` lists them, bound as
execd's other routes (one route per path, HEAD as GET).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute

from mockserver.asgi.handlers import Row, bind
from mockserver.asgi.requests import read_json

from ..execution import CodeContexts
from ..model import code as code_rules
from ..model import execd
from .render import sandbox_of
from .streams import ExecdContext, command_stream, event_stream

__all__ = ["ROWS", "code_routes"]


def _contexts(ctx: ExecdContext, request: Request) -> CodeContexts:
    """Return the runtime's code contexts, after the sandbox check (501 where the runtime has none)."""
    sandbox_of(request)
    if ctx.execd.code is None:
        raise code_rules.not_supported()
    return ctx.execd.code


async def create_context(ctx: ExecdContext, request: Request) -> Response:
    """Create a code context."""
    code = _contexts(ctx, request)
    language, cwd = code_rules.parse_context(await read_json(request, empty=None))
    return JSONResponse(code_rules.context_body(await code.create(sandbox_of(request), language, cwd)))


async def run_code(ctx: ExecdContext, request: Request) -> Response:
    """Run a cell in a context (a bare cell runs as a command) and stream its events."""
    code = _contexts(ctx, request)
    sb = sandbox_of(request)
    run = code_rules.parse_run(await read_json(request, empty=None))
    if run.context_id is None and run.language is None:  # a bare cell runs as a command
        return command_stream(request, ctx, sb, execd.RunRequest(run.code, dict(sb.spec.env), "/", None))
    return event_stream(await code.start_run(sb, run))


async def interrupt_code(ctx: ExecdContext, request: Request) -> Response:
    """Interrupt the cell ``id``."""
    code = _contexts(ctx, request)
    code.interrupt(sandbox_of(request), code_rules.require_id(request.query_params.get("id")))
    return Response(status_code=200)


async def list_contexts(ctx: ExecdContext, request: Request) -> Response:
    """Return the contexts (of ``language`` when given)."""
    code = _contexts(ctx, request)
    sb = sandbox_of(request)
    return JSONResponse([code_rules.context_body(c) for c in code.list(sb, request.query_params.get("language"))])


async def delete_language(ctx: ExecdContext, request: Request) -> Response:
    """Delete every context of ``language``."""
    code = _contexts(ctx, request)
    sb = sandbox_of(request)
    code.delete_language(sb, code_rules.require_language(request.query_params.get("language")))
    return Response(status_code=200)


async def get_context(ctx: ExecdContext, request: Request) -> Response:
    """Return one context."""
    code = _contexts(ctx, request)
    sb = sandbox_of(request)
    return JSONResponse(code_rules.context_body(code.get(sb, request.path_params["cid"])))


async def delete_context(ctx: ExecdContext, request: Request) -> Response:
    """Delete one context."""
    code = _contexts(ctx, request)
    sb = sandbox_of(request)
    code.delete(sb, request.path_params["cid"])
    return Response(status_code=200)


#: The code interpreter's contexts and runs.
ROWS: list[Row[ExecdContext]] = [
    Row("/code/context", "POST", create_context),
    Row("/code", "POST", run_code),
    Row("/code", "DELETE", interrupt_code),
    Row("/code/contexts", "GET", list_contexts),
    Row("/code/contexts", "DELETE", delete_language),
    Row("/code/contexts/{cid}", "GET", get_context),
    Row("/code/contexts/{cid}", "DELETE", delete_context),
]


def code_routes(ctx: ExecdContext) -> list[BaseRoute]:
    """Return the code contexts' routes of the sandbox the port gate admitted."""
    return bind(ctx, ROWS, per_method=False)
