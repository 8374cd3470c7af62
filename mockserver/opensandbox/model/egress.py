"""Egress rules: the sandbox's policy operations, the sidecar's ``/policy`` API, and the gate probes consult.

All policy logic is the reference engine's (``contracts.opensandbox``); this module applies it to a
sandbox and says what the sidecar (port 18080) and the lifecycle ``networkpolicy`` route answer. The
sidecar's errors are ``text/plain`` (:class:`~.errors.TextError`), the lifecycle route's are flat JSON.

The sidecar's credential vault is :mod:`.vault`; a policy change that would leave one of its bindings
uncovered is refused (400), as the sidecar does.

Known deviations: a sandbox created without a
``networkPolicy`` has no sidecar (as on the Docker runtime), so its 18080 endpoint answers 502,
unless the mock was built with ``egress_without_policy=True``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from contracts.opensandbox import (
    NetworkPolicy,
    PolicyError,
    decide_egress,
    delete_targets,
    merge_rules,
    parse_rules,
    parse_targets,
)
from mockserver.core import ApiError, DnsTable
from mockserver.core.jsontext import parse_json
from mockserver.sandbox.network import Resolution, is_ip

from .config import ServerConfig
from .errors import TextError, backend_connection_failed
from .profiles import EGRESS_PORT
from .records import SandboxRecord
from .store import OpenSandboxState
from .vault import check_policy_update

__all__ = [
    "DEVIATING_OPERATIONS",
    "EGRESS_AUTH_HEADER",
    "PolicyGate",
    "apply_delete",
    "apply_patch",
    "apply_put",
    "check_egress_token",
    "effective_policy",
    "egress_allowed",
    "network_policy",
    "sidecar_policy",
    "status_body",
]

#: The operations of the served OpenAPI documents the known deviations above concern (``mockserver.core.deviations``).
DEVIATING_OPERATIONS: dict[str, tuple[str, ...]] = {
    "lifecycle": (
        "GET /sandboxes/{sandbox_id}/networkpolicy",
        "PUT /sandboxes/{sandbox_id}/networkpolicy",
        "PATCH /sandboxes/{sandbox_id}/networkpolicy",
        "DELETE /sandboxes/{sandbox_id}/networkpolicy",
        "GET /sandboxes/{sandbox_id}/endpoints/{port}",
    ),
}

EGRESS_AUTH_HEADER = "OPENSANDBOX-EGRESS-AUTH"
#: The ``/networkpolicy`` methods, in the real server's route order (a 405 there allows ``GET``).
POLICY_METHODS = ("GET", "PUT", "PATCH", "DELETE")


#: The policy of a sandbox whose sidecar refused its rules at start: nothing gets out.
NO_EGRESS = NetworkPolicy.from_json({"defaultAction": "deny", "egress": []})


def effective_policy(sb: SandboxRecord) -> NetworkPolicy | None:
    """Return the policy that governs the sandbox's traffic: none without a sidecar, deny-all when the sidecar
    refused the create's policy (the sandbox shares the network namespace of a sidecar that did not start)."""
    if sb.spec.sidecar_refusal is not None:
        return NO_EGRESS
    return sb.policy if sb.has_sidecar else None


def egress_allowed(policy: NetworkPolicy | None, host: str) -> bool:
    """Tell whether ``policy`` lets traffic to ``host`` out (no policy: yes; a host the engine rejects: no)."""
    if policy is None:
        return True
    try:
        return decide_egress(policy, host).allowed
    except PolicyError:
        return False


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
        return egress_allowed(self._policy(), host)

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


_APPLY: dict[str, Callable[[SandboxRecord, Any], None]] = {
    "PATCH": apply_patch,
    "DELETE": apply_delete,
    "PUT": apply_put,
}


def check_egress_token(config: ServerConfig, token: str | None) -> None:
    """Refuse (401 text) a sidecar request without the configured ``OPENSANDBOX-EGRESS-AUTH`` token."""
    if config.egress_token is not None and token != config.egress_token:
        raise TextError(401, "UNAUTHORIZED", "unauthorized: invalid or missing egress auth token\n")


def sidecar_policy(
    sb: SandboxRecord, config: ServerConfig, method: str, raw: bytes, token: str | None = None
) -> dict[str, Any]:
    """Answer the sidecar's ``/policy`` (GET, PATCH, DELETE, PUT) for a reachable sandbox with a 200 body.

    The order is the sidecar's: the auth token (when configured), then the JSON body, then the policy.
    Errors are ``text/plain``: 401 for a missing or wrong token, 400 for bad JSON or an invalid policy.
    """
    check_egress_token(config, token)
    if method == "GET":
        return status_body(sb, config.enforcement, with_policy=True)
    try:
        body = parse_json(raw) if raw.strip() else None
    except ValueError as exc:  # malformed, not UTF-8, or nested too deep
        raise TextError(400, "INVALID_JSON", f"invalid JSON body: {exc}\n") from exc
    before = sb.policy
    try:
        _APPLY[method](sb, body)
    except PolicyError as exc:
        raise TextError(400, "INVALID_POLICY", f"invalid policy: {exc}\n") from exc
    try:
        check_policy_update(sb, sb.policy)
    except TextError:
        sb.policy = before
        raise
    return status_body(sb, config.enforcement, with_policy=False)


def check_policy_body(method: str, body: Any) -> None:
    """Refuse a ``/networkpolicy`` body its route's model rejects (422), before any lookup, as FastAPI does.

    PUT takes a ``NetworkPolicy``, PATCH a list of ``NetworkRule``, DELETE a list of targets; GET no body.
    """
    if method not in ("PUT", "PATCH", "DELETE"):
        return
    from .bodies import RULES, TARGETS, validated
    from .bodies import NetworkPolicy as PolicyBody

    if method == "PUT":
        validated(PolicyBody, body)
    elif method == "PATCH":
        validated(RULES, body)
    elif method == "DELETE":
        validated(TARGETS, body)


def network_policy(
    state: OpenSandboxState, config: ServerConfig, tenant: str, sandbox_id: str, method: str, body: Any
) -> dict[str, Any]:
    """Answer ``/v1/sandboxes/{id}/networkpolicy``: the server forwards it to the sandbox's sidecar.

    502 ``BACKEND_CONNECTION_FAILED`` without a running sidecar; 400 ``SANDBOX::INVALID_PARAMETER`` for a
    policy the engine rejects; the answer always carries the policy.
    """
    check_policy_body(method, body)
    sb = state.find(sandbox_id, tenant)
    if not sb.has_sidecar or sb.state != "Running":
        raise backend_connection_failed(EGRESS_PORT)
    if method != "GET":
        try:
            _APPLY[method](sb, body)
        except PolicyError as exc:
            raise ApiError(400, "SANDBOX::INVALID_PARAMETER", f"invalid policy: {exc}") from exc
    return status_body(sb, config.enforcement, with_policy=True)
