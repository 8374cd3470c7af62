"""``sandproof check`` against a running ``sandproof serve`` that someone else uses leaves that user's state alone.

The "user" creates sandboxes with their own key on both mocks, arms a fault rule on each and adds a DNS entry;
then ``sandproof check --target opensandbox:URL`` and ``--target tensorlake:URL`` run (narrowed to contracts
that create and delete sandboxes, the concurrency contract, and the ones that would arm faults and move the
clock) with the user's key. Afterwards the user's sandboxes, fault rules, DNS entry and journal are still there,
nothing of the run's is left, and each clock still runs on real time. The preflight's one-line errors are
checked against the same server.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from harness import cli
from tests.serving import ROOT, served

pytestmark = pytest.mark.timeout(300)
USER_KEY = "the-users-own-key"
ENV = {"opensandbox": "OPEN_SANDBOX_API_KEY", "tensorlake": "TENSORLAKE_API_KEY"}
#: Per provider: sandbox-making contracts, the concurrency contract, and the admin ones (which must skip).
SELECTION = {
    "opensandbox": "opensandbox_api and (lifecycle or faults or expiry) or concurrency",
    "tensorlake": "tensorlake_api and (lifecycle or faults or timeouts) or concurrency",
}
ADMIN_CONTRACTS = {"opensandbox": ("faults", "expiry"), "tensorlake": ("faults", "timeouts")}


@pytest.fixture(scope="module")
def server() -> Iterator[dict[str, str]]:
    """One ``sandproof serve`` (any key, each its own tenant; wall clocks) for the module."""
    with served() as (urls, _banner):
        yield urls


def _user_state(urls: dict[str, str]) -> dict[str, Any]:
    """Create the user's sandboxes, fault rules and DNS entry; return what to find again."""
    osb, tl = urls["opensandbox"], urls["tensorlake"]
    body = {
        "image": {"uri": "python:3.11"},
        "timeout": 3600,
        "resourceLimits": {"cpu": "1", "memory": "1Gi"},
        "entrypoint": ["sleep", "infinity"],
        "metadata": {"owner": "user"},
    }
    made = httpx.post(f"{osb}/v1/sandboxes", headers={"OPEN-SANDBOX-API-KEY": USER_KEY}, json=body)
    assert made.status_code == 202, made.text
    named = httpx.post(f"{tl}/sandboxes", headers={"Authorization": f"Bearer {USER_KEY}"}, json={"name": "users-box"})
    assert named.status_code == 200, named.text
    faults = {}
    for provider, url, path in (("opensandbox", osb, "/v1/sandboxes/users-own-*"), ("tensorlake", tl, "/users-own/*")):
        rule = httpx.post(f"{url}/_mock/faults", json={"method": "GET", "path": path, "status": 503, "times": 3})
        assert rule.status_code == 201, rule.text
        faults[provider] = rule.json()
    dns = httpx.post(f"{tl}/_mock/dns", json={"users.example": ["192.0.2.77"]})
    assert dns.status_code == 200, dns.text
    return {"opensandbox": made.json()["id"], "tensorlake": named.json()["sandbox_id"], "faults": faults}


def _check(provider: str, url: str) -> subprocess.Popen[str]:
    """Start ``sandproof check`` against one mock with the user's key (the two run side by side)."""
    env = {**os.environ, ENV[provider]: USER_KEY}
    command = [sys.executable, "-m", "sandproof.cli", "check", "--target", f"{provider}:{url}", "--profile", "dev"]
    command += ["-k", SELECTION[provider], "-q", "--concurrency", "2"]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_check_leaves_a_users_served_mocks_as_they_were(server: dict[str, str]) -> None:
    state = _user_state(server)
    journals = {p: httpx.get(f"{u}/_mock/journal").json() for p, u in server.items()}
    running = {provider: _check(provider, url) for provider, url in server.items()}
    for provider, proc in running.items():
        stdout, stderr = proc.communicate(timeout=240)
        output = stdout + stderr
        assert proc.returncode == 0, output[-4000:]
        assert "as a tenant of its own" in output and " 0 failed" in output
        rows = {line.split()[1]: line for line in stdout.splitlines() if line.split()[:1] == [provider]}
        for operation in ADMIN_CONTRACTS[provider]:
            assert rows[operation].split()[2:5] == ["0", "0", "1"], rows[operation]
            assert "was not started by this run" in rows[operation]
        for operation in ("lifecycle", "concurrency"):
            assert rows[operation].split()[2:5] == ["1", "0", "0"], rows[operation]

    for provider, url in server.items():
        live = httpx.get(f"{url}/_mock/sandboxes").json()["sandboxes"]
        assert [s["id"] for s in live] == [state[provider]], f"{provider}: {live}"  # the user's, and only theirs
        assert httpx.get(f"{url}/_mock/faults").json() == [state["faults"][provider]]  # unfired, nothing added
        clock = httpx.get(f"{url}/_mock/clock").json()
        assert clock["mode"] == "wall" and abs(clock["now"] - time.time()) < 1.0, clock
        kept = httpx.get(f"{url}/_mock/journal").json()
        assert kept[: len(journals[provider])] == journals[provider]  # never cleared
    osb_users = httpx.get(f"{server['opensandbox']}/v1/sandboxes", headers={"OPEN-SANDBOX-API-KEY": USER_KEY})
    assert [s["id"] for s in osb_users.json()["items"]] == [state["opensandbox"]]
    tl_users = httpx.get(f"{server['tensorlake']}/sandboxes", headers={"Authorization": f"Bearer {USER_KEY}"})
    assert [s["id"] for s in tl_users.json()["sandboxes"]] == [state["tensorlake"]]
    dns = httpx.get(f"{server['tensorlake']}/_mock/dns").json()
    assert dns["entries"].get("users.example") == ["192.0.2.77"]


@pytest.mark.parametrize("provider", ["opensandbox", "tensorlake"])
def test_each_setup_mistake_stops_the_check_in_one_line(
    server: dict[str, str], provider: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = server[provider]
    monkeypatch.delenv(ENV[provider], raising=False)
    cases = [
        (f"{provider}:{url}", "wants an API key (401 "),
        (f"{provider}:{url}/v1/", "the URL ends in /v1"),
        (f"{provider}:http://127.0.0.1:{_free_port()}", f"cannot reach the {provider} server"),
    ]
    for spec, expected in cases:
        assert cli.main(["--target", spec, "-q"]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and expected in err, err
        assert err.startswith(f"sandproof check: target {spec!r}: ")


def _free_port() -> int:
    """Return a loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
