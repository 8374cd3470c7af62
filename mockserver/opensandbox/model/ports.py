"""The sandbox-port gate: what answers a request for ``/{sandbox_id}/{port}/...`` before execd or the sidecar.

A sandbox port is reached directly (``/direct/{id}/{port}``, the endpoint the lifecycle API hands out) or
through the server proxy (``/v1/sandboxes/{id}/proxy/{port}``). :func:`admit_port` decides, for either way,
whether the request reaches the port's service (it returns the sandbox) or what refuses it (it raises).

Known deviations: a direct request to a sandbox that is not running answers 502 ``Bad Gateway``
(text) at once, where a real paused container would hang and a deleted one refuse the connection;
ports other than 44772 and 18080 are served whenever ``ServerConfig.user_ports`` is set (the mock
sets it on both runtimes): on the linux runtime by whatever listens there in the sandbox (nothing: 502), on
the emulator by an echo app, where a real sandbox with nothing listening answers 502. A method the server
proxy does not forward (HEAD, OPTIONS) gets 405 with ``Allow: DELETE, GET, PATCH, POST, PUT``; the real server
lists the same methods in the order of a Python set, which changes from one server process to the next.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from mockserver.core import ApiError

from .auth import KeyTable, invalid_secure_access, missing_key
from .config import ServerConfig
from .errors import bad_gateway, unreachable
from .execd import check_execd_token
from .profiles import EGRESS_PORT, EXECD_PORT
from .records import SandboxRecord
from .store import OpenSandboxState

__all__ = ["DEVIATING_OPERATIONS", "PROXY_METHODS", "PortCall", "admit_port", "require_pod_ip", "serves"]

#: The operations of the served OpenAPI documents the known deviations above concern (``mockserver.core.deviations``).
DEVIATING_OPERATIONS: dict[str, tuple[str, ...]] = {
    "lifecycle": tuple(
        f"{method} /sandboxes/{{sandbox_id}}/proxy/{{port}}{rest}"
        for rest in ("", "/{full_path}")
        for method in ("GET", "POST", "PUT", "DELETE", "PATCH")
    )
}

#: The methods the server proxy forwards; any other answers 405 before anything else is checked.
PROXY_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True)
class PortCall:
    """One request for a sandbox port, as the gate sees it.

    ``tenant`` is what the lifecycle auth resolved (the proxy route); ``api_key``, ``access_token`` and
    ``execd_token`` are the request's ``OPEN-SANDBOX-API-KEY``, ``OpenSandbox-Secure-Access`` and
    ``X-EXECD-ACCESS-TOKEN`` headers.
    """

    sandbox_id: str
    port: int
    via_proxy: bool
    tenant: str | None = None
    api_key: str | None = None
    access_token: str | None = None
    execd_token: str | None = None


def require_pod_ip(sb: SandboxRecord) -> None:
    """Raise the Kubernetes 404 while a sandbox has no pod IP yet."""
    if sb.state == "Pending":
        raise ApiError(
            404, "KUBERNETES::POD_IP_NOT_AVAILABLE", "Pod IP is not yet available. The Pod may still be starting."
        )


def serves(sb: SandboxRecord, port: int, user_ports: bool = False) -> bool:
    """Tell whether ``port`` in the sandbox has a service: execd always, the sidecar when it has one, and
    any other port when ``user_ports`` (the runtime serves the sandbox's own ports; see ``ServerConfig``)."""
    if port == EGRESS_PORT:
        return sb.has_sidecar
    return port == EXECD_PORT or user_ports


def _direct_tenant(state: OpenSandboxState, table: KeyTable, call: PortCall) -> str | None:
    """Authenticate a direct request in multi-tenant mode: the sandbox's token, else the owner's API key."""
    if not table.multi_tenant:
        return None
    if call.access_token:
        sb = state.lookup(call.sandbox_id)
        if sb is None:
            raise bad_gateway()
        if not hmac.compare_digest(call.access_token.encode(), sb.access_token.encode()):
            raise invalid_secure_access()
        return sb.tenant
    return table.tenant_of(call.api_key)


def admit_port(state: OpenSandboxState, config: ServerConfig, call: PortCall) -> SandboxRecord:
    """Return the sandbox whose port service answers ``call``, or raise what answers instead.

    In order: credentials (multi-tenant only; see :mod:`.auth`), the sandbox lookup (another tenant's
    sandbox does not exist: proxy 404, direct 502), the pod IP (proxy, Kubernetes), whether the port is
    served and the sandbox running (502), and execd's access token (401 ``{"error"}``).
    """
    table = config.access
    if call.via_proxy:
        tenant = call.tenant if table.multi_tenant else None
        if table.multi_tenant and tenant is None:
            raise missing_key()
    else:
        tenant = _direct_tenant(state, table, call)
    sb = state.lookup(call.sandbox_id)
    if sb is None or (tenant is not None and sb.tenant != tenant):
        if call.via_proxy:
            raise ApiError(404, state.profile.not_found_code, f"Sandbox {call.sandbox_id} not found.")
        raise bad_gateway()
    if call.via_proxy:
        require_pod_ip(sb)
    if sb.state != "Running" or not serves(sb, call.port, config.user_ports):
        raise unreachable(call.port, call.via_proxy)
    if call.port == EXECD_PORT:
        check_execd_token(config.execd_token, call.execd_token)
    return sb
