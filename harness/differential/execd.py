"""sandproof's own execd behind the real server's sandboxes: one sandbox of the OpenSandbox mock per container.

Real execd runs inside each sandbox's container, on container port 44772, and the Docker runtime publishes that
port on a host port of its own (on the egress sidecar when the sandbox has a network policy). No container runs
here, so :class:`MockExecd` is the fake Docker Engine's :class:`~harness.differential.fake_docker.PortService`
for port 44772: when a container that publishes it starts, it creates a sandbox in an
:class:`~mockserver.opensandbox.mock.OpenSandboxMock` of its own and serves that sandbox's execd (commands,
sessions, files, metrics) on the container's host port; when the container is paused or unpaused, so is the
sandbox (its execd then answers as a paused sandbox's: 502), and when it stops or is removed, the sandbox is
deleted. Two sandboxes of the real server thus have two execds, with their own files and commands, each with
its container's environment (the create's ``env``).

Requests reach the host port as the real server sends them (``/proxy/44772/<path>`` through its proxy and the
direct endpoint; a bare ``/<path>`` too) and the mock's sandbox-port route ``/direct/{id}/44772/<path>`` answers.
Every answer carries :data:`STAND_IN_HEADER`, so a client can tell that the execd behind a sandbox is sandproof's
(the OpenAPI contract then skips what the mock does not emulate, as on the mock target).

No egress sidecar runs here. :class:`SidecarReadiness` serves the sidecar's port 18080 only so that the real server's
readiness probe (``GET /healthz``) passes and a create with a ``networkPolicy`` is accepted as on Docker; every other
request on that port answers 503 :data:`NO_SIDECAR_CODE`, and the contracts that need a sidecar skip with that reason.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from starlette.responses import JSONResponse, PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from harness.openapi.endpoints import STAND_IN_HEADER
from mockserver.core import VirtualClock
from mockserver.opensandbox.mock import OpenSandboxMock
from mockserver.opensandbox.model import lifecycle
from mockserver.opensandbox.model.auth import DEFAULT_TENANT, DIRECT_PREFIX
from mockserver.opensandbox.model.profiles import EGRESS_PORT, EXECD_PORT

__all__ = [
    "EGRESS_SIDECAR_LABEL",
    "NO_SIDECAR_CODE",
    "SANDBOX_ID_LABEL",
    "STAND_IN_HEADER",
    "MockExecd",
    "SidecarReadiness",
    "sandbox_id_of",
]

#: The labels opensandbox-server 1.1.1 puts on a sandbox's container and on its egress sidecar
#: (``services/constants.py``, ``services/docker/networking.py``).
SANDBOX_ID_LABEL = "opensandbox.io/id"
EGRESS_SIDECAR_LABEL = "opensandbox.io/egress-sidecar-for"
_PORT_PROXY = re.compile(r"^/proxy/(?P<port>\d+)(?P<rest>/.*)?$", re.DOTALL)
#: The code of every answer on port 18080 but the readiness probe: no egress sidecar runs here.
NO_SIDECAR_CODE = "SANDPROOF::NO_EGRESS_SIDECAR"
#: The body of the stand-in sandbox: no expiry (the real server expires and removes the container).
_SANDBOX_BODY = {
    "image": {"uri": "opensandbox/execd-stand-in"},
    "entrypoint": ["tail", "-f", "/dev/null"],
    "timeout": None,
    "resourceLimits": {"cpu": "1", "memory": "1Gi"},
}


def sandbox_id_of(container: dict[str, Any]) -> str:
    """Return the real server's sandbox id a container belongs to (its own label, or the sidecar's)."""
    labels: dict[str, str] = container["Config"].get("Labels") or {}
    return labels.get(SANDBOX_ID_LABEL) or labels.get(EGRESS_SIDECAR_LABEL) or container["Id"]


class MockExecd:
    """Serve every started container's execd port with a sandbox of its own in sandproof's OpenSandbox mock."""

    def __init__(self, mock: OpenSandboxMock | None = None) -> None:
        self.mock = mock or OpenSandboxMock(clock=VirtualClock("wall", start=time.time()))
        self._lock = threading.Lock()
        #: The mock's sandbox id of each real sandbox id whose container is up.
        self.sandboxes: dict[str, str] = {}
        #: The fake engine's containers (set by :class:`~harness.differential.real_server.RealOpenSandboxServer`):
        #: where a sandbox's environment is read from.
        self.containers: Mapping[str, dict[str, Any]] = {}

    def open(self, container: dict[str, Any]) -> ASGIApp:
        """Create the container's stand-in sandbox and return the app that serves its execd port."""
        real_id = sandbox_id_of(container)
        record, _ = lifecycle.create_sandbox(self.mock.state, DEFAULT_TENANT, dict(_SANDBOX_BODY))
        with self._lock:
            self.sandboxes[real_id] = record.id
        return _ExecdPort(self.mock.app, record.id, lambda: self._environment(real_id, record.spec.env))

    def _environment(self, real_id: str, env: dict[str, str]) -> bool:
        """Give the stand-in sandbox its container's environment (``Config.Env``); tell whether it was found.

        With a network policy the execd port is the sidecar's, which starts before the sandbox's own container
        exists, so this runs on the first request instead of at :meth:`open`.
        """
        for ctr in list(self.containers.values()):
            if (ctr["Config"].get("Labels") or {}).get(SANDBOX_ID_LABEL) == real_id:
                pairs = (entry.partition("=") for entry in ctr["Config"].get("Env") or [])
                env.update({name: value for name, _, value in pairs if name})
                return True
        return False

    def pause(self, container: dict[str, Any], paused: bool) -> None:
        """Pause or resume the container's stand-in sandbox, so its execd answers as a paused sandbox's does."""
        with self._lock:
            mock_id = self.sandboxes.get(sandbox_id_of(container))
        sb = None if mock_id is None else self.mock.state.lookup(mock_id)
        if sb is None or sb.state == ("Paused" if paused else "Running"):
            return
        (lifecycle.pause_sandbox if paused else lifecycle.resume_sandbox)(self.mock.state, DEFAULT_TENANT, sb.id)

    def close(self, container: dict[str, Any]) -> None:
        """Delete the container's stand-in sandbox (its commands and files go with it)."""
        with self._lock:
            mock_id = self.sandboxes.pop(sandbox_id_of(container), None)
        if mock_id is not None and self.mock.state.lookup(mock_id) is not None:
            lifecycle.delete_sandbox(self.mock.state, DEFAULT_TENANT, mock_id)


