"""execd's code-interpreter routes (port 44772): contexts and runs, on a runtime with the ``code`` capability.

Parsing and refusals are :mod:`..model.code`'s; the contexts are the runtime's
(:class:`~..execution.CodeContexts`). Where the runtime has no code contexts (the command emulator) every
route answers :func:`~..model.code.not_supported` (501 ``NOT_SUPPORTED``, naming ``--runtime linux``)
before it reads the request.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from mockserver.asgi.requests import read_json

from ..execution import CodeContexts
from ..model import code as code_rules
from ..model import execd
from .render import sandbox_of
from .streams import ExecdContext, command_stream, event_stream

__all__ = ["code_routes"]


def code_routes(ctx: ExecdContext) -> list[BaseRoute]:
    """Return the code contexts' routes of the sandbox the port gate admitted."""

    def contexts_of(request: Request) -> CodeContexts:
        sandbox_of(request)
        if ctx.execd.code is None:
            raise code_rules.not_supported()
        return ctx.execd.code

    async def create_context(request: Request) -> Response:
        code = contexts_of(request)
        language, cwd = code_rules.parse_context(await read_json(request, empty=None))
        return JSONResponse(code_rules.context_body(await code.create(sandbox_of(request), language, cwd)))

    async def run_code(request: Request) -> Response:
        code = contexts_of(request)
        sb = sandbox_of(request)
        run = code_rules.parse_run(await read_json(request, empty=None))
        if run.context_id is None and run.language is None:  # a bare cell runs as a command
            return command_stream(request, ctx, sb, execd.RunRequest(run.code, dict(sb.spec.env), "/", None))
        return event_stream(await code.start_run(sb, run))

    async def interrupt_code(request: Request) -> Response:
        code = contexts_of(request)
        code.interrupt(sandbox_of(request), code_rules.require_id(request.query_params.get("id")))
        return Response(status_code=200)

    async def contexts(request: Request) -> Response:
        code = contexts_of(request)
        sb = sandbox_of(request)
        language = request.query_params.get("language")
        if request.method == "DELETE":
            code.delete_language(sb, code_rules.require_language(language))
            return Response(status_code=200)
        return JSONResponse([code_rules.context_body(c) for c in code.list(sb, language)])

    async def context(request: Request) -> Response:
        code = contexts_of(request)
        sb = sandbox_of(request)
        ident = request.path_params["cid"]
        if request.method == "DELETE":
            code.delete(sb, ident)
            return Response(status_code=200)
        return JSONResponse(code_rules.context_body(code.get(sb, ident)))

    return [
        Route("/code/context", create_context, methods=["POST"]),
        Route("/code", run_code, methods=["POST"]),
        Route("/code", interrupt_code, methods=["DELETE"]),
        Route("/code/contexts", contexts, methods=["GET", "DELETE"]),
        Route("/code/contexts/{cid}", context, methods=["GET", "DELETE"]),
    ]
