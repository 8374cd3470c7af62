import asyncio
import json

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mockserver.asgi.render import api_error_handler
from mockserver.asgi.requests import read_json
from mockserver.core import ApiError
from mockserver.core.jsontext import MAX_DEPTH, json_depth, parse_json


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1", 0),
        ("[]", 1),
        ('{"a": [1, {"b": "x]]]"}]}', 3),
        ('["[[[[", "\\"[[", "\\\\", [[]]]', 3),
        ('{"k": "\\\\\\"{{{{"}', 1),
    ],
)
def test_json_depth_ignores_brackets_inside_strings(text: str, depth: int) -> None:
    assert json_depth(text.encode()) == depth
    assert json.loads(text) is not None or text == "1"


def test_parse_json_refuses_deep_nesting_without_recursing() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(ValueError, match="nested deeper"):
        parse_json(deep)
    just_fits = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    assert parse_json(just_fits) is not None
    with pytest.raises(ValueError, match="nested deeper"):
        parse_json(b"[" + just_fits + b"]")


def _app() -> Starlette:
    async def echo(request: Request) -> Response:
        return JSONResponse({"got": await read_json(request)})

    return Starlette(routes=[Route("/", echo, methods=["POST"])], exception_handlers={ApiError: api_error_handler})


@pytest.mark.parametrize(
    "body",
    [b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 5_000 + b"1" + b"}" * 5_000, b"{nope", b"\xff\xfe"],
)
def test_a_bad_body_is_a_400_json_error_never_a_500(body: bytes) -> None:
    async def send() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=_app()), base_url="http://test") as client:
            return await client.post("/", content=body)

    response = asyncio.run(send())
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    assert response.json()["code"] == "invalid_json"
