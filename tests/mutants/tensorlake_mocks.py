"""Deliberately wrong TensorLake mocks: each must make ``harness.machines.tensorlake.machine`` fail.

Every mutant is a :class:`TensorLakeMock` with one plausible defect, put in by swapping one part of the mock:
its state model, its lifecycle route table, its proxy rules or its egress gate, or by wrapping its
ASGI app (:meth:`MutantMock.mutate`). The machine's oracle keeps the true model functions, so a mutant is caught
only if the contracts see the defect. ``defect`` says what is wrong, ``caught_by`` names the operation group of
:data:`harness.machines.tensorlake.machine.OPERATIONS` aimed at it and ``contract`` the tagged contract expected
to kill it; a mutant that differs only where the sources are silent says why in ``choice`` (only a choice
contract, under ``--strict``, can kill it). Importing this module registers them with
:mod:`harness.reporting.mutation` as suite ``tensorlake-api``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Iterable
from typing import Any, ClassVar

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from contracts.tensorlake import Decision, NetworkConfig, PolicyError, decide_egress
from mockserver.asgi.handlers import Row
from mockserver.core.errors import ApiError
from mockserver.tensorlake import TensorLakeGate, TensorLakeMock
from mockserver.tensorlake.model import Admission, IngressRules, KeyRing, ProxyRequest, TensorLakeModel
from mockserver.tensorlake.model.auth import bearer_key, is_lifecycle_path
from mockserver.tensorlake.model.bodies import CreateBody, UpdateBody
from mockserver.tensorlake.model.records import Sandbox, owner_id
from mockserver.tensorlake.model.validation import conflict
from mockserver.tensorlake.routes import lifecycle as lifecycle_routes
from mockserver.tensorlake.routes.lifecycle import LifecycleContext
from tests.mutants.asgi_body import read_request
from tests.mutants.naming import mutant_name, register_classes

SUITE = "tensorlake-api"
Headers = list[tuple[bytes, bytes]]


class MutantMock(TensorLakeMock):
    """A TensorLake mock built from swappable parts; subclasses replace one part with a wrong one."""

    defect: ClassVar[str] = ""
    caught_by: ClassVar[str] = ""
    contract: ClassVar[str] = ""
    choice: ClassVar[str] = ""
    model_class: ClassVar[type[TensorLakeModel]] = TensorLakeModel
    rows: ClassVar[tuple[Row[LifecycleContext], ...]] = lifecycle_routes.ROWS
    ingress_class: ClassVar[type[IngressRules]] = IngressRules
    gate_class: ClassVar[type[TensorLakeGate]] = TensorLakeGate

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ingress = self.ingress_class(self.model)

    def new_model(self, keys: KeyRing) -> TensorLakeModel:
        """Return this mutant's state model."""
        return self.model_class(self.clock, self.ids, self.dns.resolve, keys)

    def new_gate(self, sandbox: Sandbox) -> TensorLakeGate:
        """Return this mutant's egress gate."""
        return self.gate_class(sandbox, self.dns)

    def routes(self) -> list[BaseRoute]:
        """Return this mutant's lifecycle routes."""
        return lifecycle_routes.lifecycle_routes(LifecycleContext(self.model, self.clock), self.rows)

    def mutate(self, app: ASGIApp) -> ASGIApp:
        """Wrap the fully built app (identity by default)."""
        return app

    def wrap(self, app: ASGIApp) -> ASGIApp:
        """Put :meth:`mutate` outside the journal and faults."""
        return self.mutate(super().wrap(app))


# --- wrong models -------------------------------------------------------------------------------------------


class _NullIgnoredModel(TensorLakeModel):
    def _apply_patch(self, sb: Sandbox, req: UpdateBody) -> None:
        if "network" in req.given() and req.given()["network"] is None:
            req = req.model_copy()
            req.model_fields_set.discard("network")
        super()._apply_patch(sb, req)


class PatchNullIgnored(MutantMock):
    """PATCH ``{"network": null}`` keeps the old policy instead of clearing it."""

    defect = "PATCH network:null is ignored"
    caught_by = "update"
    contract = "policy_kept"
    model_class = _NullIgnoredModel


class _OmittedClearsModel(TensorLakeModel):
    def _apply_patch(self, sb: Sandbox, req: UpdateBody) -> None:
        if "network" not in req.given():
            req = req.model_copy(update={"network": None})
        super()._apply_patch(sb, req)


