"""Deliberately wrong OpenSandbox mocks: each must make the OpenSandbox API state machine fail.

Every mutant is the real :class:`OpenSandboxMock` with one plausible defect, planted by swapping the class of
its state model, overriding one hook, or wrapping its ASGI app. ``killed_by`` names the machine rules (or
``invariant``) whose check is expected to report it; ``caught_by`` is the machine's rule group aimed at it and
``contract`` the tagged contract expected to kill it. A mutant that differs only where the sources are silent says
why in ``choice``: only a choice contract (failing ``--strict`` runs) can kill it.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from contracts.opensandbox import NetworkPolicy, PolicyError, parse_rules
from harness.reporting.mutation import register_mutants
from mockserver.opensandbox import OpenSandboxMock
from mockserver.opensandbox.model.egress import PolicyGate, status_body
from mockserver.opensandbox.model.forwarding import CONNECTION_HEADERS
from mockserver.opensandbox.model.operations import OpenSandboxModel
from mockserver.opensandbox.model.records import SandboxRecord, paginate
from mockserver.opensandbox.routes.egress import EgressContext, egress_routes
from mockserver.opensandbox.routes.ports import PortDispatcher
from mockserver.opensandbox.routes.render import sandbox_of
from mockserver.runtime.emulator import Runner
from mockserver.sandbox.steps import Exit, Output, Step

Json = dict[str, Any]
_ALL = 10**9


# --- building blocks ----------------------------------------------------------------------------------


class ResponseRewrite:
    """Rewrite the answers to matching requests: status, headers and JSON body (buffered)."""

    def __init__(
        self,
        app: ASGIApp,
        matches: Callable[[str, str], bool],
        *,
        status: Callable[[int], int] | None = None,
        headers: Callable[[int, list[tuple[bytes, bytes]]], list[tuple[bytes, bytes]]] | None = None,
        body: Callable[[Any], Any] | None = None,
    ) -> None:
        self.app = app
        self.matches = matches
        self.status = status
        self.headers = headers
        self.body = body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.matches(scope["method"], scope["path"]):
            await self.app(scope, receive, send)
            return
        start: Message = {}
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            await self._flush(start, b"".join(chunks), send)

        await self.app(scope, receive, capture)

    async def _flush(self, start: Message, payload: bytes, send: Send) -> None:
        status = int(start["status"])
        headers = list(start.get("headers", []))
        is_json = any(k.lower() == b"content-type" and b"json" in v for k, v in headers)
        if self.body is not None and is_json and payload:
            payload = json.dumps(self.body(json.loads(payload))).encode()
        if self.headers is not None:
            headers = self.headers(status, headers)
        headers = [(k, v) for k, v in headers if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(payload)).encode()))
        new_status = self.status(status) if self.status is not None else status
        await send({**start, "status": new_status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})


class RequestRewrite:
    """Rewrite the JSON bodies of matching requests before the mock sees them."""

    def __init__(self, app: ASGIApp, matches: Callable[[str, str], bool], body: Callable[[Any], Any]) -> None:
        self.app = app
        self.matches = matches
        self.body = body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.matches(scope["method"], scope["path"]):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        raw = b"".join(chunks)
        with contextlib.suppress(ValueError):
            raw = json.dumps(self.body(json.loads(raw))).encode()
        headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(raw)).encode()))
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}

        await self.app({**scope, "headers": headers}, replay, send)


class MutantMock(OpenSandboxMock):
    """An ``OpenSandboxMock`` whose ASGI app goes through :meth:`mutate` (identity by default)."""

    def mutate(self, app: ASGIApp) -> ASGIApp:
        """Wrap the fully built app."""
        return app

    def wrap(self, app: ASGIApp) -> ASGIApp:
        """Put the mutation outside everything else."""
        return self.mutate(super().wrap(app))


def _with_state(mock: OpenSandboxMock, cls: type[OpenSandboxModel]) -> OpenSandboxMock:
    """Swap the mock's state model for a subclass (before its app is built)."""
    mock.state.__class__ = cls
    return mock


def _is_sandbox(obj: Any) -> bool:
    return isinstance(obj, dict) and "id" in obj and "status" in obj and "entrypoint" in obj


# --- the defects --------------------------------------------------------------------------------------


