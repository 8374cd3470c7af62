"""Tests of mockserver.asgi.handlers: route tables bound to a context."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from mockserver.asgi.handlers import Row, bind


@dataclass(frozen=True)
class Context:
    greeting: str


async def hello(ctx: Context, request: Request) -> Response:
    """Greet the path's name."""
    return PlainTextResponse(f"{ctx.greeting} {request.path_params['name']}")


async def gone(ctx: Context, request: Request) -> Response:
    """Delete nothing."""
    return Response(status_code=204)


ROWS = [Row("/hello/{name}", "GET", hello), Row("/hello/{name}", "DELETE", gone)]


def fetch(app: Starlette, method: str, path: str) -> httpx.Response:
    """Send one request to ``app`` in-process."""

    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            return await client.request(method, path)

    return asyncio.run(send())


def test_a_bound_handler_gets_its_context_under_every_prefix() -> None:
    app = Starlette(routes=bind(Context("hi"), ROWS, per_method=True, prefixes=("/v1", "")))
    assert fetch(app, "GET", "/v1/hello/ann").text == "hi ann"
    assert fetch(app, "GET", "/hello/bob").text == "hi bob"
    assert fetch(app, "DELETE", "/hello/bob").status_code == 204


def test_per_method_routes_serve_no_head_and_allow_names_the_first_matching_route() -> None:
    app = Starlette(routes=bind(Context("hi"), ROWS, per_method=True))
    assert fetch(app, "HEAD", "/hello/ann").status_code == 405
    refused = fetch(app, "PUT", "/hello/ann")
    assert refused.status_code == 405
    assert refused.headers["allow"] == "GET"


def test_shared_routes_list_every_method_and_answer_head_as_get() -> None:
    app = Starlette(routes=bind(Context("hi"), ROWS, per_method=False))
    assert fetch(app, "HEAD", "/hello/ann").status_code == 200
    refused = fetch(app, "PUT", "/hello/ann")
    assert refused.status_code == 405
    assert set(refused.headers["allow"].split(", ")) == {"GET", "HEAD", "DELETE"}


def test_an_endpoint_keeps_the_handlers_name_and_doc() -> None:
    route = bind(Context("hi"), ROWS, per_method=True)[0]
    assert route.name == "hello"  # type: ignore[attr-defined]
    assert route.endpoint.__doc__ == "Greet the path's name."  # type: ignore[attr-defined]
    shared = bind(Context("hi"), ROWS, per_method=False)[0]
    assert shared.name == "hello_or_gone"  # type: ignore[attr-defined]
