"""``sandproof serve`` and ``sandproof env``: run both mocks as a standalone server, and point SDKs at them.

The command line itself lives in :mod:`sandproof.cli`; this module builds the mocks, serves them until
stopped, and prints the ``export`` lines of their SDK environment.
"""

from __future__ import annotations

import errno
import ipaddress
import shlex
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from mockserver.core import VirtualClock
from mockserver.core.clock import DEFAULT_EPOCH, ClockMode
from mockserver.core.environment import DEFAULT_API_KEY, MOCK_KEY_ENV, sdk_env

if TYPE_CHECKING:
    from mockserver.asgi.host_ports import HostPortListeners
    from mockserver.asgi.server import MockServer
    from mockserver.linux import SandboxLimits
    from mockserver.opensandbox.model.endpoints import PublishedPort
    from mockserver.opensandbox.model.server_file import ServerFile
    from mockserver.scenario import LoadedScenarios
    from mockserver.service import HttpMock

__all__ = [
    "OPENSANDBOX_PORT",
    "TENSORLAKE_PORT",
    "ServeError",
    "ServeOptions",
    "build_mocks",
    "env_command",
    "env_lines",
    "is_loopback",
    "serve",
]

TENSORLAKE_PORT = 8911
OPENSANDBOX_PORT = 8080
#: Seconds a connection may take to send a request head (:mod:`mockserver.asgi.connections`' default; this
#: module does not import the web stack, so that ``sandproof env`` starts fast).
DEFAULT_HEADER_TIMEOUT = 10.0
#: Seconds a request body may send nothing before its connection is closed (the same module's default).
DEFAULT_BODY_TIMEOUT = 10.0
#: Seconds an idle keep-alive connection stays open.
DEFAULT_KEEP_ALIVE = 5.0
#: Live sandboxes (both providers together) ``--runtime linux`` holds unless told otherwise: the 2-core,
#: 24 GB development machine held them with ``sleep 600`` in each (3 fds and 3.4 MB each) and kept answering
#: (see docs/runtime.md, "Capacity"). The emulator has no limit unless given one.
DEFAULT_LINUX_MAX_SANDBOXES = 1000


@dataclass
class ServeOptions:
    """What ``sandproof serve`` was asked for."""

    host: str = "127.0.0.1"
    tensorlake_port: int = TENSORLAKE_PORT
    opensandbox_port: int = OPENSANDBOX_PORT
    api_keys: Sequence[str] = field(default_factory=tuple)
    state_file: str | None = None
    seed: int | None = None
    clock: ClockMode = "wall"
    keep_alive: float = DEFAULT_KEEP_ALIVE
    max_connections: int | None = None
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    sandbox_limits: SandboxLimits | None = None
    admin_token: str | None = None
    execd_token: str | None = None
    runtime: str = "emulator"
    scenarios: Sequence[str] = field(default_factory=tuple)
    max_sandboxes: int | None = None
    opensandbox_egress_mode: str = "dns"
    opensandbox_config: str | None = None


class ServeError(ValueError):
    """Raise when ``sandproof serve`` was asked for something unsafe or impossible (exit status 2)."""


