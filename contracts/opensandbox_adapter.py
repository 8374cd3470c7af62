"""JSON-protocol adapter exposing the OpenSandbox reference policy as ``reference_engine``.

An engine speaks plain JSON values: policies are ``{"defaultAction", "egress"}`` dicts (or None for no
policy), rules are ``{"action", "target"}`` dicts, targets are strings. Invalid input raises ``ValueError``.
"""

from __future__ import annotations

from typing import Any

from contracts.opensandbox import (
    NetworkPolicy,
    decide_egress,
    delete_targets,
    merge_rules,
    parse_rules,
    parse_targets,
)

__all__ = ["OpenSandboxReferenceEngine", "reference_engine"]


class OpenSandboxReferenceEngine:
    """The reference OpenSandbox egress engine behind the JSON protocol."""

    kind = "opensandbox"

    def validate(self, policy: dict[str, Any]) -> None:
        """Raise ValueError when ``policy`` is not a valid network policy."""
        NetworkPolicy.from_json(policy)

    def allows_egress(self, policy: dict[str, Any] | None, host: str) -> bool:
        """Tell whether ``policy`` lets the sandbox reach ``host``."""
        return decide_egress(NetworkPolicy.from_json(policy), host).allowed

    def merge(self, policy: dict[str, Any] | None, rules: list[dict[str, Any]]) -> dict[str, Any]:
        """Return ``policy`` after the egress sidecar's PATCH with ``rules``."""
        return merge_rules(NetworkPolicy.from_json(policy), parse_rules(rules)).to_json()

    def delete(self, policy: dict[str, Any] | None, targets: list[str]) -> dict[str, Any]:
        """Return ``policy`` after the egress sidecar's DELETE of ``targets``."""
        return delete_targets(NetworkPolicy.from_json(policy), parse_targets(targets)).to_json()


reference_engine = OpenSandboxReferenceEngine()
