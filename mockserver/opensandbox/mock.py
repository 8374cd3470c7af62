"""``OpenSandboxMock``: the lifecycle server, every sandbox's execd and egress sidecar in one ASGI app.

Sandbox ports are reachable two ways, both served by this same app, so one transport or one
socket serves everything:

* directly, at the endpoint ``{host}/direct/{sandbox_id}/{port}`` the lifecycle API hands out
  (scheme-less, as the real server does);
* through the server proxy ``{host}/v1/sandboxes/{sandbox_id}/proxy/{port}`` (``use_server_proxy``).

Known deviations: a direct request to a sandbox that is not running answers 502 ``Bad Gateway``
(text) at once, where a real paused container would hang and a deleted one refuse the connection;
ports other than 44772 and 18080 have no service (502).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route, Router
from starlette.types import ASGIApp, Receive, Scope, Send

from mockserver.asgi.middleware import notes
from mockserver.asgi.render import error_response
from mockserver.asgi.requests import read_json
from mockserver.core import ApiError, DnsTable, VirtualClock, environment, json_object
from mockserver.sandbox import CommandEmulator
from mockserver.sandbox.network import HttpTable
from mockserver.service import HttpMock

from .commands import Runner
from .egress import EGRESS_AUTH_HEADER, EgressRoutes, PolicyGate
from .execd import ExecdRoutes
from .faults import FaultCatalogue
from .files import FileRoutes
from .lifecycle import DIRECT_PREFIX, TENANT_KEY, LifecycleGate, LifecycleRoutes
from .models import OpenSandboxState, SandboxRecord
from .profiles import EGRESS_PORT, EXECD_PORT, ProfileName, make_profile
from .validation import RequestValidationError

SANDBOX_KEY = "opensandbox_sandbox"
DEFAULT_HOST = "127.0.0.1:8080"
RunnerFactory = Callable[[SandboxRecord, PolicyGate], Runner]


def emulator_runner(sb: SandboxRecord, gate: PolicyGate, http: HttpTable | None = None) -> Runner:
    """Bind the shared command emulator to a sandbox's filesystem and egress gate."""
    return CommandEmulator(sb.fs, gate=gate, http=http or HttpTable())