class OmittedNetworkClears(MutantMock):
    """A PATCH without a ``network`` key clears the policy (absent treated like null)."""

    defect = "an omitted network key clears the policy"
    caught_by = "update"
    contract = "policy_kept"
    model_class = _OmittedClearsModel


class _RawPortsModel(TensorLakeModel):
    def patch(self, owner: str, namespace: str, ident: str, body: Any) -> tuple[Sandbox, list[str]]:
        sb, unknown = super().patch(owner, namespace, ident, body)
        if isinstance(body, dict) and isinstance(body.get("exposed_ports"), list):
            sb.exposed_ports = tuple(body["exposed_ports"])
        return sb, unknown


class PortsNotNormalised(MutantMock):
    """``exposed_ports`` is stored as sent: not deduplicated, not sorted."""

    defect = "exposed_ports kept unsorted and with duplicates"
    caught_by = "update"
    contract = "sandbox_info_exact"
    choice = (
        "the docs and captures do not say the service stores exposed_ports sorted and without duplicates (the SDK "
        "sends them so); the same ports are exposed either way"
    )
    model_class = _RawPortsModel


class _ManagementPortModel(TensorLakeModel):
    def patch(self, owner: str, namespace: str, ident: str, body: Any) -> tuple[Sandbox, list[str]]:
        ports = body.get("exposed_ports") if isinstance(body, dict) else None
        if not isinstance(ports, list) or 9501 not in ports:
            return super().patch(owner, namespace, ident, body)
        sb, unknown = super().patch(owner, namespace, ident, {**body, "exposed_ports": [p for p in ports if p != 9501]})
        sb.exposed_ports = tuple(sorted({*sb.exposed_ports, 9501}))
        return sb, unknown


class ExposesManagementPort(MutantMock):
    """Port 9501 (the management API) is accepted in ``exposed_ports``."""

    defect = "9501 accepted as an exposed port"
    caught_by = "ports-ingress"
    contract = "request_validation"
    choice = (
        "the docs do not say the service refuses 9501 in exposed_ports (the SDK and CLI refuse it themselves); "
        "the management port stays behind auth either way, which ingress_admission checks"
    )
    model_class = _ManagementPortModel


class _HalfAppliedModel(TensorLakeModel):
    def patch(self, owner: str, namespace: str, ident: str, body: Any) -> tuple[Sandbox, list[str]]:
        with self.lock:
            sb = self.find(owner, namespace, ident)
            network = body.get("network") if isinstance(body, dict) else None
            allow = network.get("allow_out") if isinstance(network, dict) else None
            if isinstance(allow, list):
                current = sb.network or NetworkConfig()
                try:
                    wanted = NetworkConfig(allow_out=tuple(allow))
                except PolicyError:
                    pass
                else:
                    sb.network = NetworkConfig(current.allow_internet_access, wanted.allow_out, current.deny_out)
                    self.changed(sb)  # a change the service shows (the record's revision moves)
            return super().patch(owner, namespace, ident, body)


class HalfAppliedPatch(MutantMock):
    """A PATCH whose policy is rejected has already swapped in the new ``allow_out``."""

    defect = "a rejected PATCH leaves a half-applied policy"
    caught_by = "update"
    contract = "rejected_update_keeps_state"
    model_class = _HalfAppliedModel


class _SuspendAnyModel(TensorLakeModel):
    def suspend(self, owner: str, namespace: str, ident: str) -> Sandbox:
        with self.lock:
            sb = self.find(owner, namespace, ident)
            if sb.name is None and sb.status == "running":
                sb.status, sb.running_since = "suspending", None
                sb.transition_at = self.clock.now() + self.timings.suspend
                self.settle(sb)
                return sb
            return super().suspend(owner, namespace, ident)


class SuspendEphemeral(MutantMock):
    """An ephemeral (unnamed) sandbox can be suspended instead of getting 400."""

    defect = "suspend allowed on an ephemeral sandbox"
    caught_by = "suspend-resume"
    contract = "suspend_named_only"
    model_class = _SuspendAnyModel


class _TimeoutKillsModel(TensorLakeModel):
    def _step(self, sb: Sandbox, now: float) -> bool:
        if sb.status == "running" and sb.timeout_secs and sb.running_since is not None and sb.name is not None:
            deadline = sb.running_since + sb.timeout_secs
            if deadline <= now:
                self._terminate(sb, deadline, "timeout")
                return True
        return super()._step(sb, now)


class TimeoutKillsNamed(MutantMock):
    """A named sandbox is terminated on timeout instead of suspended."""

    defect = "timeout terminates named sandboxes"
    caught_by = "timeouts"
    contract = "listing"
    model_class = _TimeoutKillsModel


