"""The OpenSandbox machine's base: rule groups, per-class config, HTTP plumbing, and how to run a machine.

:class:`MachineBase` opens a client per example, resets the target (with the admin API), keeps the oracle and
the id map, and checks every answer's status, error code, ``X-Request-ID`` and body; the rules live in
:mod:`harness.machines.opensandbox.lifecycle_rules` and :mod:`harness.machines.opensandbox.machine`.

Every check is a tagged contract of suite ``opensandbox-api`` (:data:`CONTRACTS` here and in those modules).
Most are ``observed``: the lifecycle answers were measured against the real opensandbox-server 1.1.1 (the
differential run), execd's from its Go source and the SDK. The NeMo Gym provider page and the egress OpenAPI
document back the ``spec`` ones; sandproof's own admin API and the emulator's exact answers are ``choice``.
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

from harness.machines.common import Handle, add_contract, hold, json_body, when_enabled
from harness.machines.opensandbox.compare import ANY, Expected, diff
from harness.machines.opensandbox.oracle import Oracle
from harness.strength import Contract, choice, observed
from harness.strength.observations import REAL_RUN, published
from mockserver.admin.client import AdminClient
from mockserver.core import VirtualClock
from mockserver.opensandbox.model.profiles import RuntimeProfile

__all__ = [
    "ADMIN_API",
    "ADMIN_OPERATIONS",
    "ADMIN_RULES",
    "ALL_RULES",
    "CONTRACTS",
    "EGRESS_RULES",
    "LIFECYCLE_ANSWER",
    "NOT_FOUND",
    "OPERATIONS",
    "SANDBOX_BODY",
    "SIDECAR_RULES",
    "SUITE",
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
    "execd": frozenset({"create", "run_command", "background_logs", "pty_missing", "pause", "resume", "delete"}),
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
    "proxy-headers": frozenset({"create", "proxy_headers", "pause", "resume", "delete"}),
}
ALL_RULES = frozenset().union(*OPERATIONS.values())
OPERATIONS["state-machine"] = ALL_RULES
#: Operations whose rules need the ``/_mock`` admin API.
ADMIN_OPERATIONS = frozenset({"faults", "expiry"})
ADMIN_RULES = frozenset({"inject_fault", "advance_clock"})
#: Rules that need sandboxes with an egress sidecar (a ``networkPolicy``).
EGRESS_RULES = frozenset({"create_with_policy", "egress_get", "egress_patch", "egress_delete", "egress_probe"})
#: Rules that talk to a sandbox's egress sidecar (or judge what it enforces).
SIDECAR_RULES = EGRESS_RULES - {"create_with_policy"}


SUITE = "opensandbox-api"
#: The contracts this module checks, by name.
CONTRACTS: dict[str, Contract] = {}
_WIRE = "opensandbox-wire.md"
_REAL = "the real opensandbox-server 1.1.1 in the differential run (docs/differential-findings.md)"

ANSWERS = add_contract(
    CONTRACTS,
    SUITE,
    "answers",
    observed(
        (
            REAL_RUN,
            published(
                "opensandbox==1.1.1",
                "opensandbox/adapters/converter/exception_converter.py",
                'message=f"Network connectivity error: {e}"',
            ),
        ),
        "a failed connection is SandboxConnectionException, a timeout SandboxTimeoutException",
        note=f"{_WIRE} §2.5",
    ),
    "Every request gets an HTTP answer: no refused connection, reset or timeout.",
)
REQUEST_ID = add_contract(
    CONTRACTS,
    SUITE,
    "request_id",
    observed(
        (
            REAL_RUN,
            published(
                "opensandbox==1.1.1",
                "opensandbox/transport/retry.py",
                "``X-Request-ID`` header from the last response, if present.",
            ),
        ),
        "every lifecycle answer carries X-Request-ID, the request's own when it sent one",
        note=f"{_WIRE} §3",
    ),
    "Every /v1 answer, errors included, carries X-Request-ID, echoed when the request had one.",
)
LIFECYCLE_ANSWER = add_contract(
    CONTRACTS,
    SUITE,
    "lifecycle_answer",
    observed(REAL_RUN, "each route's status and its flat {code, message} error body", note=f"{_WIRE} §3 and {_REAL}"),
    "Create, pause, resume, renew, metadata and delete answer the real server's status and error code.",
)
VALIDATION_DETAIL = add_contract(
    CONTRACTS,
    SUITE,
    "validation_detail",
    observed(
        REAL_RUN, 'FastAPI\'s 422 keeps its {"detail": [...]} body, not normalised', note=f"{_WIRE} §3 and {_REAL}"
    ),
    "A 422 carries FastAPI's detail list.",
)
NOT_FOUND = add_contract(
    CONTRACTS,
    SUITE,
    "not_found",
    observed(
        REAL_RUN,
        "an unknown, deleted or expired id answers 404 DOCKER::SANDBOX_NOT_FOUND",
        note=f"{_WIRE} §3, §7 and {_REAL}",
    ),
    "Every operation on a sandbox that does not exist (never, or no longer) answers 404 with the runtime's code.",
)
SANDBOX_BODY = add_contract(
    CONTRACTS,
    SUITE,
    "sandbox_body",
    observed(
        REAL_RUN,
        "the Sandbox JSON: id, image, status {state, reason, lastTransitionAt}, metadata, entrypoint, RFC 3339 "
        "expiresAt and createdAt, null fields left out",
        note=f"{_WIRE} §3.1 and {_REAL}",
    ),
    "Every Sandbox, list and renew body is the model's (ids mapped, times as instants, status.message left out).",
)
ADMIN_API = add_contract(
    CONTRACTS,
    SUITE,
    "admin_api",
    choice("the /_mock admin API (faults, clock) is sandproof's own; a fault answers as given, once"),
    "With the admin API: both clocks move alike, and an injected fault answers once with its status, code and "
    "headers (Retry-After).",
)


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
    sidecar: bool = True

    def enabled(self, name: str) -> bool:
        """Tell whether the rule runs (admin rules only with the admin API, egress rules only with egress,
        sidecar rules only where a sidecar answers)."""
        if name in ADMIN_RULES and self.admin is None:
            return False
        if name in SIDECAR_RULES and not self.sidecar:
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
            hold(ANSWERS, False, rule, f"{method} {url}: transport error {type(exc).__name__}: {exc}")
            raise AssertionError("unreachable: an observed breach raises") from exc
        hold(ANSWERS, True, rule, "")
        if urlsplit(str(response.request.url)).path.startswith("/v1/"):
            got = response.headers.get("x-request-id")
            where = f"{method} {url} -> {response.status_code}"
            hold(REQUEST_ID, bool(got), rule, f"{where} has no X-Request-ID header")
            if request_id is not None and got:
                hold(REQUEST_ID, got == request_id, rule, f"{where}: X-Request-ID {request_id!r} came back as {got!r}")
        return response

    def _check(
        self,
        rule: str,
        response: httpx.Response,
        expected: Expected,
        contract: Contract,
        *,
        refusal: Contract | None = None,
        exact: Contract | None = None,
    ) -> Any:
        """Compare status, error code and the 422 body shape; return the parsed JSON or None.

        Whether the request is accepted or refused breaches ``contract`` (``refusal`` when the model refuses and
        the target accepts); which status or code a refusal carries breaches ``exact`` (default: the same).
        """
        where = f"{response.request.method} {response.request.url.path}"
        evidence = f"{where} -> {response.status_code}: {response.text[:300]}"
        status = response.status_code
        refused = expected.status >= 400
        decision = (refusal or contract) if refused else contract
        detail = exact or decision
        if status >= 500 and not self.bookkeeping.fault_armed and expected.status < 500:
            hold(
                contract,
                False,
                rule,
                f"{where} -> {status} without an injected fault: {response.text[:200]!r}",
                evidence,
            )
            return json_body(response)
        if (status >= 400) != refused:
            hold(
                decision,
                False,
                rule,
                f"{where} -> {status}, the model says {expected.status}: {response.text[:200]!r}",
                evidence,
            )
            return json_body(response)
        hold(decision, True, rule, "")
        if not hold(
            detail,
            status == expected.status,
            rule,
            f"{where} -> {status}, the model says {expected.status}: {response.text[:200]!r}",
            evidence,
        ):
            return json_body(response)
        data = json_body(response)
        if expected.code is not None:
            got = data.get("code") if isinstance(data, dict) else None
            hold(
                detail,
                got == expected.code,
                rule,
                f"{where} -> {status} code {got!r}, the model says {expected.code!r}",
                evidence,
            )
        if expected.validation:
            hold(
                VALIDATION_DETAIL,
                isinstance(data, dict) and isinstance(data.get("detail"), list),
                rule,
                f"{where} -> 422 without a FastAPI detail list: {response.text[:200]!r}",
                evidence,
            )
        return data

    def _compare(self, rule: str, response: httpx.Response, expected: Any, actual: Any, contract: Contract) -> None:
        found = diff(expected, actual, self.config.time_tolerance)
        where = f"{response.request.method} {response.request.url.path}"
        hold(
            contract,
            found is None,
            rule,
            f"{where}: body differs from the model at {found}",
            f"{where}: {actual!r:.500}",
        )

    def _advance(self, rule: str, seconds: float) -> None:
        """Move the target's and the model's clocks together (admin only)."""
        admin = self.config.admin
        assert admin is not None
        now = admin.advance(seconds)
        mine = self.oracle.clock.advance(seconds)
        self.oracle.model.settle_all()
        hold(ADMIN_API, abs(now - mine) <= 1e-6, rule, f"the target's clock reads {now}, the model's {mine}")

    def _sandbox_path(self, handle_or_id: SandboxHandle | str) -> str:
        target_id = handle_or_id.target_id if isinstance(handle_or_id, SandboxHandle) else handle_or_id
        return f"/v1/sandboxes/{target_id}"
