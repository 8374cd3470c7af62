"""The concurrent workload: N client threads run random operations on shared sandboxes and record a history.

What an operation is (its request, its input and its observed output) is the provider :class:`Driver`'s
business (:mod:`harness.concurrency.tensorlake_driver`, :mod:`harness.concurrency.opensandbox_driver`); this
module runs the clients, shares the sandboxes between them (:class:`SandboxPool`), times every request
(:func:`perform`) and turns the history into per-sandbox sub-histories (:func:`project`).

Every client has its own ``httpx.Client`` (its own connections) and its own seeded ``random.Random``; the
clients start together behind a barrier. The pool keeps a few sandboxes alive at a time, so the clients
collide on them, and remembers a few deleted ones, so reads of a deleted sandbox are exercised too.

**Egress probes.** A driver calls :meth:`ClientContext.probe_policy` right after a request that changed a
sandbox's network policy returned. With an :class:`EgressProbe` (for a runtime that runs real sandboxes, such
as the ``--runtime linux`` namespaces runtime) the probe connects, from inside the sandbox, to destinations
the new policy denies and reports every connection that still got out; the run fails on any. Without one
(the default, and on every HTTP-only target) nothing is probed.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from harness.concurrency.history import History, Operation, Pending
from harness.concurrency.linearizability import Spec

__all__ = [
    "ABSENT",
    "LISTED",
    "ClientContext",
    "Driver",
    "EgressProbe",
    "ProbeRequest",
    "SandboxPool",
    "listed",
    "perform",
    "project",
    "run_clients",
]

#: The per-sandbox output of a list that does not show the sandbox.
ABSENT = ("absent",)
#: The first item of a successful list's output (see :func:`listed`).
LISTED = "listed"


@dataclass(frozen=True)
class ProbeRequest:
    """A policy change that just returned: the sandbox, the policy now in force, when the response arrived."""

    provider: str
    sandbox_id: str
    policy: Any
    returned_at: int


class EgressProbe(Protocol):
    """The in-sandbox check after a policy change (see the module docstring)."""

    def __call__(self, request: ProbeRequest) -> Sequence[str]:
        """Return one line per connection to a destination ``request.policy`` denies that still succeeded."""
        ...


@dataclass
class SandboxPool:
    """The sandboxes the clients share: up to ``live_target`` alive at a time, at most ``max_created`` in a run."""

    live_target: int
    max_created: int
    retired_share: float = 0.15
    retired_kept: int = 4
    live: dict[str, Any] = field(default_factory=dict)
    retired: list[tuple[str, Any]] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    creating: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def claim_create(self) -> bool:
        """Tell whether the caller should create a sandbox now (and count it as being created)."""
        with self._lock:
            short = len(self.live) + self.creating < self.live_target
            if short and len(self.created) + self.creating < self.max_created:
                self.creating += 1
                return True
            return False

    def created_ok(self, key: str, extra: Any = None) -> None:
        """Share a sandbox that was just created (``extra``: what the driver needs to reach it)."""
        with self._lock:
            self.creating -= 1
            self.created.append(key)
            self.live[key] = extra

    def create_failed(self) -> None:
        """Forget a create that produced no sandbox the clients can use."""
        with self._lock:
            self.creating -= 1

    def retire(self, key: str) -> None:
        """Move a deleted sandbox out of the live set (kept for a while for reads of a deleted sandbox)."""
        with self._lock:
            if key in self.live:
                self.retired.append((key, self.live.pop(key)))
                del self.retired[: -self.retired_kept]

    def pick(self, rng: random.Random) -> tuple[str, Any] | None:
        """Return a sandbox to operate on (mostly a live one) and its extra, or None when there is none."""
        with self._lock:
            if self.retired and (not self.live or rng.random() < self.retired_share):
                return self.retired[rng.randrange(len(self.retired))]
            if not self.live:
                return None
            key = rng.choice(list(self.live))
            return key, self.live[key]

    def alive(self) -> list[str]:
        """Return the sandboxes believed alive."""
        with self._lock:
            return list(self.live)


@dataclass
class ClientContext:
    """One client thread's view: its index, random source, HTTP client, and the shared history and pool."""

    index: int
    rng: random.Random
    http: httpx.Client
    history: History
    pool: SandboxPool
    provider: str
    probe: EgressProbe | None = None
    findings: list[str] = field(default_factory=list)

    def probe_policy(self, sandbox_id: str, policy: Any, returned_at: int) -> None:
        """Run the egress probe (if any) after a policy change returned; keep what it found."""
        if self.probe is not None:
            self.findings.extend(self.probe(ProbeRequest(self.provider, sandbox_id, policy, returned_at)))