class _StickyNameModel(TensorLakeModel):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.retired: set[tuple[str, str, str]] = set()

    def delete(self, owner: str, namespace: str, ident: str) -> Sandbox:
        sb = super().delete(owner, namespace, ident)
        if sb.name is not None:
            self.retired.add((owner, namespace, sb.name))
        return sb

    def create(self, owner: str, namespace: str, req: CreateBody) -> Any:
        name = req.given().get("name")
        if name is not None and (owner, namespace, name) in self.retired:
            raise conflict("name_conflict", f"sandbox name {name!r} is already in use")
        return super().create(owner, namespace, req)

    def reset(self) -> None:
        super().reset()
        self.retired.clear()


class NameKeptAfterDelete(MutantMock):
    """A deleted sandbox's name stays taken: creating it again answers 409."""

    defect = "a deleted sandbox's name is never freed"
    caught_by = "lifecycle"
    contract = "name_conflict"
    model_class = _StickyNameModel


# --- wrong routes -------------------------------------------------------------------------------------------


async def _sync_create(ctx: LifecycleContext, request: Request) -> Response:
    response = await lifecycle_routes.create(ctx, request)
    if response.status_code == 202:
        response.status_code = 200
    return response


def _swap(handler: Any, by: Any) -> tuple[Row[LifecycleContext], ...]:
    """Return the lifecycle route table with ``handler`` replaced by ``by``."""
    return tuple(row._replace(handler=by) if row.handler is handler else row for row in lifecycle_routes.ROWS)


class NoWaitCreate200(MutantMock):
    """``wait: false`` create answers 200 instead of 202."""

    defect = "200 instead of 202 on a wait:false create"
    caught_by = "lifecycle"
    contract = "create_answer"
    rows = _swap(lifecycle_routes.create, _sync_create)


#: The key a gate that lets anonymous calls through authenticates them with.
_ANONYMOUS = b"Bearer anonymous"


class _AnonymousTenant:
    """Let a lifecycle call without an ``Authorization`` header through as the tenant of a shared anonymous key."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = list(scope.get("headers") or ())
        if (
            scope["type"] == "http"
            and is_lifecycle_path(str(scope.get("path", "")))
            and all(k != b"authorization" for k, _ in headers)
        ):
            scope = {**scope, "headers": [*headers, (b"authorization", _ANONYMOUS)]}
        await self.app(scope, receive, send)


class AnonymousCallsAllowed(MutantMock):
    """The lifecycle gate answers a call without a key as an anonymous tenant instead of refusing it."""

    defect = "a lifecycle call without an Authorization header is served (as an anonymous tenant), not refused"
    caught_by = "lifecycle"
    contract = "anonymous_refused"

    def mutate(self, app: ASGIApp) -> ASGIApp:
        """Give keyless lifecycle calls the anonymous key in front of the gate."""
        return _AnonymousTenant(app)


# --- wrong proxies ------------------------------------------------------------------------------------------


class _PublicManagementIngress(IngressRules):
    def check(self, request: ProxyRequest, keys: KeyRing | None = None) -> Sandbox:
        sandbox = self.model.find_any(request.target.label)
        if (
            request.target.port == 9501
            and sandbox is not None
            and sandbox.allow_unauthenticated_access
            and sandbox.status == "running"
        ):
            return sandbox
        return super().check(request, keys)


class ManagementPortPublic(MutantMock):
    """``allow_unauthenticated_access`` also opens the management API (port 9501) without auth."""

    defect = "9501 reachable without auth"
    caught_by = "ports-ingress"
    contract = "ingress_admission"
    ingress_class = _PublicManagementIngress


class _CookieLeakIngress(IngressRules):
    def forwarded(self, headers: Iterable[tuple[bytes, bytes]], admission: Admission) -> Headers:
        kept = list(headers)
        cookies = [(k, v) for k, v in kept if k == b"cookie"]
        return [(k, v) for k, v in super().forwarded(kept, admission) if k != b"cookie"] + cookies


class SessionCookieForwarded(MutantMock):
    """The platform session cookie reaches the sandbox's app (the proxy forwards the original Cookie header)."""

    defect = "the platform session cookie is forwarded to the sandbox"
    caught_by = "ports-ingress"
    contract = "cookie_stripped"
    ingress_class = _CookieLeakIngress


class _UpgradeLeakIngress(IngressRules):
    def forwarded(self, headers: Iterable[tuple[bytes, bytes]], admission: Admission) -> Headers:
        kept = list(headers)
        if any(k == b"sec-websocket-key" for k, _ in kept):
            return kept  # the upgrade's handshake passes through untouched
        return super().forwarded(kept, admission)


