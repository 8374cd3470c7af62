"""Run both sandproof mocks in one Docker container through testcontainers (``--sandproof-container``).

The image comes from the repository's ``Dockerfile`` (``sandproof serve`` on 0.0.0.0) and is built on first
use when a source checkout is at hand; otherwise set ``SANDPROOF_IMAGE`` to an image you built or pulled.
:class:`ContainerSpec` holds the whole configuration (image, ports, command, environment, wait strategy) so
it can be checked without a Docker engine; :func:`docker_status` tells whether an engine answers.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from harness.targets.common import DEFAULT_API_KEY, PROVIDERS

__all__ = [
    "CONTAINER_PORTS",
    "DEFAULT_IMAGE",
    "IMAGE_ENV",
    "READY_PATHS",
    "ContainerSpec",
    "MockContainer",
    "configure",
    "default_spec",
    "docker_status",
]

IMAGE_ENV = "SANDPROOF_IMAGE"
DEFAULT_IMAGE = "sandproof-mock:latest"
CONTAINER_PORTS: dict[str, int] = {"tensorlake": 8911, "opensandbox": 8080}
#: What the wait strategy and the image's health check probe: answers 200 without any credentials.
READY_PATHS = {"tensorlake": "/openapi.json", "opensandbox": "/health"}
SOURCE_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class ContainerSpec:
    """Everything needed to run the mocks' container."""

    image: str = DEFAULT_IMAGE
    ports: Mapping[str, int] = field(default_factory=lambda: dict(CONTAINER_PORTS))
    api_key: str = DEFAULT_API_KEY
    env: Mapping[str, str] = field(default_factory=lambda: {"PYTHONUNBUFFERED": "1"})
    startup_timeout: int = 60
    build_context: Path | None = None
    admin_token: str = field(default_factory=lambda: secrets.token_urlsafe(16))

    def command(self) -> list[str]:
        """Return the container command (the image's entry point is ``sandproof``)."""
        return [
            "serve",
            "--host",
            "0.0.0.0",
            "--tensorlake-port",
            str(self.ports["tensorlake"]),
            "--opensandbox-port",
            str(self.ports["opensandbox"]),
            "--api-key",
            self.api_key,
            "--admin-token",
            self.admin_token,
        ]

    def wait_strategy(self) -> Any:
        """Return the testcontainers strategy that waits for both mocks to answer 200."""
        from testcontainers.core.wait_strategies import CompositeWaitStrategy, HttpWaitStrategy

        checks = [HttpWaitStrategy(self.ports[p], READY_PATHS[p]).for_status_code(200) for p in PROVIDERS]
        return CompositeWaitStrategy(*checks).with_startup_timeout(self.startup_timeout)


def default_spec(environ: Mapping[str, str] | None = None) -> ContainerSpec:
    """Return the spec for this installation: image from ``SANDPROOF_IMAGE``, build context if a checkout."""
    env = os.environ if environ is None else environ
    context = SOURCE_ROOT if (SOURCE_ROOT / "Dockerfile").is_file() else None
    return ContainerSpec(image=env.get(IMAGE_ENV) or DEFAULT_IMAGE, build_context=context)


def configure(container: Any, spec: ContainerSpec) -> Any:
    """Apply ``spec``'s ports, command, environment and wait strategy to a testcontainers container."""
    container.with_exposed_ports(*spec.ports.values())
    container.with_command(spec.command())
    container.with_envs(**spec.env)
    container.waiting_for(spec.wait_strategy())
    return container


def docker_status(timeout: float = 3.0) -> tuple[bool, str]:
    """Return whether a Docker engine answers a ping, and why not when it does not."""
    try:
        from testcontainers.core.docker_client import DockerClient, get_docker_host
    except ImportError as exc:
        return False, f"testcontainers is not installed ({exc}); pip install 'sandproof[containers]'"
    host = get_docker_host()
    if not host and not Path("/var/run/docker.sock").exists():
        return False, "no Docker engine: DOCKER_HOST is unset and /var/run/docker.sock does not exist"
    try:
        client = DockerClient(timeout=timeout)
        client.client.ping()
    except Exception as exc:
        where = host or "unix:///var/run/docker.sock"
        return False, f"no Docker engine answers at {where}: {type(exc).__name__}: {exc}"
    return True, f"Docker engine at {host or 'unix:///var/run/docker.sock'}"


class MockContainer:
    """Run both mocks in a container; a context manager exposing ``urls`` per provider."""

    def __init__(self, spec: ContainerSpec | None = None) -> None:
        self.spec = spec if spec is not None else default_spec()
        self._container: Any = None
        self.urls: dict[str, str] = {}

    def ensure_image(self) -> None:
        """Build the image from the build context unless the engine already has it."""
        from testcontainers.core.docker_client import DockerClient

        client = DockerClient().client
        try:
            client.images.get(self.spec.image)
            return
        except Exception:
            if self.spec.build_context is None:
                raise RuntimeError(
                    f"image {self.spec.image!r} not found and no Dockerfile to build it; build it with "
                    f"`docker build -t {self.spec.image} .` in a sandproof checkout or set {IMAGE_ENV}"
                ) from None
        client.images.build(path=str(self.spec.build_context), tag=self.spec.image, rm=True)

    def start(self) -> MockContainer:
        """Start the container and wait until both mocks answer."""
        available, reason = docker_status()
        if not available:
            raise RuntimeError(reason)
        from testcontainers.core.container import DockerContainer

        self.ensure_image()
        container = configure(DockerContainer(self.spec.image), self.spec)
        container.start()
        self._container = container
        host = container.get_container_host_ip()
        self.urls = {p: f"http://{host}:{container.get_exposed_port(self.spec.ports[p])}" for p in PROVIDERS}
        return self

    def stop(self) -> None:
        """Stop and remove the container."""
        if self._container is not None:
            container, self._container = self._container, None
            container.stop()
        self.urls = {}

    def __enter__(self) -> MockContainer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
