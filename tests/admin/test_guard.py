import subprocess
import sys

import httpx
import pytest

from mockserver.admin.client import AdminClient, AdminError
from mockserver.serve import ServeError, ServeOptions, is_loopback, serve
from tests.demo_mock import DemoMock


@pytest.fixture
def guarded() -> DemoMock:
    mock = DemoMock()
    mock.admin_token = "s3cret"
    return mock


def test_a_guarded_admin_api_refuses_requests_without_the_token(guarded: DemoMock) -> None:
    with guarded.server() as server:
        for path in ("/_mock/clock", "/_mock/snapshot", "/_mock/journal", "/_mock/ui"):
            response = httpx.get(server.url + path)
            assert response.status_code == 401 and response.json()["code"] == "admin_token_required", path
        assert httpx.post(server.url + "/_mock/reset", headers={"x-sandproof-admin-token": "wrong"}).status_code == 401
        with pytest.raises(AdminError):
            AdminClient(server.url, token="").now()


def test_a_browser_without_the_token_is_told_how_to_pass_it(guarded: DemoMock) -> None:
    with guarded.server() as server:
        page = httpx.get(server.url + "/_mock/ui", headers={"accept": "text/html,application/xhtml+xml"})
        assert page.status_code == 401 and page.headers["content-type"].startswith("text/html")
        assert "/_mock/ui?token=" in page.text and "admin_token_required" in page.text
        api = httpx.get(server.url + "/_mock/clock")
        assert "/_mock/ui?token=" in api.json()["message"]


def test_the_token_opens_the_admin_api_by_header_or_cookie(guarded: DemoMock) -> None:
    with guarded.server() as server:
        assert AdminClient(server.url, token="s3cret").now() > 0
        cookie = httpx.get(server.url + "/_mock/clock", cookies={"sandproof_admin_token": "s3cret"})
        assert cookie.status_code == 200
        provider = httpx.get(server.url + "/items")  # provider routes are not guarded
        assert provider.status_code != 401


def test_the_admin_client_reads_the_token_from_the_environment(
    guarded: DemoMock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SANDPROOF_ADMIN_TOKEN", "s3cret")
    with guarded.server() as server:
        assert AdminClient(server.url).now() > 0


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("localhost", True), ("::1", True), ("0.0.0.0", False), ("10.1.2.3", False)],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_serve_refuses_a_public_host_without_an_admin_token() -> None:
    with pytest.raises(ServeError, match="--admin-token"):
        serve(ServeOptions(host="0.0.0.0", tensorlake_port=0, opensandbox_port=0), out=lambda line: None)
    done = subprocess.run(
        [sys.executable, "-m", "sandproof.cli", "serve", "--host", "0.0.0.0", "--tensorlake-port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2 and "--admin-token" in done.stderr
