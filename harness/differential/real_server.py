"""Run the real opensandbox-server 1.1.1 on 127.0.0.1 on top of the fake Docker Engine API.

execd hook: with `execd=MockExecd()` (:mod:`harness.differential.execd`), each sandbox's published execd host
port is served by a sandbox of its own in sandproof's OpenSandbox mock, as real execd runs in each container.
With `execd_port`, the fake Docker relays each sandbox's published execd host port to
127.0.0.1:`execd_port` and the server proxies with `resolve_internal = false`. Both
`/v1/sandboxes/{id}/proxy/44772/<path>` and the direct endpoint `127.0.0.1:<hostPort>/proxy/44772/<path>`
then reach the look-alike as `/proxy/44772/<path>`, the path real execd serves its port proxy on; wrap a
root-mounted look-alike in `strip_execd_proxy_prefix`. Without the hook the server proxies to the fake
container IP, i.e. 127.0.0.1:44772, whatever listens there.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

import httpx
from starlette.types import ASGIApp, Receive, Scope, Send

from harness.differential.fake_docker import FakeDocker, PortService, Published, ThreadedServer
from mockserver.asgi import clients

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_VENV = REPO_ROOT / ".venv-oss"
MAKE_TARGET = ".venv-oss/.installed (run `make install`, or `make .venv-oss/.installed`)"
EXECD_PORT = 44772
EGRESS_PORT = 18080
#: The egress sidecar image named in the config when an `egress` service stands in for the sidecar's port.
EGRESS_IMAGE = "opensandbox/egress:v1.1.0"
_RESERVED_PORTS = frozenset({8080, EGRESS_PORT, EXECD_PORT})
_DROPPED_ENV_PREFIXES = ("OPENSANDBOX_", "OPEN_SANDBOX_", "DOCKER_", "SANDBOX_CONFIG")
_PROXY_ENV = {"http_proxy", "https_proxy", "all_proxy", "no_proxy"}
EXECD_PROXY_PREFIX = f"/proxy/{EXECD_PORT}"


class RealOpenSandboxUnavailable(RuntimeError):
    """Raised when the opensandbox-server venv or binary is missing."""


class RealOpenSandboxStartError(RuntimeError):
    """Raised when the real server does not come up healthy."""


def free_port() -> int:
    """Return a free loopback TCP port that is not one of OpenSandbox's well-known ports."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port: int = sock.getsockname()[1]
        if port not in _RESERVED_PORTS:
            return port


def server_binary(venv: Path = DEFAULT_VENV) -> Path:
    """Return the opensandbox-server entry point in `venv`, or raise naming the make target."""
    binary = venv / "bin" / "opensandbox-server"
    if not binary.is_file():
        raise RealOpenSandboxUnavailable(
            f"opensandbox-server 1.1.1 is not installed: {binary} is missing. Create it with the Makefile "
            f"target {MAKE_TARGET}, i.e. `python3 -m venv .venv-oss && "
            ".venv-oss/bin/pip install opensandbox-server==1.1.1`."
        )
    return binary


#: A TOML value the server's configuration file holds here.
TomlValue = str | int | bool | list[str]
#: Configuration sections: ``{"server": {"max_sandbox_timeout_seconds": 86400}, ...}``.
Settings = Mapping[str, Mapping[str, TomlValue]]


def _toml(value: TomlValue) -> str:
    """Render a TOML value (a string, an integer, a boolean or a list of strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(json.dumps(item) for item in value) + "]"
    return str(value) if isinstance(value, int) else json.dumps(value)


def strip_execd_proxy_prefix(app: ASGIApp) -> ASGIApp:
    """Wrap an execd look-alike so `/proxy/44772/<path>` reaches it as `/<path>`, as execd's port proxy does."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if scope["type"] in ("http", "websocket") and path.startswith(EXECD_PROXY_PREFIX + "/"):
            path = path[len(EXECD_PROXY_PREFIX) :]
            scope = dict(scope, path=path, raw_path=path.encode())
        await app(scope, receive, send)

    return wrapped


