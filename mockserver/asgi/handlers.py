"""Route tables of handlers that take their context: the one shape of every provider route module.

A route module declares plain module-level handlers, ``async def create(ctx: LifecycleContext, request:
Request) -> Response``, and a table of :class:`Row` (path, method, handler). :func:`bind` turns the table into
Starlette routes for one context (a narrow frozen dataclass, never the whole mock), so a handler reads in
one place, is tested by calling it, and no route module builds closures or classes.

Two route shapes exist because the two services answer differently: ``per_method`` gives each row its own
route that serves that method only (no HEAD), listed in the table's order, so a 405's ``Allow`` names the
methods of the first route whose path matches (the OpenSandbox server's way); otherwise the rows of one path
share one route that lists every method and answers HEAD as GET (TensorLake's).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Generic, NamedTuple, TypeVar

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

__all__ = ["Handler", "Row", "bind", "endpoint"]

#: A route module's context.
C = TypeVar("C")
#: A handler: the context and the request in, a response out.
Handler = Callable[[C, Request], Awaitable[Response]]
Endpoint = Callable[[Request], Awaitable[Response]]


class Row(NamedTuple, Generic[C]):
    """One line of a route table: a path, the method it serves, the handler that answers."""

    path: str
    method: str
    handler: Handler[C]


def endpoint(context: C, handler: Handler[C]) -> Endpoint:
    """Return a Starlette endpoint that calls ``handler`` with ``context``."""

    async def call(request: Request) -> Response:
        return await handler(context, request)

    call.__name__ = call.__qualname__ = getattr(handler, "__name__", "handler")
    call.__doc__ = handler.__doc__
    return call


def bind(context: C, rows: Iterable[Row[C]], *, per_method: bool, prefixes: Sequence[str] = ("",)) -> list[BaseRoute]:
    """Return the routes of ``rows`` bound to ``context``, under each of ``prefixes`` in turn."""
    table = list(rows)
    out: list[BaseRoute] = []
    for prefix in prefixes:
        if per_method:
            for row in table:
                route = Route(prefix + row.path, endpoint(context, row.handler), methods=[row.method])
                assert route.methods is not None
                route.methods.discard("HEAD")
                out.append(route)
            continue
        by_path: dict[str, dict[str, Endpoint]] = {}
        for row in table:
            by_path.setdefault(row.path, {})[row.method] = endpoint(context, row.handler)
        out += [Route(prefix + path, _dispatch(handlers), methods=list(handlers)) for path, handlers in by_path.items()]
    return out


def _dispatch(handlers: dict[str, Endpoint]) -> Endpoint:
    """Return one endpoint that calls the handler of the request's method (HEAD is answered as GET)."""

    async def call(request: Request) -> Response:
        return await handlers["GET" if request.method == "HEAD" else request.method](request)

    call.__name__ = call.__qualname__ = "_or_".join(h.__name__ for h in handlers.values())
    return call
