"""The OpenSandbox machine's base: rule groups, per-class config, HTTP plumbing, and how to run a machine.

:class:`MachineBase` opens a client per example, resets the target (with the admin API), keeps the oracle and
the id map, and checks every answer's status, error code, ``X-Request-ID`` and body; the rules live in
:mod:`harness.machines.opensandbox.lifecycle_rules` and :mod:`harness.machines.opensandbox.machine`. :func:`run_machine` runs a
machine class with a known seed and adds the replay line to a failure.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import urlsplit

import httpx
from hypothesis.stateful import RuleBasedStateMachine

from harness.machines.common import Handle, json_body, when_enabled
from harness.machines.opensandbox.compare import ANY, ContractViolation, Expected, diff
from harness.machines.opensandbox.oracle import Oracle
from mockserver.admin.client import AdminClient
from mockserver.core import VirtualClock
from mockserver.opensandbox.model.profiles import RuntimeProfile

__all__ = [
    "ADMIN_OPERATIONS",
    "ADMIN_RULES",
    "ALL_RULES",
    "EGRESS_RULES",
    "OPERATIONS",
    "ClientFactory",
    "MachineBase",
    "MachineConfig",
    "SandboxHandle",
    "when_enabled",
]

ClientFactory = Callable[[], httpx.Client]

#: Report operation → the rules its machine runs (``create`` always runs; ``use_deleted`` runs with ``delete``).
OPERATIONS: dict[str, frozenset[str]] = {
    "lifecycle": frozenset({"create", "get", "list_sandboxes", "delete", "patch_metadata", "missing_sandbox"}),
    "pause-resume": frozenset({"create", "get", "pause", "resume", "delete"}),
    "renew": frozenset({"create", "get", "renew", "delete"}),
    "endpoints": frozenset({"create", "endpoint", "pause", "resume", "delete"}),
    "execd": frozenset({"create", "run_command", "pause", "resume", "delete"}),
    "egress-policy": frozenset(
        {
            "create",
            "create_with_policy",
            "egress_get",
            "egress_patch",
            "egress_delete",
            "egress_probe",
            "pause",
            "resume",
            "delete",
        }
    ),
    "faults": frozenset({"create", "get", "inject_fault", "delete"}),
    "expiry": frozenset({"create", "get", "renew", "advance_clock", "list_sandboxes", "delete"}),
}
ALL_RULES = frozenset().union(*OPERATIONS.values())
OPERATIONS["state-machine"] = ALL_RULES
#: Operations whose rules need the ``/_mock`` admin API.
ADMIN_OPERATIONS = frozenset({"faults", "expiry"})
ADMIN_RULES = frozenset({"inject_fault", "advance_clock"})
#: Rules that need sandboxes with an egress sidecar (a ``networkPolicy``).
EGRESS_RULES = frozenset({"create_with_policy", "egress_get", "egress_patch", "egress_delete", "egress_probe"})


@dataclass(repr=False)
class SandboxHandle(Handle):
    """A sandbox the machine created: its id on the target and in the model."""


@dataclass(frozen=True)
class MachineConfig:
    """What one machine class runs against and which rules it enables."""

    client_factory: ClientFactory
    admin: AdminClient | None
    rules: frozenset[str]
    profile: RuntimeProfile
    enforcement: str
    time_tolerance: float
    egress: bool = True

    def enabled(self, name: str) -> bool:
        """Tell whether the rule runs (admin rules only with the admin API, egress rules only with egress)."""
        if name in ADMIN_RULES and self.admin is None:
            return False
        return name in self.rules and (self.egress or name not in EGRESS_RULES)


@dataclass
class _Bookkeeping:
    """What one example has done so far."""

    fault_armed: bool = False
    requests: int = 0
    listing_dirty: bool = False
    handles: list[SandboxHandle] = field(default_factory=list)


class MachineBase(RuleBasedStateMachine):
    """Hold a machine's config, client, oracle and bookkeeping, and check answers (rules live in subclasses)."""

    config: ClassVar[MachineConfig]
    clock_is_manual: ClassVar[bool] = False

    def __init__(self) -> None:
        super().__init__()
        config = self.config
        self.client = config.client_factory()
        self.run_label = f"r{secrets.token_hex(5)}"  # not from `random`, which Hypothesis seeds per example
        self.bookkeeping = _Bookkeeping()
        self.ids: dict[str, str] = {}
        if config.admin is not None:
            config.admin.reset()  # keeps the clock's mode
            if not type(self).clock_is_manual:
                config.admin.set_clock_mode("manual")
                type(self).clock_is_manual = True
            clock = VirtualClock("manual", start=config.admin.now())
        else:
            clock = VirtualClock("wall", start=time.time())
        self.oracle = Oracle(config.profile, clock, config.enforcement)

    def teardown(self) -> None:
        """Delete what is still alive (without the admin API) and close the client."""
        try:
            if self.config.admin is None:
                for handle in self.bookkeeping.handles:
                    if self.oracle.lookup(handle.model_id) is not None:
                        self.client.delete(self._sandbox_path(handle))
        except httpx.HTTPError:
            pass
        finally:
            self.client.close()

    # -- plumbing ------------------------------------------------------------------------------------

    def _id_of(self, target_id: str) -> str:
        return self.ids.get(target_id, f"unmapped:{target_id}")

    def _send(
        self,
        rule: str,
        method: str,
        url: str,
        *,
        body: Any = ANY,
        params: Sequence[tuple[str, str | int]] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        book = self.bookkeeping
        book.requests += 1
        sent = dict(headers or {})
        request_id = None
        if book.requests % 2 == 0:
            request_id = f"sandproof-{self.run_label}-{book.requests}"
            sent["X-Request-ID"] = request_id
        if body is not ANY:
            sent["Content-Type"] = "application/json"
        try:
            response = self.client.request(
                method,
                url,
                params=list(params) if params is not None else None,
                headers=sent,
                content=None if body is ANY else json.dumps(body).encode(),
            )
        except httpx.HTTPError as exc:
            raise ContractViolation(rule, f"{method} {url}: transport error {type(exc).__name__}: {exc}") from exc
        if urlsplit(str(response.request.url)).path.startswith("/v1/"):
            got = response.headers.get("x-request-id")
            if not got:
                raise ContractViolation(rule, f"{method} {url} -> {response.status_code} has no X-Request-ID header")
            if request_id is not None and got != request_id:
                raise ContractViolation(rule, f"{method} {url}: X-Request-ID {request_id!r} came back as {got!r}")
        return response

    def _check(self, rule: str, response: httpx.Response, expected: Expected) -> Any:
        """Compare status, error code and (normalised by the caller) body shape; return the parsed JSON or None."""
        where = f"{response.request.method} {response.request.url.path}"
        status = response.status_code
        if status >= 500 and not self.bookkeeping.fault_armed and expected.status < 500:
            raise ContractViolation(rule, f"{where} -> {status} without an injected fault: {response.text[:200]!r}")
        if status != expected.status:
            raise ContractViolation(
                rule, f"{where} -> {status}, the model says {expected.status}: {response.text[:200]!r}"
            )
        data = json_body(response)
        if expected.code is not None:
            got = data.get("code") if isinstance(data, dict) else None
            if got != expected.code:
                raise ContractViolation(rule, f"{where} -> {status} code {got!r}, the model says {expected.code!r}")
        if expected.validation and not (isinstance(data, dict) and isinstance(data.get("detail"), list)):
            raise ContractViolation(rule, f"{where} -> 422 without a FastAPI detail list: {response.text[:200]!r}")
        return data

    def _compare(self, rule: str, response: httpx.Response, expected: Any, actual: Any) -> None:
        found = diff(expected, actual, self.config.time_tolerance)
        if found:
            where = f"{response.request.method} {response.request.url.path}"
            raise ContractViolation(rule, f"{where}: body differs from the model at {found}")

    def _advance(self, rule: str, seconds: float) -> None:
        """Move the target's and the model's clocks together (admin only)."""
        admin = self.config.admin
        assert admin is not None
        now = admin.advance(seconds)
        mine = self.oracle.clock.advance(seconds)
        self.oracle.model.refresh()
        if abs(now - mine) > 1e-6:
            raise ContractViolation(rule, f"the target's clock reads {now}, the model's {mine}")

    def _sandbox_path(self, handle_or_id: SandboxHandle | str) -> str:
        target_id = handle_or_id.target_id if isinstance(handle_or_id, SandboxHandle) else handle_or_id
        return f"/v1/sandboxes/{target_id}"
