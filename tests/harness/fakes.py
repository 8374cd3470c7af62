"""Tiny stand-ins for the mocks and policy engines, so the harness tests stay fast and self-contained."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from contracts.opensandbox_adapter import OpenSandboxReferenceEngine
from mockserver.asgi.middleware import notes
from mockserver.asgi.requests import read_json
from mockserver.service import HttpMock


class _FakeMock(HttpMock):
    """A mock with one route, ``POST /echo``, that flags every body field except ``name`` as unknown.

    ``runtime`` records what the plugin asked for (``--sandproof-runtime``); the fake runs nothing.
    """

    def __init__(self, runtime: str = "emulator") -> None:
        super().__init__()
        self.runtime = runtime

    def reset_state(self) -> None:
        """Forget nothing: the fake has no state."""

    def dump_state(self) -> dict[str, Any]:
        """Return no state."""
        return {}

    def load_state(self, data: dict[str, Any]) -> None:
        """Accept any state."""

    def routes(self) -> list[BaseRoute]:
        """Return the echo route."""
        return [Route("/echo", self._echo, methods=["POST"])]

    async def _echo(self, request: Request) -> Response:
        body = await read_json(request)
        fields = sorted(k for k in body if k != "name") if isinstance(body, dict) else []
        notes(request.scope).unknown_fields.extend(fields)
        return JSONResponse({"echo": body})


class FakeTensorLake(_FakeMock):
    """The TensorLake stand-in."""

    provider = "tensorlake"


class FakeOpenSandbox(_FakeMock):
    """The OpenSandbox stand-in, with a configured key like the real mock's ``keys``."""

    provider = "opensandbox"
    keys = {"fake-osb-key": "default"}


FAKE_CLASSES = {
    "tensorlake": ("tests.harness.fakes:FakeTensorLake",),
    "opensandbox": ("tests.harness.fakes:FakeOpenSandbox",),
}


class AllowEverything(OpenSandboxReferenceEngine):
    """A wrong OpenSandbox engine: it allows every host."""

    def allows_egress(self, policy: dict[str, Any] | None, host: str) -> bool:
        """Allow."""
        return True


allow_everything = AllowEverything()


class NoKind:
    """Not an engine: no ``kind``."""

    def validate(self, policy: dict[str, Any]) -> None:
        """Accept."""


class HalfEngine:
    """An OpenSandbox engine missing ``delete`` and with a ``merge`` of the wrong arity."""

    kind = "opensandbox"

    def validate(self, policy: dict[str, Any]) -> None:
        """Accept."""

    def allows_egress(self, policy: dict[str, Any] | None, host: str) -> bool:
        """Allow."""
        return True

    def merge(self, policy: dict[str, Any] | None) -> dict[str, Any]:
        """Take too few arguments."""
        return policy or {}


class NeedsArguments:
    """An engine class that cannot be created without arguments."""

    kind = "opensandbox"

    def __init__(self, strict: bool) -> None:
        self.strict = strict


half_engine = HalfEngine()
no_kind = NoKind()
not_callable_kind = type("Weird", (), {"kind": "tensorlake", "validate": 3})()
