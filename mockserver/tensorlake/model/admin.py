"""The TensorLake admin verbs (``/_mock/tensorlake/...``): transition timings, sessions, create outcomes, API keys.

Each function validates its input completely and then changes the model (a refusal is a 400
:class:`~mockserver.core.errors.ApiError` and changes nothing); the test helpers of
:class:`~mockserver.tensorlake.TensorLakeMock` and the admin routes call the same functions.
"""

from __future__ import annotations

import math
from typing import Any

from mockserver.core.environment import DEFAULT_API_KEY
from mockserver.core.errors import ApiError, json_object

from .auth import KeyRing
from .operations import TensorLakeModel
from .records import Sandbox, Session, owner_id
from .store import CreateOutcome, Timings

__all__ = [
    "DEFAULT_ORGANIZATION",
    "DEFAULT_PROJECT",
    "create_session",
    "queue_outcome",
    "set_api_keys",
    "set_timings",
    "timings_from",
]

DEFAULT_ORGANIZATION = "org_sandproof"
DEFAULT_PROJECT = "proj_sandproof"
TIMING_NAMES = frozenset(vars(Timings()))


def timings_from(current: Timings, seconds: dict[str, Any]) -> Timings:
    """Return ``current`` with ``seconds`` applied; ``ValueError`` for an unknown name or a bad number."""
    unknown = sorted(set(seconds) - TIMING_NAMES)
    if unknown:
        raise ValueError(f"unknown timing(s): {', '.join(unknown)}")
    for key, value in seconds.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise ValueError(f"timing {key} must be a non-negative number")
    return Timings(**{**current.to_json(), **{k: float(v) for k, v in seconds.items()}})


def set_timings(model: TensorLakeModel, body: Any) -> dict[str, float]:
    """Set how many virtual seconds transitions take from ``{name: seconds}``; return all timings."""
    try:
        timings = timings_from(model.timings, json_object(body))
    except ValueError as exc:
        raise ApiError(400, "invalid_timings", str(exc)) from exc
    model.timings = timings
    return timings.to_json()


def create_session(model: TensorLakeModel, token: str, body: Any) -> Session:
    """Record a browser session ``token`` for the project of ``body``'s ``api_key`` (each field optional)."""
    fields = json_object(body if body is not None else {})
    args = {k: fields[k] for k in ("api_key", "organization_id", "project_id") if k in fields}
    if not all(isinstance(v, str) and v for v in args.values()):
        raise ApiError(400, "invalid_session", "api_key, organization_id and project_id must be strings")
    session = Session(
        token,
        owner_id(args.get("api_key", DEFAULT_API_KEY)),
        args.get("organization_id", DEFAULT_ORGANIZATION),
        args.get("project_id", DEFAULT_PROJECT),
    )
    model.add_session(session)
    return session


def queue_outcome(model: TensorLakeModel, body: Any) -> dict[str, str]:
    """Queue how the next create ends: ``{"kind": "timeout"}`` or ``{"kind": "failed", "status", "reason", ...}``."""
    fields = json_object(body)
    kind = fields.get("kind")
    if kind == "timeout":
        outcome = CreateOutcome("timeout", 504)
    elif kind == "failed":
        status = fields.get("status", 422)
        if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
            raise ApiError(400, "invalid_outcome", "status must be an HTTP error status")
        outcome = CreateOutcome(
            "failed", status, str(fields.get("reason", "ConfigurationError")), fields.get("error_details")
        )
    else:
        raise ApiError(400, "invalid_outcome", "kind must be 'failed' or 'timeout'")
    with model.lock:
        model.outcomes.append(outcome)
    return {"queued": kind}


def set_api_keys(model: TensorLakeModel, body: Any) -> dict[str, list[str] | None]:
    """Pin the accepted keys from ``{"api_keys": [..]}`` (null: accept any key); return the new set."""
    keys = json_object(body).get("api_keys")
    if keys is not None and (not isinstance(keys, list) or not all(isinstance(k, str) and k for k in keys)):
        raise ApiError(400, "invalid_api_keys", "api_keys must be a list of strings or null")
    model.keys = KeyRing.of(keys)
    return model.keys.to_json()


def sandbox_summary(sb: Sandbox) -> dict[str, Any]:
    """Return the provider-neutral summary of one sandbox (see ``MockCore.sandbox_summaries``)."""
    return {
        "id": sb.id,
        "state": sb.status,
        "image": sb.image,
        "policy": None if sb.network is None else sb.network.to_json(),
        "ports": list(sb.exposed_ports),
        "metadata": {} if sb.name is None else {"name": sb.name},
        "created_at": sb.created_at,
        "expires_at": sb.timeout_deadline(),
        "details": {
            "namespace": sb.namespace,
            "resources": sb.resources.to_json(),
            "timeout_secs": sb.timeout_secs,
            "allow_unauthenticated_access": sb.allow_unauthenticated_access,
            "pending_reason": sb.pending_reason,
            "termination_reason": sb.termination_reason,
        },
    }


def sandbox_summaries(model: TensorLakeModel) -> list[dict[str, Any]]:
    """Return every tenant's live sandboxes, transitions that are due applied first."""
    model.settle_all()
    with model.lock:
        return [sandbox_summary(sb) for sb in model.sandboxes.values()]
