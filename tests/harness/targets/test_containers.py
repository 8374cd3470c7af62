"""The mock container's configuration, checked without a Docker engine; the live run skips without one."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from testcontainers.core import container as tc_container
from testcontainers.core.wait_strategies import CompositeWaitStrategy, HttpWaitStrategy

from harness.targets import containers
from harness.targets.containers import (
    CONTAINER_PORTS,
    DEFAULT_IMAGE,
    READY_PATHS,
    ContainerSpec,
    MockContainer,
    configure,
    default_spec,
    docker_status,
)
from sandproof import cli as mock_cli

ROOT = Path(__file__).resolve().parents[3]


class _NoEngine:
    """Stands in for testcontainers' Docker client so a container can be configured offline."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


def test_spec_command_is_what_sandproof_serve_accepts() -> None:
    spec = ContainerSpec(api_key="k-1")
    args = mock_cli.parser().parse_args(spec.command())
    assert args.command == "serve" and args.host == "0.0.0.0"
    assert (args.tensorlake_port, args.opensandbox_port, args.api_key) == (8911, 8080, ["k-1"])
    assert args.admin_token == spec.admin_token and len(spec.admin_token) >= 16
    assert dict(spec.ports) == CONTAINER_PORTS == {"tensorlake": 8911, "opensandbox": 8080}


def test_wait_strategy_polls_both_admin_apis() -> None:
    strategy = ContainerSpec(startup_timeout=42).wait_strategy()
    assert isinstance(strategy, CompositeWaitStrategy)
    checks = strategy._strategies
    assert all(isinstance(c, HttpWaitStrategy) for c in checks)
    assert sorted((c._port, c._path, tuple(c._status_codes)) for c in checks) == [
        (8080, READY_PATHS["opensandbox"], (200,)),
        (8911, READY_PATHS["tensorlake"], (200,)),
    ]
    assert strategy._startup_timeout == 42 and all(c._startup_timeout == 42 for c in checks)


def test_configure_applies_ports_command_env_and_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tc_container, "DockerClient", _NoEngine)
    spec = ContainerSpec(image="sandproof-mock:test", env={"PYTHONUNBUFFERED": "1", "EXTRA": "x"})
    container = configure(tc_container.DockerContainer(spec.image), spec)
    assert container.image.endswith("sandproof-mock:test")
    assert container.ports == {"8911": None, "8080": None}
    assert container._command == spec.command()
    assert container.env == {"PYTHONUNBUFFERED": "1", "EXTRA": "x"}
    assert isinstance(container._wait_strategy, CompositeWaitStrategy)


def test_default_spec_uses_the_image_env_and_the_checkout() -> None:
    spec = default_spec({"SANDPROOF_IMAGE": "registry.local/sandproof:1"})
    assert spec.image == "registry.local/sandproof:1"
    assert spec.build_context == ROOT and (ROOT / "Dockerfile").is_file()
    assert default_spec({}).image == DEFAULT_IMAGE


def test_dockerfile_matches_the_spec() -> None:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert re.search(r"^FROM python:3\.11", text, re.M)
    assert re.search(r"^RUN pip install \.", text, re.M)
    assert re.search(r"^EXPOSE 8911 8080$", text, re.M)
    assert '["sandproof"]' in text and '["serve", "--host", "0.0.0.0"]' in text
    assert READY_PATHS["tensorlake"] in text  # the image's own health check probes what the wait strategy probes
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    assert {".git", ".venv", ".cache", "tests"} <= set(ignored)


def test_docker_status_without_an_engine_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    available, reason = docker_status(timeout=1)
    assert not available and "unix:///nonexistent/docker.sock" in reason


def test_start_refuses_cleanly_without_an_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(containers, "docker_status", lambda timeout=3.0: (False, "no Docker engine: test"))
    box = MockContainer(ContainerSpec())
    with pytest.raises(RuntimeError, match="no Docker engine: test"):
        box.start()
    assert box.urls == {}


def test_live_container_serves_both_mocks() -> None:
    available, reason = docker_status()
    if not available:
        pytest.skip(reason)
    with MockContainer() as box:
        for provider, url in box.urls.items():
            assert httpx.get(url + READY_PATHS[provider], timeout=10).status_code == 200
