"""The lifecycle gate: the API-key check, applied once per lifecycle request before routing.

The rule is the model's (:func:`~..model.auth.tenant_of` over the model's accepted keys, on the paths
:func:`~..model.auth.lifecycle_namespace` names); this layer reads the first ``Authorization`` header, notes
the tenant for the journal, leaves the :class:`~..model.auth.Tenant` in the scope (:data:`TENANT_KEY`, read by
:func:`.lifecycle.call_of`) and renders a refusal as the lifecycle routes render any (``{"code", "message"}``).
It sits inside the journal and fault layers, just outside the lifecycle routes, as OpenSandbox's
``RequestGate`` does; other paths (``/_mock``, ``/openapi.json``) and WebSockets pass untouched.

Known deviations from the real service: a request without a valid key to a path under the lifecycle prefixes
that no route serves, or with a method its path does not serve, answers the 401 rather than a 404 or 405 (a
choice: the docs do not say which check comes first; every served route checks the key first).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from mockserver.asgi.middleware import notes
from mockserver.asgi.render import error_response
from mockserver.core.errors import ApiError

from ..model.auth import lifecycle_namespace, tenant_of
from ..model.store import SandboxStore

__all__ = ["TENANT_KEY", "RequestGate"]

#: Where the gate leaves the authenticated tenant in the ASGI scope's ``state``.
TENANT_KEY = "tensorlake_tenant"


def _authorization(scope: Scope) -> str | None:
    """Return the first ``Authorization`` header of a request, or None."""
    for name, value in scope.get("headers") or ():
        if name == b"authorization":
            return str(value.decode("latin-1"))
    return None


class RequestGate:
    """Authenticate every HTTP request to a lifecycle path against ``model.keys`` (read per request)."""

    def __init__(self, app: ASGIApp, model: SandboxStore) -> None:
        self.app = app
        self.model = model

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        namespace = lifecycle_namespace(str(scope.get("path", ""))) if scope["type"] == "http" else None
        if namespace is not None:
            try:
                tenant = tenant_of(_authorization(scope), namespace, self.model.keys)
            except ApiError as refusal:
                await error_response(refusal)(scope, receive, send)
                return
            notes(scope).tenant = tenant.label()
            scope.setdefault("state", {})[TENANT_KEY] = tenant
        await self.app(scope, receive, send)