class Create200(MutantMock):
    """Create answers 200 instead of 202."""

    def mutate(self, app: ASGIApp) -> ASGIApp:
        """Turn the create's 202 into 200."""
        return ResponseRewrite(
            app,
            lambda method, path: method == "POST" and path.rstrip("/") == "/v1/sandboxes",
            status=lambda s: 200 if s == 202 else s,
        )


class NullExpiresAt(MutantMock):
    """A sandbox without automatic expiry carries ``"expiresAt": null`` instead of leaving the key out."""

    def mutate(self, app: ASGIApp) -> ASGIApp:
        """Add the null to every sandbox body."""

        def fill(body: Any) -> Any:
            items = body.get("items") if isinstance(body, dict) else None
            for sandbox in [body, *(items if isinstance(items, list) else [])]:
                if _is_sandbox(sandbox):
                    sandbox.setdefault("expiresAt", None)
            return body

        return ResponseRewrite(app, lambda method, path: path.startswith("/v1/sandboxes"), body=fill)


class _GhostState(OpenSandboxModel):
    """Deleted sandboxes stay in the listing."""

    def clear(self) -> None:
        """Forget the ghosts too."""
        super().clear()
        self.__dict__.pop("ghosts", None)

    def delete(self, tenant: str, sandbox_id: str) -> None:
        """Delete, but remember the sandbox."""
        sb = self.find(sandbox_id, tenant)
        super().delete(tenant, sandbox_id)
        self.__dict__.setdefault("ghosts", {})[sb.id] = sb

    def list(
        self, tenant: str, states: Iterable[str], metadata: dict[str, str], page: int, page_size: int
    ) -> dict[str, Any]:
        """List the live sandboxes and the deleted ones."""
        ghosts: dict[str, SandboxRecord] = self.__dict__.get("ghosts", {})
        with self.lock:
            self.settle_all()
            added = [key for key in ghosts if key not in self.sandboxes]
            for key in added:
                self.sandboxes[key] = ghosts[key]
                self.index.put(ghosts[key])
            try:
                return super().list(tenant, states, metadata, page, page_size)
            finally:
                for key in added:
                    self.sandboxes.pop(key, None)
                    self.index.drop(key)


class _OldestFirstState(OpenSandboxModel):
    """The listing is sorted oldest first."""

    def list(
        self, tenant: str, states: Iterable[str], metadata: dict[str, str], page: int, page_size: int
    ) -> dict[str, Any]:
        """List everything newest first, reverse it, then paginate."""
        items = super().list(tenant, states, metadata, 1, _ALL)["items"]
        return paginate(list(reversed(items)), page, page_size)


class _CaseSensitiveStateFilter(OpenSandboxModel):
    """The ``state`` filter compares case-sensitively."""

    def list(
        self, tenant: str, states: Iterable[str], metadata: dict[str, str], page: int, page_size: int
    ) -> dict[str, Any]:
        """Filter on the exact spelling."""
        wanted = set(states)
        items = super().list(tenant, [], metadata, 1, _ALL)["items"]
        return paginate([i for i in items if not wanted or i["status"]["state"] in wanted], page, page_size)


class _PauseWhilePausedState(OpenSandboxModel):
    """Pausing a paused sandbox succeeds instead of answering 409."""

    def pause(self, tenant: str, sandbox_id: str) -> None:
        """Accept a second pause silently."""
        if self.find(sandbox_id, tenant).state == "Paused":
            return
        super().pause(tenant, sandbox_id)


class _RenewIgnoredState(OpenSandboxModel):
    """Renew answers the new time but keeps the old expiry."""

    def renew(self, tenant: str, sandbox_id: str, expires_at: datetime) -> float:
        """Validate and answer, then forget."""
        sb = self.find(sandbox_id, tenant)
        old = sb.expires_at
        new = super().renew(tenant, sandbox_id, expires_at)
        sb.expires_at = old
        return new


class _NeverExpiresState(OpenSandboxModel):
    """Sandboxes outlive their ``expiresAt``."""

    def settle(self, sb: SandboxRecord, now: float) -> None:
        saved, sb.expires_at = sb.expires_at, None
        try:
            super().settle(sb, now)
        finally:
            sb.expires_at = saved