class _ExecdPort:
    """Route a request on one container's execd host port to its sandbox's execd in the mock.

    execd's port proxy ``/proxy/{port}/<path>`` reaches the sandbox's other ports (the real server's endpoints
    of 18080 and 8080 point there): ``/proxy/44772`` and a bare path are execd itself, ``/proxy/18080`` has no
    sidecar behind it (:func:`_readiness_only`), any other port is the mock sandbox's own port.
    """

    def __init__(self, app: ASGIApp, mock_id: str, environment: Callable[[], bool]) -> None:
        self.app = app
        self.mock_id = mock_id
        self.environment = environment
        self.has_environment = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.has_environment:
            self.has_environment = self.environment()
        if scope["type"] in ("http", "websocket"):
            path: str = scope.get("path", "")
            port, rest = EXECD_PORT, path
            found = _PORT_PROXY.match(path)
            if found:
                port, rest = int(found["port"]), found["rest"] or "/"
            if port == EGRESS_PORT:
                await _readiness_only(dict(scope, path=rest), receive, send)
                return
            path = f"{DIRECT_PREFIX}/{self.mock_id}/{port}{rest if rest.startswith('/') else '/' + rest}"
            scope = dict(scope, path=path, raw_path=path.encode(), root_path="")

        async def marked(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), (STAND_IN_HEADER.encode(), b"execd")]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, marked)


class SidecarReadiness:
    """Port 18080 of every egress sidecar: the readiness probe passes, nothing else is served (no sidecar runs)."""

    def open(self, container: dict[str, Any]) -> ASGIApp:
        """Return the readiness-only app (the same for every sidecar)."""
        return _readiness_only

    def pause(self, container: dict[str, Any], paused: bool) -> None:
        """Nothing runs, so nothing pauses."""

    def close(self, container: dict[str, Any]) -> None:
        """Nothing to forget."""


async def _readiness_only(scope: Scope, receive: Receive, send: Send) -> None:
    """Answer ``GET /healthz`` 200 and anything else 503 :data:`NO_SIDECAR_CODE`."""
    if scope["type"] != "http":
        await send({"type": "websocket.close", "code": 4503, "reason": NO_SIDECAR_CODE})
        return
    headers = {STAND_IN_HEADER: "egress-readiness"}
    if scope["method"] == "GET" and scope["path"].rstrip("/").endswith("/healthz"):
        await PlainTextResponse("OK", headers=headers)(scope, receive, send)
        return
    message = "no egress sidecar runs behind this sandbox: sandproof stands in only for its readiness probe"
    await JSONResponse({"code": NO_SIDECAR_CODE, "message": message}, 503, headers=headers)(scope, receive, send)
