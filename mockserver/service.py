"""``HttpMock``: a :class:`MockCore` served over HTTP: provider routes plus the admin service, in faults and journal.

Everything is an ASGI app: :meth:`HttpMock.build_app` puts the admin and provider routes in one Starlette
app and wraps it in :class:`FaultMiddleware` and :class:`JournalMiddleware`; :meth:`HttpMock.server` serves it
on a real socket and :meth:`HttpMock.transport` in process.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from starlette.routing import BaseRoute
from starlette.types import ASGIApp

from mockserver.admin.guard import AdminGuard
from mockserver.admin.routes import admin_routes
from mockserver.asgi.middleware import FaultMiddleware, JournalMiddleware
from mockserver.asgi.render import api_error_handler
from mockserver.asgi.routing import indexed_app
from mockserver.asgi.server import MockServer
from mockserver.core.errors import ApiError
from mockserver.core.lazy import LazyMapping
from mockserver.core.mock import MockCore

if TYPE_CHECKING:
    import httpx

    from mockserver.admin.catalogue import NamedFault

__all__ = ["HttpMock"]


class HttpMock(MockCore):
    """A mock with its HTTP face: subclasses give :meth:`routes` (and optionally admin extras)."""

    @abc.abstractmethod
    def routes(self) -> list[BaseRoute]:
        """Return the provider's own routes."""

    def extra_admin_routes(self) -> list[BaseRoute]:
        """Return provider-specific admin routes (mounted under ``/_mock``)."""
        return []

    def named_faults(self) -> Mapping[str, NamedFault]:
        """Return the provider's named fault catalogue (served under ``/_mock/faults/catalogue``)."""
        return {}

    def admin_routes(self) -> list[BaseRoute]:
        """Return the admin service's routes, already prefixed with ``/_mock``."""
        return admin_routes(self, self.extra_admin_routes(), LazyMapping(self.named_faults))

    def exception_handlers(self) -> dict[Any, Any]:
        """Return the Starlette exception handlers; the default renders :class:`ApiError`."""
        return {ApiError: api_error_handler}

    def build_app(self) -> ASGIApp:
        """Build the provider's ASGI app: admin and provider routes, wrapped in faults and journal.

        The provider's routes are built when a request first goes past the admin routes (a start answers
        ``/_mock`` without them).
        """
        app = indexed_app(self.admin_routes(), self.exception_handlers(), later=self.routes)
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
        import httpx

        return httpx.ASGITransport(app=self.app)

    #: When set, every ``/_mock`` request must carry this token (see :mod:`mockserver.admin.guard`).
    admin_token: str | None = None

    def gate(self, app: ASGIApp) -> ASGIApp:
        """Wrap ``app`` in the provider's outer layers (request ids, CORS, authentication); the default adds none.

        The gate sits inside the journal, so the journal records what the client got (a refusal, the stamped
        headers), and outside fault injection, so a refused request is never faulted.
        """
        return app

    def wrap(self, app: ASGIApp) -> ASGIApp:
        """Wrap ``app`` in fault injection, the provider's gate and the journal (and the admin guard when a token
        is set)."""
        wrapped: ASGIApp = JournalMiddleware(
            self.gate(FaultMiddleware(app, self.faults)), self.journal, self.clock, self.provider
        )
        return AdminGuard(wrapped, self.admin_token) if self.admin_token else wrapped
