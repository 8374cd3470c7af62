"""Where a document is served on a target: API-key headers, and the sandbox ports execd and egress run on."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx

from harness.openapi.specs import EGRESS_PORT, EGRESS_SANDBOX_REQUEST, SANDBOX_REQUEST
from mockserver.asgi import clients

if TYPE_CHECKING:
    from harness.targets import Target

__all__ = [
    "CLOUD_SKIP",
    "REQUEST_TIMEOUT",
    "STAND_IN_HEADER",
    "Endpoint",
    "SandboxUnavailable",
    "auth_headers",
    "is_sandproof_mock",
    "sandbox_endpoints",
    "served_by_stand_in",
]

REQUEST_TIMEOUT = 30.0


@dataclass(frozen=True)
class Endpoint:
    """Where a document is served and the headers every request needs."""

    base_url: str
    headers: Mapping[str, str] = field(default_factory=dict)


def auth_headers(provider: str, api_key: str | None) -> dict[str, str]:
    """Return the API-key headers of ``provider`` (none without a key)."""
    if not api_key:
        return {}
    if provider == "opensandbox":
        return {"OPEN-SANDBOX-API-KEY": api_key}
    if provider == "tensorlake":
        return {"Authorization": f"Bearer {api_key}"}
    raise ValueError(f"unknown provider {provider!r}")


class SandboxUnavailable(RuntimeError):
    """Raise when the target cannot create the sandbox a document is served in."""


@contextmanager
def sandbox_endpoints(lifecycle: Endpoint, ports: Iterable[int]) -> Iterator[dict[int, Endpoint]]:
    """Create an OpenSandbox sandbox, yield its port endpoints, then delete it.

    The sandbox gets an egress policy (so an egress sidecar) when the egress port is asked for. Each endpoint
    comes from ``GET /v1/sandboxes/{id}/endpoints/{port}``: a scheme-less ``host:port/path`` plus the headers
    the sandbox port requires.
    """
    ports = list(ports)
    request = EGRESS_SANDBOX_REQUEST if EGRESS_PORT in ports else SANDBOX_REQUEST
    with clients.client(
        base_url=lifecycle.base_url, headers=dict(lifecycle.headers), timeout=REQUEST_TIMEOUT
    ) as client:
        created = client.post("/v1/sandboxes", json=request)
        if created.status_code != 202:
            raise SandboxUnavailable(
                f"the target cannot create the sandbox this document is served in: {created.status_code} "
                f"{created.text[:300]}"
            )
        sandbox_id = str(created.json()["id"])
        try:
            endpoints: dict[int, Endpoint] = {}
            for port in ports:
                answer = client.get(f"/v1/sandboxes/{sandbox_id}/endpoints/{port}")
                if answer.status_code != 200:
                    raise RuntimeError(f"endpoint of port {port} answered {answer.status_code}: {answer.text[:300]}")
                body = answer.json()
                endpoint = str(body["endpoint"])
                url = endpoint if "://" in endpoint else f"{httpx.URL(lifecycle.base_url).scheme}://{endpoint}"
                endpoints[port] = Endpoint(
                    url.rstrip("/"), {str(k): str(v) for k, v in (body.get("headers") or {}).items()}
                )
            yield endpoints
        finally:
            client.delete(f"/v1/sandboxes/{sandbox_id}")


CLOUD_SKIP = "fuzzed writes are not sent to a real cloud service; only GET operations run there"


#: The header sandproof's execd stand-in puts on every answer (:data:`harness.differential.execd.STAND_IN_HEADER`).
STAND_IN_HEADER = "x-sandproof-stand-in"


def served_by_stand_in(endpoint: Endpoint) -> bool:
    """Tell whether a sandbox port is served by sandproof's own execd behind a real server (its ``/ping`` says so)."""
    try:
        with clients.client(headers=dict(endpoint.headers), timeout=REQUEST_TIMEOUT) as http:
            answer = http.get(f"{endpoint.base_url}/ping")
    except httpx.HTTPError:
        return False
    return STAND_IN_HEADER in answer.headers


def is_sandproof_mock(target: Target, provider: str) -> bool:
    """Tell whether the target serves sandproof's admin API for ``provider`` (so it is one of our mocks)."""
    try:
        return target.admin_available(provider)
    except Exception:
        return False
