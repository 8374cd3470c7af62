"""``sandproof serve --runtime linux`` at its capacity, with short runs of ``bench/capacity.py``.

Past ``--max-sandboxes``, and past what its open-files limit holds when the cap is set higher, the server
refuses creates with each provider's capacity error and keeps answering; it never dies. The first server
also runs OpenSandbox's egress sidecar in ``dns+nft`` mode, chosen by ``--opensandbox-egress-mode``: a
raw address outside the policy is dropped (in ``dns`` mode it gets out, see
``tests/opensandbox/test_linux_runtime.py``). All traffic stays in the runtime's own namespaces.
"""

from __future__ import annotations

import httpx
import pytest

from tests.linux.conftest import REPORT
from tests.serving import bench_module

pytestmark = pytest.mark.skipif(not REPORT.ok, reason=REPORT.message())

PROBES = (
    "curl -s -o /dev/null -m 3 http://pypi.org/; echo allowed=$?; "
    "curl -s -o /dev/null -m 3 http://203.0.113.11/; echo raw=$?"
)


def _opensandbox_in_dns_nft(url: str, key: str) -> None:
    body = {
        "image": {"uri": "python:3.11"},
        "entrypoint": ["sleep", "600"],
        "timeout": 600,
        "resourceLimits": {"cpu": "1", "memory": "512Mi"},
        "networkPolicy": {"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]},
    }
    with httpx.Client(base_url=url, headers={"OPEN-SANDBOX-API-KEY": key}, timeout=60, trust_env=False) as http:
        ident = http.post("/v1/sandboxes", json=body).json()["id"]
        assert http.get(f"/direct/{ident}/18080/policy").json()["enforcementMode"] == "dns+nft"
        run = http.post(f"/direct/{ident}/44772/command", json={"command": PROBES})
        assert "allowed=0" in run.text and "raw=7" in run.text, run.text  # raw: refused at the IP level


def test_past_the_cap_creates_get_capacity_errors_and_the_server_keeps_answering() -> None:
    capacity = bench_module("capacity")
    served = capacity.start_serve(
        [
            "--runtime",
            "linux",
            "--api-key",
            capacity.API_KEY,
            "--max-sandboxes",
            "3",
            "--opensandbox-egress-mode",
            "dns+nft",
        ],
        timeout=60,
    )
    made: list[str] = []
    try:
        _opensandbox_in_dns_nft(served.url("opensandbox"), capacity.API_KEY)  # one of the three places
        found = capacity.fill(served, 10, probe_every=1, made=made)
    finally:
        capacity.clean(served, made)
        served.stop()
    assert found.held == 2
    assert found.refusal is not None and found.refusal[0] == 422
    assert found.refusal[1]["termination_reason"] == "no_capacity"
    # The next OpenSandbox create is refused too, unless a descriptor was freed in between (an idle connection
    # closed): then it fits, and the server still stands. The 429 itself is tested with --max-sandboxes above.
    assert found.opensandbox_refusal is None or found.opensandbox_refusal[0] == 429
    assert found.opensandbox_refusal[1]["code"] == "KUBERNETES::POOL_CAPACITY_EXHAUSTED"
    assert found.server_alive and found.probes == 3 and found.probe_failures == []


def test_a_cap_above_the_open_files_limit_refuses_creates_instead_of_dying() -> None:
    capacity = bench_module("capacity")
    found = capacity.run(500, ["--max-sandboxes", "1000"], nofile=160, probe_every=5)
    assert 0 < found.held < 100
    assert found.refusal is not None and found.refusal[0] == 422
    assert "file descriptors" in found.refusal[1]["error_details"]["message"]
    # The next OpenSandbox create is refused too, unless a descriptor was freed in between (an idle connection
    # closed): then it fits, and the server still stands. The 429 itself is tested with --max-sandboxes above.
    assert found.opensandbox_refusal is None or found.opensandbox_refusal[0] == 429
    assert found.server_alive and found.probe_failures == []
    assert found.fds_after < 160
