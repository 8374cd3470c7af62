"""The lifecycle routes' HTTP details against what the real 1.1.1 server answered (``tests/opensandbox/http_cases``)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from mockserver.opensandbox import OpenSandboxMock

from ..create_cases import BODY
from ..http_cases import (
    check_allow,
    check_metrics_sandbox_ids,
    check_network_policy_body_first,
    check_pools_and_templates,
)

KEY = "sandproof-real-key"


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    with OpenSandboxMock(api_key=KEY).server() as srv:
        yield srv.url


@pytest.fixture
def client(served: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served, headers={"OPEN-SANDBOX-API-KEY": KEY}) as c:
        yield c


def test_every_405_carries_allow_and_head_is_not_served(client: httpx.Client) -> None:
    check_allow(client, client.post("/v1/sandboxes", json=BODY).json()["id"])


def test_head_on_health_and_the_sandbox_list_is_405(client: httpx.Client) -> None:
    for path, allow in (("/health", "GET"), ("/v1/sandboxes", "POST")):
        resp = client.head(path)
        assert (resp.status_code, resp.headers["allow"]) == (405, allow)


def test_pools_and_templates_are_the_docker_runtimes_501s(client: httpx.Client) -> None:
    check_pools_and_templates(client)


def test_metrics_event_sandbox_id_must_be_a_string(client: httpx.Client) -> None:
    check_metrics_sandbox_ids(client)


def test_network_policy_body_is_checked_before_the_sandbox(client: httpx.Client) -> None:
    check_network_policy_body_first(client)
