"""``sandproof serve`` and ``sandproof env``: run both mocks as a standalone server, and point SDKs at them.

The command line itself lives in :mod:`sandproof.cli`; this module builds the mocks, serves them until
stopped, and prints the ``export`` lines of their SDK environment.
"""

from __future__ import annotations

import ipaddress
import shlex
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from mockserver.core import VirtualClock
from mockserver.core.clock import DEFAULT_EPOCH, ClockMode
from mockserver.core.environment import DEFAULT_API_KEY, MOCK_KEY_ENV, sdk_env

if TYPE_CHECKING:
    from mockserver.linux import SandboxLimits
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
    keep_alive: float = 5.0
    max_connections: int | None = None
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    sandbox_limits: SandboxLimits | None = None
    admin_token: str | None = None
    execd_token: str | None = None
    runtime: str = "emulator"


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
    admin_token: str | None = None,
    execd_token: str | None = None,
    runtime: str = "emulator",
    sandbox_limits: SandboxLimits | None = None,
) -> dict[str, HttpMock]:
    """Create both mocks, each with its own virtual clock; ``api_keys`` pins the accepted keys.

    By default any non-empty key is accepted, each key its own tenant (project); several pinned keys are
    each their own tenant. ``admin_token`` guards both admin APIs; ``execd_token`` makes OpenSandbox
    endpoints carry and execd require ``X-EXECD-ACCESS-TOKEN``. ``runtime`` is ``emulator`` (default) or
    ``linux`` (real processes; :class:`ServeError` with the one requirements message where it cannot run);
    ``sandbox_limits`` are then the sandboxes' default pids, memory and disk limits.
    """
    from mockserver.opensandbox import OpenSandboxMock
    from mockserver.opensandbox.model.auth import pinned_keys
    from mockserver.tensorlake import TensorLakeMock

    def clock() -> VirtualClock:
        # A standalone wall clock starts at the real time, so SDK-computed expiry times make sense.
        start = time.time() if clock_mode == "wall" else DEFAULT_EPOCH
        return VirtualClock(mode=clock_mode, start=start)

    keys = list(api_keys)
    if runtime not in ("emulator", "linux"):
        raise ServeError(f"--runtime must be emulator or linux, got {runtime!r}")
    if runtime == "linux":
        from mockserver.linux.requirements import check_requirements

        report = check_requirements()
        if not report.ok:
            raise ServeError(report.message())
    chosen: Literal["emulator", "linux"] = "linux" if runtime == "linux" else "emulator"
    tensorlake = TensorLakeMock(
        seed=seed, clock=clock(), api_keys=keys or None, runtime=chosen, sandbox_limits=sandbox_limits
    )
    opensandbox = OpenSandboxMock(
        seed=seed,
        clock=clock(),
        api_key=pinned_keys(keys),
        execd_token=execd_token,
        runtime=chosen,
        sandbox_limits=sandbox_limits,
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


def env_command(host: str, tensorlake_port: int, opensandbox_port: int) -> str:
    """Return the exact ``sandproof env`` command that matches a server on ``host`` and those ports."""
    parts = ["sandproof", "env"]
    if host != "127.0.0.1":
        parts += ["--host", host]
    if tensorlake_port != TENSORLAKE_PORT:
        parts += ["--tensorlake-port", str(tensorlake_port)]
    if opensandbox_port != OPENSANDBOX_PORT:
        parts += ["--opensandbox-port", str(opensandbox_port)]
    return " ".join(shlex.quote(p) for p in parts)


def serve(options: ServeOptions, *, out: Callable[[str], None] = print) -> int:
    """Serve both mocks until SIGTERM or SIGINT; keep state in ``options.state_file`` when given.

    With a state file, every request's changes are committed to it (SQLite, see :mod:`mockserver.state_db`)
    before its response goes out; a JSON state file of an older version is imported first.
    """
    from mockserver.asgi.server import MockServer

    if not is_loopback(options.host) and not options.admin_token:
        raise ServeError(
            f"--host {options.host} exposes the /_mock admin API (it resets state and lists API keys) beyond "
            "this machine: give --admin-token TOKEN, or bind a loopback address"
        )
    mocks = build_mocks(
        seed=options.seed,
        clock_mode=options.clock,
        api_keys=options.api_keys,
        admin_token=options.admin_token,
        execd_token=options.execd_token,
        runtime=options.runtime,
        sandbox_limits=options.sandbox_limits,
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
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        for server in servers.values():
            server.start(wait=False)  # both start at once
        for name, server in servers.items():
            server.wait_started()
            out(f"{name:<12} {server.url}   (admin: {server.url}/_mock)")
        command = env_command(options.host, servers["tensorlake"].port, servers["opensandbox"].port)
        out(f'point the SDKs at these mocks with: eval "$({command})"; Ctrl-C stops')
        stop.wait()
    finally:
        for server in servers.values():
            server.stop()
        if store is not None:
            store.close()
            out(f"state saved to {options.state_file}")
        for mock in mocks.values():
            mock.close()
    return 0
