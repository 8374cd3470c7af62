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

import json
from collections.abc import Hashable, Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx

from harness.concurrency.history import Operation
from harness.concurrency.tensorlake_model import TensorLakeSpec, list_view, output_of
from harness.concurrency.workload import ClientContext, listed, perform

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


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text[:200]


class TensorLakeDriver:
    """Drive a TensorLake lifecycle API (``base_url`` serves ``/sandboxes``) for the concurrency workload."""

    provider = "tensorlake"
    read_only = frozenset({"get", "list"})

    def __init__(self, base_url: str, *, api_key: str, strict: bool, start: float = 0.0, timeout: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.strict = strict
        self.timeout = timeout
        self.spec = TensorLakeSpec(strict=strict, start=start)
        self._kinds = [kind for kind, _ in WEIGHTS]
        self._weights = [weight for _, weight in WEIGHTS]

    def client(self) -> httpx.Client:
        """Return a client with the bearer key (proxies ignored on loopback)."""
        loopback = (urlsplit(self.base_url).hostname or "") in LOOPBACK
        return httpx.Client(
            base_url=self.base_url,
            headers={"authorization": f"Bearer {self.api_key}"},
            timeout=self.timeout,
            trust_env=not loopback,
        )

    def _observe(self, kind: str) -> Any:
        return lambda response: output_of(kind, response.status_code, _body(response), strict=self.strict)

    def step(self, ctx: ClientContext) -> None:
        """Create a sandbox when the pool is short of one, else run a weighted-random operation on one."""
        if ctx.pool.claim_create():
            self._create(ctx)
            return
        picked = ctx.pool.pick(ctx.rng)
        if picked is None:
            self._list(ctx)
            return
        key = picked[0]
        kind = ctx.rng.choices(self._kinds, self._weights)[0]
        if kind == "get":
            perform(ctx, "get", ("get",), key, lambda: ctx.http.get(f"/sandboxes/{key}"), self._observe("get"))
        elif kind == "list":
            self._list(ctx)
        elif kind == "delete":
            op, _ = perform(
                ctx, "delete", ("delete",), key, lambda: ctx.http.delete(f"/sandboxes/{key}"), self._observe("delete")
            )
            if self.deleted(op):
                ctx.pool.retire(key)
        elif kind == "patch-set":
            self._patch(ctx, key, {"network": ctx.rng.choice(POLICIES)})
        elif kind == "patch-clear":
            self._patch(ctx, key, {"network": None})
        else:
            body = {"exposed_ports": ctx.rng.choice(PORT_SETS), "allow_unauthenticated_access": ctx.rng.random() < 0.5}
            self._patch(ctx, key, body)

    def _create(self, ctx: ClientContext) -> None:
        body: dict[str, Any] = {}
        if ctx.rng.random() < 0.6:
            body["network"] = ctx.rng.choice(POLICIES)
        if ctx.rng.random() < 0.3:
            body["exposed_ports"] = ctx.rng.choice(PORT_SETS)

        def key_of(response: httpx.Response) -> str | None:
            data = _body(response)
            ident = data.get("sandbox_id", data.get("id")) if isinstance(data, dict) else None
            return ident if response.is_success and isinstance(ident, str) else None

        op, _ = perform(
            ctx,
            "create",
            ("create", _canonical(body)),
            None,
            lambda: ctx.http.post("/sandboxes", json=body),
            self._observe("create"),
            key_of,
        )
        if op.key is not None:
            ctx.pool.created_ok(op.key)
        else:
            ctx.pool.create_failed()

    def _patch(self, ctx: ClientContext, key: str, body: dict[str, Any]) -> None:
        op, response = perform(
            ctx,
            "patch",
            ("patch", _canonical(body)),
            key,
            lambda: ctx.http.patch(f"/sandboxes/{key}", json=body),
            self._observe("patch"),
        )
        if "network" in body and response is not None and response.is_success and op.ret is not None:
            data = _body(response)
            ctx.probe_policy(key, data.get("network_policy") if isinstance(data, dict) else None, op.ret)

    def _list(self, ctx: ClientContext) -> None:
        def observe(response: httpx.Response) -> Hashable:
            data = _body(response)
            items = data.get("sandboxes") if isinstance(data, dict) else None
            if not response.is_success or not isinstance(items, list):
                return output_of(
                    "list", response.status_code if not response.is_success else 502, data, strict=self.strict
                )
            return listed(
                [(str(item.get("id")), list_view(item, strict=self.strict)) for item in items if isinstance(item, dict)]
            )

        perform(ctx, "list", ("list",), None, lambda: ctx.http.get("/sandboxes"), observe)

    def deleted(self, op: Operation) -> bool:
        """Tell whether ``op`` is an acknowledged delete."""
        return op.kind == "delete" and isinstance(op.output, tuple) and op.output[0] == "ok"

    def cleanup(self, keys: Sequence[str]) -> None:
        """Delete every sandbox in ``keys`` (errors ignored: some are gone already)."""
        with self.client() as http:
            for key in keys:
                try:
                    http.delete(f"/sandboxes/{key}")
                except httpx.HTTPError:
                    continue
