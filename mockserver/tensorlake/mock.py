"""``TensorLakeMock``: the TensorLake sandbox API (lifecycle, proxy, management) on the shared mock core.

Start it with ``with TensorLakeMock().server() as server:`` and point the real SDK at it with
:func:`sdk_env`. Lifecycle calls, the sandbox proxy and the in-sandbox management API are all served
from the one socket; the Host header decides which (see :mod:`.model.ingress`).

This module only composes: the rules are the model's (:mod:`.model`), the HTTP layer is :mod:`.routes`, and
commands run in the process runtime of :mod:`.processes`. The rest are the test helpers a test calls directly.

``runtime`` chooses what runs the sandboxes: ``"emulator"`` (the default: the command emulator over an
in-memory filesystem, see ``docs/emulator.md``) or ``"linux"`` (real programs in Linux namespaces, with
PTYs, tunnels, real ports behind the ingress and egress enforced by nftables; see ``docs/runtime.md`` and
:mod:`.linux_sandboxes`). ``"linux"`` raises :class:`~mockserver.linux.RuntimeUnavailable` at once, naming
what is missing, where it cannot run; :meth:`TensorLakeMock.close` releases its sandboxes.
``sandbox_limits`` are the linux sandboxes' default limits (:mod:`mockserver.linux.limits`; a sandbox's
``resources.memory_mb`` and ``resources.disk_mb`` override memory and disk).

Known deviations from the real service (see also the docstrings of :mod:`.model` and its modules): no TLS,
no regions, no pools; with the emulator no PTY or tunnels; timings are virtual and default to instant; DNS
answers come from the mock's ``DnsTable``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from starlette.routing import BaseRoute
from starlette.types import ASGIApp

from mockserver.asgi.routing import OnFirstCall, indexed_app
from mockserver.core import environment
from mockserver.core.capacity import Capacity
from mockserver.core.changes import Persistent
from mockserver.core.clock import VirtualClock
from mockserver.core.dns import DnsTable
from mockserver.core.environment import DEFAULT_API_KEY
from mockserver.core.faults import FaultRule
from mockserver.sandbox.network import HttpTable
from mockserver.service import HttpMock

from .model import admin
from .model.admin import DEFAULT_ORGANIZATION, DEFAULT_PROJECT
from .model.auth import KeyRing
from .model.egress import TensorLakeGate
from .model.ingress import IngressRules
from .model.operations import TensorLakeModel
from .model.records import Sandbox
from .model.store import Timings
from .model.urls import DEFAULT_INGRESS_DOMAIN
from .routes.admin import AdminContext, admin_routes, new_session_token
from .routes.common import CollapseSlashes
from .routes.echo import sandbox_echo
from .routes.gate import RequestGate
from .routes.ingress import Ingress, IngressContext

if TYPE_CHECKING:
    from mockserver.admin.catalogue import NamedFault
    from mockserver.linux import SandboxLimits
    from mockserver.sandbox.commands import CommandEmulator
    from mockserver.sandbox.steps import Handler

    from .execution import ProcessRuntime
    from .faults import TensorLakeFaults
    from .linux_sandboxes import LinuxSandboxes

__all__ = ["DEFAULT_API_KEY", "DEFAULT_INGRESS_DOMAIN", "DEFAULT_PORT", "RUNTIMES", "TensorLakeMock", "sdk_env"]

#: What can run the sandboxes (see the module docstring).
RUNTIMES = ("emulator", "linux")
RuntimeName = Literal["emulator", "linux"]

DEFAULT_PORT = 8911


def sdk_env(server_url: str, api_key: str = DEFAULT_API_KEY) -> dict[str, str]:
    """Return the environment that points the TensorLake SDK at a mock served at ``server_url``.

    Both URLs are set: ``TENSORLAKE_API_URL`` alone on a host that is neither localhost nor ``api.*``
    makes the SDK talk to the real cloud. ``NO_PROXY`` keeps loopback traffic off any proxy.
    """
    return environment.sdk_env("tensorlake", server_url, api_key)


class TensorLakeMock(HttpMock):
    """A stateful, fault-injectable mock of the TensorLake sandbox API that the real SDK works against.

    ``capacity`` caps the live sandboxes (a :class:`~mockserver.core.capacity.Capacity`, possibly shared with
    the server's other mock): a create past it answers 422 with the failure payload, ``no_capacity``.
    """

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
        runtime: RuntimeName = "emulator",
        capacity: Capacity | None = None,
        sandbox_limits: SandboxLimits | None = None,
    ) -> None:
        if runtime not in RUNTIMES:
            raise ValueError(f"runtime must be one of {', '.join(RUNTIMES)}, got {runtime!r}")
        if runtime == "linux":
            from mockserver.linux import require

            require()  # fail at once, naming what is missing
        super().__init__(clock=clock, seed=seed, dns=dns, journal_size=journal_size)
        domain = ingress_domain.strip().strip(".").lower()
        if not domain or "/" in domain or ":" in domain:
            raise ValueError(f"ingress_domain must be a bare host name, got {ingress_domain!r}")
        self.ingress_domain = domain
        self.http = http or HttpTable()
        self.commands: dict[str, Handler] = {}
        self._port_apps: dict[tuple[str, int], ASGIApp] = {}
        self.model = self.new_model(KeyRing.of(api_keys))
        self.model.domain = domain
        self.model.on_terminate = self._on_terminate
        self.capacity = capacity or Capacity()
        self.model.use_capacity(self.capacity)
        self.runtime_name: RuntimeName = runtime
        self.linux: LinuxSandboxes | None = None
        if runtime == "linux":
            from mockserver.linux.fdlimit import has_room

            from .linux_sandboxes import LinuxSandboxes

            self.capacity.set_room(has_room)
            self.linux = LinuxSandboxes(self.dns, self.model.sandboxes.get, sandbox_limits)
            self.linux.follow_clock(self.clock)
            self.model.filesystems = self.linux
            self.model.on_change = self.linux.reconcile
        self.ingress = IngressRules(self.model)

    @property
    def catalogue(self) -> TensorLakeFaults:
        """Return the named fault catalogue (also served under ``/_mock/faults/catalogue``)."""
        from .faults import TensorLakeFaults  # loaded on first use: a start that arms no fault never needs it

        return TensorLakeFaults(self)

    def named_faults(self) -> Mapping[str, NamedFault]:
        """Return the named faults by name."""
        return self.catalogue.named()

    def new_model(self, keys: KeyRing) -> TensorLakeModel:
        """Return the state model this mock serves."""
        return TensorLakeModel(self.clock, self.ids, self.dns.resolve, keys)

    def new_gate(self, sandbox: Sandbox) -> TensorLakeGate:
        """Return the egress gate a sandbox's commands go through."""
        return TensorLakeGate(sandbox, self.dns)

    # -- MockCore hooks --------------------------------------------------------------------------

    def reset_state(self) -> None:
        """Forget every sandbox, snapshot, session, registered port app and pending create outcome."""
        self.model.reset()
        self._port_apps.clear()
        if self.linux is not None:
            self.linux.clear()

    def close(self) -> None:
        """Release the runtime's sandboxes (the linux runtime's namespaces, processes and files); idempotent."""
        if self.linux is not None:
            self.linux.close()

    def dump_state(self) -> dict[str, Any]:
        """Return sandboxes (with their filesystems), the archive, snapshots, sessions and timings."""
        return self.model.dump()

    def load_state(self, data: dict[str, Any]) -> None:
        """Replace the state with :meth:`dump_state` output."""
        self.model.load(data)

    def persistent(self) -> Persistent:
        """Return the model store a durable store keeps record by record."""
        return self.model

    def on_clock_advance(self) -> None:
        """Apply the transitions and timeouts that became due."""
        self.model.settle_all()

    # -- composition -----------------------------------------------------------------------------

    def routes(self) -> list[BaseRoute]:
        """Return the lifecycle routes (both trees); their module loads with them, on the first request past
        ``/_mock`` (see :meth:`build_app`)."""
        from .routes.lifecycle import LifecycleContext, lifecycle_routes

        return lifecycle_routes(LifecycleContext(self.model, self.clock))

    def sandbox_summaries(self) -> list[dict[str, Any]]:
        """Return every tenant's live sandboxes for the dashboard (see :func:`admin.sandbox_summaries`)."""
        return admin.sandbox_summaries(self.model)

    def extra_admin_routes(self) -> list[BaseRoute]:
        """Return the TensorLake admin routes under ``/_mock/tensorlake``."""
        return admin_routes(AdminContext(self.model))

    @functools.cached_property
    def runtime(self) -> ProcessRuntime:
        """Return the process runtime the management API runs commands in (built on first use)."""
        if self.linux is not None:
            from mockserver.runtime.linux import LinuxBackend

            from .linux_runtime import LinuxProcessRuntime

            return LinuxProcessRuntime(self.clock, LinuxBackend(self.linux.ensure_async))
        from .processes import EmulatorRuntime

        return EmulatorRuntime(self.clock, self.emulator_for)

    def management_app(self) -> ASGIApp:
        """Return the in-sandbox management API's app."""
        from .routes.management import ManagementContext, management_app

        return management_app(ManagementContext(self.model, self.runtime, self.clock))

    def front_door(self, fallback: ASGIApp) -> ASGIApp:
        """Return the sandbox proxy in front of ``fallback``; the management API is built on its first request."""
        prepare = self.linux.ensure_async if self.linux is not None else None
        context = IngressContext(
            self.ingress, self.ingress_domain, self.clock, OnFirstCall(self.management_app), self.port_app, prepare
        )
        return Ingress(context, fallback)

    def build_app(self) -> ASGIApp:
        """Put the sandbox proxy in front of the lifecycle gate (the API-key check, :mod:`.routes.gate`) and the
        admin and lifecycle routes behind it, all inside faults and journal.

        The lifecycle routes are built when a request first goes past the admin routes (their order does not
        matter: every admin path is under ``/_mock``, where no lifecycle route reaches).
        """
        api = indexed_app(self.admin_routes(), self.exception_handlers(), later=self.routes)
        return self.wrap(CollapseSlashes(self.front_door(RequestGate(api, self.model))))

    def emulator_for(self, sandbox: Sandbox) -> CommandEmulator:
        """Return a command emulator for ``sandbox`` whose network goes through its policy gate."""
        from mockserver.sandbox.commands import CommandEmulator

        return CommandEmulator(sandbox.fs, gate=self.new_gate(sandbox), http=self.http, handlers=self.commands)

    def _on_terminate(self, sandbox: Sandbox) -> None:
        if "runtime" in self.__dict__:  # no runtime yet: no process ran
            self.runtime.close(sandbox.id)
        if self.linux is not None:
            self.linux.forget(sandbox.id)
        for key in [k for k in self._port_apps if k[0] == sandbox.id]:
            del self._port_apps[key]

    # -- test helpers ----------------------------------------------------------------------------

    @property
    def api_keys(self) -> frozenset[str] | None:
        """Return the accepted API keys (None: any key, each its own project)."""
        return self.model.keys.keys

    @api_keys.setter
    def api_keys(self, keys: Iterable[str] | None) -> None:
        self.model.keys = KeyRing.of(keys)

    def pinned_keys(self) -> list[str] | None:
        """Return the accepted API keys (None: any key)."""
        keys = self.model.keys.keys
        return None if keys is None else sorted(keys)

    def key_is_valid(self, key: str) -> bool:
        """Tell whether ``key`` is an API key the mock accepts (any key when ``api_keys`` is None)."""
        return self.model.keys.accepts(key)

    def set_timings(self, **seconds: float) -> Timings:
        """Set how many virtual seconds transitions take (startup, suspend, resume, snapshot, resize)."""
        self.model.timings = admin.timings_from(self.model.timings, dict(seconds))
        return self.model.timings

    def create_session(
        self,
        api_key: str = DEFAULT_API_KEY,
        organization_id: str = DEFAULT_ORGANIZATION,
        project_id: str = DEFAULT_PROJECT,
    ) -> str:
        """Issue a browser session token (the ``tl.session_token`` cookie) for ``api_key``'s project."""
        body = {"api_key": api_key, "organization_id": organization_id, "project_id": project_id}
        return admin.create_session(self.model, new_session_token(), body).token

    def register_command(self, name: str, handler: Handler) -> None:
        """Add (or replace) a command every sandbox's emulator runs with ``handler`` (the emulator only)."""
        self.commands[name] = handler

    def register_port_app(self, sandbox: str, port: int, app: ASGIApp) -> None:
        """Serve ``app`` (any ASGI app) on user ``port`` of a sandbox (id, or a name unique across tenants)."""
        if not 1 <= port <= 65535 or port == 9501:
            raise ValueError(f"port {port} is not a user port")
        found = self.model.find_any(sandbox)
        if found is None:
            raise KeyError(f"no live sandbox {sandbox!r}")
        self._port_apps[(found.id, port)] = app

    def port_app(self, sandbox_id: str, port: int) -> ASGIApp:
        """Return the app behind a user port: a registered one, else the sandbox's real port (linux), else echo."""
        registered = self._port_apps.get((sandbox_id, port))
        if registered is not None:
            return registered
        record = self.model.sandboxes.get(sandbox_id)
        if self.linux is not None and record is not None:
            return self.linux.port_app(record, port)
        return sandbox_echo

    def fail_next_create(
        self, reason: str = "ConfigurationError", *, status: int = 422, error_details: Any = None
    ) -> None:
        """Make the next create fail: the sandbox is recorded as ``failed`` and the failure payload returned."""
        body = {"kind": "failed", "reason": reason, "status": status, "error_details": error_details}
        admin.queue_outcome(self.model, body)

    def time_out_next_create(self) -> None:
        """Make the next create answer ``504 {"status": "timeout"}`` and stay pending until released."""
        admin.queue_outcome(self.model, {"kind": "timeout"})

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