class OpenSandboxMock(HttpMock):
    """A faithful in-memory OpenSandbox 1.1.1 server (lifecycle, execd, egress sidecar).

    ``api_key``: None turns auth off; a string is the single-tenant key; a mapping of key to tenant
    name is multi-tenant (each tenant sees only its sandboxes). ``profile`` is ``"docker"`` (default,
    synchronous) or ``"kubernetes"`` (Pending for ``pending_seconds``, visible Pausing/Resuming).
    ``execd_token`` / ``egress_token`` make the endpoints carry and require access headers.
    ``enforcement_mode`` is the sidecar's ``dns`` (names only) or ``dns+nft`` (also raw IPs).
    ``runner_factory`` replaces the shared command emulator.
    """

    provider = "opensandbox"

    def __init__(
        self,
        seed: int | None = None,
        clock: VirtualClock | None = None,
        api_key: str | Mapping[str, str] | None = None,
        profile: ProfileName = "docker",
        *,
        pending_seconds: float | None = None,
        pause_seconds: float | None = None,
        resume_seconds: float | None = None,
        stop_seconds: float | None = None,
        snapshot_seconds: float = 0.0,
        egress_without_policy: bool = False,
        execd_token: str | None = None,
        egress_token: str | None = None,
        enforcement_mode: str = "dns",
        dns: DnsTable | None = None,
        http: HttpTable | None = None,
        runner_factory: RunnerFactory | None = None,
    ) -> None:
        super().__init__(clock=clock, seed=seed, dns=dns)
        if enforcement_mode not in ("dns", "dns+nft"):
            raise ValueError("enforcement_mode must be 'dns' or 'dns+nft'")
        if isinstance(api_key, str):
            self.keys: dict[str, str] = {api_key: "default"}
        else:
            self.keys = dict(api_key or {})
        self.profile = make_profile(
            profile,
            pending_seconds=pending_seconds,
            pause_seconds=pause_seconds,
            resume_seconds=resume_seconds,
            stop_seconds=stop_seconds,
        )
        self.state = OpenSandboxState(self.profile, self.clock, self.ids)
        self.state.egress_without_policy = egress_without_policy
        self.snapshot_seconds = snapshot_seconds
        self.execd_token = execd_token
        self.egress_token = egress_token
        self.enforcement_mode = enforcement_mode
        self.http = http or HttpTable()
        self.default_host = DEFAULT_HOST
        self._runner_factory = runner_factory
        self._runners: dict[str, Runner] = {}
        self.catalogue = FaultCatalogue(self)
        self.proxy_app = PortDispatcher(self, via_proxy=True)
        self.direct_app = PortDispatcher(self, via_proxy=False)
        execd = ExecdRoutes(self, self.sandbox_of)
        self.execd = execd
        self.execd_router = Router(routes=[*execd.routes(), *FileRoutes(self.sandbox_of).routes()])
        self.egress_router = Router(routes=EgressRoutes(self.sandbox_of, enforcement_mode, egress_token).routes())

    # -- HttpMock hooks ----------------------------------------------------------------------------

    def reset_state(self) -> None:
        """Forget every sandbox, snapshot and telemetry event."""
        self.state.clear()
        self._runners.clear()

    def dump_state(self) -> dict[str, Any]:
        """Return the sandboxes (with filesystems), snapshots and events as JSON."""
        return self.state.dump()

    def load_state(self, data: dict[str, Any]) -> None:
        """Replace the state with :meth:`dump_state` output."""
        self.state.load(data)
        self._runners.clear()

    def routes(self) -> list[BaseRoute]:
        """Return the lifecycle routes and the direct sandbox-port mount."""
        direct = Mount(f"{DIRECT_PREFIX}/{{sandbox_id}}/{{port:int}}", app=self.direct_app)
        # The sandbox port's own server sees any path; Starlette's mount remainder would stop at a newline.
        direct.path_regex = re.compile(direct.path_regex.pattern, re.DOTALL)
        return [direct, *LifecycleRoutes(self).routes()]

    def extra_admin_routes(self) -> list[BaseRoute]:
        """Return ``/_mock/opensandbox/...`` helpers (OOM-kill, fail, state)."""
        p = "/_mock/opensandbox"
        return [
            Route(f"{p}/sandboxes/{{sandbox_id}}/oom", self._admin_oom, methods=["POST"]),
            Route(f"{p}/sandboxes/{{sandbox_id}}/fail", self._admin_fail, methods=["POST"]),
        ]

    def on_clock_advance(self) -> None:
        """Finish due transitions and expire sandboxes."""
        self.state.refresh()

    def exception_handlers(self) -> dict[Any, Any]:
        """Render flat errors, FastAPI-style 422s, and ``{"detail"}`` for unknown routes."""
        return {
            ApiError: _api_error,
            RequestValidationError: _validation_error,
            404: _not_found,
            405: _not_allowed,
        }

    def wrap(self, app: ASGIApp) -> ASGIApp:
        """Put the request-id and auth layer outside the core's fault and journal layers."""
        return LifecycleGate(super().wrap(app), self.keys, lambda: self.ids.uuid4().replace("-", ""))

    # -- helpers for the routes --------------------------------------------------------------------

    def sandbox_of(self, request: Request) -> SandboxRecord:
        """Return the sandbox the port dispatcher resolved for this request."""
        sb = request.scope.get("state", {}).get(SANDBOX_KEY)
        if not isinstance(sb, SandboxRecord):
            raise ApiError(500, "RUNTIME_ERROR", "no sandbox in scope")
        return sb

    def runner_for(self, sb: SandboxRecord) -> Runner:
        """Return the command runner of a sandbox (its egress obeys the sandbox's current policy)."""
        runner = self._runners.get(sb.id)
        if runner is None:
            gate = PolicyGate(lambda: sb.policy if sb.has_sidecar else None, self.dns, self.enforcement_mode)
            factory = self._runner_factory
            runner = factory(sb, gate) if factory is not None else emulator_runner(sb, gate, self.http)
            self._runners[sb.id] = runner
        return runner

    def endpoint_headers(self, port: int) -> dict[str, str]:
        """Return the headers an endpoint tells clients to send to that port."""
        if port == EXECD_PORT and self.execd_token:
            return {"X-EXECD-ACCESS-TOKEN": self.execd_token}
        if port == EGRESS_PORT and self.egress_token:
            return {EGRESS_AUTH_HEADER: self.egress_token}
        return {}

    def require_pod_ip(self, sb: SandboxRecord) -> None:
        """Raise the Kubernetes 404 while a sandbox has no pod IP yet."""
        if sb.state == "Pending":
            raise ApiError(
                404, "KUBERNETES::POD_IP_NOT_AVAILABLE", "Pod IP is not yet available. The Pod may still be starting."
            )

    def backend_address(self, port: int) -> str:
        """Return the backend address the server proxy would dial."""
        return f"127.0.0.1:{port}"

    def backend_unreachable(self, request: Request) -> Response:
        """Answer as the path in front of a dead sandbox does: proxy JSON 502, or execd-proxy text 502."""
        port = int(request.scope.get("path_params", {}).get("port", EXECD_PORT))
        if request.scope.get("state", {}).get("opensandbox_via_proxy"):
            return JSONResponse(
                {
                    "code": "BACKEND_CONNECTION_FAILED",
                    "message": f"Could not connect to the backend sandbox {self.backend_address(port)}: "
                    "All connection attempts failed",
                },
                status_code=502,
            )
        return PlainTextResponse("Bad Gateway", status_code=502)

    # -- conveniences for tests ------------------------------------------------------------------

    def sandbox(self, sandbox_id: str) -> SandboxRecord:
        """Return a live sandbox by id (any tenant); raise KeyError when there is none."""
        sb = self.state.lookup(sandbox_id)
        if sb is None:
            raise KeyError(sandbox_id)
        return sb

    def sandbox_ids(self, **metadata: str) -> list[str]:
        """Return the ids of live sandboxes whose metadata contains every given pair."""
        self.state.refresh()
        with self.state.lock:
            return [
                sb.id
                for sb in self.state.sandboxes.values()
                if all(sb.spec.metadata.get(k) == v for k, v in metadata.items())
            ]

    def oom_kill(self, sandbox_id: str) -> None:
        """Mark a sandbox Failed as an OOM kill (exit 137) now."""
        self.state.fail(sandbox_id, *self.profile.oom_status())

    def sdk_env(self, url: str | None = None) -> dict[str, str]:
        """Return the environment that points the SDK's defaults at this mock."""
        return environment.sdk_env("opensandbox", url or f"http://{DEFAULT_HOST}", next(iter(self.keys), None))

    def connection_config(self, url: str | None = None, *, in_process: bool = False, **options: Any) -> Any:
        """Return an ``opensandbox.ConnectionConfig`` for this mock (over ``url``, or in process)."""
        from opensandbox.config import ConnectionConfig

        kwargs: dict[str, Any] = {"domain": _domain(url), "disable_metrics": True}
        if self.keys:
            kwargs["api_key"] = next(iter(self.keys))
        if in_process:
            kwargs["transport"] = self.transport()
        kwargs.update(options)
        return ConnectionConfig(**kwargs)

    # -- admin -------------------------------------------------------------------------------------

    async def _admin_oom(self, request: Request) -> Response:
        sandbox_id = request.path_params["sandbox_id"]
        body = json_object(await read_json(request, empty={}))
        sb = self.state.lookup(sandbox_id)
        if sb is None:
            raise ApiError(404, "sandbox_not_found", f"no sandbox {sandbox_id}")
        if body.get("on_next_exec"):
            sb.oom_on_next_exec = True
        else:
            self.oom_kill(sandbox_id)
        return JSONResponse(sb.to_json())

    async def _admin_fail(self, request: Request) -> Response:
        sandbox_id = request.path_params["sandbox_id"]
        body = json_object(await read_json(request, empty={}))
        reason = body.get("reason", "CONTAINER_EXITED_ERROR")
        message = body.get("message", "Sandbox container exited with code 1.")
        if not isinstance(reason, str) or not isinstance(message, str):
            raise ApiError(400, "invalid_type", "reason and message must be strings")
        if self.state.lookup(sandbox_id) is None:
            raise ApiError(404, "sandbox_not_found", f"no sandbox {sandbox_id}")
        self.state.fail(sandbox_id, reason, message)
        return JSONResponse(self.sandbox(sandbox_id).to_json())


