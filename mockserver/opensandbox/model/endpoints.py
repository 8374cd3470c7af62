"""Endpoint resolution: where a sandbox port is reachable, and which headers a client must send there.

``GET /v1/sandboxes/{id}/endpoints/{port}`` answers a scheme-less ``host[:port]/path``, as the real server
does: the direct endpoint ``{host}/direct/{id}/{port}`` (this mock serves every sandbox port in its own
app) or, with ``use_server_proxy=true``, the server proxy ``{host}{mount}/sandboxes/{id}/proxy/{port}``
under the mount the request came through (``/v1`` or bare). ``host`` is the request's ``Host`` value.

Configured from the real server's file (:mod:`.server_file`), the endpoints take the real Docker runtime's
shapes instead (``services/docker/networking.py``, ``get_endpoint``): ``network_mode = "host"`` answers
``{public_host}:{port}``; ``"bridge"`` answers ``{public_host}:{hostPort}/proxy/{port}``, where ``hostPort`` is the
sandbox's published execd port, and port 8080 its own published port ``{public_host}:{httpHostPort}``. The mock
draws the pair from ``[docker] port_range_min``-``port_range_max``, the lowest free ports first (a choice: the real
allocator draws at random). A server-proxy endpoint starts with ``[server] eip`` when one is set.

:func:`published_ports` says which host ports are published while their sandboxes live, and :func:`host_port_target`
which sandbox port a request on one of them reaches: on execd's host port, ``/proxy/{port}/...`` is execd's proxy
to that port in the sandbox and any other path execd itself; on 8080's host port, the sandbox's port 8080. The
standalone server listens on them (:mod:`mockserver.asgi.host_ports`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from mockserver.core import ApiError

from .auth import DIRECT_PREFIX, SECURE_ACCESS_HEADER
from .config import ServerConfig
from .egress import EGRESS_AUTH_HEADER
from .ports import require_pod_ip
from .profiles import EGRESS_PORT, EXECD_PORT
from .query import Query, query_bool, query_last
from .records import SandboxRecord
from .store import OpenSandboxState
from .validation import Checker, RequestValidationError, error

__all__ = [
    "EXECD_ACCESS_HEADER",
    "PublishedPort",
    "endpoint_headers",
    "host_port_target",
    "host_ports",
    "published_ports",
    "resolve_endpoint",
]

EXECD_ACCESS_HEADER = "X-EXECD-ACCESS-TOKEN"
CONTAINER_START_FAILED = "DOCKER::SANDBOX_START_FAILED"
#: The sandbox port that has a host port of its own in bridge mode (besides execd's).
HTTP_PORT = 8080
_EXECD_PROXY = re.compile(r"/proxy/([0-9]{1,5})(/.*)?\Z", re.DOTALL)


def endpoint_headers(config: ServerConfig, sb: SandboxRecord, port: int, *, via_proxy: bool) -> dict[str, str]:
    """Return the headers an endpoint tells clients to send to that port.

    The execd and egress tokens when configured; in multi-tenant mode a direct endpoint also carries the
    sandbox's secure-access token, which the direct route accepts in place of the owner's API key.
    """
    headers: dict[str, str] = {}
    if port == EXECD_PORT and config.execd_token:
        headers[EXECD_ACCESS_HEADER] = config.execd_token
    if port == EGRESS_PORT and config.egress_token:
        headers[EGRESS_AUTH_HEADER] = config.egress_token
    if config.access.multi_tenant and not via_proxy:
        headers[SECURE_ACCESS_HEADER] = sb.access_token
    return headers


def host_ports(state: OpenSandboxState, config: ServerConfig, sandbox_id: str) -> tuple[int, int]:
    """Return the host ports a bridge-mode sandbox publishes (execd's, 8080's); allocate them on first use.

    The lowest two free ports of ``config.port_range``; ports of sandboxes that are gone are freed when the range
    runs out; a full range is the real allocator's 500 "Failed to allocate host ports for sandbox container.".
    """
    with state.lock:
        taken = state.host_ports.get(sandbox_id)
        if taken is not None:
            return taken
        low, high = config.port_range
        for attempt in range(2):
            used = {port for pair in state.host_ports.values() for port in pair}
            free = (port for port in range(low, high + 1) if port not in used)
            pair = (next(free, None), next(free, None))
            if pair[0] is not None and pair[1] is not None:
                state.host_ports[sandbox_id] = (pair[0], pair[1])
                return state.host_ports[sandbox_id]
            if attempt == 0:
                for gone in [sid for sid in state.host_ports if state.lookup(sid) is None]:
                    del state.host_ports[gone]
        raise ApiError(500, CONTAINER_START_FAILED, "Failed to allocate host ports for sandbox container.")


@dataclass(frozen=True)
class PublishedPort:
    """A host port a bridge-mode sandbox publishes: the sandbox and the port it maps (execd's or 8080)."""

    sandbox_id: str
    port: int


def published_ports(state: OpenSandboxState) -> dict[int, PublishedPort]:
    """Return the host ports published now, each with what it maps: those of the sandboxes that still live.

    Expiries due by now are settled first, so a sandbox past its timeout publishes nothing.
    """
    with state.lock:
        state.settle_all()
        published: dict[int, PublishedPort] = {}
        for sandbox_id, (execd_port, http_port) in state.host_ports.items():
            if sandbox_id in state.sandboxes:
                published[execd_port] = PublishedPort(sandbox_id, EXECD_PORT)
                published[http_port] = PublishedPort(sandbox_id, HTTP_PORT)
        return published


def host_port_target(published: PublishedPort, path: str) -> tuple[int, str]:
    """Return the sandbox port and path a request for ``path`` on a published host port reaches.

    On execd's host port ``/proxy/{port}`` and ``/proxy/{port}/...`` are execd's proxy to that port (the bridge
    endpoints name them), any other path execd itself; 8080's host port is the sandbox's port 8080.
    """
    if published.port == EXECD_PORT:
        match = _EXECD_PROXY.match(path)
        if match is not None and 1 <= int(match.group(1)) <= 65535:
            return int(match.group(1)), match.group(2) or "/"
    return published.port, path


def _real_endpoint(state: OpenSandboxState, config: ServerConfig, sb: SandboxRecord, port: int) -> str:
    """Return the real Docker runtime's endpoint for ``port`` in ``config.network_mode`` (host or bridge)."""
    if config.network_mode == "host":
        return f"{config.public_host}:{port}"
    execd_port, http_port = host_ports(state, config, sb.id)
    if port == HTTP_PORT:
        return f"{config.public_host}:{http_port}"
    return f"{config.public_host}:{execd_port}/proxy/{port}"


def resolve_endpoint(
    state: OpenSandboxState,
    config: ServerConfig,
    tenant: str,
    sandbox_id: str,
    raw_port: str,
    query: Query,
    *,
    host: str | None,
    path: str,
) -> dict[str, Any]:
    """Answer ``GET {path}`` (``/v1/sandboxes/{id}/endpoints/{port}`` or bare) with the ``Endpoint`` body.

    The real server's order: the port is an integer (422), the query parses (422), ``use_server_proxy``
    with ``expires`` (400), ``expires`` on Docker (400), the port range (400), the sandbox (404), its pod IP
    (404 while Pending).
    """
    try:
        port = int(raw_port)
    except ValueError:
        raise RequestValidationError([error("int_parsing", ["path", "port"], raw_port)]) from None
    check = Checker()
    use_proxy = query_bool(check, query, "use_server_proxy")
    expires = query_last(query, "expires")
    if expires is not None:
        check.integer(expires, ["query", "expires"])
    check.raise_if_any()
    if use_proxy and expires is not None:
        raise ApiError(
            400,
            "SANDBOX::INVALID_PARAMETER",
            "use_server_proxy cannot be combined with expires; signed endpoints require the gateway route.",
        )
    if expires is not None and state.profile.name == "docker":
        raise ApiError(
            400,
            "SANDBOX::API_NOT_SUPPORTED",
            "Signed routes (expires parameter) are not supported when runtime.type='docker'. "
            "Use the Kubernetes runtime for signed routes.",
        )
    if not 1 <= port <= 65535:
        raise ApiError(400, "DOCKER::INVALID_PORT", "Port must be between 1 and 65535.")
    sb = state.find(sandbox_id, tenant)
    require_pod_ip(sb)
    base = host or config.default_host
    if use_proxy:
        mount = path.split("/sandboxes/", 1)[0]
        prefix = config.proxy_base if config.proxy_base is not None else f"{base}{mount}"
        body: dict[str, Any] = {"endpoint": f"{prefix}/sandboxes/{sb.id}/proxy/{port}"}
    elif config.network_mode is not None:
        body = {"endpoint": _real_endpoint(state, config, sb, port)}
    else:
        body = {"endpoint": f"{base}{DIRECT_PREFIX}/{sb.id}/{port}"}
    headers = endpoint_headers(config, sb, port, via_proxy=use_proxy)
    if headers:
        body["headers"] = headers
    return body
