"""What the OpenSandbox and TensorLake API machines share: handles, violations, tagged checks, diffs, settings, runs.

Every assertion of a machine is a tagged contract (:mod:`harness.strength`): :func:`add_contract` defines one in
its module's ``CONTRACTS`` and :func:`hold` checks it, recording the outcome in the test's ledger and raising
:class:`ContractViolation` when it fails the run (a differing ``choice`` returns False instead, and the machine
goes on predicting from its model). :func:`judge` runs a machine against a mutant inside a ledger and says what
killed it. Each machine's driver keeps its own defaults (step counts, replay notes) and calls these helpers; the
contract test modules use :func:`contract_params` and :func:`admin_session` for their parameters and admin fixture.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from harness.reporting.progress import PROGRESS
from harness.strength import Basis, Contract, breach, define, ledger, record
from mockserver.asgi import clients

if TYPE_CHECKING:
    from harness.reporting.mutation import Kill
    from harness.targets import Target
    from mockserver.admin.client import AdminClient

__all__ = [
    "ContractViolation",
    "Handle",
    "add_contract",
    "admin_session",
    "contract_params",
    "derive_settings",
    "diff",
    "hold",
    "json_body",
    "judge",
    "run_seeded",
    "when_enabled",
]


class ContractViolation(AssertionError):
    """Raise when the target's answer differs from the model's prediction; ``rule`` names the step.

    :func:`hold` sets ``contract`` to the tagged contract that failed (None for a violation raised outside it).
    """

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(f"[{rule}] {message}")
        self.rule = rule
        PROGRESS.failure()
        self.contract: Contract | None = None


def add_contract(book: dict[str, Contract], suite: str, name: str, basis: Basis, summary: str) -> Contract:
    """Define the contract ``suite:name`` and keep it in ``book`` (a module's ``CONTRACTS``) under its name."""
    contract = define(suite, name, basis, summary)
    book[name] = contract
    return contract


def hold(contract: Contract, ok: bool, rule: str, message: str, evidence: str | None = None) -> bool:
    """Record one check of ``contract``; True when it holds.

    When it does not: record the failure with ``evidence`` as its counterexample, raise :class:`ContractViolation`
    naming ``rule`` when the contract fails the run under the current mode, and return False for a differing
    choice (the caller goes on, predicting from its model).
    """
    if ok:
        record(contract, True)
        return True
    breach(contract, message, evidence, error=lambda text: ContractViolation(rule, text))
    return False


#: How many times :func:`judge` runs a program set that Hypothesis found flaky before it gives up.
JUDGE_ATTEMPTS = 3


def judge(run: Callable[[], BaseException | str | None]) -> Kill | None:
    """Run one machine program set against a mutant inside a default-mode ledger; return what killed it.

    ``run`` returns the failure (an exception, or its text) or None. A failure names its contract and strength
    (``untagged`` when none is attached); without one, a choice recorded as differing is a ``choice`` kill.
    A run Hypothesis calls flaky (its replay of a failure went another way: a mutant's timing on a loaded
    machine) is run again, up to :data:`JUDGE_ATTEMPTS` times in all, each in a fresh ledger.
    """
    from hypothesis.errors import Flaky

    from harness.reporting.mutation import Kill

    for attempt in range(1, JUDGE_ATTEMPTS + 1):
        with ledger(strict=False) as book:
            try:
                failure = run()
            except Flaky:
                if attempt == JUDGE_ATTEMPTS:
                    raise
                continue
        break
    if failure is not None:
        contract = getattr(failure, "contract", None)
        if isinstance(contract, Contract):
            return Kill(contract.name, contract.strength)
        return Kill(str(failure).split("]", 1)[0].lstrip("[") if isinstance(failure, str) else "", "untagged")
    differing = [o for o in book.outcomes if o.status == "differs"]
    return Kill(differing[0].contract.split(":", 1)[-1], "choice") if differing else None


@dataclass(repr=False)
class Handle:
    """A sandbox a machine created: its id on the target and in the model; shown by its alias."""

    alias: str
    target_id: str
    model_id: str

    def __repr__(self) -> str:
        return self.alias


def when_enabled(name: str) -> Callable[[Any], bool]:
    """Return a precondition enabling a rule when the machine's config lists it."""
    return lambda machine: bool(machine.config.enabled(name))


def json_body(response: httpx.Response) -> Any:
    """Return the answer's parsed JSON body, or None when it is empty, not JSON or malformed."""
    if response.content and "json" in response.headers.get("content-type", ""):
        try:
            return response.json()
        except ValueError:
            return None
    return None


def diff(
    expected: Any, actual: Any, path: str = "$", *, tolerance: float | None = None, count_items: bool = False
) -> str | None:
    """Return where ``actual`` first differs from ``expected``, or None.

    With ``tolerance`` floats match within it; with ``count_items`` a length mismatch names the item counts.
    """
    if tolerance is not None and isinstance(expected, float) and isinstance(actual, float):
        return None if abs(expected - actual) <= tolerance else f"{path}: expected {expected!r}, got {actual!r}"
    if isinstance(expected, dict) and isinstance(actual, dict):
        missing = sorted(set(expected) - set(actual))
        extra = sorted(set(actual) - set(expected))
        if missing or extra:
            return f"{path}: keys differ (missing {missing}, unexpected {extra})"
        for key in expected:
            found = diff(expected[key], actual[key], f"{path}.{key}", tolerance=tolerance, count_items=count_items)
            if found:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            if count_items:
                return f"{path}: expected {len(expected)} items, got {len(actual)}"
            return f"{path}: expected {expected!r}, got {actual!r}"
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            found = diff(want, got, f"{path}[{index}]", tolerance=tolerance, count_items=count_items)
            if found:
                return found
        return None
    if type(expected) is not type(actual) or expected != actual:
        return f"{path}: expected {expected!r}, got {actual!r}"
    return None


def derive_settings(
    base: settings | None,
    *,
    max_examples: int | None,
    steps: int | None,
    shrink: bool,
    long_steps: int,
    database: bool = True,
) -> settings:
    """Return machine-run settings from ``base``: 10 steps up to 100 examples, else ``long_steps``."""
    parent = base if base is not None else settings()
    examples = max_examples if max_examples is not None else parent.max_examples
    dropped = (Phase.explain,) if shrink else (Phase.shrink, Phase.explain)
    phases = tuple(p for p in parent.phases if p not in dropped)
    extra: dict[str, Any] = {} if database else {"database": None}
    return settings(
        parent,
        max_examples=examples,
        stateful_step_count=steps if steps is not None else (10 if examples <= 100 else long_steps),
        deadline=None,
        print_blob=True,
        report_multiple_bugs=False,
        phases=phases,
        suppress_health_check=[*parent.suppress_health_check, HealthCheck.too_slow, HealthCheck.filter_too_much],
        **extra,
    )


def run_seeded(
    machine: type[RuleBasedStateMachine], chosen: settings, seed: int | None, note: Callable[[int], str]
) -> None:
    """Run ``machine`` as a test with a known seed; on failure add ``note(seed)`` to the exception.

    The seed is ``seed``, else pytest's ``--hypothesis-seed``, else a fresh random one (unless the settings
    derandomize).
    """
    from hypothesis import core

    used = seed if seed is not None else core.global_force_seed
    if used is None and not chosen.derandomize:
        used = random.getrandbits(32)
    counted = _counted(machine)
    factory = hypothesis_seed(used)(counted) if used is not None else counted
    try:
        run_state_machine_as_test(factory, settings=chosen)
    except BaseException as exc:
        if used is not None:
            exc.add_note(note(used))
        raise


def _counted(machine: type[RuleBasedStateMachine]) -> type[RuleBasedStateMachine]:
    """Return ``machine`` telling the progress line about every program it starts."""

    class Counted(machine):  # type: ignore[valid-type,misc]
        def __init__(self) -> None:
            PROGRESS.example()
            super().__init__()

    Counted.__name__ = Counted.__qualname__ = machine.__name__
    return Counted


def contract_params(provider: str, operations: Iterable[str], admin_operations: frozenset[str]) -> list[object]:
    """Return one pytest parameter per rule group, marked with its report operation and needs."""
    return [
        pytest.param(
            operation,
            marks=pytest.mark.contract(
                provider, operation, requires=("api", "admin") if operation in admin_operations else ("api",)
            ),
            id=operation,
        )
        for operation in operations
    ]


def admin_session(target: Target, provider: str) -> Iterator[AdminClient | None]:
    """Yield the target's admin client, restoring its clock mode and state after.

    None without the admin API, or on a server the run did not start unless it may reset it (``--allow-reset``):
    the machines then run as against any deployment (labelled sandboxes, deleted at the end, no reset).
    """
    if not target.admin_writable(provider):
        yield None
        return
    client = target.admin_client(provider)
    url = target.url(provider)
    with clients.client(timeout=10) as http:
        mode = http.get(f"{url}/_mock/clock").json().get("mode", "auto")
    try:
        yield client
    finally:
        try:
            client.reset()
            client.set_clock_mode(mode)
        finally:
            client.close()