class Driver(Protocol):
    """A provider's operations: what the clients send, how answers become outputs, its specification."""

    provider: str
    #: Kinds that change nothing (their lost operations are left out of the check).
    read_only: frozenset[str]

    @property
    def spec(self) -> Spec[Any]:
        """Return the provider's sequential specification (one sandbox's model)."""
        ...

    def client(self) -> httpx.Client:
        """Return a new HTTP client on the target (one per client thread)."""
        ...

    def step(self, ctx: ClientContext) -> None:
        """Choose one operation, send it and record it in ``ctx.history``."""
        ...

    def deleted(self, op: Operation) -> bool:
        """Tell whether ``op`` is a delete the target acknowledged."""
        ...

    def cleanup(self, keys: Sequence[str]) -> None:
        """Delete what the run created and may still be alive (targets without the admin API)."""
        ...


#: An answer from this status up says the server failed, not what happened: the operation counts as lost (it may
#: or may not have taken effect, at any instant after it was sent), as a transport error does.
SERVER_ERROR = 500


def perform(
    ctx: ClientContext,
    kind: str,
    input: Hashable,
    key: str | None,
    send: Callable[[], httpx.Response],
    observe: Callable[[httpx.Response], Hashable],
    key_of: Callable[[httpx.Response], str | None] | None = None,
) -> tuple[Operation, httpx.Response | None]:
    """Send one request, timing it; record its observed output (``key_of`` names the sandbox from the answer)."""
    pending: Pending = ctx.history.invoke(ctx.index, kind, input, key)
    try:
        response = send()
    except httpx.HTTPError:
        return ctx.history.lose(pending), None
    if response.status_code >= SERVER_ERROR:
        return ctx.history.lose(pending), response  # the server failed without saying what took effect
    output = observe(response)
    found = key_of(response) if key_of is not None else key
    return ctx.history.complete(pending, output, found), response


def run_clients(
    driver: Driver,
    *,
    clients: int,
    operations: int,
    seed: int,
    history: History,
    pool: SandboxPool,
    probe: EgressProbe | None = None,
) -> tuple[float, list[str]]:
    """Run ``operations`` operations over ``clients`` threads; return the wall time and the probe findings."""
    if clients < 1:
        raise ValueError("the workload needs at least one client")
    barrier = threading.Barrier(clients)
    errors: list[BaseException] = []
    contexts = [
        ClientContext(i, random.Random(f"{seed}:{i}"), driver.client(), history, pool, driver.provider, probe)
        for i in range(clients)
    ]
    shares = [operations // clients + (1 if i < operations % clients else 0) for i in range(clients)]

    def work(ctx: ClientContext, count: int) -> None:
        try:
            barrier.wait(timeout=30)
            for _ in range(count):
                driver.step(ctx)
        except BaseException as exc:  # reported after the join: a driver bug must not pass silently
            errors.append(exc)
            barrier.abort()

    threads = [
        threading.Thread(target=work, args=(ctx, share), name=f"sandproof-client-{ctx.index}", daemon=True)
        for ctx, share in zip(contexts, shares, strict=True)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    for ctx in contexts:
        ctx.http.close()
    real = [e for e in errors if not isinstance(e, threading.BrokenBarrierError)]
    if real or errors:
        raise RuntimeError(f"a workload client failed: {(real or errors)[0]!r}") from (real or errors)[0]
    return elapsed, [line for ctx in contexts for line in ctx.findings]


def project(operations: Sequence[Operation], driver: Driver, list_kind: str = "list") -> list[Operation]:
    """Return the per-sandbox operations: keyed operations as they are, each list seen from each sandbox.

    A successful list's output is :func:`listed`: sandbox ``k`` sees the view of ``k`` or :data:`ABSENT`; a
    failed list's output (an error) is what every sandbox sees. A list that could not have seen ``k`` (it returned before ``k``'s create was invoked, or
    was invoked after a delete of ``k`` returned) and does not show it is left out: "absent" is the only
    answer any order allows there. Lost reads, and operations on no known sandbox (a create without an
    answer), are left out as well: they constrain nothing.
    """
    keyed = [
        op
        for op in operations
        if op.key is not None and op.kind != list_kind and not (op.lost and op.kind in driver.read_only)
    ]
    created = {op.key: op.call for op in keyed if op.kind == "create" and op.key is not None}
    gone: dict[str, int] = {}
    for op in keyed:
        if op.key is not None and op.ret is not None and driver.deleted(op):
            gone[op.key] = min(op.ret, gone.get(op.key, op.ret))
    ident = max((op.id for op in operations), default=0) + 1
    projected = list(keyed)
    for op in operations:
        if op.kind != list_kind or op.ret is None:
            continue
        listed = isinstance(op.output, tuple) and len(op.output) == 2 and op.output[0] == LISTED
        shown = dict(op.output[1]) if listed else {}  # type: ignore[index]
        for key, born in created.items():
            view = shown.get(key, ABSENT) if listed else op.output
            outside = op.ret < born or (key in gone and op.call > gone[key])
            if outside and view == ABSENT:
                continue
            projected.append(op.with_key(key, view, ident))
            ident += 1
    return [op for op in projected if op.key in created]


def listed(items: Sequence[tuple[str, Hashable]]) -> tuple[str, tuple[tuple[str, Hashable], ...]]:
    """Return the output of a successful list: each listed sandbox's id with its view (sorted by id)."""
    return (LISTED, tuple(sorted(items, key=lambda pair: pair[0])))
