"""The workload engine: the shared sandbox pool, per-sandbox projection of lists, client threads, probes."""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from typing import Any

import httpx
import pytest

from harness.concurrency.history import History, Operation
from harness.concurrency.linearizability import Spec
from harness.concurrency.workload import (
    ABSENT,
    ClientContext,
    ProbeRequest,
    SandboxPool,
    listed,
    perform,
    project,
    run_clients,
)


def test_the_pool_keeps_a_few_sandboxes_alive_and_a_few_deleted_ones() -> None:
    pool = SandboxPool(live_target=2, max_created=3, retired_kept=1)
    assert pool.claim_create() and pool.claim_create()
    assert not pool.claim_create()  # two are being created already
    pool.created_ok("a", "extra-a")
    pool.create_failed()
    assert pool.claim_create()
    pool.created_ok("b")
    assert not pool.claim_create()  # two alive
    pool.retire("a")
    pool.retire("a")  # a second acknowledged delete changes nothing
    assert pool.claim_create()
    pool.created_ok("c")
    pool.retire("c")
    assert not pool.claim_create()  # three created: the run's cap
    assert pool.alive() == ["b"] and pool.retired == [("c", None)]
    rng = random.Random(0)
    picks = {pool.pick(rng) for _ in range(200)}
    assert picks == {("b", None), ("c", None)}
    pool.retire("b")
    assert pool.retired == [("b", None)]
    assert SandboxPool(1, 1).pick(rng) is None


class _Driver:
    provider = "fake"
    spec: Spec[Any] = Spec()
    read_only = frozenset({"get", "list"})

    def client(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(200, json={"n": 1})))

    def step(self, ctx: ClientContext) -> None:
        perform(ctx, "get", ("get",), "k", lambda: ctx.http.get("http://x/"), lambda r: r.json()["n"])

    def deleted(self, op: Operation) -> bool:
        return op.kind == "delete" and op.output == "ok"

    def cleanup(self, keys: Sequence[str]) -> None:
        pass


def op(ident: int, kind: str, key: str | None, output: Hashable, call: int, ret: int | None) -> Operation:
    return Operation(ident, 0, kind, key, (kind,), output, call, ret)


def test_a_list_is_seen_from_each_sandbox_it_could_have_seen() -> None:
    ops = [
        op(0, "list", None, listed([]), 0, 5),  # before a's create was invoked: absent, left out
        op(1, "create", "a", "created", 10, 20),
        op(2, "list", None, listed([("a", "view-a")]), 15, 25),
        op(3, "delete", "a", "ok", 30, 40),
        op(4, "list", None, listed([]), 35, 45),  # overlaps the delete: kept, absent
        op(5, "list", None, listed([]), 50, 55),  # after the delete returned: left out
        op(6, "list", None, listed([("a", "ghost")]), 60, 65),  # shows a deleted sandbox: kept
        op(7, "list", None, ("error", 503, None), 70, 75),  # a failed list: every sandbox sees the error
        op(8, "get", "a", None, 80, None),  # a lost read: left out
        op(9, "delete", "a", None, 80, None),  # a lost write: kept
        op(10, "create", None, None, 90, None),  # a lost create: no sandbox to put it on
    ]
    projected = project(ops, _Driver())
    seen = [(o.kind, o.output, o.call) for o in projected]
    assert seen == [
        ("create", "created", 10),
        ("delete", "ok", 30),
        ("delete", None, 80),
        ("list", "view-a", 15),
        ("list", ABSENT, 35),
        ("list", "ghost", 60),
        ("list", ("error", 503, None), 70),
    ]
    assert {o.key for o in projected} == {"a"}
    assert len({o.id for o in projected}) == len(projected)


def test_clients_run_their_share_and_driver_errors_surface() -> None:
    history = History()
    seconds, findings = run_clients(
        _Driver(), clients=3, operations=10, seed=1, history=history, pool=SandboxPool(1, 1)
    )
    assert len(history) == 10 and seconds > 0 and findings == []
    assert {o.client for o in history.operations()} == {0, 1, 2}

    class Broken(_Driver):
        def step(self, ctx: ClientContext) -> None:
            raise KeyError("bug")

    with pytest.raises(RuntimeError, match="a workload client failed: KeyError"):
        run_clients(Broken(), clients=2, operations=4, seed=1, history=History(), pool=SandboxPool(1, 1))


def test_a_transport_error_records_a_lost_operation_and_probes_report() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    seen: list[ProbeRequest] = []

    def probe(request: ProbeRequest) -> list[str]:
        seen.append(request)
        return [f"{request.sandbox_id}: 10.0.0.1 connected"]

    ctx = ClientContext(
        0,
        random.Random(0),
        httpx.Client(transport=httpx.MockTransport(refuse)),
        History(),
        SandboxPool(1, 1),
        "fake",
        probe,
    )
    lost, response = perform(ctx, "patch", ("patch",), "k", lambda: ctx.http.patch("http://x/"), lambda r: "never")
    assert lost.lost and response is None
    ctx.probe_policy("k", {"deny_out": ["10.0.0.1"]}, 123)
    assert seen == [ProbeRequest("fake", "k", {"deny_out": ["10.0.0.1"]}, 123)]
    assert ctx.findings == ["k: 10.0.0.1 connected"]
