"""Run the TensorLake API machine: HTTP clients, settings, a seeded run with a replay line, mock and mutant runs.

:func:`check_mock` serves a mock object on loopback and runs the machine against it; :func:`kills_mutant` is
the judge :mod:`harness.reporting.mutation` takes for wrong mocks: it tries the runs of :func:`kill_plan` in a
default-mode ledger and returns the contract that killed the mutant and its strength (a ``choice`` kill when only
a choice differed).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from hypothesis import settings

from harness.machines.common import derive_settings, judge, run_seeded
from harness.machines.tensorlake.compare import ContractViolation
from harness.machines.tensorlake.driver import DEFAULT_KEY, LOOPBACK, OPERATIONS, HttpFactory
from harness.machines.tensorlake.machine import TensorLakeAPIMachine, make_machine
from mockserver.admin.client import AdminClient
from mockserver.asgi import clients
from mockserver.asgi.server import MockServer
from mockserver.service import HttpMock

if TYPE_CHECKING:
    from harness.reporting.mutation import Kill

__all__ = [
    "MUTANT_SEEDS",
    "check_mock",
    "http_clients",
    "kill_plan",
    "kills_mutant",
    "machine_settings",
    "run_machine",
    "run_mock",
]

#: Fixed seeds the mutation runs use (each run: 30 programs of up to 12 steps, no shrinking).
MUTANT_SEEDS = (4, 5)


def http_clients(base_url: str, *, api_key: str | None = None, timeout: float = 30.0) -> HttpFactory:
    """Return a factory of ``httpx.Client`` on ``base_url`` with the bearer key (proxies ignored on loopback)."""
    headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
    loopback = (urlsplit(base_url).hostname or "") in LOOPBACK
    return lambda: clients.client(
        base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, trust_env=not loopback
    )


def machine_settings(
    base: settings | None = None,
    *,
    max_examples: int | None = None,
    steps: int | None = None,
    shrink: bool = True,
    database: bool = True,
) -> settings:
    """Return settings for a machine run derived from ``base`` (default: the active profile)."""
    return derive_settings(
        base, max_examples=max_examples, steps=steps, shrink=shrink, long_steps=30, database=database
    )


def run_machine(
    machine: type[TensorLakeAPIMachine],
    *,
    settings: settings | None = None,
    seed: int | None = None,
    replay: str = "",
) -> None:
    """Run ``machine`` with a known seed (see :func:`run_seeded`); on failure note it and the ``replay`` command."""

    def note(used: int) -> str:
        command = f"{replay} --hypothesis-seed={used}".strip()
        return f"TensorLake contract machine {machine.__name__}: seed {used}; replay with: {command}"

    run_seeded(machine, settings or machine_settings(), seed, note)


def run_mock(
    mock: HttpMock,
    *,
    operations: Iterable[str] | None = None,
    max_examples: int = 30,
    steps: int = 12,
    seed: int = 0,
    shrink: bool = False,
) -> ContractViolation | None:
    """Serve ``mock`` on loopback, run the machine against it; return the violation (with its notes), or None."""
    server = MockServer(mock.app).start()
    admin = AdminClient(server.url)
    try:
        machine = make_machine(http_clients(server.url, api_key=DEFAULT_KEY), admin=admin, operations=operations)
        run_machine(
            machine,
            settings=machine_settings(max_examples=max_examples, steps=steps, shrink=shrink, database=False),
            seed=seed,
        )
    except ContractViolation as exc:
        return exc
    finally:
        admin.close()
        server.stop()
    return None


def check_mock(
    mock: HttpMock,
    *,
    operations: Iterable[str] | None = None,
    max_examples: int = 30,
    steps: int = 12,
    seed: int = 0,
    shrink: bool = False,
) -> str | None:
    """Serve ``mock`` on loopback, run the machine against it; return the violation's text, or None if it passed."""
    found = run_mock(mock, operations=operations, max_examples=max_examples, steps=steps, seed=seed, shrink=shrink)
    if found is None:
        return None
    return "\n".join([str(found), *getattr(found, "__notes__", [])])


def kill_plan(factory: Callable[[], object]) -> list[tuple[list[str] | None, int]]:
    """Return the (operations, seed) runs that try to kill a mutant: its ``caught_by`` group, then every rule."""
    aimed = getattr(factory, "caught_by", None)
    plan: list[tuple[list[str] | None, int]] = []
    if isinstance(aimed, str) and aimed in OPERATIONS:
        plan += [([aimed], seed) for seed in MUTANT_SEEDS]
    return [*plan, (None, MUTANT_SEEDS[0])]


def kills_mutant(name: str, factory: Callable[[], object]) -> Kill | None:
    """Return what kills a mutant mock (a judge for :mod:`harness.reporting.mutation`), or None when it survives.

    Each run of :func:`kill_plan` goes in a default-mode ledger: a run that fails names the contract and its
    strength; a run in which only a choice differed is remembered, and returned when no run fails.
    """
    choice_kill: Kill | None = None
    for operations, seed in kill_plan(factory):
        mock = factory()
        if not isinstance(mock, HttpMock):
            raise TypeError(f"mutant {name} built {type(mock).__name__}, not a mock")
        kill = judge(functools.partial(run_mock, mock, operations=operations, seed=seed))
        if kill is not None and kill.strength != "choice":
            return kill
        choice_kill = choice_kill or kill
    return choice_kill
