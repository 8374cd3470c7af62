"""WatchedStream: a silent stream still notices its client going away; a finished one does not call back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from mockserver.asgi.streams import WatchedStream

SCOPE = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"}, "method": "GET", "headers": []}


async def _serve(content: AsyncIterator[bytes], disconnect_after: float | None) -> tuple[list[str], list[Any]]:
    calls: list[str] = []
    sent: list[Any] = []
    gone = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if disconnect_after is None:
            await gone.wait()
        else:
            await asyncio.sleep(disconnect_after)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            gone.set()

    response = WatchedStream(content, media_type="text/plain", on_disconnect=lambda: calls.append("gone"))
    await asyncio.wait_for(response(SCOPE, receive, send), timeout=5)
    return calls, sent


def test_a_client_that_leaves_a_silent_stream_is_noticed() -> None:
    async def silent() -> AsyncIterator[bytes]:
        yield b"first"
        await asyncio.Event().wait()  # a command that prints nothing more
        yield b"never"

    calls, sent = asyncio.run(_serve(silent(), disconnect_after=0.05))
    assert calls == ["gone"] and [m.get("body") for m in sent[1:]] == [b"first"]


def test_a_stream_read_to_its_end_does_not_call_back() -> None:
    async def short() -> AsyncIterator[bytes]:
        yield b"all"

    calls, sent = asyncio.run(_serve(short(), disconnect_after=None))
    assert calls == [] and sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}


def test_a_stream_that_ends_within_two_turns_starts_no_listener() -> None:
    """A short answer (a command that runs in one turn, sent the next) is sent without reading the client."""
    reads: list[str] = []

    async def quick() -> AsyncIterator[bytes]:
        yield b"init"
        await asyncio.sleep(0)  # the command's one turn
        yield b"output"

    async def receive() -> dict[str, Any]:
        reads.append("receive")
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        pass

    calls: list[str] = []
    response = WatchedStream(quick(), media_type="text/plain", on_disconnect=lambda: calls.append("gone"))
    asyncio.run(response(SCOPE, receive, send))
    assert reads == [] and calls == []


def test_a_client_gone_before_a_slow_stream_is_noticed_once_the_listener_starts() -> None:
    """A stream still waiting after two turns is watched: its client, gone from the start, stops it."""

    async def slow() -> AsyncIterator[bytes]:
        yield b"init"
        for _ in range(3):
            await asyncio.sleep(0)
        await asyncio.Event().wait()  # a silent command
        yield b"never"

    calls, sent = asyncio.run(_serve(slow(), disconnect_after=0))
    assert calls == ["gone"] and [m.get("body") for m in sent[1:]] == [b"init"]


def test_a_stream_cancelled_from_outside_stays_cancelled_and_does_not_call_back() -> None:
    calls: list[str] = []

    async def silent() -> AsyncIterator[bytes]:
        yield b"first"
        await asyncio.Event().wait()
        yield b"never"

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()  # the client stays
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        pass

    async def main() -> bool:
        response = WatchedStream(silent(), media_type="text/plain", on_disconnect=lambda: calls.append("gone"))
        task = asyncio.create_task(response(SCOPE, receive, send))
        await asyncio.sleep(0.01)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return True
        return False

    assert asyncio.run(main()) is True
    assert calls == []
