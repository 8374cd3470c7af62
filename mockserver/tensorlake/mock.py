"""``TensorLakeMock``: the TensorLake sandbox API (lifecycle, proxy, management) on the shared mock core.

Start it with ``with TensorLakeMock().server() as server:`` and point the real SDK at it with
:func:`sdk_env`. Lifecycle calls, the sandbox proxy and the in-sandbox management API are all served
from the one socket; the Host header decides which (see :mod:`.ingress`).

Known deviations from the real service (see also the docstrings of :mod:`.models`, :mod:`.routes`,
:mod:`.ingress` and :mod:`.management`): no TLS, no regions, no pools, no PTY or tunnels; timings are
virtual and default to instant; DNS answers come from the mock's ``DnsTable``.
"""

from __future__ import annotations

import re
import secrets
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from mockserver.asgi.middleware import ADMIN_PREFIX
from mockserver.asgi.requests import read_json
from mockserver.core import environment
from mockserver.core.clock import VirtualClock
from mockserver.core.dns import DnsTable
from mockserver.core.environment import DEFAULT_API_KEY
from mockserver.core.errors import ApiError, json_object
from mockserver.core.faults import FaultRule
from mockserver.sandbox.commands import CommandEmulator
from mockserver.sandbox.network import HttpTable
from mockserver.sandbox.steps import Handler
from mockserver.service import HttpMock

from .gate import TensorLakeGate
from .ingress import Ingress, echo_app
from .management import ManagementApi, Runtime
from .models import CreateOutcome, TensorLakeModel, Timings
from .records import Sandbox, Session, owner_id
from .routes import LifecycleRoutes, is_loopback_host

DEFAULT_PORT = 8911
DEFAULT_INGRESS_DOMAIN = "sandbox.localhost"
DEFAULT_BUDGET_MS = 300_000
_SLASHES = re.compile(r"/{2,}")


def sdk_env(server_url: str, api_key: str = DEFAULT_API_KEY) -> dict[str, str]:
    """Return the environment that points the TensorLake SDK at a mock served at ``server_url``.

    Both URLs are set: ``TENSORLAKE_API_URL`` alone on a host that is neither localhost nor ``api.*``
    makes the SDK talk to the real cloud. ``NO_PROXY`` keeps loopback traffic off any proxy.
    """
    return environment.sdk_env("tensorlake", server_url, api_key)


