"""Run the concurrency contract on one provider of a target and say whether its histories are linearizable.

:func:`run_provider` prepares the target (with the ``/_mock`` admin API: reset, and a manual clock so nothing
moves on its own; without it, the sandboxes are labelled or tracked and deleted afterwards), runs the
workload, projects the history per sandbox, checks every sandbox's sub-history against the provider's model
and returns a :class:`ConcurrencyResult` with the counts, the timings and, on failure, the witnesses.

The contract is tagged per provider (:data:`CONTRACTS`, suite ``concurrency``): for TensorLake it is ``spec``
from the networking page's atomic policy swap (no reader sees a half-applied policy); for OpenSandbox ``spec``
from the egress document's merge into the currently enforced policy (no merge is lost).
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from harness.concurrency.history import History, dump_operations
from harness.concurrency.linearizability import DEFAULT_MAX_STEPS, DEFAULT_TIMEOUT, check_history
from harness.concurrency.workload import Driver, EgressProbe, SandboxPool, project, run_clients
from harness.strength import Contract, define, spec
from mockserver.asgi import clients

if TYPE_CHECKING:
    from harness.reporting.mutation import Kill

__all__ = [
    "CONTRACTS",
    "MUTANT_SEED",
    "PROVIDERS",
    "SUITE",
    "ConcurrencyResult",
    "check_mock",
    "kills_mutant",
    "make_driver",
    "run_provider",
]

PROVIDERS = ("tensorlake", "opensandbox")
#: How many witnesses a report prints in full.
WITNESSES_SHOWN = 3
#: The fixed seed, clients and operations of the mutation runs.
MUTANT_SEED = 11
MUTANT_CLIENTS = 4
MUTANT_OPERATIONS = 300

SUITE = "concurrency"
#: The concurrency contract of each provider.
CONTRACTS: dict[str, Contract] = {
    "tensorlake": define(
        SUITE,
        "tensorlake_linearizable",
        spec("tl.update.atomic", "tl.update.replace"),
        "Concurrent clients see every TensorLake sandbox change atomically: each history (create, GET, list, "
        "delete, PATCH network in its three forms) is linearizable, so no reader sees a half-applied policy.",
    ),
    "opensandbox": define(
        SUITE,
        "opensandbox_linearizable",
        spec("os.merge", "os.merge.existing-remain", "os.delete.removes"),
        "Concurrent clients see every OpenSandbox sandbox and egress policy change atomically: each history "
        "(create, GET, list, delete, GET/PATCH/DELETE /policy) is linearizable, so no merge is lost.",
    ),
}


@dataclass
class ConcurrencyResult:
    """What one provider's concurrency run did and found."""

    provider: str
    clients: int
    seed: int
    strict: bool
    operations: int = 0
    checked: int = 0
    histories: int = 0
    linearizable: int = 0
    violations: int = 0
    unknown: int = 0
    workload_seconds: float = 0.0
    check_seconds: float = 0.0
    slowest_history_seconds: float = 0.0
    witnesses: list[str] = field(default_factory=list)
    probe_findings: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Tell whether no history was found not linearizable and no probe got out."""
        return self.violations == 0 and not self.probe_findings and self.histories > 0

    @property
    def ops_per_second(self) -> float:
        """Return the workload's throughput (operations answered or lost per wall second)."""
        return self.operations / self.workload_seconds if self.workload_seconds else 0.0

    def summary(self) -> str:
        """Return one line: the counts and figures."""
        mode = "admin API" if self.strict else "no admin API"
        return (
            f"{self.provider}: {self.operations} operations from {self.clients} clients "
            f"({self.ops_per_second:.0f}/s, seed {self.seed}, {mode}); {self.histories} sandbox histories "
            f"({self.checked} operations): {self.linearizable} linearizable, {self.violations} not, "
            f"{self.unknown} unknown; check {self.check_seconds * 1000:.0f} ms "
            f"(slowest history {self.slowest_history_seconds * 1000:.1f} ms)"
        )

    def report(self) -> str:
        """Return the summary, the probe findings and the first witnesses."""
        lines = [self.summary()]
        lines += [f"egress probe: {line}" for line in self.probe_findings]
        for witness in self.witnesses[:WITNESSES_SHOWN]:
            lines += ["", witness]
        if len(self.witnesses) > WITNESSES_SHOWN:
            lines.append(f"... and {len(self.witnesses) - WITNESSES_SHOWN} more")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """Return the result as JSON."""
        data = {k: v for k, v in vars(self).items()}
        data["ops_per_second"] = round(self.ops_per_second, 1)
        data["passed"] = self.passed
        return data