class PortDispatcher:
    """Route a request for ``/{sandbox_id}/{port}/...`` to that sandbox's execd or egress sidecar."""

    def __init__(self, mock: OpenSandboxMock, *, via_proxy: bool) -> None:
        self.mock = mock
        self.via_proxy = via_proxy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        params = scope.get("path_params", {})
        sandbox_id, port = str(params["sandbox_id"]), int(params["port"])
        state: dict[str, Any] = scope.setdefault("state", {})
        state["opensandbox_via_proxy"] = self.via_proxy
        request = Request(scope, receive)
        notes(scope).sandbox_id = sandbox_id
        response = self._gate(request, sandbox_id, port)
        if response is not None:
            await response(scope, receive, send)
            return
        if port == EXECD_PORT:
            denied = self.mock.execd.check_token(request)
            if denied is not None:
                await denied(scope, receive, send)
                return
            await self.mock.execd_router(scope, receive, send)
        else:
            await self.mock.egress_router(scope, receive, send)

    def _gate(self, request: Request, sandbox_id: str, port: int) -> Response | None:
        mock = self.mock
        tenant = request.scope["state"].get(TENANT_KEY) if len(mock.keys) > 1 else None
        sb = mock.state.lookup(sandbox_id)
        if sb is None or (tenant is not None and sb.tenant != tenant):
            if self.via_proxy:
                return _api_error_response(
                    ApiError(404, mock.profile.not_found_code, f"Sandbox {sandbox_id} not found.")
                )
            return PlainTextResponse("Bad Gateway", status_code=502)
        if self.via_proxy and sb.state == "Pending":
            try:
                mock.require_pod_ip(sb)
            except ApiError as exc:
                return _api_error_response(exc)
        serves = port == EXECD_PORT or (port == EGRESS_PORT and sb.has_sidecar)
        if sb.state != "Running" or not serves:
            return mock.backend_unreachable(request)
        request.scope["state"][SANDBOX_KEY] = sb
        return None


def _domain(url: str | None) -> str:
    if not url:
        return DEFAULT_HOST
    return url.split("://", 1)[-1].rstrip("/")


def _api_error_response(exc: ApiError) -> Response:
    return error_response(exc)


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc)


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    return exc.response()


async def _not_found(request: Request, exc: Exception) -> Response:
    return JSONResponse({"detail": "Not Found"}, status_code=404)


async def _not_allowed(request: Request, exc: Exception) -> Response:
    return JSONResponse({"detail": "Method Not Allowed"}, status_code=405)
