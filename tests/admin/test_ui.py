"""The dashboard at ``/_mock/ui`` in a real headless Chromium, with the real ``opensandbox`` SDK driving the mock.

The SDK creates a sandbox; the page shows it; a fault rule is added from the page and the SDK's next call
fails with it; the journal on the page shows that request and its response in full; a rule is removed from
the page; the clock, the DNS table and the unknown-field warnings are driven from the page too. A second
mock that serves a named-fault catalogue shows the catalogue form instead, and arming from it works.
The screenshot is kept in ``reports/dashboard.png``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opensandbox import Sandbox
from opensandbox.exceptions import SandboxApiException

from mockserver.core import FaultRule
from mockserver.opensandbox import OpenSandboxMock

from .chromium import CHROMIUM, Chromium

REPORTS = Path(__file__).resolve().parents[2] / "reports"
KEY = "dashboard-key"

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    """Start one headless Chromium for the module (skipped without it, unless CI requires it)."""
    if not CHROMIUM.is_file():
        message = f"{CHROMIUM} is missing: apt-get install chromium (make unit installs it)"
        if os.environ.get("SANDPROOF_REQUIRE_CHROMIUM"):
            pytest.fail(message)
        pytest.skip(message)
    with Chromium() as chromium:
        yield chromium


@pytest.fixture
def sdk() -> Iterator[Any]:
    """Run SDK coroutines on one event loop (the SDK's HTTP client is bound to the loop it first ran on)."""
    loop = asyncio.new_event_loop()
    yield loop.run_until_complete
    loop.close()


def test_sandbox_appears_a_fault_from_the_page_fails_the_next_sdk_call(browser: Chromium, sdk: Any) -> None:
    mock = OpenSandboxMock(api_key=KEY)
    with mock.server() as srv:
        config = mock.connection_config(srv.url)
        browser.navigate(f"{srv.url}/_mock/ui")
        browser.wait_for("document.body.dataset.ready === '1'")
        assert browser.text("#provider") == "opensandbox"
        # The mock serves its named fault catalogue, so the page offers it first and folds the custom rule away.
        assert browser.evaluate("document.getElementById('catalogue-form').hidden") is False
        assert browser.evaluate("document.getElementById('rule-details').open") is False
        browser.evaluate("document.getElementById('rule-details').open = true")

        sandbox = sdk(Sandbox.create("python:3.11", connection_config=config, metadata={"team": "dash"}))
        row = f'#sandboxes tr[data-id="{sandbox.id}"]'
        browser.wait_for(f"!!document.querySelector('{row}')")
        assert browser.text(f"{row} .state") == "Running"
        assert browser.text(f"{row} .metadata") == "team=dash"

        # Aim a custom rule at this sandbox from its row, and fail its next GET with a 500.
        browser.click(f"{row} button.target")
        assert browser.evaluate("document.getElementById('fault-sandbox').value") == sandbox.id
        browser.fill("#fault-method", "GET")
        browser.fill("#fault-path", "/v1/sandboxes/*")
        browser.fill("#fault-status", "500")
        browser.fill("#fault-body", '{"code": "DASHBOARD::INJECTED", "message": "from the page"}')
        browser.fill("#fault-name", "page-fault")
        browser.click("#fault-add")
        browser.wait_for("document.querySelectorAll('#faults tbody tr').length === 1")
        (rule,) = mock.faults.rules()
        assert (rule.method, rule.path, rule.sandbox_id, rule.status, rule.times) == (
            "GET",
            "/v1/sandboxes/*",
            sandbox.id,
            500,
            1,
        )

        with pytest.raises(SandboxApiException) as failed:
            sdk(sandbox.get_info())
        assert failed.value.status_code == 500 and "from the page" in str(failed.value)
        assert sdk(sandbox.get_info()).status.state == "Running"  # the rule fired once and is gone
        browser.wait_for("document.querySelectorAll('#faults tbody tr').length === 0")

        # The journal shows the faulted request; opening it shows the request and the response in full.
        faulted = "[...document.querySelectorAll('#journal tbody tr')].find(r => r.innerText.includes('page-fault'))"
        browser.wait_for(f"!!{faulted}")
        browser.evaluate(f"{faulted}.click()")
        browser.wait_for("document.getElementById('entry-response-body')?.innerText.includes('DASHBOARD::INJECTED')")
        assert "open-sandbox-api-key: <redacted>" in browser.text("#entry-request-headers")
        assert "content-type: application/json" in browser.text("#entry-response-headers")

        # Filter the journal by status and by sandbox.
        browser.fill("#filter-status", "500")
        browser.wait_for("document.querySelectorAll('#journal tbody tr').length === 1")
        browser.fill("#filter-status", "")
        browser.fill("#filter-sandbox", sandbox.id)
        browser.wait_for(
            "[...document.querySelectorAll('#journal tbody tr')].every(r => r.cells[5].innerText !== '')"
            " && document.querySelectorAll('#journal tbody tr').length > 1"
        )

        # A forever rule, removed again from the page.
        mock.faults.add(FaultRule(method="POST", path="/v1/sandboxes", status=503, times=None, name="forever"))
        browser.wait_for("document.querySelectorAll('#faults tbody tr button.remove').length === 1")
        browser.click("#faults tbody tr button.remove")
        browser.wait_for("document.querySelectorAll('#faults tbody tr').length === 0")
        assert mock.faults.rules() == []

        # Clock, DNS and unknown fields.
        before = mock.clock.now()
        browser.fill("#clock-seconds", "120")
        browser.click("#clock-advance")
        browser.wait_for(f"Date.parse(document.getElementById('clock-now').innerText) / 1000 >= {before + 120}")
        browser.fill("#clock-mode", "manual")
        _wait_until(lambda: mock.clock.mode == "manual")
        browser.fill("#dns-name", "pypi.org")
        browser.fill("#dns-addresses", "10.1.2.3")
        browser.click("#dns-add")
        browser.wait_for("document.querySelector('#dns tbody').innerText.includes('10.1.2.3')")
        assert mock.dns.resolve("pypi.org") == ["10.1.2.3"]
        with httpx.Client(base_url=srv.url, headers={"OPEN-SANDBOX-API-KEY": KEY}) as http:
            create = {"image": {"uri": "python:3.11"}, "entrypoint": ["sleep", "9"], "timeout": 60, "why": 1}
            extra = http.post("/v1/sandboxes", json={**create, "resourceLimits": {"cpu": "1", "memory": "1Gi"}})
            assert extra.status_code == 202, extra.text
        browser.wait_for("document.getElementById('unknown').innerText.includes('why')")

        browser.fill("#filter-sandbox", "")
        browser.wait_for("document.querySelectorAll('#journal tbody tr').length > 3")
        shot = browser.screenshot(REPORTS / "dashboard.png")
        assert shot.stat().st_size > 10_000
        sdk(sandbox.kill())
        browser.wait_for(f"!document.querySelector('{row}')")


def test_the_catalogue_arms_named_faults_from_the_page(browser: Chromium) -> None:
    mock = OpenSandboxMock(api_key=KEY)
    with mock.server() as srv:
        browser.navigate(f"{srv.url}/_mock/ui")
        browser.wait_for("document.body.dataset.ready === '1'")
        assert browser.evaluate("document.getElementById('catalogue-form').hidden") is False
        browser.fill("#catalogue-select", "unavailable")
        browser.wait_for("document.getElementById('catalogue-reaction').innerText.includes('Retry-After')")
        assert browser.evaluate("document.getElementById('param-times').value") == "1"
        browser.fill("#param-path", "/v1/sandboxes")
        browser.fill("#param-times", "3")
        browser.fill("#param-retry_after", "2")
        browser.click("#catalogue-arm")
        browser.wait_for("document.getElementById('status').innerText.startsWith('armed unavailable')")
        (rule,) = mock.faults.rules()
        assert (rule.path, rule.status, rule.times, rule.headers) == ("/v1/sandboxes", 503, 3, {"Retry-After": "2"})
        assert rule.name == "unavailable"
        browser.wait_for("document.querySelector('#faults tbody').innerText.includes('unavailable')")
        assert [
            httpx.get(f"{srv.url}/v1/sandboxes", headers={"OPEN-SANDBOX-API-KEY": KEY}).status_code for _ in range(3)
        ] == [503, 503, 503]
        browser.wait_for("document.querySelector('#faults-ended tbody').textContent.includes('spent')")
        cells = browser.evaluate(
            "[...document.querySelectorAll('#faults-ended tbody tr td')].map((c) => c.textContent)"
        )
        assert [cells[1], cells[4], cells[6]] == ["unavailable", "3", "spent"]


def _wait_until(predicate: Any, timeout: float = 5.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition never became true"
        time.sleep(0.05)


def test_the_tensorlake_mock_serves_the_same_page(browser: Chromium) -> None:
    from mockserver.tensorlake import TensorLakeMock

    mock = TensorLakeMock(seed=2)
    with mock.server() as srv:
        browser.navigate(f"{srv.url}/_mock/ui")
        browser.wait_for("document.body.dataset.ready === '1'")
        assert browser.text("#provider") == "tensorlake"
        made = httpx.post(
            f"{srv.url}/sandboxes",
            json={"name": "web", "exposed_ports": [3000], "network": {"allow_internet_access": False}},
            headers={"Authorization": "Bearer tl-key"},
        )
        sid = made.json()["sandbox_id"]
        row = f'#sandboxes tr[data-id="{sid}"]'
        browser.wait_for(f"!!document.querySelector('{row}')")
        assert browser.text(f"{row} .state") == "running" and browser.text(f"{row} .metadata") == "name=web"
        assert browser.text(f"{row} .policy") == "internet off"
        browser.wait_for("document.querySelector('#journal tbody').innerText.includes('/sandboxes')")
        assert browser.console == []


def test_behind_an_admin_token_the_page_works_once_opened_with_it(browser: Chromium) -> None:
    mock = OpenSandboxMock(api_key=KEY)
    mock.admin_token = "dash-token"
    with mock.server() as srv:
        assert httpx.get(f"{srv.url}/_mock/ui").status_code == 401
        browser.navigate(f"{srv.url}/_mock/ui?token=dash-token")
        browser.wait_for("document.body.dataset.ready === '1'")
        with httpx.Client(base_url=srv.url, headers={"OPEN-SANDBOX-API-KEY": KEY}) as http:
            create = {"image": {"uri": "python:3.11"}, "entrypoint": ["sleep", "9"], "timeout": 60}
            sid = http.post("/v1/sandboxes", json={**create, "resourceLimits": {"cpu": "1", "memory": "1Gi"}}).json()[
                "id"
            ]
        browser.wait_for(f"!!document.querySelector('#sandboxes tr[data-id=\"{sid}\"]')")
        assert browser.text("#status") == ""  # no admin call was refused


def test_tensorlake_expiry_no_favicon_and_what_an_advance_ended(browser: Chromium) -> None:
    from mockserver.core import VirtualClock
    from mockserver.tensorlake import TensorLakeMock

    mock = TensorLakeMock(seed=3, clock=VirtualClock("manual"))
    with mock.server() as srv:
        browser.navigate(f"{srv.url}/_mock/ui")
        browser.wait_for("document.body.dataset.ready === '1'")
        made = httpx.post(f"{srv.url}/sandboxes", json={"timeout_secs": 600}, headers={"Authorization": "Bearer k"})
        sid = made.json()["sandbox_id"]
        row = f'#sandboxes tr[data-id="{sid}"]'
        browser.wait_for(f"!!document.querySelector('{row}')")
        browser.wait_for(f"document.querySelector('{row} td:nth-child(7)').textContent !== ''")
        expires = browser.evaluate(f"document.querySelector('{row} td:nth-child(7)').textContent")
        assert expires.endswith("Z") and expires.startswith("20")
        browser.fill("#clock-seconds", "601")
        browser.click("#clock-advance")
        browser.wait_for("document.getElementById('status').innerText.includes('changed')")
        assert sid in browser.text("#status") and "running" in browser.text("#status")
        assert all("favicon" not in e.path for e in mock.journal.entries())
        link = browser.evaluate("document.getElementById('export-scenario').href")
        exported = httpx.get(link).json()
        assert exported["sandproof_scenario"] == 1 and "snapshot" in exported["tensorlake"]
        blocked = OpenSandboxMock(api_key=KEY)
        blocked.admin_token = "t"
        with blocked.server() as guarded:
            browser.navigate(f"{guarded.url}/_mock/ui")
            browser.wait_for("document.body && document.body.innerText.includes('?token=')")
