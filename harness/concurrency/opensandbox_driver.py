"""OpenSandbox operations of the concurrency workload: lifecycle create/GET/list/delete and egress GET/merge/delete.

Every sandbox is created with a ``networkPolicy`` (so it has an egress sidecar) and the run's metadata label
(so a list sees only this run's sandboxes). Right after its create answered, the creating client resolves the
sidecar the way the SDK does, ``GET /v1/sandboxes/{id}/endpoints/18080``, before it shares the sandbox; that
lookup is not part of the history. The egress operations then go to ``{endpoint}/policy`` with the headers the
endpoint named: ``GET`` (the policy), ``PATCH`` (merge rules, incoming first) and ``DELETE`` (remove targets).

Outputs come from :func:`harness.concurrency.opensandbox_model.output_of`, the projection the model's answers
go through too.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Sequence
from typing import Any
from urllib.parse import urlencode

import httpx

from harness.concurrency.history import Operation
from harness.concurrency.opensandbox_model import MAX_PAGE_SIZE, OpenSandboxSpec, list_view, output_of
from harness.concurrency.workload import ClientContext, listed, perform

__all__ = ["LABEL_KEY", "TARGETS", "WEIGHTS", "OpenSandboxDriver"]

LABEL_KEY = "sandproof-run"
EGRESS_PORT = 18080
TARGETS = ("pypi.org", "*.pythonhosted.org", "github.com", "*.github.com", "example.com", "*.example.com")
WEIGHTS: tuple[tuple[str, int], ...] = (
    ("get", 14),
    ("list", 10),
    ("delete", 4),
    ("egress-get", 30),
    ("egress-patch", 22),
    ("egress-delete", 12),
)
_CREATE_BASE: dict[str, Any] = {
    "image": {"uri": "python:3.11"},
    "entrypoint": ["tail", "-f", "/dev/null"],
    "resourceLimits": {"cpu": "1", "memory": "2Gi"},
    "timeout": 3600,
}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _body(response: httpx.Response) -> Any:
    try:
        return response.json() if response.content else None
    except ValueError:
        return response.text[:200]


class OpenSandboxDriver:
    """Drive an OpenSandbox server (``base_url`` without ``/v1``) for the concurrency workload."""

    provider = "opensandbox"
    read_only = frozenset({"get", "list", "egress-get"})

    def __init__(
        self, base_url: str, *, api_key: str | None, strict: bool, start: float, label: str, timeout: float = 10.0
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.strict = strict
        self.timeout = timeout
        self.label = label
        self.spec = OpenSandboxSpec(strict=strict, label=(LABEL_KEY, label), start=start)
        self._kinds = [kind for kind, _ in WEIGHTS]
        self._weights = [weight for _, weight in WEIGHTS]

    def client(self) -> httpx.Client:
        """Return a client with the API key header."""
        headers = {"OPEN-SANDBOX-API-KEY": self.api_key} if self.api_key else {}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=self.timeout)

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
        key, sidecar = picked
        kind = ctx.rng.choices(self._kinds, self._weights)[0]
        if kind in ("egress-get", "egress-patch", "egress-delete") and sidecar is None:
            kind = "get"  # its sidecar could not be resolved
        path = f"/v1/sandboxes/{key}"
        if kind == "get":
            perform(ctx, "get", ("get",), key, lambda: ctx.http.get(path), self._observe("get"))
        elif kind == "list":
            self._list(ctx)
        elif kind == "delete":
            op, _ = perform(ctx, "delete", ("delete",), key, lambda: ctx.http.delete(path), self._observe("delete"))
            if self.deleted(op):
                ctx.pool.retire(key)
        else:
            self._egress(ctx, key, kind, sidecar)

    def _create(self, ctx: ClientContext) -> None:
        rules = [{"action": ctx.rng.choice(("allow", "deny")), "target": t} for t in ctx.rng.sample(TARGETS, 2)]
        policy: dict[str, Any] = {"egress": rules}
        if ctx.rng.random() < 0.7:
            policy["defaultAction"] = ctx.rng.choice(("deny", "allow"))
        body = {**_CREATE_BASE, "metadata": {LABEL_KEY: self.label}, "networkPolicy": policy}

        def key_of(response: httpx.Response) -> str | None:
            data = _body(response)
            ident = data.get("id") if isinstance(data, dict) else None
            return ident if response.is_success and isinstance(ident, str) else None

        op, _ = perform(
            ctx,
            "create",
            ("create", _canonical(body)),
            None,
            lambda: ctx.http.post("/v1/sandboxes", json=body),
            self._observe("create"),
            key_of,
        )
        if op.key is None:
            ctx.pool.create_failed()
            return
        ctx.pool.created_ok(op.key, self._sidecar(ctx.http, op.key))

    def _sidecar(self, http: httpx.Client, key: str) -> tuple[str, dict[str, str]] | None:
        """Return the sidecar's base URL and headers, as the lifecycle API names them (None if it does not)."""
        try:
            response = http.get(f"/v1/sandboxes/{key}/endpoints/{EGRESS_PORT}")
            data = response.json()
        except (httpx.HTTPError, ValueError):
            return None
        endpoint = data.get("endpoint") if isinstance(data, dict) else None
        if not response.is_success or not isinstance(endpoint, str) or not endpoint:
            return None
        headers = data.get("headers") or {}
        scheme = response.request.url.scheme or "http"
        base = endpoint if "://" in endpoint else f"{scheme}://{endpoint}"
        return base.rstrip("/"), {str(k): str(v) for k, v in dict(headers).items()}

    def _egress(self, ctx: ClientContext, key: str, kind: str, sidecar: tuple[str, dict[str, str]]) -> None:
        base, headers = sidecar
        url = f"{base}/policy"
        if kind == "egress-get":
            perform(ctx, kind, (kind,), key, lambda: ctx.http.get(url, headers=headers), self._observe(kind))
            return
        if kind == "egress-patch":
            count = ctx.rng.randint(1, 2)
            body: list[Any] = [
                {"action": ctx.rng.choice(("allow", "deny")), "target": t} for t in ctx.rng.sample(TARGETS, count)
            ]
            method = "PATCH"
        else:
            body = ctx.rng.sample(TARGETS, ctx.rng.randint(1, 2))
            method = "DELETE"
        content = json.dumps(body).encode()
        sent = {**headers, "content-type": "application/json"}
        op, response = perform(
            ctx,
            kind,
            (kind, _canonical(body)),
            key,
            lambda: ctx.http.request(method, url, content=content, headers=sent),
            self._observe(kind),
        )
        if response is not None and response.is_success and op.ret is not None:
            ctx.probe_policy(key, _body(response), op.ret)

    def _list(self, ctx: ClientContext) -> None:
        query = urlencode({"metadata": f"{LABEL_KEY}={self.label}", "pageSize": MAX_PAGE_SIZE})

        def observe(response: httpx.Response) -> Hashable:
            data = _body(response)
            items = data.get("items") if isinstance(data, dict) else None
            if not response.is_success or not isinstance(items, list):
                return output_of(
                    "list", response.status_code if not response.is_success else 502, data, strict=self.strict
                )
            return listed([(str(item.get("id")), list_view(item)) for item in items if isinstance(item, dict)])

        perform(ctx, "list", ("list",), None, lambda: ctx.http.get(f"/v1/sandboxes?{query}"), observe)

    def deleted(self, op: Operation) -> bool:
        """Tell whether ``op`` is an acknowledged delete."""
        return op.kind == "delete" and isinstance(op.output, tuple) and op.output[0] == "ok"

    def cleanup(self, keys: Sequence[str]) -> None:
        """Delete every sandbox in ``keys`` (errors ignored: some are gone already)."""
        with self.client() as http:
            for key in keys:
                try:
                    http.delete(f"/v1/sandboxes/{key}")
                except httpx.HTTPError:
                    continue
