"""IndexedRouter answers exactly as Starlette's router does, trying only the candidate routes."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Match, Mount, Route

from mockserver.asgi.routing import IndexedRouter, indexed_app, literal_prefix
from mockserver.opensandbox import OpenSandboxMock
from mockserver.tensorlake import TensorLakeMock

SEGMENTS = ("v1", "sandboxes", "abc", "_mock", "reset", "direct", "44772", "files", "proxy", "8080", "snapshots", "")


def _chosen(routes: Sequence[BaseRoute], method: str, path: str) -> tuple[BaseRoute | None, bool]:
    """Return the route Starlette's loop picks (full match first, else the first partial) and whether it is full."""
    scope = {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}
    partial = None
    for route in routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return route, True
        if match is Match.PARTIAL and partial is None:
            partial = route
    return partial, False


@pytest.mark.parametrize("mock", [OpenSandboxMock(), TensorLakeMock()], ids=["opensandbox", "tensorlake"])
def test_candidates_pick_the_route_the_full_list_picks(mock: OpenSandboxMock | TensorLakeMock) -> None:
    routes = [*mock.admin_routes(), *mock.routes()]
    router = IndexedRouter(routes)
    rng = random.Random(1)
    for _ in range(3000):
        path = "/" + "/".join(rng.choice(SEGMENTS) for _ in range(rng.randrange(0, 6)))
        method = rng.choice(("GET", "POST", "DELETE", "PATCH", "PUT"))
        assert _chosen(router.candidates(path), method, path) == _chosen(routes, method, path), (method, path)
    assert len(router.candidates("/v1/sandboxes/x")) < len(routes) / 2


def _app(indexed: bool) -> Starlette:
    async def named(request: Request) -> Response:
        return PlainTextResponse(request.scope["route"].path)

    inner = [Route("/x", named)]
    routes: list[BaseRoute] = [
        Route("/items", named, methods=["GET"]),
        Route("/items/{item}", named, methods=["PATCH"]),
        Route("/{anything}/tail", named),
        Mount("/mounted", routes=inner),
        Route("/slash/", named),
    ]
    return indexed_app(routes) if indexed else Starlette(routes=routes)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/items"),
        ("POST", "/items"),  # 405
        ("GET", "/items/a"),  # 405 from the PATCH route
        ("PATCH", "/items/a"),
        ("GET", "/any/tail"),
        ("GET", "/mounted/x"),
        ("GET", "/slash"),  # redirect to /slash/
        ("GET", "/nowhere"),  # 404
    ],
)
def test_answers_are_starlettes(method: str, path: str) -> None:
    async def answer(app: Starlette) -> tuple[int, str, str | None]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            got = await client.request(method, path, follow_redirects=False)
        return got.status_code, got.text, got.headers.get("location")

    assert asyncio.run(answer(_app(True))) == asyncio.run(answer(_app(False)))


def _later_app() -> Starlette:
    """The routes of :func:`_app`, the first two given and the rest built later."""
    given = _app(False).routes
    return indexed_app(given[:2], later=lambda: given[2:])


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/items"),
        ("POST", "/items"),  # 405 from a given route: the later ones may still match in full
        ("GET", "/items/a"),
        ("PATCH", "/items/a"),
        ("GET", "/any/tail"),  # only a later route answers
        ("GET", "/mounted/x"),
        ("GET", "/slash"),
        ("GET", "/nowhere"),
    ],
)
def test_routes_built_later_answer_as_the_whole_list(method: str, path: str) -> None:
    async def answer(app: Starlette) -> tuple[int, str, str | None]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            got = await client.request(method, path, follow_redirects=False)
        return got.status_code, got.text, got.headers.get("location")

    assert asyncio.run(answer(_later_app())) == asyncio.run(answer(_app(False)))


def test_routes_built_later_wait_for_a_request_no_given_route_answers() -> None:
    built: list[int] = []

    async def ok(request: Request) -> Response:
        return PlainTextResponse("given")

    def later() -> list[BaseRoute]:
        built.append(1)
        return [Route("/{anything}", ok, methods=["POST"])]

    app = indexed_app([Route("/given", ok)], later=later)

    async def status(method: str, path: str) -> int:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            return (await client.request(method, path)).status_code

    assert asyncio.run(status("GET", "/given")) == 200
    assert built == []
    assert asyncio.run(status("POST", "/given")) == 200  # the given route's 405 is not the answer: the later one is
    assert built == [1]
    assert [getattr(r, "path", None) for r in app.routes] == ["/given", "/{anything}"]
    assert built == [1]


def test_routes_are_read_whole_before_any_request() -> None:
    app = indexed_app([Route("/a", PlainTextResponse("a"))], later=lambda: [Route("/b", PlainTextResponse("b"))])
    assert [getattr(r, "path", None) for r in app.routes] == ["/a", "/b"]


@pytest.mark.parametrize("mock", [OpenSandboxMock(), TensorLakeMock()], ids=["opensandbox", "tensorlake"])
def test_no_provider_route_reaches_under_the_admin_prefix(mock: OpenSandboxMock | TensorLakeMock) -> None:
    """The admin routes come first and the provider's are built later: the same answers as any order, since
    every admin path is under ``/_mock`` and no provider route starts there or with a parameter."""
    assert {literal_prefix(route)[:1] for route in mock.admin_routes()} == {("_mock",)}
    for route in mock.routes():
        prefix = literal_prefix(route)
        assert prefix and prefix[0] != "_mock", getattr(route, "path", route)