class PatchReplaces(MutantMock):
    """Egress ``PATCH /policy`` replaces the rule list instead of merging into it."""

    def egress_routes(self) -> list[BaseRoute]:
        """Serve PATCH as a replacement; everything else with the real sidecar routes."""
        real, *vault = egress_routes(EgressContext(self.config))
        assert isinstance(real, Route) and real.path == "/policy"
        enforcement = self.config.enforcement

        async def policy(request: Request) -> Response:
            if request.method != "PATCH":
                return await real.endpoint(request)
            sb = sandbox_of(request)
            try:
                rules = parse_rules(json.loads(await request.body()))
                if not rules:
                    raise PolicyError("invalid_rules", "request body must be a non-empty list of rules")
            except (ValueError, PolicyError) as exc:
                return PlainTextResponse(f"invalid policy: {exc}\n", status_code=400)
            current = sb.policy or NetworkPolicy()
            sb.policy = NetworkPolicy(current.effective_default, rules)
            return JSONResponse(status_body(sb, enforcement, with_policy=False))

        return [Route("/policy", policy, methods=["GET", "PATCH", "DELETE", "PUT"]), *vault]


class CreatePolicyIgnored(MutantMock):
    """The ``networkPolicy`` given at create is reported by the sidecar but not applied to traffic."""

    def make_runner(self, sb: SandboxRecord, gate: PolicyGate) -> Runner:
        """Bind a gate that skips the create-time policy (a PATCHed one applies)."""

        def current() -> NetworkPolicy | None:
            if not sb.has_sidecar or sb.policy is sb.spec.policy:
                return None
            return sb.policy

        return super().make_runner(sb, PolicyGate(current, self.dns, self.config.enforcement))


class _ZeroExit:
    """Run the emulator but report every exit as 0."""

    def __init__(self, inner: Runner) -> None:
        self.inner = inner

    def run(
        self, command: str | Sequence[str], *, env: Mapping[str, str], cwd: str, stdin: bytes = b""
    ) -> Iterator[Step]:
        """Yield the inner steps with ``Exit`` forced to 0."""
        for step in self.inner.run(command, env=env, cwd=cwd, stdin=stdin):
            yield Exit(0) if isinstance(step, Exit) else step


class ZeroExit(OpenSandboxMock):
    """Every command's exit is reported as 0."""

    def make_runner(self, sb: SandboxRecord, gate: PolicyGate) -> Runner:
        """Wrap the emulator's runner so that every ``Exit`` becomes 0."""
        return _ZeroExit(super().make_runner(sb, gate))


