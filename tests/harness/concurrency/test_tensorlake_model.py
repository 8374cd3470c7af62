"""TensorLake's sequential specification: the model's answers, canonical states, and the mock agreeing with it."""

from __future__ import annotations

import itertools
import json
from collections.abc import Hashable
from typing import Any

import httpx

from harness.concurrency.history import Operation
from harness.concurrency.linearizability import check_key
from harness.concurrency.tensorlake_model import TensorLakeSpec, info_view, list_view, output_of
from harness.concurrency.workload import ABSENT
from mockserver.tensorlake import TensorLakeMock

A = {"allow_internet_access": True, "allow_out": ["10.0.0.0/8"], "deny_out": ["10.1.0.0/16"]}
B = {"allow_internet_access": False, "allow_out": ["203.0.113.0/24"], "deny_out": []}
_ids = itertools.count()


def request(kind: str, body: Any = None) -> tuple[str, ...]:
    return (kind,) if body is None else (kind, json.dumps(body, sort_keys=True, separators=(",", ":")))


def op(kind: str, body: Any = None, output: Hashable = None, call: int = 0, ret: int | None = 0) -> Operation:
    return Operation(next(_ids), 0, kind, "sb", request(kind, body), output, call, ret)


def view(policy: Any, status: str = "running", ports: list[int] | None = None) -> str:
    return info_view({"status": status, "network_policy": policy, "exposed_ports": ports or []})


def test_the_model_answers_every_operation_and_all_three_patch_forms() -> None:
    spec = TensorLakeSpec(strict=True)
    state = spec.initial()
    assert spec.describe(state) == "not created"
    expected = [
        (op("get"), ("error", 404, "sandbox_not_found")),
        (op("create", {"network": A}), ("created", 200, "running")),
        (op("get"), ("ok", 200, view(A))),
        (op("patch", {"network": B}), ("ok", 200, view(B))),
        (
            op("patch", {"exposed_ports": [8080], "allow_unauthenticated_access": False}),
            ("ok", 200, view(B, ports=[8080])),
        ),
        (op("patch", {"network": None}), ("ok", 200, view(None, ports=[8080]))),
        (op("list"), ("listed", view(None, ports=[8080]))),
        (op("delete"), ("ok", 200, view(None, "terminated", [8080]))),
        (op("get"), ("error", 404, "sandbox_not_found")),
        (op("patch", {"network": A}), ("error", 404, "sandbox_not_found")),
        (op("list"), ABSENT),
    ]
    for operation, output in expected:
        state, got = spec.step(state, operation)
        assert got == output, operation.input
    assert spec.describe(state) == "deleted"


def test_equal_sandboxes_are_equal_states_whatever_the_path() -> None:
    spec = TensorLakeSpec(strict=True)
    via_patch, _ = spec.step(spec.step(spec.initial(), op("create", {"network": A}))[0], op("patch", {"network": B}))
    direct, _ = spec.step(spec.initial(), op("create", {"network": B}))
    assert via_patch == direct
    assert spec.describe(direct) == view(B)


def test_without_the_admin_api_error_codes_and_delete_bodies_are_not_compared() -> None:
    spec = TensorLakeSpec(strict=False)
    state, _ = spec.step(spec.initial(), op("create", {}))
    state, deleted = spec.step(state, op("delete"))
    assert deleted == ("ok", 200)
    assert spec.step(state, op("get"))[1] == ("error", 404, None)
    # a server that answers a deleted sandbox as terminated (the wire allows it) reads as the 404
    assert output_of("get", 200, {"status": "terminated"}, strict=False) == ("error", 404, None)
    assert list_view({"status": "terminated"}, strict=False) == ABSENT
    assert list_view({"status": "terminated"}, strict=True) != ABSENT


def test_the_mock_answers_what_the_model_predicts() -> None:
    spec = TensorLakeSpec(strict=True)
    state = spec.initial()
    with (
        TensorLakeMock().server() as server,
        httpx.Client(base_url=server.url, headers={"authorization": "Bearer k"}) as http,
    ):
        created = http.post("/sandboxes", json={"network": A})
        state, predicted = spec.step(state, op("create", {"network": A}))
        assert output_of("create", created.status_code, created.json(), strict=True) == predicted
        sid = created.json()["sandbox_id"]
        for kind, body, send in [
            ("patch", {"network": None}, lambda: http.patch(f"/sandboxes/{sid}", json={"network": None})),
            ("get", None, lambda: http.get(f"/sandboxes/{sid}")),
            ("patch", {"network": B}, lambda: http.patch(f"/sandboxes/{sid}", json={"network": B})),
            (
                "patch",
                {"exposed_ports": [3000]},
                lambda: http.patch(f"/sandboxes/{sid}", json={"exposed_ports": [3000]}),
            ),
            ("delete", None, lambda: http.delete(f"/sandboxes/{sid}")),
            ("get", None, lambda: http.get(f"/sandboxes/{sid}")),
        ]:
            answer = send()
            state, predicted = spec.step(state, op(kind, body))
            assert output_of(kind, answer.status_code, answer.json(), strict=True) == predicted, (kind, body)


def test_a_stale_policy_read_after_the_patch_returned_is_a_violation() -> None:
    spec = TensorLakeSpec(strict=True)
    history = [
        op("create", {"network": A}, ("created", 200, "running"), 0, 1),
        op("patch", {"network": B}, ("ok", 200, view(B)), 2, 3),
        op("get", None, ("ok", 200, view(A)), 4, 5),
    ]
    result = check_key("sb", history, spec)
    assert result.verdict == "violation"
    assert result.state_after == view(B)
    assert [c.predicted for c in result.candidates] == [("ok", 200, view(B))]
    overlapping = [*history[:2], op("get", None, ("ok", 200, view(A)), 2, 5)]
    assert check_key("sb", overlapping, spec).verdict == "linearizable"
