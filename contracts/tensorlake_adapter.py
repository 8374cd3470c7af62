"""JSON-protocol adapter exposing the TensorLake reference policy as ``reference_engine``.

An engine speaks plain JSON values: a policy is the ``network`` object
``{"allow_internet_access", "allow_out", "deny_out"}`` or None for no policy, a PATCH body is a dict that
may carry a ``network`` key, and ``resolve`` maps a hostname to its addresses (empty when unresolvable).
Invalid input raises ``ValueError``. ``TensorLakeEngine`` is the protocol other engines implement for the
contract checks in ``harness.policy.tensorlake.checks``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

from contracts.tensorlake import NetworkConfig, apply_network_update, decide_dns, decide_egress

__all__ = ["Resolver", "TensorLakeEngine", "TensorLakeReferenceEngine", "reference_engine"]

Resolver = Callable[[str], list[str]]


class TensorLakeEngine(Protocol):
    """What an egress engine for TensorLake's ``network`` policy must offer, over JSON values."""

    kind: ClassVar[str]

    def validate(self, network: dict[str, Any]) -> None:
        """Raise ValueError when ``network`` is not a valid policy."""
        ...

    def allows_egress(self, network: dict[str, Any] | None, host: str | None, ip: str | None) -> bool:
        """Tell whether the sandbox may connect to ``ip`` after asking for ``host``."""
        ...

    def allows_dns(self, network: dict[str, Any] | None, resolver_ip: str) -> bool:
        """Tell whether the sandbox may query its configured resolver ``resolver_ip``."""
        ...

    def apply_update(
        self, current: dict[str, Any] | None, patch_body: dict[str, Any], resolve: Resolver
    ) -> dict[str, Any] | None:
        """Return the normalised policy after a PATCH body; raise ValueError when the update is rejected."""
        ...


class TensorLakeReferenceEngine:
    """The reference TensorLake egress engine behind the JSON protocol."""

    kind: ClassVar[str] = "tensorlake"

    def __init__(self) -> None:
        """Start with an empty parse cache."""
        self._cache: dict[str, NetworkConfig] = {}

    def config(self, network: object) -> NetworkConfig | None:
        """Return the parsed policy for a JSON ``network`` value (None stays None), caching the parse."""
        if network is None:
            return None
        try:
            key = json.dumps(network, sort_keys=True)
        except (TypeError, ValueError):
            return NetworkConfig.from_json(network)
        cached = self._cache.get(key)
        if cached is None:
            cached = NetworkConfig.from_json(network)
            if len(self._cache) >= 512:
                self._cache.clear()
            self._cache[key] = cached
        return cached

    def validate(self, network: dict[str, Any]) -> None:
        """Raise ValueError when ``network`` is not a valid policy."""
        NetworkConfig.from_json(network)

    def allows_egress(self, network: dict[str, Any] | None, host: str | None, ip: str | None) -> bool:
        """Tell whether the sandbox may connect to ``ip`` after asking for ``host``."""
        return decide_egress(self.config(network), host=host, ip=ip).allowed

    def allows_dns(self, network: dict[str, Any] | None, resolver_ip: str) -> bool:
        """Tell whether the sandbox may query its configured resolver ``resolver_ip``."""
        return decide_dns(self.config(network), resolver_ip).allowed

    def apply_update(
        self, current: dict[str, Any] | None, patch_body: dict[str, Any], resolve: Resolver
    ) -> dict[str, Any] | None:
        """Return the normalised policy after a PATCH body; raise ValueError when the update is rejected."""
        updated = apply_network_update(self.config(current), patch_body, resolve)
        return None if updated is None else updated.to_json()


reference_engine = TensorLakeReferenceEngine()
