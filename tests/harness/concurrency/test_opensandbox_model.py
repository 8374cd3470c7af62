"""OpenSandbox's sequential specification: lifecycle and egress answers, and the mock agreeing with it."""

from __future__ import annotations

import itertools
import json
from collections.abc import Hashable
from typing import Any

import httpx

from harness.concurrency.history import Operation
from harness.concurrency.linearizability import check_key
from harness.concurrency.opensandbox_model import UNREACHABLE, OpenSandboxSpec, list_view, output_of, policy_view
from harness.concurrency.workload import ABSENT
from mockserver.opensandbox import OpenSandboxMock

LABEL = ("sandproof-run", "t1")
CREATE = {
    "image": {"uri": "python:3.11"},
    "entrypoint": ["tail", "-f", "/dev/null"],
    "resourceLimits": {"cpu": "1", "memory": "2Gi"},
    "timeout": 3600,
    "metadata": {"sandproof-run": "t1"},
    "networkPolicy": {"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]},
}
_ids = itertools.count()


def op(kind: str, body: Any = None, output: Hashable = None, call: int = 0, ret: int | None = 0) -> Operation:
    given = (kind,) if body is None else (kind, json.dumps(body, sort_keys=True, separators=(",", ":")))
    return Operation(next(_ids), 0, kind, "sb", given, output, call, ret)


def policy(default: str, *rules: tuple[str, str]) -> str:
    return policy_view(
        {
            "status": "ok",
            "mode": f"{default}_all",
            "policy": {"defaultAction": default, "egress": [{"action": a, "target": t} for a, t in rules]},
        }
    )


def test_the_model_answers_lifecycle_and_egress_operations() -> None:
    spec = OpenSandboxSpec(strict=True, label=LABEL)
    state = spec.initial()
    running = ("ok", 200, '{"state":"Running"}')
    expected = [
        (op("egress-get"), UNREACHABLE),
        (op("create", {"image": {"uri": "python:3.11"}}), ("error", 422, None)),
        (op("create", CREATE), ("created", 202, '{"state":"Running"}')),
        (op("get"), running),
        (op("list"), ("listed", '{"state":"Running"}')),
        (op("egress-get"), ("ok", 200, policy("deny", ("allow", "pypi.org")))),
        (
            op("egress-patch", [{"action": "deny", "target": "github.com"}]),
            ("ok", 200, '{"mode":"deny_all","status":"ok"}'),
        ),
        (op("egress-get"), ("ok", 200, policy("deny", ("deny", "github.com"), ("allow", "pypi.org")))),
        (op("egress-delete", ["pypi.org"]), ("ok", 200, '{"mode":"deny_all","status":"ok"}')),
        (op("egress-get"), ("ok", 200, policy("deny", ("deny", "github.com")))),
        (op("egress-patch", [{"action": "allow", "target": "*"}]), ("error", 400)),
        (op("delete"), ("ok", 204)),
        (op("get"), ("error", 404, "DOCKER::SANDBOX_NOT_FOUND")),
        (op("list"), ABSENT),
        (op("egress-patch", [{"action": "deny", "target": "github.com"}]), UNREACHABLE),
    ]
    for operation, output in expected:
        state, got = spec.step(state, operation)
        assert got == output, operation.input
    assert spec.describe(state).startswith("no sandbox")


def test_a_gone_sidecar_is_unreachable_whatever_the_server_says() -> None:
    for status in (404, 502, 503):
        assert output_of("egress-get", status, None, strict=True) == UNREACHABLE
    assert output_of("get", 404, {"code": "X"}, strict=False) == ("error", 404, None)


def test_the_mock_answers_what_the_model_predicts() -> None:
    spec = OpenSandboxSpec(strict=True, label=LABEL)
    state = spec.initial()
    with OpenSandboxMock().server() as server, httpx.Client(base_url=server.url) as http:
        created = http.post("/v1/sandboxes", json=CREATE)
        state, predicted = spec.step(state, op("create", CREATE))
        assert output_of("create", created.status_code, created.json(), strict=True) == predicted
        sid = created.json()["id"]
        endpoint = http.get(f"/v1/sandboxes/{sid}/endpoints/18080").json()
        sidecar = f"http://{endpoint['endpoint']}/policy"
        rules = [{"action": "deny", "target": "*.github.com"}]
        for kind, body, send in [
            ("egress-patch", rules, lambda: http.patch(sidecar, json=rules)),
            ("egress-get", None, lambda: http.get(sidecar)),
            ("egress-delete", ["pypi.org"], lambda: http.request("DELETE", sidecar, json=["pypi.org"])),
            ("get", None, lambda: http.get(f"/v1/sandboxes/{sid}")),
            ("delete", None, lambda: http.delete(f"/v1/sandboxes/{sid}")),
            ("egress-get", None, lambda: http.get(sidecar)),
            ("get", None, lambda: http.get(f"/v1/sandboxes/{sid}")),
        ]:
            answer = send()
            state, predicted = spec.step(state, op(kind, body))
            data = answer.json() if "json" in answer.headers.get("content-type", "") else answer.text
            assert output_of(kind, answer.status_code, data, strict=True) == predicted, (kind, body, answer.text)


def test_a_lost_egress_merge_is_a_violation() -> None:
    spec = OpenSandboxSpec(strict=True, label=LABEL)
    ok = ("ok", 200, '{"mode":"deny_all","status":"ok"}')
    history = [
        op("create", CREATE, ("created", 202, '{"state":"Running"}'), 0, 1),
        op("egress-patch", [{"action": "deny", "target": "a.org"}], ok, 2, 10),
        op("egress-patch", [{"action": "deny", "target": "b.org"}], ok, 3, 11),
        op("egress-get", None, ("ok", 200, policy("deny", ("deny", "b.org"), ("allow", "pypi.org"))), 12, 13),
    ]
    assert check_key("sb", history, spec).verdict == "violation"
    both = ("ok", 200, policy("deny", ("deny", "b.org"), ("deny", "a.org"), ("allow", "pypi.org")))
    assert check_key("sb", [*history[:3], op("egress-get", None, both, 12, 13)], spec).verdict == "linearizable"


def _status(state: str, reason: str) -> dict[str, Any]:
    return {"status": {"state": state, "reason": reason}}


def test_the_docker_runtimes_transitional_states_read_as_a_sandbox_that_exists() -> None:
    """opensandbox-server 1.1.1 shows a create's unstarted container and a delete's killed one to a concurrent list."""
    spec = OpenSandboxSpec(strict=False, label=LABEL)
    created = ("created", 202, '{"state":"Running"}')
    pending = list_view(_status("Pending", "CONTAINER_STARTING"))
    killed = list_view(_status("Failed", "CONTAINER_EXITED_ERROR"))
    assert pending == killed == ("listed", '{"state":"Running"}')
    history = [  # the minimal history the real server gave, read as the contract reads it
        op("create", CREATE, created, 0, 10),
        op("list", None, pending, 2, 5),
        op("delete", None, ("ok", 204), 11, 20),
        op("list", None, killed, 12, 14),
        op("list", None, ABSENT, 21, 22),
    ]
    assert check_key("sb", history, spec).verdict == "linearizable"
    paused = ("listed", '{"state":"Paused"}')  # a state no operation here leads to is still a violation
    assert check_key("sb", [*history[:2], op("list", None, paused, 11, 12)], spec).verdict == "violation"
    assert list_view(_status("Failed", "OOM_KILLED")) == ("listed", '{"state":"Failed"}')
