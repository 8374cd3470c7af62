"""What ``sandproof serve`` leaves to first use: the modules no request needs before both ports answer."""

from __future__ import annotations

import subprocess
import sys

#: Modules no request needs until it is used: a plain start loads none of them before both ports answer (README).
DEFERRED = (
    "mockserver.scenario",
    "mockserver.admin.scenario",
    "tomllib",
    "idna",
    "mockserver.tensorlake.faults",
    "mockserver.opensandbox.faults",
    "mockserver.tensorlake.model.daemon",
    "mockserver.tensorlake.routes.lifecycle",
    "mockserver.opensandbox.routes.lifecycle",
    "mockserver.opensandbox.routes.diagnostics",
    "mockserver.opensandbox.routes.ports",
    "mockserver.opensandbox.model.endpoints",
    "mockserver.opensandbox.commands",
    "mockserver.opensandbox.execution",
    "mockserver.sandbox.steps",
    "contracts._bulk",
    "mockserver.tensorlake.model.lifecycle",
    "mockserver.admin.catalogue",
)

_SERVE = """
import json, os, signal, sys, urllib.request
from mockserver.core.environment import DEFAULT_API_KEY
from mockserver.serve import ServeOptions, serve

KEYS = {"Authorization": f"Bearer {DEFAULT_API_KEY}", "OPEN-SANDBOX-API-KEY": DEFAULT_API_KEY}

def get(url):
    with urllib.request.urlopen(urllib.request.Request(url, headers=KEYS)) as answer:
        return answer.status

deferred = json.loads(sys.argv[1])
seen = {}

def out(line):
    if line.startswith(("tensorlake ", "opensandbox ")) and "(admin:" in line:
        name, url = line.split()[:2]
        assert get(url + "/_mock/clock") == 200
        seen[name] = url
    if line.startswith("point the SDKs"):
        started = [m for m in deferred if m in sys.modules]
        assert get(seen["tensorlake"] + "/sandboxes") == 200
        assert get(seen["opensandbox"] + "/health") == 200
        print(json.dumps({"at_start": started, "after_requests": [m for m in deferred if m in sys.modules]}))
        os.kill(os.getpid(), signal.SIGINT)

serve(ServeOptions(tensorlake_port=0, opensandbox_port=0), out=out)
"""


def test_a_plain_start_answers_admin_requests_before_loading_what_the_provider_requests_need() -> None:
    import json

    done = subprocess.run(
        [sys.executable, "-c", _SERVE, json.dumps(DEFERRED)], capture_output=True, text=True, timeout=60, check=True
    )
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["at_start"] == [], done.stderr
    # The provider requests load their routes (and no scenario, TOML or fault catalogue for nothing).
    assert figures["after_requests"] == [
        "mockserver.tensorlake.routes.lifecycle",
        "mockserver.opensandbox.routes.lifecycle",
        "mockserver.opensandbox.routes.diagnostics",
        "mockserver.opensandbox.routes.ports",
        "mockserver.opensandbox.model.endpoints",
        "mockserver.tensorlake.model.lifecycle",
    ], done.stderr
