"""The egress sidecar (port 18080 ``/policy``) and the egress gate the in-sandbox probes consult.

All policy logic is the reference engine's (``contracts.opensandbox``); this module only speaks the
sidecar's wire format: JSON on success, ``text/plain`` on errors.

Known deviations: the credential vault routes are not served (404); a sandbox created without a
``networkPolicy`` has no sidecar (as on the Docker runtime), so its 18080 endpoint answers 502,
unless the mock was built with ``egress_without_policy=True``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from contracts.opensandbox import (
    NetworkPolicy,
    PolicyError,
    decide_egress,
    delete_targets,
    merge_rules,
    parse_rules,
    parse_targets,
)
from mockserver.asgi.requests import read_body
from mockserver.core import DnsTable
from mockserver.sandbox.network import Resolution, is_ip

from .models import SandboxRecord

EGRESS_AUTH_HEADER = "OPENSANDBOX-EGRESS-AUTH"


class PolicyGate:
    """Answer DNS and connection checks from inside one sandbox according to its current policy.

    ``dns`` enforcement (the sidecar default) filters names only: a connection to a raw IP is not
    checked. ``dns+nft`` also checks raw-IP connections against the policy.
    """

    def __init__(self, policy: Callable[[], NetworkPolicy | None], dns: DnsTable, enforcement: str) -> None:
        self._policy = policy
        self._dns = dns
        self._enforcement = enforcement

    def _allowed(self, host: str) -> bool:
        policy = self._policy()
        if policy is None:
            return True
        try:
            return decide_egress(policy, host).allowed
        except PolicyError:
            return False

    def resolve(self, name: str) -> Resolution:
        """Resolve ``name``: a denied name is blocked by the sidecar's DNS proxy."""
        if is_ip(name):
            return Resolution((name.strip("[]"),))
        if not self._allowed(name):
            return Resolution((), "dns_blocked")
        addresses = self._dns.resolve(name)
        return Resolution(tuple(addresses)) if addresses else Resolution((), "nxdomain")

    def connect(self, host: str | None, ip: str, port: int) -> bool:
        """Tell whether a connection to ``ip:port`` (named ``host``) gets out."""
        if host and not is_ip(host):
            return self._allowed(host)
        if self._enforcement == "dns":
            return True
        return self._allowed(ip)


def status_body(sb: SandboxRecord, enforcement: str, *, with_policy: bool) -> dict[str, Any]:
    """Return the sidecar's ``PolicyStatusResponse``."""
    policy = sb.policy or NetworkPolicy()
    body: dict[str, Any] = {"status": "ok", "mode": f"{policy.effective_default}_all", "enforcementMode": enforcement}
    if with_policy:
        body["policy"] = {
            "defaultAction": policy.effective_default,
            "egress": [rule.to_json() for rule in policy.egress],
        }
    return body


def apply_patch(sb: SandboxRecord, body: Any) -> None:
    """Merge a list of rules into the sandbox's policy (raise PolicyError when invalid)."""
    if not isinstance(body, list) or not body:
        raise PolicyError("invalid_rules", "request body must be a non-empty list of rules")
    sb.policy = merge_rules(sb.policy, parse_rules(body))


def apply_delete(sb: SandboxRecord, body: Any) -> None:
    """Remove the listed targets from the sandbox's policy (raise PolicyError when invalid)."""
    if not isinstance(body, list) or not body:
        raise PolicyError("invalid_rules", "request body must be a non-empty list of targets")
    sb.policy = delete_targets(sb.policy, parse_targets(body))


def apply_put(sb: SandboxRecord, body: Any) -> None:
    """Replace the sandbox's policy (raise PolicyError when invalid)."""
    sb.policy = NetworkPolicy.from_json(body)


class EgressRoutes:
    """Serve the sidecar API for the sandbox the dispatcher names in the request scope."""

    def __init__(self, sandbox: Callable[[Request], SandboxRecord], enforcement: str, token: str | None) -> None:
        self._sandbox = sandbox
        self._enforcement = enforcement
        self._token = token

    def routes(self) -> list[BaseRoute]:
        """Return the sidecar routes."""
        return [Route("/policy", self.policy, methods=["GET", "PATCH", "DELETE", "PUT"])]

    async def policy(self, request: Request) -> Response:
        """Read or change the policy."""
        sb = self._sandbox(request)
        if self._token is not None and request.headers.get(EGRESS_AUTH_HEADER) != self._token:
            return PlainTextResponse("unauthorized: invalid or missing egress auth token\n", status_code=401)
        if request.method == "GET":
            return JSONResponse(status_body(sb, self._enforcement, with_policy=True))
        raw = await read_body(request)
        try:
            body = json.loads(raw) if raw.strip() else None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            return PlainTextResponse(f"invalid JSON body: {exc}\n", status_code=400)
        try:
            if request.method == "PATCH":
                apply_patch(sb, body)
            elif request.method == "DELETE":
                apply_delete(sb, body)
            else:
                apply_put(sb, body)
        except PolicyError as exc:
            return PlainTextResponse(f"invalid policy: {exc}\n", status_code=400)
        return JSONResponse(status_body(sb, self._enforcement, with_policy=False))
