"""The pieces every mock shares: clock, faults, journal, ids, DNS, admin API and wrapping."""

from __future__ import annotations

import abc
import functools
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp

from .clock import VirtualClock
from .dns import DnsTable
from .faults import FaultError, FaultRule, FaultSet
from .http import ApiError, json_object, read_json
from .ids import IdFactory
from .journal import Journal
from .middleware import ADMIN_PREFIX, FaultMiddleware, JournalMiddleware
from .server import MockServer


class MockCore(abc.ABC):
    """Hold one mock's shared machinery; a provider subclasses it with its own state model."""

    provider: str = "mock"

    def __init__(
        self,
        *,
        clock: VirtualClock | None = None,
        seed: int | None = None,
        journal_size: int = 10_000,
        dns: DnsTable | None = None,
    ) -> None:
        self.clock = clock or VirtualClock()
        self.faults = FaultSet()
        self.journal = Journal(journal_size)
        self.ids = IdFactory(seed)
        self.dns = dns or DnsTable()
        self._seed = seed

    @abc.abstractmethod
    def reset_state(self) -> None:
        """Forget every sandbox and provider-specific object."""

    @abc.abstractmethod
    def dump_state(self) -> dict[str, Any]:
        """Return the provider state as JSON."""

    @abc.abstractmethod
    def load_state(self, data: dict[str, Any]) -> None:
        """Replace the provider state with :meth:`dump_state` output."""

    @abc.abstractmethod
    def routes(self) -> list[BaseRoute]:
        """Return the provider's own routes."""

    def extra_admin_routes(self) -> list[BaseRoute]:
        """Return provider-specific admin routes (mounted under ``/_mock``)."""
        return []

    def reset(self) -> None:
        """Return to a fresh mock: no state, faults or journal; clock and ids restarted."""
        self.faults.clear()
        self.journal.clear()
        self.clock.reset()
        self.ids.seed(self._seed)
        self.dns.replace({}, "synthetic")
        self.reset_state()

    def seed(self, seed: int | None) -> None:
        """Make ids deterministic from ``seed`` from now on."""
        self._seed = seed
        self.ids.seed(seed)

    def snapshot(self) -> dict[str, Any]:
        """Return the whole state (sandboxes, clock, DNS) as JSON."""
        return {
            "provider": self.provider,
            "clock": self.clock.dump(),
            "dns": self.dns.dump(),
            "state": self.dump_state(),
        }

    def restore(self, data: dict[str, Any]) -> None:
        """Replace the whole state with a :meth:`snapshot`; nothing changes if it is invalid."""
        if not isinstance(data, dict) or data.get("provider") != self.provider:
            raise ValueError(f"not a {self.provider} snapshot")
        state = data.get("state")
        if not isinstance(state, dict):
            raise ValueError("snapshot has no state object")
        previous = self.snapshot()
        try:
            self.load_state(state)
            self.clock.load(dict(data.get("clock") or {}))
            self.dns.load(dict(data.get("dns") or {}))
        except Exception:
            self.load_state(previous["state"])
            self.clock.load(previous["clock"])
            self.dns.load(previous["dns"])
            raise

    def exception_handlers(self) -> dict[Any, Any]:
        """Return the Starlette exception handlers; the default renders :class:`ApiError`."""
        return {ApiError: _api_error}

    def build_app(self) -> ASGIApp:
        """Build the provider's ASGI app: admin and provider routes, wrapped in faults and journal."""
        app = Starlette(routes=[*self.admin_routes(), *self.routes()], exception_handlers=self.exception_handlers())
        return self.wrap(app)

    @functools.cached_property
    def app(self) -> ASGIApp:
        """Return the mock's ASGI app (built once)."""
        return self.build_app()

    def server(self, **options: Any) -> MockServer:
        """Return a :class:`MockServer` for this mock (``port=0`` by default); start it with ``with``."""
        return MockServer(self.app, **options)

    def transport(self) -> httpx.ASGITransport:
        """Return an in-process ``httpx`` transport that calls the mock without a socket."""
        return httpx.ASGITransport(app=self.app)

    def wrap(self, app: ASGIApp) -> ASGIApp:
        """Wrap ``app`` in fault injection and the journal."""
        return JournalMiddleware(FaultMiddleware(app, self.faults), self.journal, self.clock, self.provider)

    def admin_routes(self) -> list[BaseRoute]:
        """Return the admin API routes, already prefixed with ``/_mock``."""
        p = ADMIN_PREFIX
        return [
            Route(f"{p}/reset", self._admin_reset, methods=["POST"]),
            Route(f"{p}/snapshot", self._admin_snapshot, methods=["GET"]),
            Route(f"{p}/restore", self._admin_restore, methods=["POST"]),
            Route(f"{p}/seed", self._admin_seed, methods=["POST"]),
            Route(f"{p}/clock", self._admin_clock, methods=["GET"]),
            Route(f"{p}/clock/advance", self._admin_advance, methods=["POST"]),
            Route(f"{p}/clock/mode", self._admin_clock_mode, methods=["POST"]),
            Route(f"{p}/faults", self._admin_faults, methods=["GET", "POST", "DELETE"]),
            Route(f"{p}/faults/{{rule_id:int}}", self._admin_fault_delete, methods=["DELETE"]),
            Route(f"{p}/journal", self._admin_journal, methods=["GET", "DELETE"]),
            Route(f"{p}/journal/unknown", self._admin_unknown, methods=["GET"]),
            Route(f"{p}/dns", self._admin_dns, methods=["GET", "PUT", "POST"]),
            *self.extra_admin_routes(),
        ]

    async def _admin_reset(self, request: Request) -> Response:
        self.reset()
        return JSONResponse({"reset": True})

    async def _admin_snapshot(self, request: Request) -> Response:
        return JSONResponse(self.snapshot())

    async def _admin_restore(self, request: Request) -> Response:
        body = json_object(await read_json(request))
        try:
            self.restore(body)
        except (ValueError, KeyError, TypeError) as exc:
            raise ApiError(400, "invalid_snapshot", str(exc)) from exc
        return JSONResponse({"restored": True})

    async def _admin_seed(self, request: Request) -> Response:
        body = json_object(await read_json(request))
        seed = body.get("seed")
        if seed is not None and not isinstance(seed, int):
            raise ApiError(400, "invalid_seed", "seed must be an integer or null")
        self.seed(seed)
        return JSONResponse({"seed": seed})

    async def _admin_clock(self, request: Request) -> Response:
        return JSONResponse(self.clock.dump())

    async def _admin_advance(self, request: Request) -> Response:
        body = json_object(await read_json(request))
        seconds = body.get("seconds")
        if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds < 0:
            raise ApiError(400, "invalid_seconds", "seconds must be a non-negative number")
        now = self.clock.advance(float(seconds))
        self.on_clock_advance()
        return JSONResponse({"now": now})

    def on_clock_advance(self) -> None:  # noqa: B027 - optional hook
        """React to time moving (expire sandboxes, finish transitions); the default does nothing."""

    async def _admin_clock_mode(self, request: Request) -> Response:
        body = json_object(await read_json(request))
        mode: Any = body.get("mode")
        try:
            self.clock.set_mode(mode)
        except ValueError as exc:
            raise ApiError(400, "invalid_mode", str(exc)) from exc
        return JSONResponse(self.clock.dump())

    async def _admin_faults(self, request: Request) -> Response:
        if request.method == "GET":
            return JSONResponse([r.to_json() for r in self.faults.rules()])
        if request.method == "DELETE":
            self.faults.clear()
            return JSONResponse({"cleared": True})
        try:
            rule = self.faults.add(FaultRule.from_json(await read_json(request)))
        except FaultError as exc:
            raise ApiError(400, exc.code, str(exc)) from exc
        return JSONResponse(rule.to_json(), status_code=201)

    async def _admin_fault_delete(self, request: Request) -> Response:
        if not self.faults.remove(int(request.path_params["rule_id"])):
            raise ApiError(404, "fault_not_found", f"no fault rule {request.path_params['rule_id']}")
        return Response(status_code=204)

    async def _admin_journal(self, request: Request) -> Response:
        if request.method == "DELETE":
            self.journal.clear()
            return JSONResponse({"cleared": True})
        q = request.query_params
        status = q.get("status")
        entries = self.journal.entries(
            method=q.get("method"),
            path=q.get("path"),
            sandbox_id=q.get("sandbox_id"),
            status=int(status) if status and status.isdigit() else None,
        )
        return JSONResponse(self.journal.to_json(entries))

    async def _admin_unknown(self, request: Request) -> Response:
        return JSONResponse(self.journal.unknown_fields())

    async def _admin_dns(self, request: Request) -> Response:
        if request.method != "GET":
            body = json_object(await read_json(request))
            try:
                if request.method == "PUT":
                    self.dns.replace(body.get("entries", {}), body.get("default"))
                else:
                    self.dns.update(body)
            except (ValueError, TypeError, AttributeError) as exc:
                raise ApiError(400, "invalid_dns", f"invalid DNS table: {exc}") from exc
        return JSONResponse(self.dns.dump())


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return exc.response()
