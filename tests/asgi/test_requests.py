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
from mockserver.core.jsontext import MAX_DEPTH, JsonTextError, check_text, json_depth, parse_json


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


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        (b'"\\ud800"', "surrogate"),
        (b'{"a": ["x", "\\udfff"]}', "surrogate"),
        (b'{"\\ud83d": 1}', "surrogate"),
        (b'"\\ude00\\ud83d"', "surrogate"),  # a pair in the wrong order is two lone halves
        (b'"\xed\xa0\x80"', "surrogate"),  # the UTF-8 form, which json.loads decodes with surrogatepass
        (b"NaN", "non_finite"),
        (b'{"t": -Infinity}', "non_finite"),
        (b"[1e999]", "non_finite"),
    ],
)
def test_parse_json_refuses_what_cannot_be_written_back(raw: bytes, kind: str) -> None:
    with pytest.raises(JsonTextError) as caught:
        parse_json(raw)
    assert caught.value.kind == kind


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (b'"\\ud83d\\ude00"', "\U0001f600"),  # a surrogate pair is one character
        (b'"\\\\ud800"', "\\ud800"),  # an escaped backslash, then text
        (b'"\xf0\x9f\x98\x80"', "\U0001f600"),
        (b"[1e308, -0.0]", [1e308, -0.0]),
    ],
)
def test_parse_json_keeps_what_is_valid(raw: bytes, value: object) -> None:
    assert parse_json(raw) == value
    check_text(value)


def _app() -> Starlette:
    async def echo(request: Request) -> Response:
        return JSONResponse({"got": await read_json(request)})

    return Starlette(routes=[Route("/", echo, methods=["POST"])], exception_handlers={ApiError: api_error_handler})


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 5_000 + b"1" + b"}" * 5_000,
        b"{nope",
        b"\xff\xfe",
        b'{"a": "\\ud800"}',
        b'{"a": NaN}',
    ],
)
def test_a_bad_body_is_a_400_json_error_never_a_500(body: bytes) -> None:
    async def send() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=_app()), base_url="http://test") as client:
            return await client.post("/", content=body)

    response = asyncio.run(send())
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    assert response.json()["code"] == "invalid_json"