class UpgradeForwardsCredentials(MutantMock):
    """A WebSocket upgrade reaches the sandbox's app with its handshake untouched: the session cookie included."""

    defect = "a WebSocket handshake reaches the sandbox with the platform session cookie"
    caught_by = "ports-ingress"
    contract = "cookie_stripped"
    ingress_class = _UpgradeLeakIngress


class _ForeignKeyInvalidIngress(IngressRules):
    def authorise(self, request: ProxyRequest, sandbox: Sandbox, keys: KeyRing) -> None:
        key = bearer_key(request.authorization)
        if key is not None and owner_id(key) != sandbox.owner:
            raise ApiError(401, "INVALID_API_KEY", "the API key is not valid")
        super().authorise(request, sandbox, keys)


class ForeignKeyCalledInvalid(MutantMock):
    """Another project's valid key is refused as an invalid key (401) instead of a forbidden one (403)."""

    defect = "a foreign project's key answers 401 instead of 403"
    caught_by = "ports-ingress"
    contract = "exact_status"
    choice = (
        "the docs say the proxy authorizes the request, not whether another project's key answers 401 or 403; "
        "the request is refused either way"
    )
    ingress_class = _ForeignKeyInvalidIngress


class _KeyLeakIngress(IngressRules):
    def forwarded(self, headers: Iterable[tuple[bytes, bytes]], admission: Admission) -> Headers:
        return super().forwarded(headers, dataclasses.replace(admission, strip_authorization=False))


class ProjectKeyForwarded(MutantMock):
    """The caller's ``Authorization: Bearer <project key>`` reaches the sandbox's app."""

    defect = "the project API key is forwarded to the sandbox"
    caught_by = "ports-ingress"
    contract = "project_key_stripped"
    choice = (
        "the docs do not say whether the proxy passes Authorization to the app; sandproof strips the project key "
        "(issue 12, item 3) so sandbox code cannot read it"
    )
    ingress_class = _KeyLeakIngress


# --- wrong egress gates -------------------------------------------------------------------------------------


class _AllowFirstGate(TensorLakeGate):
    def decide(self, host: str | None, ip: str) -> Decision:
        policy = self.sandbox.network
        if policy is not None and policy.allow_out:
            loose = NetworkConfig(policy.allow_internet_access, policy.allow_out, ())
            try:
                verdict = decide_egress(loose, host=host, ip=ip)
            except ValueError:
                verdict = Decision(False, "unusable")
            if verdict.allowed:
                return verdict
        return super().decide(host, ip)


class DenyDoesNotWin(MutantMock):
    """A destination matched by both lists gets out: ``allow_out`` is checked before ``deny_out``."""

    defect = "deny_out does not win over allow_out in probes"
    caught_by = "egress-probe"
    contract = "egress_decision"
    gate_class = _AllowFirstGate


class _ApexGate(TensorLakeGate):
    def decide(self, host: str | None, ip: str) -> Decision:
        verdict = super().decide(host, ip)
        policy = self.sandbox.network
        if verdict.allowed or policy is None or host is None or verdict.reason.startswith("deny_out"):
            return verdict
        name = host.lower().rstrip(".")
        if any(entry == "*." + name for entry in policy.allow_out):
            return Decision(True, f"allow_out entry '*.{name}'")
        return verdict


class WildcardMatchesApex(MutantMock):
    """``*.example.com`` in ``allow_out`` also lets ``example.com`` out."""

    defect = "a wildcard entry matches its apex in probes"
    caught_by = "egress-probe"
    contract = "egress_decision"
    gate_class = _ApexGate


# --- wrong wire -----------------------------------------------------------------------------------------------

_PORT_HOST = re.compile(r"^(\d+)-([a-z0-9-]+)\.")
_PATCH_PATH = re.compile(r"^(?:/v1/namespaces/[^/]+)?/sandboxes/([^/]+)/?$")


def _host(scope: Scope) -> str:
    return next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"host"), "")


