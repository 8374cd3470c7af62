"""A router that tries only the routes a request's first path segments can reach.

Starlette's router tries every route in order until one matches; with the admin service, the dashboard and
both route trees a mock has dozens, and a lifecycle request used to run twenty regular expressions before
its own. :class:`IndexedRouter` keeps Starlette's semantics (the first full match wins, else the first partial
match answers 405, else the trailing-slash redirect, else 404) but looks only at the candidates: a route whose
path starts with literal segments (``/v1/sandboxes/{id}`` starts with ``v1``, ``sandboxes``) can match only
a path that starts with the same segments, so it is skipped for any other. Routes that start with a parameter
are candidates for every path. The candidate lists are computed once per distinct literal prefix.
Routes given as ``later`` are built when a request first goes past the others: a mock answers ``/_mock``
before its provider routes exist.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from starlette._utils import get_route_path
from starlette.applications import Starlette
from starlette.datastructures import URL
from starlette.responses import RedirectResponse
from starlette.routing import BaseRoute, Match, Router
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["IndexedRouter", "OnFirstCall", "indexed_app"]

#: How many leading path segments the index looks at.
_DEPTH = 2
Prefix = tuple[str, ...]


def literal_prefix(route: BaseRoute) -> Prefix:
    """Return the leading literal segments of a route's path (at most two; () when it has no path)."""
    path = getattr(route, "path", None)
    if not isinstance(path, str) or not path.startswith("/"):
        return ()
    out: list[str] = []
    for segment in path.split("/")[1 : 1 + _DEPTH]:
        if "{" in segment or "}" in segment:
            break
        out.append(segment)
    return tuple(out)


class IndexedRouter(Router):
    """A Starlette router that matches a request against its candidate routes only (same answers, fewer tries).

    ``later`` builds more routes, placed after the given ones, when a request first needs them: one that no
    given route answers in full (a request a given route answers never could reach them), or when
    :attr:`routes` is read. Until then their modules need not be loaded nor their patterns compiled.
    """

    def __init__(
        self,
        routes: Sequence[BaseRoute] | None = None,
        *,
        later: Callable[[], Sequence[BaseRoute]] | None = None,
        **options: Any,
    ) -> None:
        self._later = later
        self._lock = threading.Lock()
        super().__init__(routes, **options)

    @property
    def routes(self) -> list[BaseRoute]:
        """Return every route in order, building the ``later`` ones now if need be."""
        if self._later is not None:
            self._build_later()
        return self._index.routes

    @routes.setter
    def routes(self, routes: Sequence[BaseRoute]) -> None:
        self._index = _Index(list(routes))

    def _build_later(self) -> None:
        """Append the ``later`` routes (once, whichever thread asks first)."""
        with self._lock:
            later = self._later
            if later is not None:
                self._index = _Index([*self._index.routes, *later()])
                self._later = None

    def candidates(self, route_path: str) -> list[BaseRoute]:
        """Return, in order, the routes that can match ``route_path`` (of those built so far)."""
        return self._index.candidates(route_path)

    def _match(self, scope: Scope) -> tuple[BaseRoute | None, Match, Any]:
        """Return the route Starlette's loop picks (the first full match, else the first partial), its match
        and its child scope."""
        partial: tuple[BaseRoute | None, Match, Any] = (None, Match.NONE, {})
        for route in self.candidates(get_route_path(scope)):
            match, child_scope = route.matches(scope)
            if match is Match.FULL:
                return route, match, child_scope
            if match is Match.PARTIAL and partial[0] is None:
                partial = (route, match, child_scope)
        return partial

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Dispatch as :class:`starlette.routing.Router` does, trying the candidate routes only."""
        if scope["type"] not in ("http", "websocket"):
            await super().app(scope, receive, send)
            return
        if "router" not in scope:
            scope["router"] = self
        pending = self._later is not None
        route, match, child_scope = self._match(scope)
        if pending and match is not Match.FULL:
            self._build_later()  # the later routes come after: they can only answer what no given route did
            route, match, child_scope = self._match(scope)
        if route is not None:
            scope["route"] = route
            scope.update(child_scope)
            await route.handle(scope, receive, send)
            return
        route_path = get_route_path(scope)
        if scope["type"] == "http" and self.redirect_slashes and route_path != "/":
            redirect_scope = dict(scope)
            if route_path.endswith("/"):
                redirect_scope["path"] = redirect_scope["path"].rstrip("/")
            else:
                redirect_scope["path"] = redirect_scope["path"] + "/"
            for route in self.routes:
                match, _child = route.matches(redirect_scope)
                if match is not Match.NONE:
                    await RedirectResponse(url=str(URL(scope=redirect_scope)))(scope, receive, send)
                    return
        await self.default(scope, receive, send)


class _Index:
    """Routes and their candidate lists by literal prefix; replaced whole, never changed, so readers on other
    threads see one consistent index."""

    def __init__(self, routes: list[BaseRoute]) -> None:
        self.routes = routes
        self._prefixes = [literal_prefix(route) for route in routes]
        self._firsts = {p[0] for p in self._prefixes if p}
        self._seconds = {(p[0], p[1]) for p in self._prefixes if len(p) == 2}
        self._candidates: dict[tuple[str | None, str | None], list[BaseRoute]] = {}

    def candidates(self, route_path: str) -> list[BaseRoute]:
        """Return, in order, the routes that can match ``route_path``."""
        parts = route_path.split("/", _DEPTH + 1)
        first = parts[1] if len(parts) > 1 and parts[1] in self._firsts else None
        second = parts[2] if first is not None and len(parts) > 2 and (first, parts[2]) in self._seconds else None
        key = (first, second)
        found = self._candidates.get(key)
        if found is None:
            found = [route for route, prefix in zip(self.routes, self._prefixes, strict=True) if _fits(prefix, key)]
            self._candidates[key] = found
        return found


def _fits(prefix: Prefix, key: tuple[str | None, str | None]) -> bool:
    """Tell whether a route with literal ``prefix`` can match a path whose indexed segments are ``key``.

    ``None`` in the key means the path's segment is none any route starts with there.
    """
    first, second = key
    if not prefix:
        return True
    if prefix[0] != first:
        return False
    return len(prefix) == 1 or prefix[1] == second


def indexed_app(
    routes: Sequence[BaseRoute],
    exception_handlers: dict[Any, Any] | None = None,
    *,
    later: Callable[[], Sequence[BaseRoute]] | None = None,
) -> Starlette:
    """Return a Starlette app over ``routes`` whose router is an :class:`IndexedRouter` (``later``: see there)."""
    app = Starlette(routes=list(routes), exception_handlers=exception_handlers)
    app.router = IndexedRouter(app.router.routes, redirect_slashes=app.router.redirect_slashes, later=later)
    return app


class OnFirstCall:
    """An ASGI app built by ``factory`` when its first request arrives (a part most runs never use loads late)."""

    def __init__(self, factory: Callable[[], ASGIApp]) -> None:
        self._factory = factory
        self._app: ASGIApp | None = None
        self._lock = threading.Lock()

    def get(self) -> ASGIApp:
        """Return the app, building it now if need be."""
        if self._app is None:
            with self._lock:
                if self._app is None:
                    self._app = self._factory()
        return self._app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.get()(scope, receive, send)
