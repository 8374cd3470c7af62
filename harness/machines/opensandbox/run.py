"""Run the OpenSandbox API machine: HTTP clients, settings, a seeded run with a replay line, mock and mutant runs.

:func:`check_mock` serves a mock object on loopback and runs the machine against it; :func:`kills_mutant` is
the judge :mod:`harness.reporting.mutation` takes for wrong mocks: it runs the machine in a default-mode ledger
and returns the contract that killed the mutant and its strength (a ``choice`` kill when only a choice differed).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from hypothesis import settings

from harness.machines.common import derive_settings, judge, run_seeded
from harness.machines.opensandbox.driver import ClientFactory, MachineBase
from harness.machines.opensandbox.machine import make_machine
from mockserver.admin.client import AdminClient
from mockserver.asgi import clients

if TYPE_CHECKING:
    from harness.reporting.mutation import Kill

__all__ = ["MUTANT_SEEDS", "check_mock", "http_clients", "kills_mutant", "machine_settings", "run_machine"]


def http_clients(base_url: str, *, api_key: str | None = None, timeout: float = 10.0) -> ClientFactory:
    """Return a factory of ``httpx.Client`` on ``base_url`` (with the API key header) sharing one SSL context."""
    headers = {"OPEN-SANDBOX-API-KEY": api_key} if api_key else {}
    return lambda: clients.client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout)


def machine_settings(
    base: settings | None = None,
    *,
    max_examples: int | None = None,
    steps: int | None = None,
    shrink: bool = True,
) -> settings:
    """Return settings for a machine run derived from ``base`` (default: the active profile).

    Steps default to 10 for small budgets (≤ 100 examples, e.g. ``ci``) and 40 above (``thorough``).
    """
    return derive_settings(base, max_examples=max_examples, steps=steps, shrink=shrink, long_steps=40)


def run_machine(
    machine: type[MachineBase],
    *,
    settings: settings | None = None,
    seed: int | None = None,
    replay: str = "",
) -> None:
    """Run ``machine`` as a test with a known seed; on failure add the seed and how to replay it.

    The seed is ``seed``, else pytest's ``--hypothesis-seed``, else a fresh random one (unless the settings
    derandomize). ``replay`` is the command line that reruns the test (the seed option is appended).
    """

    def note(used: int) -> str:
        command = f"{replay} --hypothesis-seed={used}".strip() if replay else f"--hypothesis-seed={used}"
        return (
            f"sandproof: Hypothesis seed {used}. Replay the same run with: {command} "
            "(or paste the @reproduce_failure decorator printed above onto the machine class; "
            "see docs/opensandbox-contract.md)."
        )

    run_seeded(machine, settings or machine_settings(), seed, note)


def check_mock(
    mock: Any,
    *,
    operations: Iterable[str] | None = None,
    settings: settings | None = None,
    seed: int | None = None,
) -> BaseException | None:
    """Serve ``mock`` (a ``MockCore``) on a loopback socket, run the machine on it, return the failure or None."""
    with mock.server() as server:
        admin = AdminClient(server.url)
        try:
            machine = make_machine(http_clients(server.url), admin=admin, operations=operations)
            try:
                run_machine(machine, settings=settings, seed=seed)
            except Exception as exc:
                return exc
            return None
        finally:
            admin.close()


#: The seeds a mutation run tries, in order, until one kills the mutant by default.
MUTANT_SEEDS = (0, 1)


def kills_mutant(
    name: str, factory: Callable[[], Any], *, examples: int = 150, seeds: tuple[int, ...] = MUTANT_SEEDS
) -> Kill | None:
    """Return what kills a wrong mock (a judge for :mod:`harness.reporting.mutation`), or None when it survives.

    ``factory()`` builds the mock; its ``caught_by`` attribute, when present, picks the rule group aimed at it.
    Each seed runs at most ``examples`` programs of 10 steps, no shrinking, in a default-mode ledger; the first
    run that fails names the kill, else a choice seen differing does.
    """
    operation = getattr(factory, "caught_by", "state-machine")
    quick = machine_settings(settings(max_examples=examples, database=None), steps=10, shrink=False)
    found: Kill | None = None
    for seed in seeds:
        kill = judge(functools.partial(check_mock, factory(), operations=[operation], settings=quick, seed=seed))
        if kill is not None and kill.strength != "choice":
            return kill
        found = found or kill
    return found
