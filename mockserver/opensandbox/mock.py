"""``OpenSandboxMock``: the lifecycle server, every sandbox's execd and egress sidecar in one ASGI app.

This module only composes: the rules are the model's (:mod:`.model`), the HTTP face is :mod:`.routes`, the
command runtime is :mod:`.commands` and the named faults are :mod:`.faults`. Sandbox ports are reachable
two ways, both served by this same app, so one transport or one socket serves everything:

* directly, at the endpoint ``{host}/direct/{sandbox_id}/{port}`` the lifecycle API hands out
  (scheme-less, as the real server does);
* through the server proxy ``{host}/v1/sandboxes/{sandbox_id}/proxy/{port}`` (``use_server_proxy``), which
  passes on the request's headers cleaned as the real server cleans them (:mod:`.model.forwarding`: no
  credentials, ``X-Forwarded-*`` rebuilt from the connection).

With the emulator, ports other than execd's and the sidecar's are served by an echo app (:mod:`.routes.echo`)
that answers what reached the sandbox.

``runtime`` chooses what runs the sandboxes: ``"emulator"`` (the default: the shared command emulator over
an in-memory filesystem) or ``"linux"`` (real processes in Linux namespaces: execd's commands, bash
sessions, code contexts, PTY sessions, files and metrics on the real sandbox, every other port reaching the
sandbox's own services, the egress policy enforced by nftables in the sidecar's mode; see
``docs/runtime.md`` and :mod:`.linux_sandboxes`). ``"linux"`` raises
:class:`~mockserver.linux.RuntimeUnavailable` at once where it cannot run; :meth:`OpenSandboxMock.close`
releases its sandboxes.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from starlette.routing import BaseRoute, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mockserver.asgi.routing import OnFirstCall
from mockserver.core import DnsTable, VirtualClock, environment
from mockserver.core.capacity import Capacity
from mockserver.core.changes import Persistent
from mockserver.sandbox.network import HttpTable
from mockserver.service import HttpMock

from .model import admin as admin_model
from .model import faults as model_faults
from .model.auth import DIRECT_PREFIX, KeyOption, KeyTable
from .model.config import DEFAULT_HOST, ServerConfig
from .model.egress import PolicyGate
from .model.operations import OpenSandboxModel
from .model.profiles import EGRESS_PORT, EXECD_PORT, ProfileName, make_profile
from .model.records import SandboxRecord
from .routes import admin
from .routes.echo import sandbox_echo
from .routes.gate import RequestGate
from .routes.render import SANDBOX_KEY, exception_handlers

if TYPE_CHECKING:
    from mockserver.admin.catalogue import NamedFault
    from mockserver.asgi.host_ports import HostPortListeners
    from mockserver.linux import SandboxLimits
    from mockserver.runtime.emulator import Runner

    from .commands import CommandRuntime, RunnerFactory
    from .execution import Execd
    from .faults import OpenSandboxFaults
    from .linux_sandboxes import LinuxSandboxes
    from .model.endpoints import PublishedPort
    from .model.server_file import ServerFile
    from .routes.ports import PortDispatcher

__all__ = ["RUNTIMES", "OpenSandboxMock"]

#: What can run the sandboxes (see the module docstring).
RUNTIMES = ("emulator", "linux")
RuntimeName = Literal["emulator", "linux"]


def _echo_port(sb: SandboxRecord, port: int) -> ASGIApp:
    """Return the emulator's app for a sandbox's own port: the echo app."""
    return sandbox_echo


def _prepared(linux: LinuxSandboxes, service: ASGIApp) -> ASGIApp:
    """Wrap a port's service so that the admitted sandbox's real sandbox exists before it answers."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        record = (scope.get("state") or {}).get(SANDBOX_KEY)
        if isinstance(record, SandboxRecord) and record.state == "Running":
            await linux.ensure_async(record)
        await service(scope, receive, send)

    return app


