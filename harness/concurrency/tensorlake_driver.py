"""TensorLake operations of the concurrency workload: create, PATCH network (set, clear, keep), GET, list, delete.

The PATCH ``network`` field is tri-state and all three forms run: a policy replaces the whole policy,
``null`` clears it (unrestricted egress), and a body without ``network`` (it changes ``exposed_ports`` and
``allow_unauthenticated_access``) keeps it. The policies hold IPv4 addresses, CIDRs and wildcard domains only,
so no update depends on DNS. The pool's policies differ in ``allow_out`` and ``deny_out`` independently, so a
half-applied replacement (one list swapped, the other not) is a policy no request ever set.

Sandboxes are known by the id the target answers; each is one key of the check. Outputs come from
:func:`harness.concurrency.tensorlake_model.output_of`, the projection the model's answers go through too.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any
from urllib.parse import urlsplit

import httpx

from harness.concurrency.driving import LifecycleDriver
from harness.concurrency.modeling import canonical
from harness.concurrency.tensorlake_model import TensorLakeSpec, list_view, output_of
from harness.concurrency.workload import ClientContext, perform
from mockserver.asgi import clients

__all__ = ["POLICIES", "WEIGHTS", "TensorLakeDriver"]

#: The policies PATCH and create draw from.
POLICIES: tuple[dict[str, Any], ...] = (
    {"allow_internet_access": True, "allow_out": ["10.0.0.0/8"], "deny_out": ["10.1.0.0/16"]},
    {"allow_internet_access": True, "allow_out": ["*.example.com", "192.0.2.10"], "deny_out": ["192.0.2.0/24"]},
    {"allow_internet_access": False, "allow_out": ["203.0.113.0/24"], "deny_out": []},
    {"allow_internet_access": True, "allow_out": [], "deny_out": ["198.51.100.7", "10.9.9.9"]},
    {"allow_internet_access": False, "allow_out": [], "deny_out": []},
    {"allow_out": ["*.pypi.org"], "deny_out": ["172.16.0.0/12"]},
)
PORT_SETS: tuple[list[int], ...] = ([], [8080], [3000, 8080])
#: Relative frequency of each operation on an existing sandbox.
WEIGHTS: tuple[tuple[str, int], ...] = (
    ("get", 30),
    ("patch-set", 20),
    ("patch-clear", 7),
    ("patch-keep", 8),
    ("list", 12),
    ("delete", 4),
)
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class TensorLakeDriver(LifecycleDriver):
    """Drive a TensorLake lifecycle API (``base_url`` serves ``/sandboxes``) for the concurrency workload."""

    provider = "tensorlake"
    read_only = frozenset({"get", "list"})
    weights = WEIGHTS
    sandboxes_path = "/sandboxes"
    list_field = "sandboxes"
    empty_body = ""

    def __init__(self, base_url: str, *, api_key: str, strict: bool, start: float = 0.0, timeout: float = 10.0) -> None:
        super().__init__(base_url, strict=strict, timeout=timeout)
        self.api_key = api_key
        self.spec = TensorLakeSpec(strict=strict, start=start)

    def client(self) -> httpx.Client:
        """Return a client with the bearer key (proxies ignored on loopback)."""
        loopback = (urlsplit(self.base_url).hostname or "") in LOOPBACK
        return clients.client(
            base_url=self.base_url,
            headers={"authorization": f"Bearer {self.api_key}"},
            timeout=self.timeout,
            trust_env=not loopback,
        )

    def _output(self, kind: str, status: int, body: Any) -> Hashable:
        return output_of(kind, status, body, strict=self.strict)

    def _operate(self, ctx: ClientContext, key: str, kind: str, extra: Any) -> None:
        if kind == "patch-set":
            self._patch(ctx, key, {"network": ctx.rng.choice(POLICIES)})
        elif kind == "patch-clear":
            self._patch(ctx, key, {"network": None})
        else:
            body = {"exposed_ports": ctx.rng.choice(PORT_SETS), "allow_unauthenticated_access": ctx.rng.random() < 0.5}
            self._patch(ctx, key, body)

    def _create_body(self, ctx: ClientContext) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if ctx.rng.random() < 0.6:
            body["network"] = ctx.rng.choice(POLICIES)
        if ctx.rng.random() < 0.3:
            body["exposed_ports"] = ctx.rng.choice(PORT_SETS)
        return body

    def _created_id(self, body: dict[str, Any]) -> Any:
        return body.get("sandbox_id", body.get("id"))

    def _patch(self, ctx: ClientContext, key: str, body: dict[str, Any]) -> None:
        op, response = perform(
            ctx,
            "patch",
            ("patch", canonical(body)),
            key,
            lambda: ctx.http.patch(f"/sandboxes/{key}", json=body),
            self._observe("patch"),
        )
        if "network" in body and response is not None and response.is_success and op.ret is not None:
            data = self._body(response)
            ctx.probe_policy(key, data.get("network_policy") if isinstance(data, dict) else None, op.ret)

    def _list_view(self, item: dict[str, Any]) -> Hashable:
        return list_view(item, strict=self.strict)