class CollapseSlashes:
    """Collapse runs of ``/`` in the path (a trailing slash on ``api_url`` makes the SDK send ``//v1``)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] in ("http", "websocket") and "//" in path:
            clean = _SLASHES.sub("/", path)
            scope = {**scope, "path": clean, "raw_path": clean.encode("latin-1", "replace")}
        await self.app(scope, receive, send)


class TensorLakeMock(HttpMock):
    """A stateful, fault-injectable mock of the TensorLake sandbox API that the real SDK works against."""

    provider = "tensorlake"

    def __init__(
        self,
        seed: int | None = None,
        clock: VirtualClock | None = None,
        ingress_domain: str = DEFAULT_INGRESS_DOMAIN,
        *,
        dns: DnsTable | None = None,
        http: HttpTable | None = None,
        api_keys: Iterable[str] | None = None,
        journal_size: int = 10_000,
    ) -> None:
        super().__init__(clock=clock, seed=seed, dns=dns, journal_size=journal_size)
        domain = ingress_domain.strip().strip(".").lower()
        if not domain or "/" in domain or ":" in domain:
            raise ValueError(f"ingress_domain must be a bare host name, got {ingress_domain!r}")
        self.ingress_domain = domain
        self.http = http or HttpTable()
        self.model = TensorLakeModel(self.clock, self.ids, self.dns.resolve)
        self.model.on_terminate = self._on_terminate
        self.management = ManagementApi(self)
        self.lifecycle = LifecycleRoutes(self)
        self._port_apps: dict[tuple[str, int], ASGIApp] = {}
        self.commands: dict[str, Handler] = {}
        self.api_keys: frozenset[str] | None = None if api_keys is None else frozenset(api_keys)

    # -- MockCore hooks --------------------------------------------------------------------------

    def reset_state(self) -> None:
        """Forget every sandbox, snapshot, session, registered port app and pending create outcome."""
        for sandbox in list(self.model.sandboxes.values()):
            self._on_terminate(sandbox)
        self.model.reset()
        self.model.timings = Timings()
        self._port_apps.clear()

    def dump_state(self) -> dict[str, Any]:
        """Return sandboxes (with their filesystems), the archive, snapshots, sessions and timings."""
        return self.model.dump()

    def load_state(self, data: dict[str, Any]) -> None:
        """Replace the state with :meth:`dump_state` output."""
        self.model.load(data)

    def routes(self) -> list[BaseRoute]:
        """Return the lifecycle routes (both trees)."""
        return self.lifecycle.routes()

    def on_clock_advance(self) -> None:
        """Apply the transitions and timeouts that became due."""
        self.model.settle_all()

    def sandbox_summaries(self) -> list[dict[str, Any]]:
        """Return every tenant's live sandboxes for the dashboard: status, image, policy, exposed ports."""
        self.model.settle_all()
        with self.model.lock:
            return [
                {
                    "id": sb.id,
                    "state": sb.status,
                    "image": sb.image,
                    "policy": None if sb.network is None else sb.network.to_json(),
                    "ports": list(sb.exposed_ports),
                    "metadata": {} if sb.name is None else {"name": sb.name},
                    "created_at": sb.created_at,
                    "expires_at": None,
                    "details": {
                        "namespace": sb.namespace,
                        "resources": sb.resources.to_json(),
                        "timeout_secs": sb.timeout_secs,
                        "allow_unauthenticated_access": sb.allow_unauthenticated_access,
                        "pending_reason": sb.pending_reason,
                        "termination_reason": sb.termination_reason,
                    },
                }
                for sb in self.model.sandboxes.values()
            ]

    def build_app(self) -> ASGIApp:
        """Put the sandbox proxy in front of the admin and lifecycle routes, all inside faults and journal."""
        api = Starlette(routes=[*self.routes(), *self.admin_routes()], exception_handlers=self.exception_handlers())
        return self.wrap(CollapseSlashes(Ingress(self, api)))

    def extra_admin_routes(self) -> list[BaseRoute]:
        """Return the TensorLake admin routes under ``/_mock/tensorlake``."""
        p = f"{ADMIN_PREFIX}/tensorlake"
        return [
            Route(f"{p}/timings", self._admin_timings, methods=["GET", "POST"]),
            Route(f"{p}/sessions", self._admin_session, methods=["POST"]),
            Route(f"{p}/create-outcomes", self._admin_outcome, methods=["POST"]),
            Route(f"{p}/api-keys", self._admin_api_keys, methods=["GET", "PUT"]),
        ]

    def key_is_valid(self, key: str) -> bool:
        """Tell whether ``key`` is an API key the mock accepts (any key when ``api_keys`` is None)."""
        return self.api_keys is None or key in self.api_keys

    # -- test helpers ----------------------------------------------------------------------------

    def set_timings(self, **seconds: float) -> Timings:
        """Set how many virtual seconds transitions take (startup, suspend, resume, snapshot, resize)."""
        unknown = sorted(set(seconds) - set(vars(Timings())))
        if unknown:
            raise ValueError(f"unknown timing(s): {', '.join(unknown)}")
        for key, value in seconds.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"timing {key} must be a non-negative number")
            setattr(self.model.timings, key, float(value))
        return self.model.timings

    def create_session(
        self, api_key: str = DEFAULT_API_KEY, organization_id: str = "org_sandproof", project_id: str = "proj_sandproof"
    ) -> str:
        """Issue a browser session token (the ``tl.session_token`` cookie) for ``api_key``'s project."""
        token = secrets.token_urlsafe(24)
        with self.model.lock:
            self.model.sessions[token] = Session(token, owner_id(api_key), organization_id, project_id)
        return token

    def register_port_app(self, sandbox: str, port: int, app: ASGIApp) -> None:
        """Serve ``app`` (any ASGI app) on user ``port`` of a sandbox (id, or a name unique across tenants)."""
        if not 1 <= port <= 65535 or port == 9501:
            raise ValueError(f"port {port} is not a user port")
        found = self.model.find_any(sandbox)
        if found is None:
            raise KeyError(f"no live sandbox {sandbox!r}")
        self._port_apps[(found.id, port)] = app

    def port_app(self, sandbox_id: str, port: int) -> ASGIApp:
        """Return the app behind a user port (the echo app unless one was registered)."""
        return self._port_apps.get((sandbox_id, port), echo_app)

    def fail_next_create(
        self, reason: str = "ConfigurationError", *, status: int = 422, error_details: Any = None
    ) -> None:
        """Make the next create fail: the sandbox is recorded as ``failed`` and the failure payload returned."""
        self.model.outcomes.append(CreateOutcome("failed", status, reason, error_details))

    def time_out_next_create(self) -> None:
        """Make the next create answer ``504 {"status": "timeout"}`` and stay pending until released."""
        self.model.outcomes.append(CreateOutcome("timeout", 504))

    def release(self, sandbox: str) -> None:
        """Let a sandbox stuck pending (after :meth:`time_out_next_create`) start now."""
        found = self.model.find_any(sandbox)
        if found is None:
            raise KeyError(f"no live sandbox {sandbox!r}")
        self.model.release(found)

    def fail_next(
        self,
        method: str = "*",
        path: str = "*",
        status: int = 503,
        *,
        times: int = 1,
        code: str | None = None,
        body: Any = None,
        sandbox_id: str | None = None,
    ) -> FaultRule:
        """Answer the next ``times`` matching requests with ``status`` (a JSON ``{code, message}`` body)."""
        payload = body if body is not None else {"code": code or f"http_{status}", "message": "injected fault"}
        return self.faults.add(
            FaultRule(method=method, path=path, status=status, body=payload, times=times, sandbox_id=sandbox_id)
        )

    # -- used by routes, proxy and management ----------------------------------------------------

    def request_budget(self, request: Request) -> float:
        """Return the seconds a blocking call may take: the SDK's request timeout minus its grace."""
        timeout = request.headers.get("x-tensorlake-request-timeout-ms", "")
        grace = request.headers.get("x-tensorlake-request-timeout-grace-ms", "")
        total = int(timeout) if timeout.isascii() and timeout.isdigit() else DEFAULT_BUDGET_MS
        spare = int(grace) if grace.isascii() and grace.isdigit() else 0
        return max(0.0, (total - spare) / 1000)

    async def wait_until(self, deadline: float | None, budget: float) -> float:
        """Wait on the virtual clock until ``deadline`` (at most ``budget`` seconds); return the wait.

        A manual clock never blocks a request (time moves only when a test says so), and neither does
        a deadline of None (a sandbox held back until released).
        """
        if deadline is None or budget <= 0 or self.clock.mode == "manual":
            return 0.0
        span = min(deadline - self.clock.now(), budget)
        if span <= 0:
            return 0.0
        await self.clock.async_sleep(span, real_timeout=span + 1.0)
        return span

    def emulator_for(self, sandbox: Sandbox) -> CommandEmulator:
        """Return a command emulator for ``sandbox`` whose network goes through its policy gate."""
        gate = TensorLakeGate(sandbox, self.dns)
        return CommandEmulator(sandbox.fs, gate=gate, http=self.http, handlers=self.commands)

    def register_command(self, name: str, handler: Handler) -> None:
        """Add (or replace) a command every sandbox's emulator runs with ``handler``."""
        self.commands[name] = handler

    def runtime_of(self, sandbox: Sandbox) -> Runtime:
        """Return the daemon state of ``sandbox`` (created on first use)."""
        with self.model.lock:
            if not isinstance(sandbox.runtime, Runtime):
                sandbox.runtime = Runtime(self, sandbox)
            return sandbox.runtime

    def logs_of(self, sandbox: Sandbox) -> list[dict[str, Any]]:
        """Return the log entries of ``sandbox``, oldest first."""
        runtime = sandbox.runtime
        return list(runtime.logs) if isinstance(runtime, Runtime) else []

    def log_processes_of(self, sandbox: Sandbox) -> list[dict[str, Any]]:
        """Return one summary per process that wrote log lines."""
        runtime = sandbox.runtime
        if not isinstance(runtime, Runtime):
            return []
        grouped: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for entry in runtime.logs:
            grouped[entry["pid"]].append(entry)
        out = []
        for pid, entries in grouped.items():
            proc = runtime.processes.get(pid)
            out.append(
                {
                    "processId": str(pid),
                    "processPid": str(pid),
                    "processCommand": proc.command if proc else "",
                    "processManagedId": "",
                    "processManagedName": (proc.name or "") if proc else "",
                    "firstSeen": entries[0]["signal"]["timestamp"],
                    "lastSeen": entries[-1]["signal"]["timestamp"],
                    "logCount": len(entries),
                }
            )
        return out

    def _on_terminate(self, sandbox: Sandbox) -> None:
        if isinstance(sandbox.runtime, Runtime):
            sandbox.runtime.close()
        for key in [k for k in self._port_apps if k[0] == sandbox.id]:
            del self._port_apps[key]

    # -- admin routes ----------------------------------------------------------------------------

    async def _admin_timings(self, request: Request) -> Response:
        if request.method == "POST":
            body = json_object(await read_json(request))
            try:
                self.set_timings(**body)
            except (ValueError, TypeError) as exc:
                raise ApiError(400, "invalid_timings", str(exc)) from exc
        return JSONResponse(self.model.timings.to_json())

    async def _admin_api_keys(self, request: Request) -> Response:
        if request.method == "PUT":
            keys = json_object(await read_json(request)).get("api_keys")
            if keys is not None and (not isinstance(keys, list) or not all(isinstance(k, str) and k for k in keys)):
                raise ApiError(400, "invalid_api_keys", "api_keys must be a list of strings or null")
            self.api_keys = None if keys is None else frozenset(keys)
        return JSONResponse({"api_keys": None if self.api_keys is None else sorted(self.api_keys)})

    async def _admin_session(self, request: Request) -> Response:
        body = json_object(await read_json(request, empty={}))
        args = {k: body[k] for k in ("api_key", "organization_id", "project_id") if k in body}
        if not all(isinstance(v, str) and v for v in args.values()):
            raise ApiError(400, "invalid_session", "api_key, organization_id and project_id must be strings")
        return JSONResponse({"token": self.create_session(**args)}, status_code=201)

    async def _admin_outcome(self, request: Request) -> Response:
        body = json_object(await read_json(request))
        kind = body.get("kind")
        if kind == "timeout":
            self.time_out_next_create()
        elif kind == "failed":
            status = body.get("status", 422)
            if not isinstance(status, int) or not 400 <= status <= 599:
                raise ApiError(400, "invalid_outcome", "status must be an HTTP error status")
            self.fail_next_create(
                str(body.get("reason", "ConfigurationError")), status=status, error_details=body.get("error_details")
            )
        else:
            raise ApiError(400, "invalid_outcome", "kind must be 'failed' or 'timeout'")
        return JSONResponse({"queued": kind}, status_code=201)


__all__ = ["DEFAULT_API_KEY", "DEFAULT_PORT", "TensorLakeMock", "is_loopback_host", "sdk_env"]