def _in_step(linux: LinuxSandboxes, app: ASGIApp) -> ASGIApp:
    """Wrap the whole app: reconcile the real sandboxes before every HTTP answer starts (and after every WebSocket)."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            try:
                await app(scope, receive, send)
            finally:
                linux.reconcile()
            return

        async def send_in_step(message: Message) -> None:
            if message["type"] == "http.response.start":
                linux.reconcile()
            await send(message)

        await app(scope, receive, send_in_step)

    return wrapped


class OpenSandboxMock(HttpMock):
    """A faithful in-memory OpenSandbox 1.1.1 server (lifecycle, execd, egress sidecar).

    ``api_key``: None turns auth off; a string is the single-tenant key; a mapping of key to tenant name is
    multi-tenant (each tenant sees only its sandboxes); :data:`~.model.auth.ANY_KEY` accepts any non-empty
    key, each key its own tenant. ``profile`` is ``"docker"`` (default, synchronous) or ``"kubernetes"``
    (Pending for ``pending_seconds``, visible Pausing/Resuming). ``execd_token`` / ``egress_token`` make the
    endpoints carry and require access headers. ``enforcement_mode`` is the sidecar's ``dns`` (names only)
    or ``dns+nft`` (also raw IPs). ``allowed_host_paths`` are the prefixes host volumes may mount (none, as
    the real server's default). ``egress_image=False`` is a server without an egress sidecar image (the real
    server's default configuration): a create with a ``networkPolicy`` then answers 400. ``runner_factory``
    replaces the shared command emulator. ``runtime`` is ``"emulator"`` (default) or ``"linux"`` (see the module
    docstring). ``capacity`` caps the live sandboxes (shared with the server's other mock; a full server answers
    create 429 ``POOL_CAPACITY_EXHAUSTED``). ``sandbox_limits`` are the linux sandboxes' default limits
    (:mod:`mockserver.linux.limits`). ``config`` is the real server's own configuration file, read
    (:func:`~.model.server_file.load_server_file`): it sets the runtime profile, the key (when ``api_key`` is
    None), the egress image and mode, the maximum timeout, the endpoints' shape and host, the bridge port range
    and the host-volume allow-list, over the keyword arguments that set the same things.
    """

    provider = "opensandbox"

    def __init__(
        self,
        seed: int | None = None,
        clock: VirtualClock | None = None,
        api_key: KeyOption = None,
        profile: ProfileName = "docker",
        *,
        pending_seconds: float | None = None,
        pause_seconds: float | None = None,
        resume_seconds: float | None = None,
        stop_seconds: float | None = None,
        snapshot_seconds: float = 0.0,
        egress_without_policy: bool = False,
        allowed_host_paths: tuple[str, ...] = (),
        egress_image: bool = True,
        execd_token: str | None = None,
        egress_token: str | None = None,
        enforcement_mode: str = "dns",
        dns: DnsTable | None = None,
        http: HttpTable | None = None,
        runner_factory: RunnerFactory | None = None,
        runtime: RuntimeName = "emulator",
        capacity: Capacity | None = None,
        sandbox_limits: SandboxLimits | None = None,
        config: ServerFile | None = None,
    ) -> None:
        if runtime not in RUNTIMES:
            raise ValueError(f"runtime must be one of {', '.join(RUNTIMES)}, got {runtime!r}")
        if runtime == "linux":
            from mockserver.linux import require

            require()  # fail at once, naming what is missing
        super().__init__(clock=clock, seed=seed, dns=dns)
        self.runtime_name: RuntimeName = runtime
        self._sandbox_limits = sandbox_limits
        self.linux: LinuxSandboxes | None = None
        settings: dict[str, Any] = {
            "enforcement": enforcement_mode,
            "allowed_host_paths": tuple(allowed_host_paths),
            "egress_image": egress_image,
        }
        if config is not None:
            settings.update(config.settings())
            profile = config.profile
            api_key = config.api_key if api_key is None else api_key
        self.server_file = config
        self.config = ServerConfig(
            access=KeyTable.from_option(api_key),
            execd_token=execd_token,
            egress_token=egress_token,
            snapshot_seconds=snapshot_seconds,
            user_ports=True,
            **settings,
        )
        self.profile = make_profile(
            profile,
            pending_seconds=pending_seconds,
            pause_seconds=pause_seconds,
            resume_seconds=resume_seconds,
            stop_seconds=stop_seconds,
        )
        self.state = OpenSandboxModel(self.profile, self.clock, self.ids)
        self.state.egress_without_policy = egress_without_policy
        self.capacity = capacity or Capacity()
        self.state.use_capacity(self.capacity)
        self.http = http or HttpTable()
        self._runner_factory = runner_factory
        self._commands: CommandRuntime | None = None
        self._execd: Execd | None = None
        self._building = threading.Lock()
        linux: LinuxSandboxes | None = None
        if runtime == "linux":
            linux, self._execd = self._compose_linux()
        self._linux_sandboxes = linux
        self._proxy_app: PortDispatcher | None = None
        self._direct_app: PortDispatcher | None = None
        self._building_ports = threading.Lock()

    @property
    def catalogue(self) -> OpenSandboxFaults:
        """Return the named fault catalogue (also served under ``/_mock/faults/catalogue``)."""
        from .faults import OpenSandboxFaults  # loaded on first use: a start that arms no fault never needs it

        return OpenSandboxFaults(self)

    def _port_dispatchers(self) -> tuple[PortDispatcher, PortDispatcher]:
        """Build the sandbox-port dispatchers (through the lifecycle proxy, and direct) on first use."""
        from .routes.ports import PortContext, PortDispatcher, service_router

        services: dict[int, ASGIApp] = {  # each built on its first request
            EXECD_PORT: OnFirstCall(lambda: service_router([*self.execd_routes(), *self.file_routes()])),
            EGRESS_PORT: OnFirstCall(lambda: service_router(self.egress_routes())),
        }
        user_port: Callable[[SandboxRecord, int], ASGIApp] = _echo_port
        linux = self._linux_sandboxes
        if linux is not None:
            services[EXECD_PORT] = _prepared(linux, services[EXECD_PORT])  # the sidecar needs no real sandbox
            user_port = linux.port_app
        ports = PortContext(self.state, self.config, services, user_port)
        return PortDispatcher(ports, via_proxy=True), PortDispatcher(ports, via_proxy=False)

    @property
    def proxy_app(self) -> PortDispatcher:
        """The app serving a sandbox's ports through the lifecycle server's proxy (built on first use)."""
        if self._proxy_app is None:
            with self._building_ports:
                if self._proxy_app is None:
                    self._proxy_app, self._direct_app = self._port_dispatchers()
        return self._proxy_app

    @proxy_app.setter
    def proxy_app(self, app: PortDispatcher) -> None:
        self._proxy_app = app

    @property
    def direct_app(self) -> PortDispatcher:
        """The app serving a sandbox's ports directly, under ``/direct`` (built on first use)."""
        if self._direct_app is None:
            self.proxy_app  # noqa: B018  # builds both
        assert self._direct_app is not None
        return self._direct_app

    @direct_app.setter
    def direct_app(self, app: PortDispatcher) -> None:
        self._direct_app = app

    def _compose_linux(self) -> tuple[LinuxSandboxes, Execd]:
        """Build the linux runtime's parts; return its sandboxes and what execd runs on."""
        from mockserver.linux.fdlimit import has_room
        from mockserver.runtime.linux import LinuxBackend

        from .linux_code import CodeContexts
        from .linux_pty import PtySessions
        from .linux_runtime import LinuxCommandRuntime
        from .linux_sandboxes import LinuxSandboxes

        self.capacity.set_room(has_room)
        linux = LinuxSandboxes(self.state, self.config, self.dns, self._sandbox_limits)
        linux.follow_clock(self.clock)
        self.linux = linux
        backend = LinuxBackend(linux.ensure_async)
        from .execution import Execd

        self._commands = commands = LinuxCommandRuntime(self.clock, self.ids, backend, linux.oom)
        self.code_contexts = CodeContexts(self.clock, self.ids, backend)
        self.ptys = PtySessions(backend, lambda: self.ids.token(16, "0123456789abcdef"))
        return linux, Execd(commands, self.code_contexts, self.ptys)

    @property
    def commands(self) -> CommandRuntime:
        """Return the command runtime; the emulator's is built on first use (with its modules), not at start."""
        commands = self._commands
        if commands is None:
            with self._building:
                if self._commands is None:
                    from .commands import EmulatorCommands

                    factory = self._runner_factory or self.make_runner
                    self._commands = EmulatorCommands(self.clock, self.ids, self.dns, self.config.enforcement, factory)
                commands = self._commands
        return commands

    @property
    def execd(self) -> Execd:
        """Return what execd's routes run on (commands, sessions, code contexts, PTYs), built with the first."""
        execd = self._execd
        if execd is None:
            commands = self.commands
            with self._building:
                if self._execd is None:
                    from .execution import Execd

                    self._execd = Execd(commands)
                execd = self._execd
        return execd

    def close(self) -> None:
        """Release the runtime's sandboxes (the linux runtime's namespaces, processes and files); idempotent."""
        if self.linux is not None:
            self.linux.close()

    # -- the parts a variant may replace -----------------------------------------------------------

    def make_runner(self, sb: SandboxRecord, gate: PolicyGate) -> Runner:
        """Return a sandbox's command runner: the shared emulator on its filesystem and egress gate."""
        from .commands import emulator_runner

        return emulator_runner(sb, gate, self.http)

    def execd_routes(self) -> list[BaseRoute]:
        """Return execd's routes but its files': commands, sessions, metrics, code contexts and PTY sessions."""
        from .routes.execd import ExecdContext, execd_routes

        return execd_routes(ExecdContext(self.state, self.clock, self.ids, self.execd))

    def file_routes(self) -> list[BaseRoute]:
        """Return execd's file routes."""
        from .routes.files import file_routes

        return file_routes()

    def egress_routes(self) -> list[BaseRoute]:
        """Return the egress sidecar's routes."""
        from .routes.egress import EgressContext, egress_routes

        return egress_routes(EgressContext(self.config))

    # -- HttpMock hooks ----------------------------------------------------------------------------

    def reset_state(self) -> None:
        """Forget every sandbox, snapshot and telemetry event."""
        self.state.clear()
        if self._commands is not None:  # none built: none running
            self._commands.clear()
        self._forget_live()

    def _forget_live(self) -> None:
        if self.linux is not None:
            self.linux.clear()
            self.code_contexts.clear()
            self.ptys.clear()

    def dump_state(self) -> dict[str, Any]:
        """Return the sandboxes (with filesystems), snapshots and events as JSON."""
        return self.state.dump()

    def load_state(self, data: dict[str, Any]) -> None:
        """Replace the state with :meth:`dump_state` output."""
        self.state.load(data)
        if self._commands is not None:
            self._commands.clear()
        self._forget_live()

    def routes(self) -> list[BaseRoute]:
        """Return the lifecycle routes and the direct sandbox-port mount; their modules load with them, on the
        first request past ``/_mock`` (see :meth:`HttpMock.build_app`)."""
        from .routes.diagnostics import diagnostics_routes
        from .routes.lifecycle import LifecycleContext, lifecycle_routes

        direct = Mount(f"{DIRECT_PREFIX}/{{sandbox_id}}/{{port:int}}", app=self.direct_app)
        # The sandbox port's own server sees any path; Starlette's mount remainder would stop at a newline.
        direct.path_regex = re.compile(direct.path_regex.pattern, re.DOTALL)
        return [
            direct,
            *lifecycle_routes(LifecycleContext(self.state, self.config, self.proxy_app)),
            *diagnostics_routes(self.state),
        ]

    def named_faults(self) -> Mapping[str, NamedFault]:
        """Return the named fault catalogue served under ``/_mock/faults/catalogue``."""
        return self.catalogue.named()

    def extra_admin_routes(self) -> list[BaseRoute]:
        """Return ``/_mock/opensandbox/...`` helpers (OOM-kill, fail)."""
        return admin.admin_routes(self.state)

    def persistent(self) -> Persistent:
        """Return the model store a durable store keeps record by record."""
        return self.state

    def on_clock_advance(self) -> None:
        """Finish due transitions and expire sandboxes."""
        self.state.settle_all()
        if self.linux is not None:
            self.linux.reconcile()

    def sandbox_summaries(self) -> list[dict[str, Any]]:
        """Return every tenant's live sandboxes for the dashboard: state, image, policy, ports, metadata."""
        return admin_model.sandbox_summaries(self.state)

    def exception_handlers(self) -> dict[Any, Any]:
        """Render the model's refusals, FastAPI-style 422s, and ``{"detail"}`` for unknown routes."""
        return exception_handlers()

    def wrap(self, app: ASGIApp) -> ASGIApp:
        """Run the linux runtime's requests in step with it, inside the core's layers."""
        if self.linux is not None:
            app = _in_step(self.linux, app)
        return super().wrap(app)

    def gate(self, app: ASGIApp) -> ASGIApp:
        """Put the request-id, CORS and API-key layer outside fault injection (and inside the journal)."""
        return RequestGate(app, self.config.access, self.ids.uuid4_hex)

    # -- bridge-mode host ports ------------------------------------------------------------------------

    def bridge_ports(self) -> bool:
        """Tell whether this mock hands out endpoints on host ports of their own (``network_mode = "bridge"``)."""
        return self.config.network_mode == "bridge"

    def host_port_listeners(self, **options: Any) -> HostPortListeners[PublishedPort]:
        """Return the listeners of the bridge host ports this mock publishes (``options``: the listeners').

        Each relays to this mock's direct sandbox-port route (``/direct/{id}/{port}``, the same gate and
        services); the host they bind is the configuration file's ``local_host`` unless ``host`` is given.
        Wrap the served app with their ``in_step`` and ``start`` them (see :mod:`mockserver.asgi.host_ports`).
        """
        from mockserver.asgi.host_ports import HostPortListeners

        from .model.endpoints import published_ports

        if self.server_file is not None:
            options.setdefault("host", self.server_file.local_host)
        return HostPortListeners(lambda: published_ports(self.state), _direct_path, **options)

    # -- conveniences for tests ------------------------------------------------------------------

    @property
    def keys(self) -> dict[str, str]:
        """Return the configured API keys and their tenants (empty when auth is off or any key is accepted)."""
        return dict(self.config.access.keys)

    def pinned_keys(self) -> list[str] | None:
        """Return the accepted API keys (None: any key, or auth off)."""
        access = self.config.access
        return None if access.any_key or not access.keys else sorted(access.keys)

    @property
    def api_key(self) -> str | None:
        """Return a key clients may send (None when auth is off)."""
        return self.config.access.client_key()

    def sandbox(self, sandbox_id: str) -> SandboxRecord:
        """Return a live sandbox by id (any tenant); raise KeyError when there is none."""
        sb = self.state.lookup(sandbox_id)
        if sb is None:
            raise KeyError(sandbox_id)
        return sb

    def sandbox_ids(self, **metadata: str) -> list[str]:
        """Return the ids of live sandboxes whose metadata contains every given pair."""
        self.state.settle_all()
        with self.state.lock:
            return [
                sb.id
                for sb in self.state.sandboxes.values()
                if all(sb.spec.metadata.get(k) == v for k, v in metadata.items())
            ]

    def oom_kill(self, sandbox_id: str, wording: str | None = None) -> None:
        """Mark a sandbox Failed as an OOM kill (exit 137) now, worded as ``wording`` (see ``OOM_WORDINGS``)."""
        model_faults.oom_kill(self.state, sandbox_id, wording)

    def sdk_env(self, url: str | None = None) -> dict[str, str]:
        """Return the environment that points the SDK's defaults at this mock."""
        return environment.sdk_env("opensandbox", url or f"http://{DEFAULT_HOST}", self.api_key)

    def connection_config(self, url: str | None = None, *, in_process: bool = False, **options: Any) -> Any:
        """Return an ``opensandbox.ConnectionConfig`` for this mock (over ``url``, or in process)."""
        from opensandbox.config import ConnectionConfig

        kwargs: dict[str, Any] = {"domain": _domain(url), "disable_metrics": True}
        if self.api_key is not None:
            kwargs["api_key"] = self.api_key
        if in_process:
            kwargs["transport"] = self.transport()
        kwargs.update(options)
        return ConnectionConfig(**kwargs)


def _direct_path(published: PublishedPort, path: str) -> str:
    """Return the direct sandbox-port path that serves ``path`` on a published host port."""
    from .model.endpoints import host_port_target

    port, rest = host_port_target(published, path)
    return f"{DIRECT_PREFIX}/{published.sandbox_id}/{port}{rest}"


def _domain(url: str | None) -> str:
    if not url:
        return DEFAULT_HOST
    return url.split("://", 1)[-1].rstrip("/")
