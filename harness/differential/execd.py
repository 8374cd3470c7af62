"""sandproof's own execd behind the real server's sandboxes: one sandbox of the OpenSandbox mock per container.

Real execd runs inside each sandbox's container, on container port 44772, and the Docker runtime publishes that
port on a host port of its own (on the egress sidecar when the sandbox has a network policy). No container runs
here, so :class:`MockExecd` is the fake Docker Engine's :class:`~harness.differential.fake_docker.PortService`
for port 44772: when a container that publishes it starts, it creates a sandbox in an
:class:`~mockserver.opensandbox.mock.OpenSandboxMock` of its own and serves that sandbox's execd (commands,
sessions, files, metrics) on the container's host port; when the container stops or is removed, the sandbox is
deleted. Two sandboxes of the real server thus have two execds, with their own files and commands.

Requests reach the host port as the real server sends them (``/proxy/44772/<path>`` through its proxy and the
direct endpoint; a bare ``/<path>`` too) and the mock's sandbox-port route ``/direct/{id}/44772/<path>`` answers.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from mockserver.core import VirtualClock
from mockserver.opensandbox.mock import OpenSandboxMock
from mockserver.opensandbox.model import lifecycle
from mockserver.opensandbox.model.auth import DEFAULT_TENANT, DIRECT_PREFIX
from mockserver.opensandbox.model.profiles import EXECD_PORT

__all__ = ["EGRESS_SIDECAR_LABEL", "SANDBOX_ID_LABEL", "MockExecd"]

#: The labels opensandbox-server 1.1.1 puts on a sandbox's container and on its egress sidecar
#: (``services/constants.py``, ``services/docker/networking.py``).
SANDBOX_ID_LABEL = "opensandbox.io/id"
EGRESS_SIDECAR_LABEL = "opensandbox.io/egress-sidecar-for"
_PROXY_PREFIX = f"/proxy/{EXECD_PORT}"
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

    def open(self, container: dict[str, Any]) -> ASGIApp:
        """Create the container's stand-in sandbox and return the app that serves its execd port."""
        real_id = sandbox_id_of(container)
        record, _ = lifecycle.create_sandbox(self.mock.state, DEFAULT_TENANT, dict(_SANDBOX_BODY))
        with self._lock:
            self.sandboxes[real_id] = record.id
        return _ExecdPort(self.mock.app, record.id)

    def close(self, container: dict[str, Any]) -> None:
        """Delete the container's stand-in sandbox (its commands and files go with it)."""
        with self._lock:
            mock_id = self.sandboxes.pop(sandbox_id_of(container), None)
        if mock_id is not None and self.mock.state.lookup(mock_id) is not None:
            lifecycle.delete_sandbox(self.mock.state, DEFAULT_TENANT, mock_id)


class _ExecdPort:
    """Route a request on one container's execd host port to its sandbox's execd in the mock."""

    def __init__(self, app: ASGIApp, mock_id: str) -> None:
        self.app = app
        self.prefix = f"{DIRECT_PREFIX}/{mock_id}/{EXECD_PORT}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            path: str = scope.get("path", "")
            if path == _PROXY_PREFIX or path.startswith(_PROXY_PREFIX + "/"):
                path = path[len(_PROXY_PREFIX) :]
            path = self.prefix + (path if path.startswith("/") else "/" + path)
            scope = dict(scope, path=path, raw_path=path.encode(), root_path="")
        await self.app(scope, receive, send)
