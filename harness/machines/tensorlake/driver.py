"""The TensorLake API machine's base: rule groups, per-class config, bookkeeping and HTTP plumbing.

:class:`Session` is one example's exchange with the target: it opens a client, resets the target (with the admin
API), keeps the oracle and the id map, sends requests and retires a sandbox whose state the model can no longer
follow. The machine is composed, not inherited: :class:`~harness.machines.tensorlake.machine.TensorLakeAPIMachine`
holds a session, its :class:`~harness.machines.tensorlake.answers.Answers` (the answer checks), its
:class:`~harness.machines.tensorlake.ingress.Ingress` and its :class:`~harness.machines.tensorlake.steps.Steps`
(the procedures rules share), each given the parts it uses.

Every check is a tagged contract of suite ``tensorlake-api``: here the transport (``answers``) and sandproof's
admin API (``admin_api``, a choice); the others in the modules that check them.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

import httpx

from harness.machines.common import Handle, add_contract, hold, when_enabled
from harness.machines.tensorlake.compare import (
    ANY,
    Json,
)
from harness.machines.tensorlake.oracle import Oracle
from harness.machines.tensorlake.probes import DNS_ENTRIES, Resolve, default_resolve
from harness.machines.tensorlake.requests import Name
from harness.strength import Contract, choice, observed
from harness.strength.observations import published
from mockserver.admin.client import AdminClient
from mockserver.core import DnsTable, VirtualClock
from mockserver.core.environment import DEFAULT_API_KEY
from mockserver.tensorlake.model import KeyRing

__all__ = [
    "ADMIN_API",
    "ADMIN_OPERATIONS",
    "ADMIN_RULES",
    "CONTRACTS",
    "DEFAULT_KEY",
    "LOOPBACK",
    "OPERATIONS",
    "SUITE",
    "HttpFactory",
    "MachineConfig",
    "SandboxHandle",
    "Session",
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
    "lifecycle": frozenset(
        {"create", "create_named_like", "get", "get_by_name", "list_sandboxes", "delete", "anonymous_call"}
    ),
    "update": frozenset({"create", "get", "update", "update_keeps_connection"}),
    "ports-ingress": frozenset(
        {"create", "update", "expose_ports", "unexpose_ports", "ingress", "update_keeps_connection"}
    ),
    "suspend-resume": frozenset({"create", "get", "update", "suspend", "resume", "delete", "ingress"}),
    "egress-probe": frozenset({"create", "update", "egress_probe"}),
    "faults": frozenset({"create", "update", "inject_fault"}),
    "timeouts": frozenset({"create", "list_sandboxes", "suspend", "resume", "ingress", "advance_clock", "set_timings"}),
}
OPERATIONS["state-machine"] = frozenset().union(*OPERATIONS.values()) | {"delete", "list_sandboxes"}
#: Operations that need the ``/_mock`` admin API, and the rules that do.
ADMIN_OPERATIONS = frozenset({"faults", "timeouts"})
ADMIN_RULES = frozenset({"inject_fault", "advance_clock", "set_timings"})

# --- contracts --------------------------------------------------------------------------------------------

SUITE = "tensorlake-api"
#: The contracts this module checks, by name.
CONTRACTS: dict[str, Contract] = {}
_WIRE = "tensorlake-wire.md"

ANSWERS = add_contract(
    CONTRACTS,
    SUITE,
    "answers",
    observed(
        published(
            "tensorlake==0.5.163", "tensorlake/sandbox/client.py", "raise SandboxConnectionError(message) from None"
        ),
        "the SDK turns a failed connection or a timeout into SandboxConnectionError",
        note=f"{_WIRE} §7",
    ),
    "Every request gets an HTTP answer: no refused connection, reset or timeout.",
)
ADMIN_API = add_contract(
    CONTRACTS,
    SUITE,
    "admin_api",
    choice("the /_mock admin API (sessions, faults, clock, timings) is sandproof's own; it answers as sandproof chose"),
    "With the admin API: it issues sessions, sets timings, moves both clocks alike, and an injected fault answers "
    "once, as given, and changes nothing.",
)


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
    #: Whether the last checked decision differed from sandproof's choice (the state may have diverged).
    diverged: bool = False
    #: Model ids of sandboxes retired after their state diverged from the model's.
    retired: set[str] = field(default_factory=set)


class Session:
    """One example's exchange with the target: its config, client, oracle, id map and bookkeeping, and the
    plumbing every step uses (send, settle, retire); :meth:`close` at the end of the example."""

    def __init__(self, config: MachineConfig) -> None:
        self.config = config
        self.client = config.http_factory()
        self.strict = config.strict
        self.key = config.api_key or _bearer(self.client) or DEFAULT_KEY
        self.book = _Book()
        self.ids: dict[str, str] = {}
        resolve: Resolve
        keys: KeyRing | None = None
        if config.admin is not None:
            self.book.clock_mode = self.clock_mode()
            config.admin.reset()
            config.admin.set_clock_mode("manual")
            config.admin.set_dns(DNS_ENTRIES, "synthetic")
            clock = VirtualClock("manual", start=config.admin.now())
            resolve = DnsTable(DNS_ENTRIES).resolve
            keys = self.target_keys()
            self.prefix = ""
        else:
            clock = VirtualClock("manual")
            resolve = config.resolve or default_resolve()
            self.prefix = f"sp{random.getrandbits(24):06x}-"
        self.oracle = Oracle(clock, resolve, self.key, keys)

    # -- plumbing ------------------------------------------------------------------------------------------

    def target_keys(self) -> KeyRing | None:
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

    def clock_mode(self) -> str | None:
        try:
            data = self.client.get("/_mock/clock").json()
        except (httpx.HTTPError, ValueError):
            return None
        mode = data.get("mode") if isinstance(data, dict) else None
        return mode if isinstance(mode, str) else None

    def id_of(self, target_id: str) -> str:
        return self.ids.get(target_id, f"unmapped:{target_id}")

    def alias(self, model_id: str) -> str:
        return next((h.alias for h in self.book.handles if h.model_id == model_id), model_id)

    def handle_of(self, model_id: str) -> SandboxHandle | None:
        return next((h for h in self.book.handles if h.model_id == model_id), None)

    def name(self, name: Name) -> str:
        return self.prefix + name.word if name.valid else name.word

    def wire(self, body: Json) -> Json:
        out = dict(body)
        if isinstance(out.get("name"), Name):
            out["name"] = self.name(out["name"])
        if not self.strict and isinstance(out.get("timeout_secs"), int):
            out["timeout_secs"] = LENIENT_TIMEOUT
        return out

    def send(
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
            response = self.client.send(request)
        except httpx.HTTPError as exc:
            hold(ANSWERS, False, rule, f"{method} {url}: transport error {type(exc).__name__}: {exc}")
            raise AssertionError("unreachable: a spec or observed breach raises") from exc
        hold(ANSWERS, True, rule, "")
        return response

    def retire(self, sb: SandboxHandle) -> None:
        """Delete a sandbox whose state the model can no longer follow, on the target and in the model."""
        with suppress(httpx.HTTPError):
            self.client.delete(f"/sandboxes/{sb.target_id}")
        self.oracle.delete(sb.model_id)
        self.book.retired.add(sb.model_id)
        self.book.listing_dirty = True

    def settle(self, sb: SandboxHandle) -> None:
        """Wait (lenient mode) until the target's sandbox leaves a transitional status."""
        if self.strict:
            return
        deadline = time.monotonic() + self.config.settle_timeout
        while time.monotonic() < deadline:
            response = self.send("settle", "GET", f"/sandboxes/{sb.target_id}")
            try:
                data = response.json() if response.status_code == 200 else None
            except ValueError:
                data = None
            if not isinstance(data, dict) or data.get("status") not in TRANSITIONAL:
                return
            time.sleep(1.0)

    def policy_accepted(self, model_id: str) -> None:
        sb = self.oracle.lookup(model_id)
        policy = None if sb is None or sb.network is None else sb.network.to_json()
        history = self.book.history.setdefault(model_id, [])
        if policy not in history:
            history.append(policy)


def _bearer(client: httpx.Client) -> str | None:
    scheme, _, key = client.headers.get("authorization", "").partition(" ")
    return key.strip() or None if scheme.lower() == "bearer" else None
