"""Does an OpenSandbox target run an egress sidecar behind its sandboxes? One probe per URL, before the checks need it.

The contracts that talk to a sandbox's egress sidecar (the API machine's policy rules, the concurrency contract's
``/policy`` requests, the egress OpenAPI document) can only judge a target whose sandboxes have one. The real
opensandbox-server here runs on a fake Docker engine where no sidecar runs
(:mod:`harness.differential.execd`), and a server without an egress image refuses every ``networkPolicy``.
:func:`sidecar_missing` creates one sandbox with a policy, asks its sidecar for the policy through the endpoint
the server names, deletes the sandbox, and returns why there is no sidecar to judge, or None.
"""

from __future__ import annotations

import threading

import httpx

from mockserver.asgi import clients

__all__ = ["PROBE_BODY", "sidecar_missing"]

EGRESS_PORT = 18080
#: The sandbox the probe creates: a small policy, so the server starts an egress sidecar.
PROBE_BODY = {
    "image": {"uri": "python:3.11"},
    "entrypoint": ["tail", "-f", "/dev/null"],
    "timeout": 600,
    "resourceLimits": {"cpu": "500m", "memory": "512Mi"},
    "metadata": {"sandproof-probe": "egress-sidecar"},
    "networkPolicy": {"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]},
}
_CACHE: dict[tuple[str, str | None], str | None] = {}
_LOCK = threading.Lock()


def sidecar_missing(url: str, api_key: str | None, *, timeout: float = 30.0) -> str | None:
    """Return why the target at ``url`` has no egress sidecar the contracts can judge, or None (probed once)."""
    key = (url.rstrip("/"), api_key)
    with _LOCK:
        if key not in _CACHE:
            _CACHE[key] = _probe(key[0], api_key, timeout)
        return _CACHE[key]


def _probe(url: str, api_key: str | None, timeout: float) -> str | None:
    """Create a sandbox with a policy, read its sidecar's ``/policy``, delete the sandbox."""
    headers = {"OPEN-SANDBOX-API-KEY": api_key} if api_key else {}
    with clients.client(base_url=url, headers=headers, timeout=timeout) as client:
        created = client.post("/v1/sandboxes", json=PROBE_BODY)
        if created.status_code != 202:
            return f"the target creates no sandbox with an egress sidecar: {created.status_code} {created.text[:200]}"
        sandbox_id = created.json()["id"]
        try:
            answer = client.get(f"/v1/sandboxes/{sandbox_id}/proxy/{EGRESS_PORT}/policy")
        except httpx.HTTPError as exc:
            return f"the egress sidecar of a new sandbox cannot be reached: {exc}"
        finally:
            client.delete(f"/v1/sandboxes/{sandbox_id}")
    if answer.status_code != 200:
        return f"no egress sidecar answers behind the target's sandboxes: {answer.status_code} {answer.text[:200]}"
    return None