def make_driver(
    provider: str, base_url: str, *, api_key: str | None, strict: bool, start: float, label: str, sidecar: bool = True
) -> Driver:
    """Return the provider's workload driver on ``base_url`` (``sidecar=False``: no OpenSandbox sidecar requests)."""
    from harness.targets import DEFAULT_API_KEY

    if provider == "tensorlake":
        from harness.concurrency.tensorlake_driver import TensorLakeDriver

        return TensorLakeDriver(base_url, api_key=api_key or DEFAULT_API_KEY, strict=strict, start=start)
    if provider == "opensandbox":
        from harness.concurrency.opensandbox_driver import OpenSandboxDriver

        key = api_key or DEFAULT_API_KEY
        return OpenSandboxDriver(base_url, api_key=key, strict=strict, start=start, label=label, sidecar=sidecar)
    raise ValueError(f"unknown provider {provider!r}; known: {', '.join(PROVIDERS)}")


def _clock_mode(base_url: str) -> str | None:
    try:
        with clients.client(timeout=10) as http:
            mode = http.get(f"{base_url.rstrip('/')}/_mock/clock").json().get("mode")
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return mode if isinstance(mode, str) else None


def run_provider(
    provider: str,
    base_url: str,
    *,
    api_key: str | None = None,
    admin: Any = None,
    clients: int = 4,
    operations: int = 400,
    seed: int | None = None,
    probe: EgressProbe | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    timeout: float = DEFAULT_TIMEOUT,
    history_file: Path | None = None,
    sidecar: bool = True,
) -> ConcurrencyResult:
    """Run ``operations`` operations from ``clients`` threads on ``provider`` at ``base_url`` and check them.

    ``admin`` is the target's :class:`mockserver.admin.client.AdminClient` (None without the admin API).
    ``history_file`` receives the raw history and the per-sandbox verdicts as JSON. ``sidecar=False`` leaves out
    the OpenSandbox sidecar's ``/policy`` requests (a target whose sandboxes have no egress sidecar).
    """
    used = seed if seed is not None else secrets.randbits(32)
    strict = admin is not None
    mode = None
    start = time.time()
    if admin is not None:
        mode = _clock_mode(base_url)
        admin.reset()
        admin.set_clock_mode("manual")
        start = admin.now()
    label = f"c{secrets.token_hex(4)}"
    driver = make_driver(provider, base_url, api_key=api_key, strict=strict, start=start, label=label, sidecar=sidecar)
    history = History()
    live = max(2, (clients + 1) // 2)
    pool = SandboxPool(live_target=live, max_created=live + operations // 10)
    result = ConcurrencyResult(provider, clients, used, strict)
    try:
        result.workload_seconds, result.probe_findings = run_clients(
            driver, clients=clients, operations=operations, seed=used, history=history, pool=pool, probe=probe
        )
    finally:
        if admin is not None:
            admin.reset()
            if mode is not None:
                admin.set_clock_mode(mode)
        else:
            driver.cleanup(pool.alive())
    recorded = history.operations()
    checked = project(recorded, driver)
    verdicts = check_history(checked, driver.spec, max_steps=max_steps, timeout=timeout)
    result.operations = len(recorded)
    result.checked = len(checked)
    result.histories = len(verdicts.keys)
    result.linearizable = verdicts.count("linearizable")
    result.violations = verdicts.count("violation")
    result.unknown = verdicts.count("unknown")
    result.check_seconds = verdicts.seconds
    result.slowest_history_seconds = verdicts.slowest
    result.witnesses = [r.witness(history.started) for r in verdicts.failures()]
    if history_file is not None:
        history_file.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "result": result.to_json(),
            "operations": dump_operations(recorded, history.started),
            "verdicts": {key: r.verdict for key, r in verdicts.keys.items()},
        }
        history_file.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    return result


def check_mock(
    mock: Any, *, clients: int = MUTANT_CLIENTS, operations: int = MUTANT_OPERATIONS, seed: int = MUTANT_SEED
) -> ConcurrencyResult:
    """Serve a mock object (an ``HttpMock``) on loopback and run its provider's concurrency contract on it."""
    from mockserver.admin.client import AdminClient
    from mockserver.asgi.server import MockServer

    server = MockServer(mock.app).start()
    admin = AdminClient(server.url)
    try:
        return run_provider(
            mock.provider,
            server.url,
            api_key="sandproof-key",
            admin=admin,
            clients=clients,
            operations=operations,
            seed=seed,
        )
    finally:
        admin.close()
        server.stop()


def kills_mutant(name: str, factory: Any) -> Kill | None:
    """Return what kills a mutant mock (a judge for :mod:`harness.reporting.mutation`): its provider's contract."""
    from harness.reporting.mutation import Kill

    mock = factory()
    if check_mock(mock).passed:
        return None
    contract = CONTRACTS[mock.provider]
    return Kill(contract.name, contract.strength)
