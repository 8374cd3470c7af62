"""The two route shapes of the OpenSandbox mock, as the real servers route.

The lifecycle server (FastAPI) has one route per method and serves no HEAD: its 405's ``Allow`` names the
first matching route's method (tests/opensandbox/routes/test_lifecycle.py holds those). execd (a beego
router: one route per path, e.g. ``"post:RunCommand;delete:InterruptCommand"`` on ``/command``) and the
egress sidecar have one route per path listing its methods, and answer HEAD as GET.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from mockserver.opensandbox import OpenSandboxMock

from ..create_cases import BODY


@pytest.fixture(scope="module")
def execd() -> Iterator[httpx.Client]:
    with OpenSandboxMock().server() as srv, httpx.Client(base_url=srv.url) as client:
        sid = client.post("/v1/sandboxes", json=BODY).json()["id"]
        client.base_url = httpx.URL(f"{srv.url}/direct/{sid}/44772")
        yield client


@pytest.mark.parametrize(
    ("path", "methods"),
    [
        ("/command", {"POST", "DELETE"}),
        ("/code", {"POST", "DELETE"}),
        ("/directories", {"POST", "DELETE"}),
        ("/pty/some-session", {"GET", "HEAD", "DELETE"}),
        ("/code/contexts", {"GET", "HEAD", "DELETE"}),
    ],
)
def test_an_execd_405_names_every_method_of_the_path(execd: httpx.Client, path: str, methods: set[str]) -> None:
    refused = execd.request("PUT", path)
    assert refused.status_code == 405
    assert set(refused.headers["allow"].split(", ")) == methods


def test_execd_answers_head_as_get(execd: httpx.Client) -> None:
    assert execd.head("/ping").status_code == 200
    assert execd.head("/files/info", params={"path": "/tmp"}).status_code == 200
    assert execd.head("/session").status_code == 405