class RealOpenSandboxServer:
    """Start the real opensandbox-server as a subprocess against a fake Docker API; stop it on exit."""

    def __init__(
        self,
        *,
        api_key: str | None = "sandproof-real-key",
        venv: Path = DEFAULT_VENV,
        execd_port: int | None = None,
        execd: PortService | None = None,
        egress: PortService | None = None,
        startup_timeout: float = 30.0,
        log_level: str = "INFO",
        settings: Settings | None = None,
    ) -> None:
        self.api_key = api_key
        self.venv = venv
        self.execd_port = execd_port
        self.execd = execd
        self.egress = egress
        self.startup_timeout = startup_timeout
        self.log_level = log_level
        self.settings = settings or {}
        self.port = 0
        self.startup_seconds = 0.0
        publish: dict[int, Published] = {}
        hook: Published | None = execd if execd is not None else execd_port
        if hook is not None:
            publish[EXECD_PORT] = hook
        if egress is not None:
            publish[EGRESS_PORT] = egress
        self.fake_docker = FakeDocker(publish=publish)
        if execd is not None and hasattr(execd, "containers"):
            execd.containers = self.fake_docker.containers  # where the stand-in reads a sandbox's environment
        self._docker_server: ThreadedServer | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._tmp: Path | None = None

    @property
    def url(self) -> str:
        """Return the server base URL (lifecycle routes live under `/v1`)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def headers(self) -> dict[str, str]:
        """Return the auth header for lifecycle calls."""
        return {"OPEN-SANDBOX-API-KEY": self.api_key} if self.api_key else {}

    @property
    def log_path(self) -> Path:
        """Return the file that holds the server's stdout and stderr."""
        if self._tmp is None:
            raise RuntimeError("server not started")
        return self._tmp / "server.log"

    @property
    def config_path(self) -> Path:
        """Return the configuration file the running server started from (the mock reads the same file)."""
        if self._tmp is None:
            raise RuntimeError("server not started")
        return self._tmp / "server.toml"

    def logs(self) -> str:
        """Return the server output so far."""
        return self.log_path.read_text(errors="replace") if self._tmp else ""

    def _config(self, tmp: Path) -> str:
        """Render the server config TOML: what the run needs (address, store, fake Docker), then `settings` over it."""
        sections: dict[str, dict[str, TomlValue]] = {
            "server": {"host": "127.0.0.1", "port": self.port, "timeout_graceful_shutdown": 1},
            "log": {"level": self.log_level},
            "runtime": {"type": "docker", "execd_image": "opensandbox/execd:v1.1.0"},
            "store": {"type": "sqlite", "path": str(tmp / "opensandbox.db")},
            "docker": {"network_mode": "bridge", "publish_host": "127.0.0.1"},
            "proxy": {"resolve_internal": self.execd_port is None and self.execd is None},
        }
        if self.egress is not None:
            sections["egress"] = {"image": EGRESS_IMAGE, "readiness_timeout_seconds": 5}
        if self.api_key:
            sections["server"]["api_key"] = self.api_key
        for name, body in self.settings.items():
            sections.setdefault(name, {}).update(body)
        return "".join(
            f"[{name}]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in body.items()) + "\n"
            for name, body in sections.items()
        )

    def _env(self, tmp: Path, docker_host: str) -> dict[str, str]:
        """Build a clean environment: no stray OpenSandbox, Docker or proxy settings, HOME in `tmp`."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.upper().startswith(_DROPPED_ENV_PREFIXES) and k.lower() not in _PROXY_ENV
        }
        env.update(HOME=str(tmp), DOCKER_HOST=docker_host, NO_PROXY="127.0.0.1,localhost", PYTHONUNBUFFERED="1")
        if not self.api_key:
            env["OPENSANDBOX_INSECURE_SERVER"] = "YES"
        return env

    def start(self) -> RealOpenSandboxServer:
        """Start the fake Docker API and the server, and wait for `/health`."""
        binary = server_binary(self.venv)
        self._tmp = Path(tempfile.mkdtemp(prefix="sandproof-oss-"))
        try:
            self._docker_server = ThreadedServer(self.fake_docker.app).start()
            self.port = free_port()
            config = self.config_path
            config.write_text(self._config(self._tmp))
            began = time.monotonic()
            with self.log_path.open("wb") as log:
                self._proc = subprocess.Popen(
                    [str(binary), "--config", str(config)],
                    cwd=self._tmp,
                    env=self._env(self._tmp, f"tcp://127.0.0.1:{self._docker_server.port}"),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            self._wait_healthy(began)
            self.startup_seconds = time.monotonic() - began
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_healthy(self, began: float) -> None:
        """Poll `/health` until it answers 200, the process dies or the timeout passes."""
        assert self._proc is not None
        with clients.client(timeout=1.0, trust_env=False) as client:
            while time.monotonic() - began < self.startup_timeout:
                if self._proc.poll() is not None:
                    raise RealOpenSandboxStartError(
                        f"opensandbox-server exited with {self._proc.returncode}:\n{self.logs()[-4000:]}"
                    )
                try:
                    if client.get(f"{self.url}/health").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.05)
        raise RealOpenSandboxStartError(
            f"opensandbox-server not healthy after {self.startup_timeout:.0f}s:\n{self.logs()[-4000:]}"
        )

    def stop(self) -> None:
        """Terminate the server (kill it if it lingers), stop the fake Docker API, remove temp files."""
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.terminate()
                try:
                    self._proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait(timeout=10)
            self._proc = None
        if self._docker_server is not None:
            self._docker_server.stop()
            self._docker_server = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> RealOpenSandboxServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