def is_loopback(host: str) -> bool:
    """Tell whether binding ``host`` keeps the server on this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def build_mocks(
    *,
    seed: int | None,
    clock_mode: ClockMode,
    api_keys: Sequence[str] = (),
    provider_keys: Mapping[str, Sequence[str]] | None = None,
    admin_token: str | None = None,
    execd_token: str | None = None,
    runtime: str = "emulator",
    max_sandboxes: int | None = None,
    opensandbox_egress_mode: str = "dns",
    sandbox_limits: SandboxLimits | None = None,
    opensandbox_config: ServerFile | None = None,
) -> dict[str, HttpMock]:
    """Create both mocks, each with its own virtual clock; ``api_keys`` pins the accepted keys.

    ``provider_keys`` adds keys one provider alone accepts (a scenario's ``api_keys``).

    By default any non-empty key is accepted, each key its own tenant (project); several pinned keys are
    each their own tenant. ``admin_token`` guards both admin APIs; ``execd_token`` makes OpenSandbox
    endpoints carry and execd require ``X-EXECD-ACCESS-TOKEN``. ``runtime`` is ``emulator`` (default) or
    ``linux`` (real processes; :class:`ServeError` with the one requirements message where it cannot run).
    ``max_sandboxes`` caps the live sandboxes of both mocks together (None: :data:`DEFAULT_LINUX_MAX_SANDBOXES`
    on linux, no cap on the emulator); past it a create gets the provider's capacity error.
    ``opensandbox_egress_mode`` is the OpenSandbox server's ``[egress] mode``: ``dns`` or ``dns+nft``.
    ``sandbox_limits`` are the linux sandboxes' default pids, memory and disk limits. ``opensandbox_config`` is
    the real OpenSandbox server's configuration file, read: it sets that mock's runtime profile, egress image and
    mode (over ``opensandbox_egress_mode``), maximum timeout, endpoints, port range and volume allow-list, and its
    ``[server] api_key`` is the OpenSandbox key when no key is pinned otherwise.
    """
    from mockserver.core.capacity import Capacity
    from mockserver.opensandbox import OpenSandboxMock
    from mockserver.opensandbox.model.auth import pinned_keys
    from mockserver.opensandbox.model.config import ENFORCEMENT_MODES
    from mockserver.tensorlake import TensorLakeMock

    def clock() -> VirtualClock:
        # A standalone wall clock starts at the real time, so SDK-computed expiry times make sense.
        start = time.time() if clock_mode == "wall" else DEFAULT_EPOCH
        return VirtualClock(mode=clock_mode, start=start)

    keys = list(api_keys)
    if runtime not in ("emulator", "linux"):
        raise ServeError(f"--runtime must be emulator or linux, got {runtime!r}")
    if max_sandboxes is not None and max_sandboxes < 1:
        raise ServeError(f"--max-sandboxes must be 1 or more, got {max_sandboxes}")
    if opensandbox_egress_mode not in ENFORCEMENT_MODES:
        raise ServeError(f"--opensandbox-egress-mode must be dns or dns+nft, got {opensandbox_egress_mode!r}")
    if runtime == "linux":
        from mockserver.linux.requirements import check_requirements

        report = check_requirements()
        if not report.ok:
            raise ServeError(report.message())
    chosen: Literal["emulator", "linux"] = "linux" if runtime == "linux" else "emulator"
    if max_sandboxes is None and chosen == "linux":
        max_sandboxes = DEFAULT_LINUX_MAX_SANDBOXES
    capacity = Capacity(max_sandboxes)
    extra = provider_keys or {}
    tensorlake_keys = [*keys, *extra.get("tensorlake", ())]
    opensandbox_keys = [*keys, *extra.get("opensandbox", ())]
    if not opensandbox_keys and opensandbox_config is not None and opensandbox_config.api_key:
        opensandbox_keys = [opensandbox_config.api_key]
    tensorlake = TensorLakeMock(
        seed=seed,
        clock=clock(),
        api_keys=tensorlake_keys or None,
        runtime=chosen,
        capacity=capacity,
        sandbox_limits=sandbox_limits,
    )
    opensandbox = OpenSandboxMock(
        seed=seed,
        clock=clock(),
        api_key=pinned_keys(opensandbox_keys),
        execd_token=execd_token,
        enforcement_mode=opensandbox_egress_mode,
        runtime=chosen,
        capacity=capacity,
        sandbox_limits=sandbox_limits,
        config=opensandbox_config,
    )
    mocks: dict[str, HttpMock] = {"tensorlake": tensorlake, "opensandbox": opensandbox}
    for mock in mocks.values():
        mock.admin_token = admin_token
    return mocks


def env_lines(host: str, tensorlake_port: int, opensandbox_port: int, api_key: str = DEFAULT_API_KEY) -> list[str]:
    """Return the ``export`` lines that point the real SDKs at mocks served on ``host`` and those ports."""
    values: dict[str, str] = {}
    values.update(sdk_env("tensorlake", f"http://{host}:{tensorlake_port}", api_key))
    values.update(sdk_env("opensandbox", f"http://{host}:{opensandbox_port}", api_key))
    values[MOCK_KEY_ENV] = api_key
    return [f"export {name}={shlex.quote(value)}" for name, value in values.items()]


def env_command(host: str, tensorlake_port: int, opensandbox_port: int, api_key: str | None = None) -> str:
    """Return the exact ``sandproof env`` command that matches a server on ``host`` and those ports.

    ``api_key`` is added as ``--api-key`` when the server pins its keys (the default key would then get 401).
    """
    parts = ["sandproof", "env"]
    if host != "127.0.0.1":
        parts += ["--host", host]
    if tensorlake_port != TENSORLAKE_PORT:
        parts += ["--tensorlake-port", str(tensorlake_port)]
    if opensandbox_port != OPENSANDBOX_PORT:
        parts += ["--opensandbox-port", str(opensandbox_port)]
    if api_key is not None and api_key != DEFAULT_API_KEY:
        parts += ["--api-key", api_key]
    return " ".join(shlex.quote(p) for p in parts)


#: The command-line option that sets each mock's port, named when a port is taken.
PORT_OPTIONS = {"tensorlake": "--tensorlake-port", "opensandbox": "--opensandbox-port"}


def _advertised_key(options: ServeOptions, mocks: Mapping[str, HttpMock]) -> str | None:
    """Return the key the banner's ``env`` line should carry: the first key both mocks accept, or None for any."""
    if options.api_keys:
        return options.api_keys[0]
    pinned = [mock.pinned_keys() for mock in mocks.values()]
    common = [key for key in (pinned[0] or []) if all(p is None or key in p for p in pinned[1:])]
    if common:
        return common[0]
    return next((keys[0] for keys in pinned if keys), None)


def _start(server: MockServer, name: str, port: int) -> None:
    """Bind and start one mock's server; a taken or forbidden port is a :class:`ServeError` naming its option."""
    try:
        server.start(wait=False)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ServeError(
                f"port {port} on {server.host} is already in use ({name} mock): "
                f"choose another with {PORT_OPTIONS[name]} PORT, or stop what listens there"
            ) from exc
        raise ServeError(f"cannot listen on {server.host}:{port} for the {name} mock: {exc.strerror or exc}") from exc


def _opensandbox_config(option: str | None, from_scenario: str | None) -> ServerFile | None:
    """Read the OpenSandbox server configuration file given by ``--opensandbox-config`` or a scenario."""
    if option and from_scenario:
        raise ServeError(
            f"--opensandbox-config {option} and the scenario's server_config {from_scenario} both configure the "
            "OpenSandbox server; give one"
        )
    path = option or from_scenario
    if not path:
        return None
    from mockserver.opensandbox.model.server_file import ServerFileError, load_server_file

    try:
        return load_server_file(path)
    except ServerFileError as exc:
        raise ServeError(f"--opensandbox-config: {exc}") from exc


def _describe(server_file: ServerFile) -> str:
    """Return the banner's summary of what a server configuration file sets."""
    bound = f"at most {server_file.max_timeout}s" if server_file.max_timeout is not None else "unbounded"
    egress = f"egress image, {server_file.enforcement}" if server_file.egress_image else "no egress image"
    return (
        f"{server_file.profile} runtime, {server_file.network_mode} network mode, endpoints on "
        f"{server_file.public_host}, {egress}, timeouts {bound}"
    )


def _host_port_listeners(
    mock: HttpMock, options: ServeOptions, out: Callable[[str], None]
) -> HostPortListeners[PublishedPort] | None:
    """Return the listeners of a bridge-mode OpenSandbox mock's host ports (None in any other mode)."""
    from mockserver.opensandbox import OpenSandboxMock

    if not isinstance(mock, OpenSandboxMock) or not mock.bridge_ports():
        return None
    return mock.host_port_listeners(
        report=lambda line: out(f"{'opensandbox':<12} {line}"),
        timeout_keep_alive=options.keep_alive,
        max_connections=options.max_connections,
        header_timeout=options.header_timeout,
        body_timeout=options.body_timeout,
    )


def _scenarios(paths: Sequence[str]) -> LoadedScenarios | None:
    """Load the ``--scenario`` files (None when there are none: the scenario modules then never load)."""
    if not paths:
        return None
    from mockserver.scenario import ScenarioError, load_scenarios

    try:
        return load_scenarios(paths)
    except ScenarioError as exc:
        raise ServeError(str(exc)) from exc


def _before_serving(scenarios: LoadedScenarios, mocks: Mapping[str, HttpMock]) -> None:
    """Apply the scenarios' state, clock and DNS to ``mocks``; a refusal closes the mocks and is a ServeError."""
    from mockserver.scenario import ScenarioError

    try:
        scenarios.before_serving(mocks)
    except ScenarioError as exc:
        for mock in mocks.values():
            mock.close()
        raise ServeError(str(exc)) from exc


def _once_serving(
    scenarios: LoadedScenarios,
    mocks: Mapping[str, HttpMock],
    servers: Mapping[str, MockServer],
    execd_token: str | None,
    out: Callable[[str], None],
) -> None:
    """Seed the scenarios' sandboxes through the served APIs and arm their faults, printing what was done."""
    from mockserver.scenario import ScenarioError

    try:
        for line in scenarios.once_serving(mocks, {n: s.url for n, s in servers.items()}, execd_token):
            out(line)
    except ScenarioError as exc:
        raise ServeError(str(exc)) from exc


def serve(options: ServeOptions, *, out: Callable[[str], None] = print) -> int:
    """Serve both mocks until SIGTERM or SIGINT; keep state in ``options.state_file`` when given.

    With a state file, every request's changes are committed to it (SQLite, see :mod:`mockserver.state_db`)
    before its response goes out; a JSON state file of an older version is imported first. The soft limit
    of open files is raised to the hard limit first (connections and the linux runtime's sandboxes use them).
    """
    from mockserver.asgi.server import MockServer
    from mockserver.linux.fdlimit import raise_soft_limit

    if not is_loopback(options.host) and not options.admin_token:
        raise ServeError(
            f"--host {options.host} exposes the /_mock admin API (it resets state and lists API keys) beyond "
            "this machine: give --admin-token TOKEN, or bind a loopback address"
        )
    if options.scenarios and options.state_file:
        raise ServeError(
            "--scenario and --state-file do not go together: a scenario starts the mocks the same way every time, "
            "a state file where they stopped; choose one"
        )
    scenarios = _scenarios(options.scenarios)
    server_file = _opensandbox_config(
        options.opensandbox_config, scenarios.server_config("opensandbox") if scenarios is not None else None
    )
    soft, hard = raise_soft_limit()
    mocks = build_mocks(
        seed=options.seed,
        clock_mode=options.clock,
        api_keys=options.api_keys,
        provider_keys={name: scenarios.api_keys(name) for name in ("tensorlake", "opensandbox")}
        if scenarios is not None
        else None,
        admin_token=options.admin_token,
        execd_token=options.execd_token,
        runtime=options.runtime,
        max_sandboxes=options.max_sandboxes,
        opensandbox_egress_mode=options.opensandbox_egress_mode,
        sandbox_limits=options.sandbox_limits,
        opensandbox_config=server_file,
    )
    store = None
    apps = {name: mock.app for name, mock in mocks.items()}
    if options.state_file:
        from mockserver.asgi.commit import CommitBeforeSend
        from mockserver.state_db import StateStore

        store = StateStore(Path(options.state_file), mocks)
        try:
            opened = store.open()
        except ValueError as exc:
            raise ServeError(str(exc)) from exc
        if opened:
            out(opened)
        apps = {name: CommitBeforeSend(mock.app, store.commit, mock.touched_by_request) for name, mock in mocks.items()}
    if scenarios is not None:
        _before_serving(scenarios, mocks)
    host_ports = _host_port_listeners(mocks["opensandbox"], options, out)
    if host_ports is not None:
        apps["opensandbox"] = host_ports.in_step(apps["opensandbox"])
    ports = {"tensorlake": options.tensorlake_port, "opensandbox": options.opensandbox_port}
    servers = {
        name: MockServer(
            apps[name],
            host=options.host,
            port=ports[name],
            timeout_keep_alive=options.keep_alive,
            max_connections=options.max_connections,
            header_timeout=options.header_timeout,
            body_timeout=options.body_timeout,
        )
        for name, mock in mocks.items()
    }
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        for name, server in servers.items():
            _start(server, name, ports[name])  # both start at once
        for name, server in servers.items():
            server.wait_started()
            out(f"{name:<12} {server.url}   (admin: {server.url}/_mock)")
        limit = options.max_sandboxes or (DEFAULT_LINUX_MAX_SANDBOXES if options.runtime == "linux" else None)
        cap = "no cap on" if limit is None else f"at most {limit}"
        if server_file is not None:
            out(f"{'opensandbox':<12} configured from {server_file.path} ({_describe(server_file)})")
        if host_ports is not None and server_file is not None:
            low, high = server_file.port_range
            out(f"{'opensandbox':<12} bridge endpoints' host ports ({low}-{high}) served on {host_ports.host}")
            host_ports.start()
        out(f"{'sandboxes':<12} {cap} live sandboxes (both APIs together); open files limit {soft} (hard {hard})")
        if scenarios is not None:
            _once_serving(scenarios, mocks, servers, options.execd_token, out)
        command = env_command(
            options.host, servers["tensorlake"].port, servers["opensandbox"].port, _advertised_key(options, mocks)
        )
        out(f'point the SDKs at these mocks with: eval "$({command})"; Ctrl-C stops')
        stop.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if host_ports is not None:
            host_ports.close()
        for server in servers.values():
            server.stop()
        if store is not None:
            store.close()
            out(f"state saved to {options.state_file}")
        for mock in mocks.values():
            mock.close()
    return 0
