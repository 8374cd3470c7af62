"""A tiny provider built on the shared core, for testing the core alone."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from mockserver.asgi.middleware import notes
from mockserver.asgi.requests import read_json
from mockserver.core import ApiError, json_object
from mockserver.service import HttpMock


class DemoMock(HttpMock):
    """Store named items; stream numbers; flag unknown request keys."""

    provider = "demo"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.items: dict[str, dict[str, Any]] = {}

    def reset_state(self) -> None:
        self.items = {}

    def dump_state(self) -> dict[str, Any]:
        return {"items": dict(self.items)}

    def load_state(self, data: dict[str, Any]) -> None:
        items = data["items"]
        if not isinstance(items, dict):
            raise ValueError("items must be an object")
        self.items = dict(items)

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/items", self._create, methods=["POST"]),
            Route("/items/{item_id}", self._get, methods=["GET"]),
            Route("/stream", self._stream, methods=["GET"]),
        ]

    async def _create(self, request: Request) -> Response:
        body = json_object(await read_json(request))
        notes(request.scope).unknown_fields.extend(k for k in body if k != "value")
        item_id = self.ids.token(8)
        self.items[item_id] = {"value": body.get("value"), "at": self.clock.now()}
        notes(request.scope).sandbox_id = item_id
        return JSONResponse({"id": item_id}, status_code=201)

    async def _get(self, request: Request) -> Response:
        item = self.items.get(request.path_params["item_id"])
        if item is None:
            raise ApiError(404, "not_found", "no such item")
        return JSONResponse(item)

    async def _stream(self, request: Request) -> Response:
        async def numbers() -> AsyncIterator[bytes]:
            for i in range(5):
                yield f"{i}\n".encode()

        return StreamingResponse(numbers(), media_type="text/plain")
