"""Predictions and comparisons of the TensorLake API machine: expected answers, normalised SandboxInfo, diffs.

:class:`Expected` is what the oracle predicts of one HTTP answer; :func:`normalise_info` and :func:`core_view`
put a SandboxInfo into the form both sides are compared in; :func:`info_shape_problem` says what makes one
unusable for the SDK; :func:`diff` finds where two normalised values first differ.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contracts.tensorlake import NetworkConfig, PolicyError
from harness.machines.common import ContractViolation
from harness.machines.common import diff as _diff
from mockserver.core import ApiError
from mockserver.tensorlake.model.records import STATUSES

__all__ = [
    "ANY",
    "CORE_KEYS",
    "POLICY_KEYS",
    "URL_KEYS",
    "ContractViolation",
    "Expected",
    "Json",
    "core_view",
    "diff",
    "info_shape_problem",
    "normalise_info",
    "normalise_policy",
]

Json = dict[str, Any]

URL_KEYS = frozenset({"sandbox_url", "ingress_endpoint"})
CORE_KEYS = ("id", "status", "name", "network_policy", "exposed_ports", "allow_unauthenticated_access", "auto_resume")
POLICY_KEYS = frozenset({"allow_internet_access", "allow_out", "deny_out"})


#: The "not given" sentinel: an unchecked body, a request without one.
ANY: Any = object()


@dataclass(frozen=True)
class Expected:
    """The model's prediction of one HTTP answer: status, error ``code`` (None: unchecked), normalised body.

    ``also`` lists other answers the model equally allows (where the outcome depends on what the oracle
    cannot know, such as whether the target accepts a key).
    """

    status: int
    code: str | None = None
    body: Any = ANY
    also: tuple[Expected, ...] = ()

    @classmethod
    def error(cls, exc: ApiError) -> Expected:
        """Return the prediction of an :class:`ApiError`."""
        return cls(exc.status, exc.code)

    def candidates(self) -> tuple[Expected, ...]:
        """Return this prediction and its alternatives."""
        return (self, *self.also)


def normalise_policy(value: Any) -> Any:
    """Return a ``network_policy`` in reference form when it parses, else unchanged."""
    if not isinstance(value, dict):
        return value
    try:
        return NetworkConfig.from_json(value).to_json()
    except PolicyError:
        return value


def normalise_info(data: Any, id_of: Callable[[str], str]) -> Any:
    """Return a SandboxInfo without its URLs, its id mapped, a missing policy as null and null ports as []."""
    if not isinstance(data, dict):
        return data
    out = {k: v for k, v in data.items() if k not in URL_KEYS and k != "sandbox_id"}
    raw = data.get("id", data.get("sandbox_id"))
    out["id"] = id_of(raw) if isinstance(raw, str) else raw
    out.setdefault("network_policy", None)
    if out.get("exposed_ports") is None:
        out["exposed_ports"] = []
    return out


def core_view(info: Json) -> Json:
    """Return the fields every implementation must agree on, the policy normalised."""
    view = {key: info.get(key) for key in CORE_KEYS}
    view["network_policy"] = normalise_policy(view["network_policy"])
    if view["allow_unauthenticated_access"] is None:
        view["allow_unauthenticated_access"] = False
    if view["auto_resume"] is None:
        view["auto_resume"] = True
    return view


def info_shape_problem(data: Any) -> str | None:
    """Return what makes ``data`` an unusable SandboxInfo for the SDK, or None."""
    if not isinstance(data, dict):
        return f"not a JSON object: {data!r:.200}"
    if not isinstance(data.get("id", data.get("sandbox_id")), str):
        return "no string id"
    if not isinstance(data.get("namespace"), str):
        return "no string namespace"
    if data.get("status") not in STATUSES:
        return f"status {data.get('status')!r} is not one of {', '.join(STATUSES)}"
    resources = data.get("resources")
    if not isinstance(resources, dict) or not all(k in resources for k in ("cpus", "memory_mb", "disk_mb")):
        return f"resources {resources!r} lack cpus, memory_mb or disk_mb"
    if "allow_unauthenticated_access" in data and not isinstance(data["allow_unauthenticated_access"], bool):
        return "allow_unauthenticated_access is not a boolean"
    if "file_systems" in data and not isinstance(data["file_systems"], list):
        return "file_systems is not a list"
    policy = data.get("network_policy")
    if policy is not None and (
        not isinstance(policy, dict)
        or set(policy) != POLICY_KEYS
        or not isinstance(policy["allow_internet_access"], bool)
        or not all(isinstance(policy[k], list) for k in ("allow_out", "deny_out"))
    ):
        return f"network_policy {policy!r} is not a complete policy (allow_internet_access, allow_out, deny_out)"
    return None


def diff(expected: Any, actual: Any, path: str = "$") -> str | None:
    """Return where ``actual`` first differs from ``expected``, or None."""
    return _diff(expected, actual, path)
