"""The TensorLake API machine's base: rule groups, per-class config, bookkeeping and HTTP plumbing.

:class:`MachineBase` opens a client per example, resets the target (with the admin API), keeps the oracle and
the id map, and checks every answer's status, error code and SandboxInfo against the model; the steps rules
share live in :mod:`harness.machines.tensorlake.steps`, the rules in :mod:`harness.machines.tensorlake.machine`.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import httpx
from hypothesis.stateful import RuleBasedStateMachine

from harness.machines.common import Handle, json_body, when_enabled
from harness.machines.tensorlake.compare import (
    ANY,
    ContractViolation,
    Expected,
    Json,
    core_view,
    diff,
    info_shape_problem,
    normalise_info,
    normalise_policy,
)
from harness.machines.tensorlake.oracle import Oracle
from harness.machines.tensorlake.probes import DNS_ENTRIES, Resolve, default_resolve
from harness.machines.tensorlake.requests import Name
from mockserver.admin.client import AdminClient
from mockserver.core import DnsTable, VirtualClock
from mockserver.core.environment import DEFAULT_API_KEY
from mockserver.tensorlake.model import KeyRing
from mockserver.tensorlake.model.records import ROUTABLE

__all__ = [
    "ADMIN_OPERATIONS",
    "ADMIN_RULES",
    "DEFAULT_KEY",
    "LOOPBACK",
    "OPERATIONS",
    "HttpFactory",
    "MachineBase",
    "MachineConfig",
    "SandboxHandle",
    "when_enabled",
]

HttpFactory = Callable[[], httpx.Client]

DEFAULT_KEY = DEFAULT_API_KEY
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
LENIENT_TIMEOUT = 3600
TRANSITIONAL = frozenset({"pending", "suspending", "snapshotting"})
#: Where a sandproof TensorLake mock's admin API lists the keys it accepts.
KEYS_PATH = "/_mock/tensorlake/api-keys"

#: Report operation → the rules its machine runs (``create`` always runs).
OPERATIONS: dict[str, frozenset[str]] = {
    "lifecycle": frozenset({"create", "create_named_like", "get", "get_by_name", "list_sandboxes", "delete"}),
    "update": frozenset({"create", "get", "update"}),
    "ports-ingress": frozenset({"create", "update", "expose_ports", "unexpose_ports", "ingress"}),
    "suspend-resume": frozenset({"create", "get", "update", "suspend", "resume", "delete", "ingress"}),
    "egress-probe": frozenset({"create", "update", "egress_probe"}),
    "faults": frozenset({"create", "update", "inject_fault"}),
    "timeouts": frozenset({"create", "list_sandboxes", "suspend", "resume", "ingress", "advance_clock", "set_timings"}),
}
OPERATIONS["state-machine"] = frozenset().union(*OPERATIONS.values()) | {"delete", "list_sandboxes"}
#: Operations that need the ``/_mock`` admin API, and the rules that do.
ADMIN_OPERATIONS = frozenset({"faults", "timeouts"})
ADMIN_RULES = frozenset({"inject_fault", "advance_clock", "set_timings"})


@dataclass(repr=False)
class SandboxHandle(Handle):
    """A sandbox the machine created: its id on the target and in the model, and where its proxy lives."""

    sandbox_url: str | None = None


@dataclass(frozen=True)
class MachineConfig:
    """What one machine class runs against and which rules it enables."""

    http_factory: HttpFactory
    admin: AdminClient | None
    rules: frozenset[str]
    api_key: str | None = None
    resolve: Resolve | None = None
    settle_timeout: float = 120.0

    @property
    def strict(self) -> bool:
        """Tell whether the target has the admin API (exact comparisons)."""
        return self.admin is not None

    def enabled(self, name: str) -> bool:
        """Tell whether the rule runs (admin rules only with the admin API)."""
        return name in self.rules and (name not in ADMIN_RULES or self.admin is not None)


@dataclass
class _Book:
    """Per-example bookkeeping."""

    handles: list[SandboxHandle] = field(default_factory=list)
    stray: set[str] = field(default_factory=set)
    history: dict[str, list[Any]] = field(default_factory=dict)
    resolvers: dict[str, str] = field(default_factory=dict)
    listing_dirty: bool = False
    fault_armed: bool = False
    session: str | None = None
    ingress_endpoint: str | None = None
    clock_mode: str | None = None


class MachineBase(RuleBasedStateMachine):
    """Hold a machine's config, client, oracle and bookkeeping, and check answers (rules live in subclasses)."""

    config: ClassVar[MachineConfig]

    def __init__(self) -> None:
        super().__init__()
        config = self.config
        self.client = config.http_factory()
        self.strict = config.strict
        self.key = config.api_key or _bearer(self.client) or DEFAULT_KEY
        self.book = _Book()
        self.ids: dict[str, str] = {}
        resolve: Resolve
        keys: KeyRing | None = None
        if config.admin is not None:
            self.book.clock_mode = self._clock_mode()
            config.admin.reset()
            config.admin.set_clock_mode("manual")
            config.admin.set_dns(DNS_ENTRIES, "synthetic")
            clock = VirtualClock("manual", start=config.admin.now())
            resolve = DnsTable(DNS_ENTRIES).resolve
            keys = self._target_keys()
            self.prefix = ""
        else:
            clock = VirtualClock("manual")
            resolve = config.resolve or default_resolve()
            self.prefix = f"sp{random.getrandbits(24):06x}-"
        self.oracle = Oracle(clock, resolve, self.key, keys)

    # -- plumbing ------------------------------------------------------------------------------------------

    def _target_keys(self) -> KeyRing | None:
        """Return the API keys the target accepts, from its admin API (None when it does not say)."""
        try:
            response = self.client.get(KEYS_PATH)
            data = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None
        keys = data.get("api_keys", ANY) if isinstance(data, dict) else ANY
        if keys is None:
            return KeyRing()
        if isinstance(keys, list) and all(isinstance(k, str) for k in keys):
            return KeyRing.of(keys)
        return None

    def _clock_mode(self) -> str | None:
        try:
            data = self.client.get("/_mock/clock").json()
        except (httpx.HTTPError, ValueError):
            return None
        mode = data.get("mode") if isinstance(data, dict) else None
        return mode if isinstance(mode, str) else None

    def _id_of(self, target_id: str) -> str:
        return self.ids.get(target_id, f"unmapped:{target_id}")

    def _alias(self, model_id: str) -> str:
        return next((h.alias for h in self.book.handles if h.model_id == model_id), model_id)

    def _handle_of(self, model_id: str) -> SandboxHandle | None:
        return next((h for h in self.book.handles if h.model_id == model_id), None)

    def _name(self, name: Name) -> str:
        return self.prefix + name.word if name.valid else name.word

    def _wire(self, body: Json) -> Json:
        out = dict(body)
        if isinstance(out.get("name"), Name):
            out["name"] = self._name(out["name"])
        if not self.strict and isinstance(out.get("timeout_secs"), int):
            out["timeout_secs"] = LENIENT_TIMEOUT
        return out

    def _send(
        self,
        rule: str,
        method: str,
        url: str,
        *,
        body: Any = ANY,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        anonymous: bool = False,
    ) -> httpx.Response:
        sent = dict(headers or {})
        content = None
        if body is not ANY:
            sent["content-type"] = "application/json"
            content = json.dumps(body).encode()
        request = self.client.build_request(method, url, params=params, headers=sent, content=content)
        if anonymous:
            request.headers.pop("authorization", None)
            if "authorization" in sent:
                request.headers["authorization"] = sent["authorization"]
        try:
            return self.client.send(request)
        except httpx.HTTPError as exc:
            raise ContractViolation(rule, f"{method} {url}: transport error {type(exc).__name__}: {exc}") from exc

    def _check(self, rule: str, response: httpx.Response, expected: Expected, loose: Iterable[int] = ()) -> Any:
        """Compare the status (and, strictly, the error code); return the parsed JSON body or None.

        Without the admin API, statuses in ``loose`` are equivalent when the model predicts one of them, and so
        are 400 and 422.
        """
        where = f"{response.request.method} {response.request.url.path}"
        status = response.status_code
        candidates = expected.candidates()
        accepted = {c.status for c in candidates}
        if not self.strict:
            for group in (tuple(loose), (400, 422)):
                if expected.status in group:
                    accepted |= set(group)
        if status >= 500 and not self.book.fault_armed and all(c.status < 500 for c in candidates):
            raise ContractViolation(rule, f"{where} -> {status} without an injected fault: {response.text[:300]!r}")
        if not self.strict and expected.status == 404 and status == 200 and _terminated(response):
            return None  # the wire allows a deleted sandbox to read as terminated instead of 404
        if status not in accepted:
            says = " or ".join(str(c.status) for c in candidates)
            raise ContractViolation(rule, f"{where} -> {status}, the model says {says}: {response.text[:300]!r}")
        data = json_body(response)
        chosen = next((c for c in candidates if c.status == status), expected)
        if self.strict and chosen.code is not None:
            got = data.get("code") if isinstance(data, dict) else None
            if got != chosen.code:
                raise ContractViolation(rule, f"{where} -> {status} code {got!r}, the model says {chosen.code!r}")
        return data

    def _observe(self, rule: str, response: httpx.Response, data: Any, expected: Any) -> None:
        """Check one SandboxInfo answer: SDK shape, URLs, policy history and the model's normalised view."""
        where = f"{response.request.method} {response.request.url.path}"
        problem = info_shape_problem(data)
        if problem:
            raise ContractViolation(rule, f"{where}: unusable SandboxInfo: {problem}")
        actual = normalise_info(data, self._id_of)
        self._check_urls(rule, where, data)
        self._check_history(rule, where, actual)
        self._compare(rule, where, expected, actual)

    def _compare(self, rule: str, where: str, expected: Json, actual: Json) -> None:
        found = diff(expected, actual) if self.strict else diff(core_view(expected), core_view(actual))
        if found:
            alias = self._alias(str(expected.get("id")))
            raise ContractViolation(rule, f"{where}: {alias} differs from the model at {found}")

    def _check_urls(self, rule: str, where: str, data: Json) -> None:
        status, url = data.get("status"), data.get("sandbox_url")
        if status == "running" and not url:
            raise ContractViolation(rule, f"{where}: a running sandbox without sandbox_url")
        if self.strict and (url is not None) != (status in ROUTABLE):
            raise ContractViolation(rule, f"{where}: sandbox_url {url!r} for a sandbox that is {status}")
        if isinstance(data.get("ingress_endpoint"), str):
            self.book.ingress_endpoint = data["ingress_endpoint"]
        handle = self._handle_of(self._id_of(str(data.get("id", data.get("sandbox_id")))))
        if handle is not None and isinstance(url, str) and url:
            handle.sandbox_url = url

    def _check_history(self, rule: str, where: str, actual: Json) -> None:
        """Every policy a GET shows is one an accepted create or PATCH set for that sandbox."""
        seen = self.book.history.get(str(actual.get("id")))
        if seen is None:
            return
        policy = actual.get("network_policy")
        if not self.strict:
            policy = normalise_policy(policy)
        if policy not in seen:
            raise ContractViolation(
                rule,
                f"{where}: {self._alias(str(actual.get('id')))} shows network_policy {policy!r}, which no accepted "
                f"create or PATCH set (accepted: {seen!r})",
            )

    def _snapshot(self, rule: str, sb: SandboxHandle) -> tuple[int, Any]:
        """Return the target's own GET of a sandbox (status, normalised view) without asking the model."""
        response = self._send(rule, "GET", f"/sandboxes/{sb.target_id}")
        data: Any = None
        if response.status_code == 200:
            try:
                data = normalise_info(response.json(), self._id_of)
            except ValueError:
                data = response.text
            if not self.strict and isinstance(data, dict):
                data = core_view(data)
        return response.status_code, data

    def _unchanged(self, rule: str, sb: SandboxHandle, before: tuple[int, Any]) -> None:
        after = self._snapshot(rule, sb)
        found = diff(before[1], after[1]) if before[0] == after[0] else f"GET status {before[0]} -> {after[0]}"
        if found:
            raise ContractViolation(rule, f"a rejected request changed {sb.alias}: {found}")

    def _settle(self, sb: SandboxHandle) -> None:
        """Wait (lenient mode) until the target's sandbox leaves a transitional status."""
        if self.strict:
            return
        deadline = time.monotonic() + self.config.settle_timeout
        while time.monotonic() < deadline:
            response = self._send("settle", "GET", f"/sandboxes/{sb.target_id}")
            try:
                data = response.json() if response.status_code == 200 else None
            except ValueError:
                data = None
            if not isinstance(data, dict) or data.get("status") not in TRANSITIONAL:
                return
            time.sleep(1.0)

    def _policy_accepted(self, model_id: str) -> None:
        sb = self.oracle.lookup(model_id)
        policy = None if sb is None or sb.network is None else sb.network.to_json()
        history = self.book.history.setdefault(model_id, [])
        if policy not in history:
            history.append(policy)


def _terminated(response: httpx.Response) -> bool:
    """Tell whether a GET answered a SandboxInfo with status ``terminated``."""
    if response.request.method != "GET":
        return False
    try:
        data = response.json()
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("status") == "terminated"


def _bearer(client: httpx.Client) -> str | None:
    scheme, _, key = client.headers.get("authorization", "").partition(" ")
    return key.strip() or None if scheme.lower() == "bearer" else None