class RetryAfterDropped(MutantMock):
    """Injected 503s lose their ``Retry-After`` header."""

    def mutate(self, app: ASGIApp) -> ASGIApp:
        """Strip the header from 503 answers."""

        def strip(status: int, headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
            return [(k, v) for k, v in headers if status != 503 or k.lower() != b"retry-after"]

        return ResponseRewrite(app, lambda method, path: path.startswith("/v1/"), headers=strip)


class UncheckedVolumesAndPlatform(MutantMock):
    """Create never looks at ``volumes`` or ``platform``: bad ones are accepted (and a platform is not echoed)."""

    def mutate(self, app: ASGIApp) -> ASGIApp:
        """Drop both fields from create bodies before the mock reads them."""

        def drop(body: Any) -> Any:
            if isinstance(body, dict):
                body.pop("volumes", None)
                body.pop("platform", None)
            return body

        return RequestRewrite(app, lambda method, path: method == "POST" and path.rstrip("/") == "/v1/sandboxes", drop)


class NoRequestIdOnErrors(MutantMock):
    """Error answers of the lifecycle API carry no ``X-Request-ID``."""

    def mutate(self, app: ASGIApp) -> ASGIApp:
        """Strip the header from 4xx and 5xx answers."""

        def strip(status: int, headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
            return [(k, v) for k, v in headers if status < 400 or k.lower() != b"x-request-id"]

        return ResponseRewrite(app, lambda method, path: path.startswith("/v1/"), headers=strip)


class _DataPrefixedFrames:
    """Add ``data: `` before every frame of execd's command streams (a proxy 'normalising' SSE)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].endswith("/command"):
            await self.app(scope, receive, send)
            return
        streaming = False

        async def prefix(message: Message) -> None:
            nonlocal streaming
            if message["type"] == "http.response.start":
                streaming = any(k.lower() == b"content-type" and b"event-stream" in v for k, v in message["headers"])
            elif message["type"] == "http.response.body" and streaming and message.get("body"):
                frames = message["body"].split(b"\n\n")
                body = b"\n\n".join(b"data: " + f if f else f for f in frames)
                message = {**message, "body": body}
            await send(message)

        await self.app(scope, receive, prefix)


class DataPrefixedFrames(MutantMock):
    """execd's command stream reaches the client as ``data: {...}`` frames instead of bare JSON objects."""

    def mutate(self, app: ASGIApp) -> ASGIApp:
        """Prefix every frame."""
        return _DataPrefixedFrames(app)


class _PtyLookupWrongCode:
    """Answer ``GET .../44772/pty/{id}`` with 404 ``INVALID_REQUEST_BODY`` (the code of an unknown command)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and scope["method"] == "GET" and "/44772/pty/" in path:
            session = path.rsplit("/", 1)[-1]
            body = {"code": "INVALID_REQUEST_BODY", "message": f"pty session {session} not found"}
            sent = dict(scope.get("headers", [])).get(b"x-request-id", b"").decode("latin-1")
            headers = {"X-Request-ID": sent or uuid.uuid4().hex}
            await JSONResponse(body, status_code=404, headers=headers)(scope, receive, send)
            return
        await self.app(scope, receive, send)


class PtyLookupWrongCode(MutantMock):
    """A missing PTY session answers execd's 404 with the wrong code (INVALID_REQUEST_BODY, not CONTEXT_NOT_FOUND)."""

    def mutate(self, app: ASGIApp) -> ASGIApp:
        """Answer PTY lookups with the wrong code."""
        return _PtyLookupWrongCode(app)


class _StdoutOnly:
    """Run the emulator but drop what it writes to stderr."""

    def __init__(self, inner: Runner) -> None:
        self.inner = inner

    def run(
        self, command: str | Sequence[str], *, env: Mapping[str, str], cwd: str, stdin: bytes = b""
    ) -> Iterator[Step]:
        """Yield the inner steps without stderr output."""
        for step in self.inner.run(command, env=env, cwd=cwd, stdin=stdin):
            if not (isinstance(step, Output) and step.stream == "stderr"):
                yield step


class LogsStdoutOnly(OpenSandboxMock):
    """A command's stderr is lost: a background command's logs hold only its stdout."""

    def make_runner(self, sb: SandboxRecord, gate: PolicyGate) -> Runner:
        """Wrap the emulator's runner so that stderr output is dropped."""
        return _StdoutOnly(super().make_runner(sb, gate))


# --- the catalogue ------------------------------------------------------------------------------------


class _LeakingProxy(PortDispatcher):
    """A server proxy that drops only the hop-by-hop headers: the caller's credentials and its forwarding
    headers reach the sandbox's app as sent (what sandproof's proxy did before it followed the real server)."""

    def forwarded(self, scope: Scope) -> list[tuple[bytes, bytes]]:
        return [(k, v) for k, v in scope.get("headers") or [] if k.lower().decode("latin-1") not in CONNECTION_HEADERS]


class ProxyForwardsCredentials(OpenSandboxMock):
    """The server proxy passes Authorization, Cookie, the API key and spoofed X-Forwarded-* to the sandbox."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.proxy_app = _LeakingProxy(self.proxy_app.ctx, via_proxy=True)


@dataclass(frozen=True)
class MockMutant:
    """One wrong mock: what is wrong, which machine rules report it, and how to build it."""

    name: str
    defect: str
    caught_by: str
    killed_by: frozenset[str]
    build: Callable[[], OpenSandboxMock]
    contract: str = ""
    choice: str = ""

    def __call__(self) -> OpenSandboxMock:
        """Build a fresh instance of the wrong mock."""
        return self.build()


def _state_mutant(cls: type[OpenSandboxModel]) -> Callable[[], OpenSandboxMock]:
    return lambda: _with_state(OpenSandboxMock(), cls)


MOCK_MUTANTS: tuple[MockMutant, ...] = (
    MockMutant(
        "create-200",
        "create answers 200 instead of 202",
        "lifecycle",
        frozenset({"first_sandbox", "create"}),
        Create200,
        contract="lifecycle_answer",
    ),
    MockMutant(
        "null-expires-at",
        'a sandbox without expiry has "expiresAt": null instead of no key',
        "lifecycle",
        frozenset({"first_sandbox", "create", "get", "invariant", "list_sandboxes"}),
        NullExpiresAt,
        contract="sandbox_body",
    ),
    MockMutant(
        "deleted-still-listed",
        "deleted sandboxes stay in the listing",
        "lifecycle",
        frozenset({"invariant", "list_sandboxes"}),
        _state_mutant(_GhostState),
        contract="listing",
    ),
    MockMutant(
        "list-oldest-first",
        "the listing is oldest first",
        "lifecycle",
        frozenset({"invariant", "list_sandboxes"}),
        _state_mutant(_OldestFirstState),
        contract="listing",
    ),
    MockMutant(
        "state-filter-case-sensitive",
        "the state filter is case-sensitive",
        "lifecycle",
        frozenset({"list_sandboxes"}),
        _state_mutant(_CaseSensitiveStateFilter),
        contract="listing",
    ),
    MockMutant(
        "pause-while-paused",
        "pausing a paused sandbox answers 202 instead of 409",
        "pause-resume",
        frozenset({"pause"}),
        _state_mutant(_PauseWhilePausedState),
        contract="lifecycle_answer",
    ),
    MockMutant(
        "renew-ignored",
        "renew answers the new expiry but keeps the old one",
        "renew",
        frozenset({"invariant", "get", "renew"}),
        _state_mutant(_RenewIgnoredState),
        contract="listing",
    ),
    MockMutant(
        "never-expires",
        "sandboxes outlive their expiresAt",
        "expiry",
        frozenset({"invariant", "get", "renew", "list_sandboxes"}),
        _state_mutant(_NeverExpiresState),
        contract="listing",
    ),
    MockMutant(
        "patch-replaces",
        "egress PATCH replaces the rules instead of merging",
        "egress-policy",
        frozenset({"egress_patch", "egress_get", "egress_probe", "egress_delete"}),
        PatchReplaces,
        contract="egress_policy",
    ),
    MockMutant(
        "create-policy-ignored",
        "the networkPolicy given at create does not govern probes",
        "egress-policy",
        frozenset({"egress_probe"}),
        CreatePolicyIgnored,
        contract="egress_decision",
    ),
    MockMutant(
        "non-zero-exit-succeeds",
        "a non-zero exit is reported as success",
        "execd",
        frozenset({"run_command"}),
        ZeroExit,
        contract="command_result",
    ),
    MockMutant(
        "retry-after-dropped",
        "an injected 503 loses its Retry-After header",
        "faults",
        frozenset({"inject_fault"}),
        RetryAfterDropped,
        contract="admin_api",
        choice="fault injection is sandproof's own admin API: whether an injected fault keeps the headers it was given is sandproof's design, not the provider's",
    ),
    MockMutant(
        "volumes-and-platform-unchecked",
        "create accepts any volumes and platform",
        "lifecycle",
        frozenset({"first_sandbox", "create"}),
        UncheckedVolumesAndPlatform,
        contract="lifecycle_answer",
    ),
    MockMutant(
        "no-request-id-on-errors",
        "error answers carry no X-Request-ID",
        "lifecycle",
        frozenset(
            {
                "create",
                "get",
                "delete",
                "use_deleted",
                "list_sandboxes",
                "patch_metadata",
                "missing_sandbox",
                "pause",
                "resume",
            }
        ),
        NoRequestIdOnErrors,
        contract="request_id",
    ),
    MockMutant(
        "data-prefixed-frames",
        "execd's SSE frames carry a `data: ` prefix",
        "execd",
        frozenset({"run_command", "background_logs"}),
        DataPrefixedFrames,
        contract="execd_sse_framing",
    ),
    MockMutant(
        "pty-lookup-wrong-code",
        "a missing PTY session answers 404 INVALID_REQUEST_BODY instead of CONTEXT_NOT_FOUND",
        "execd",
        frozenset({"pty_missing"}),
        PtyLookupWrongCode,
        contract="pty_missing_code",
    ),
    MockMutant(
        "proxy-forwards-credentials",
        "the server proxy passes the caller's credentials and spoofed forwarding headers to the sandbox's app",
        "proxy-headers",
        frozenset({"proxy_headers"}),
        ProxyForwardsCredentials,
        contract="proxy_headers",
    ),
    MockMutant(
        "logs-stdout-only",
        "a background command's logs lose its stderr",
        "execd",
        frozenset({"background_logs"}),
        LogsStdoutOnly,
        contract="background_logs",
    ),
)

register_mutants("opensandbox-api", {m.name: m for m in MOCK_MUTANTS})