class _RefuseWebSockets:
    """Close every WebSocket to a user port before accepting it (plain HTTP still passes)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and _PORT_HOST.match(_host(scope)):
            await receive()
            await send({"type": "websocket.close", "code": 1008, "reason": "no upgrades"})
            return
        await self.app(scope, receive, send)


class WebSocketsRefused(MutantMock):
    """The proxy forwards HTTP to user ports but refuses every WebSocket upgrade."""

    defect = "WebSocket upgrades to user ports are refused"
    caught_by = "ports-ingress"
    contract = "websocket_upgrade"

    def mutate(self, app: ASGIApp) -> ASGIApp:
        """Refuse upgrades in front of the proxy."""
        return _RefuseWebSockets(app)


class _CloseOnPolicyUpdate:
    """Close a sandbox's open WebSockets when a PATCH carrying ``network`` arrives for it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.open: dict[str, list[asyncio.Event]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and (found := _PORT_HOST.match(_host(scope))):
            await self._socket(found.group(2), scope, receive, send)
            return
        patched = _PATCH_PATH.match(scope.get("path", "")) if scope["type"] == "http" else None
        if patched is None or scope["method"] != "PATCH":
            await self.app(scope, receive, send)
            return
        body = await read_request(receive)
        if b'"network"' in body:
            for stop in self.open.get(patched.group(1), []):
                stop.set()
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _socket(self, label: str, scope: Scope, receive: Receive, send: Send) -> None:
        stop = asyncio.Event()
        self.open.setdefault(label, []).append(stop)

        async def guarded() -> Message:
            message = asyncio.ensure_future(receive())
            stopped = asyncio.ensure_future(stop.wait())
            done, _ = await asyncio.wait({message, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if message in done:
                stopped.cancel()
                return message.result()
            message.cancel()
            await send({"type": "websocket.close", "code": 1012, "reason": "policy updated"})
            return {"type": "websocket.disconnect", "code": 1012}

        try:
            await self.app(scope, guarded, send)
        finally:
            self.open[label].remove(stop)


class ConnectionDroppedOnUpdate(MutantMock):
    """A policy PATCH closes the sandbox's established connections (here: open WebSockets into it)."""

    defect = "a network PATCH drops established connections"
    caught_by = "update"
    contract = "update_keeps_connection"

    def mutate(self, app: ASGIApp) -> ASGIApp:
        """Close WebSockets on a policy PATCH."""
        return _CloseOnPolicyUpdate(app)


class _BareJsonStream:
    """Send the run stream's events as bare JSON objects (execd's framing) instead of ``data:`` frames."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope.get("path", "").endswith("/processes/run"):
            await self.app(scope, receive, send)
            return

        async def strip(message: Message) -> None:
            if message["type"] == "http.response.body":
                body = message.get("body", b"")
                message = {**message, "body": body.replace(b"data: ", b"")}
            await send(message)

        await self.app(scope, receive, strip)


class BareJsonRunStream(MutantMock):
    """``/api/v1/processes/run`` streams bare JSON objects, without the ``data:`` prefix the SDK's SSE reader needs."""

    defect = "the run stream's frames lack `data: `"
    caught_by = "egress-probe"
    contract = "run_stream_framing"

    def mutate(self, app: ASGIApp) -> ASGIApp:
        """Strip the prefix from the run stream."""
        return _BareJsonStream(app)


MUTANTS: tuple[type[MutantMock], ...] = (
    PatchNullIgnored,
    OmittedNetworkClears,
    PortsNotNormalised,
    ExposesManagementPort,
    HalfAppliedPatch,
    SuspendEphemeral,
    TimeoutKillsNamed,
    NameKeptAfterDelete,
    NoWaitCreate200,
    AnonymousCallsAllowed,
    ManagementPortPublic,
    SessionCookieForwarded,
    UpgradeForwardsCredentials,
    ProjectKeyForwarded,
    ForeignKeyCalledInvalid,
    DenyDoesNotWin,
    WildcardMatchesApex,
    WebSocketsRefused,
    ConnectionDroppedOnUpdate,
    BareJsonRunStream,
)


register_classes(SUITE, MUTANTS)

__all__ = [
    "MUTANTS",
    "SUITE",
    "AnonymousCallsAllowed",
    "BareJsonRunStream",
    "ConnectionDroppedOnUpdate",
    "DenyDoesNotWin",
    "ExposesManagementPort",
    "ForeignKeyCalledInvalid",
    "HalfAppliedPatch",
    "ManagementPortPublic",
    "MutantMock",
    "NameKeptAfterDelete",
    "NoWaitCreate200",
    "OmittedNetworkClears",
    "PatchNullIgnored",
    "PortsNotNormalised",
    "ProjectKeyForwarded",
    "SessionCookieForwarded",
    "SuspendEphemeral",
    "TimeoutKillsNamed",
    "UpgradeForwardsCredentials",
    "WebSocketsRefused",
    "WildcardMatchesApex",
    "mutant_name",
]
