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
from collections.abc import Hashable
from typing import Any
from urllib.parse import urlencode

import httpx

from harness.concurrency.driving import LifecycleDriver
from harness.concurrency.modeling import canonical
from harness.concurrency.opensandbox_model import EGRESS_KINDS, MAX_PAGE_SIZE, OpenSandboxSpec, list_view, output_of
from harness.concurrency.workload import ClientContext, perform
from mockserver.asgi import clients

__all__ = ["LABEL_KEY", "LIFECYCLE_WEIGHTS", "TARGETS", "WEIGHTS", "OpenSandboxDriver"]

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
#: The mix where no egress sidecar answers: the lifecycle operations alone.
LIFECYCLE_WEIGHTS: tuple[tuple[str, int], ...] = tuple((k, w) for k, w in WEIGHTS if k not in EGRESS_KINDS)
_CREATE_BASE: dict[str, Any] = {
    "image": {"uri": "python:3.11"},
    "entrypoint": ["tail", "-f", "/dev/null"],
    "resourceLimits": {"cpu": "1", "memory": "2Gi"},
    "timeout": 3600,
}


class OpenSandboxDriver(LifecycleDriver):
    """Drive an OpenSandbox server (``base_url`` without ``/v1``) for the concurrency workload."""

    provider = "opensandbox"
    read_only = frozenset({"get", "list", "egress-get"})
    weights = WEIGHTS
    sandboxes_path = "/v1/sandboxes"
    list_field = "items"
    empty_body = None

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None,
        strict: bool,
        start: float,
        label: str,
        timeout: float = 10.0,
        sidecar: bool = True,
    ) -> None:
        self.sidecar = sidecar
        super().__init__(base_url, strict=strict, timeout=timeout)
        if not sidecar:
            self._kinds = [kind for kind, _ in LIFECYCLE_WEIGHTS]
            self._weights = [weight for _, weight in LIFECYCLE_WEIGHTS]
        self.api_key = api_key
        self.label = label
        self.spec = OpenSandboxSpec(strict=strict, label=(LABEL_KEY, label), start=start)

    def client(self) -> httpx.Client:
        """Return a client with the API key header."""
        headers = {"OPEN-SANDBOX-API-KEY": self.api_key} if self.api_key else {}
        return clients.client(base_url=self.base_url, headers=headers, timeout=self.timeout)

    def _output(self, kind: str, status: int, body: Any) -> Hashable:
        return output_of(kind, status, body, strict=self.strict)

    def _kind(self, kind: str, extra: Any) -> str:
        if kind in EGRESS_KINDS and extra is None:
            return "get"  # its sidecar could not be resolved
        return kind

    def _create_body(self, ctx: ClientContext) -> dict[str, Any]:
        rules = [{"action": ctx.rng.choice(("allow", "deny")), "target": t} for t in ctx.rng.sample(TARGETS, 2)]
        policy: dict[str, Any] = {"egress": rules}
        if ctx.rng.random() < 0.7:
            policy["defaultAction"] = ctx.rng.choice(("deny", "allow"))
        return {**_CREATE_BASE, "metadata": {LABEL_KEY: self.label}, "networkPolicy": policy}

    def _created_id(self, body: dict[str, Any]) -> Any:
        return body.get("id")

    def _reach(self, http: httpx.Client, key: str) -> tuple[str, dict[str, str]] | None:
        """Return the sidecar's base URL and headers, as the lifecycle API names them (None if it does not)."""
        if not self.sidecar:
            return None
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

    def _operate(self, ctx: ClientContext, key: str, kind: str, extra: Any) -> None:
        """Send an egress request to the sandbox's sidecar (``extra``: its base URL and headers)."""
        base, headers = extra
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
            (kind, canonical(body)),
            key,
            lambda: ctx.http.request(method, url, content=content, headers=sent),
            self._observe(kind),
        )
        if response is not None and response.is_success and op.ret is not None:
            ctx.probe_policy(key, self._body(response), op.ret)

    def _list_url(self) -> str:
        query = urlencode({"metadata": f"{LABEL_KEY}={self.label}", "pageSize": MAX_PAGE_SIZE})
        return f"{self.sandboxes_path}?{query}"

    def _list_view(self, item: dict[str, Any]) -> Hashable:
        return list_view(item)
