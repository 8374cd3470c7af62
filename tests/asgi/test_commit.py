"""CommitBeforeSend: the state is committed before a client can see any byte of the answer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mockserver.asgi.commit import CommitBeforeSend
from mockserver.asgi.middleware import notes


def _app(events: list[str]) -> Starlette:
    async def write(request: Request) -> Response:
        events.append("change")
        notes(request.scope).sandbox_id = "sb-1"
        return JSONResponse({"ok": True})

    async def stream(request: Request) -> Response:
        async def chunks() -> AsyncIterator[bytes]:
            yield b"a"
            events.append("change while streaming")
            yield b"b"

        return StreamingResponse(chunks())

    return Starlette(routes=[Route("/write", write, methods=["POST", "GET"]), Route("/stream", stream)])


def _receiver() -> Receive:
    """Return a receive that gives the request once, then waits (as a client that stays connected)."""
    given = False

    async def receive() -> Message:
        nonlocal given
        if given:
            await asyncio.sleep(3600)
        given = True
        return {"type": "http.request", "body": b"", "more_body": False}

    return receive


def _call(app: ASGIApp, method: str, path: str, events: list[str]) -> None:
    scope: Scope = {"type": "http", "method": method, "path": path, "headers": [], "query_string": b""}
    receive = _receiver()

    async def send(message: Message) -> None:
        events.append("sent " + message["type"].removeprefix("http.response."))

    asyncio.run(app(scope, receive, send))


class _CommitAfterSend:
    """A wrong wrapper: it commits once the answer is out (what a periodic saver amounts to)."""

    def __init__(self, app: ASGIApp, commit: Callable[[], object], touched: Callable[[str], None]) -> None:
        self.app, self.commit = app, commit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)
        self.commit()


def _wrapped(wrapper: Any, events: list[str]) -> ASGIApp:
    return wrapper(_app(events), lambda: events.append("commit"), lambda sid: events.append(f"touched {sid}"))


@pytest.mark.parametrize(
    "wrapper", [CommitBeforeSend, pytest.param(_CommitAfterSend, marks=pytest.mark.xfail(strict=True))]
)
def test_a_write_is_committed_before_the_first_byte(wrapper: Any) -> None:
    events: list[str] = []
    _call(_wrapped(wrapper, events), "POST", "/write", events)
    assert events[:4] == ["change", "touched sb-1", "commit", "sent start"]


def test_a_read_commits_but_touches_nothing() -> None:
    events: list[str] = []
    _call(_wrapped(CommitBeforeSend, events), "GET", "/write", events)
    assert events == ["change", "commit", "sent start", "sent body"]


def test_a_stream_commits_again_before_its_end() -> None:
    events: list[str] = []
    _call(_wrapped(CommitBeforeSend, events), "GET", "/stream", events)
    end = max(i for i, e in enumerate(events) if e == "sent body")
    assert events.index("commit") < events.index("sent start")
    assert "change while streaming" in events[: events.index("commit", events.index("change while streaming"))]
    assert events.index("commit", events.index("change while streaming")) < end


def test_a_failed_commit_answers_503_instead() -> None:
    sent: list[Message] = []

    def fail() -> None:
        raise OSError("disk full")

    app = CommitBeforeSend(_app([]), fail, lambda sid: None)
    scope: Scope = {"type": "http", "method": "POST", "path": "/write", "headers": [], "query_string": b""}
    receive = _receiver()

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 503 and b"state_not_saved" in sent[1]["body"]
    assert len(sent) == 2
