"""The recording proxy: transparent both ways, streams not buffered, secrets kept out of the cassette."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from harness.differential.real_server import free_port
from harness.recording.proxy import is_loopback_url, recording
from mockserver.asgi.server import MockServer
from mockserver.core.cassette import read_cassette
from mockserver.core.redact import REDACTED

RELEASE = threading.Event()


async def echo(request: Request) -> Response:
    body = await request.body()
    return JSONResponse(
        {
            "method": request.method,
            "path": request.url.path,
            "query": request.url.query,
            "headers": dict(request.headers),
            "body": json.loads(body) if body else None,
        },
        status_code=418,
        headers={"x-upstream": "yes", "set-cookie": "session=s3cret"},
    )


async def events(request: Request) -> Response:
    async def stream() -> AsyncIterator[bytes]:
        yield b'data: {"n": 1}\n\n'
        await asyncio.to_thread(RELEASE.wait, 10)
        yield b'data: {"n": 2}\n\n'

    return StreamingResponse(stream(), media_type="text/event-stream")


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    app = Starlette(routes=[Route("/events", events), Route("/{rest:path}", echo, methods=["GET", "POST", "PUT"])])
    with MockServer(app) as server:
        yield server.url


def test_requests_and_answers_pass_untouched_and_secrets_stay_out_of_the_cassette(
    upstream: str, tmp_path: Path
) -> None:
    out = tmp_path / "c.jsonl"
    sent = {"image": {"uri": "r/x", "auth": {"password": "registry-pw"}}, "keep": [1, 2]}
    headers = {"Authorization": "Bearer live-key", "X-Custom": "kept", "Content-Type": "application/json"}
    with recording(upstream, out, provider="opensandbox") as (server, writer):
        with httpx.Client(trust_env=False) as http:
            direct = http.post(f"{upstream}/v1/x?a=1&b=2", json=sent, headers=headers)
        with httpx.Client(trust_env=False) as http:
            proxied = http.post(f"{server.url}/v1/x?a=1&b=2", json=sent, headers=headers)
        listen = server.url
    assert (proxied.status_code, proxied.headers["x-upstream"]) == (418, "yes")
    echoed, expected = proxied.json(), direct.json()
    assert echoed["headers"].pop("host") == listen.removeprefix("http://")  # the client's Host, passed through
    expected["headers"].pop("host")
    expected["headers"].pop("connection")  # hop by hop: describes the client's own connection
    names = set(echoed["headers"]) | set(expected["headers"])
    changed = {n: (echoed["headers"].get(n), expected["headers"].get(n)) for n in names}
    assert {n: v for n, v in changed.items() if v[0] != v[1]} == {}  # every other header (the key too), as sent
    assert echoed == expected  # method, path, query and body too
    assert echoed["body"] == sent
    (only,) = read_cassette(out).exchanges
    assert writer.count == 1 and only.status == 418 and only.query == "a=1&b=2"
    assert only.request.header("authorization") == REDACTED and only.request.header("x-custom") == "kept"
    assert json.loads(only.request.body.text) == {
        "image": {"uri": "r/x", "auth": {"password": REDACTED}},
        "keep": [1, 2],
    }
    assert only.response.header("set-cookie") == REDACTED
    text = out.read_text()
    assert "live-key" not in text and "registry-pw" not in text and "s3cret" not in text


def test_a_remote_upstream_gets_its_own_host(upstream: str, tmp_path: Path) -> None:
    with recording(upstream, tmp_path / "c.jsonl", provider="tensorlake", preserve_host=False) as (server, _):
        echoed = httpx.get(f"{server.url}/h", headers={"Host": "sbx1.local"}, trust_env=False).json()
    assert echoed["headers"]["host"] == upstream.removeprefix("http://")
    with recording(upstream, tmp_path / "d.jsonl", provider="tensorlake") as (server, _):
        echoed = httpx.get(f"{server.url}/h", headers={"Host": "sbx1.local"}, trust_env=False).json()
    assert echoed["headers"]["host"] == "sbx1.local"
    assert (
        is_loopback_url("http://127.0.0.1:1")
        and is_loopback_url("http://localhost")
        and not is_loopback_url("https://api.tensorlake.ai")
    )


def test_an_event_stream_reaches_the_client_as_it_is_produced(upstream: str, tmp_path: Path) -> None:
    RELEASE.clear()
    out = tmp_path / "sse.jsonl"
    with (
        recording(upstream, out, provider="tensorlake") as (server, _),
        httpx.Client(trust_env=False, timeout=10) as http,
        http.stream("GET", f"{server.url}/events") as reply,
    ):
        lines = reply.iter_lines()
        first = next(lines)
        assert first == 'data: {"n": 1}' and not RELEASE.is_set()  # the upstream is still holding event 2
        RELEASE.set()
        rest = [line for line in lines if line]
    assert rest == ['data: {"n": 2}']
    (only,) = read_cassette(out).exchanges
    assert only.streamed and only.response.body.text == 'data: {"n": 1}\n\ndata: {"n": 2}\n\n'


def test_an_unreachable_upstream_is_a_502_and_an_error_in_the_cassette(tmp_path: Path) -> None:
    out = tmp_path / "down.jsonl"
    with recording(f"http://127.0.0.1:{free_port()}", out, provider="opensandbox") as (server, _):
        reply = httpx.get(f"{server.url}/v1/sandboxes", trust_env=False)
    assert reply.status_code == 502 and reply.json()["code"] == "RECORDER_UPSTREAM_ERROR"
    (only,) = read_cassette(out).exchanges
    assert only.status == 0 and "ConnectError" in only.error


def test_a_bad_upstream_is_refused(tmp_path: Path) -> None:
    with (
        pytest.raises(ValueError, match="absolute"),
        recording("ftp://x", tmp_path / "c.jsonl", provider="opensandbox"),
    ):
        pass
