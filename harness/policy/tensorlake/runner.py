"""Run one TensorLake policy check: a Hypothesis property or a list of fixed examples, as a ``CheckResult``.

``CheckResult`` is :class:`harness.strength.CheckResult`; the ``tagged`` decorator on each check attaches its
contract (strength and source) to the result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import strategies as st

from harness.strength import CheckResult

__all__ = ["CheckFailed", "CheckResult", "expect", "raises", "run_examples", "run_named", "run_property"]

T = TypeVar("T")
E = TypeVar("E")


class CheckFailed(AssertionError):
    """An engine answered differently from what a check requires."""


def expect(condition: bool, message: str) -> None:
    """Raise ``CheckFailed`` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise CheckFailed(message)


def raises(call: Callable[[], object]) -> bool:
    """Tell whether ``call`` raises ``ValueError``."""
    try:
        call()
    except ValueError:
        return True
    return False


_SUPPRESSED = [
    HealthCheck.too_slow,
    HealthCheck.filter_too_much,
    HealthCheck.data_too_large,
    HealthCheck.large_base_example,
    HealthCheck.nested_given,
]


def run_property(
    name: str,
    strategy: st.SearchStrategy[T],
    body: Callable[[E, T], None],
    engine: E,
    max_examples: int,
    derandomize: bool,
    shrink: bool,
) -> CheckResult:
    """Run ``body`` on inputs drawn from ``strategy`` and report the (shrunk) first failure.

    ``engine`` is whatever the body checks: a policy engine, or a subject bundling one.
    """
    failure: list[str] = []

    @settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        derandomize=derandomize,
        suppress_health_check=_SUPPRESSED,
        verbosity=Verbosity.quiet,
        print_blob=False,
        phases=(Phase.explicit, Phase.generate, Phase.shrink) if shrink else (Phase.explicit, Phase.generate),
    )
    @given(strategy)
    def run(case: T) -> None:
        try:
            body(engine, case)
        except Exception as exc:
            failure[:] = [repr(case), f"{type(exc).__name__}: {exc}"]
            raise

    try:
        run()
    except Exception as exc:
        if failure:
            return CheckResult(name, False, failure[0], failure[1])
        return CheckResult(name, False, None, f"{type(exc).__name__}: {exc}")
    return CheckResult(name, True)


def run_examples(name: str, engine: E, body: Callable[[E], None]) -> CheckResult:
    """Run a fixed-example body once and report the example it failed on, if any."""
    try:
        body(engine)
    except Exception as exc:
        return CheckResult(name, False, getattr(exc, "example", None), f"{type(exc).__name__}: {exc}")
    return CheckResult(name, True)


def run_named(
    checks: Mapping[str, Callable[..., CheckResult]],
    subject: Any,
    only: Iterable[str] | None,
    *,
    fail_fast: bool,
    strict: bool,
    **options: Any,
) -> list[CheckResult]:
    """Run ``checks`` (all, or the names in ``only``, in that order) on ``subject``; one result each.

    Every check is called as ``check(subject, **options)``; an unknown name is a KeyError before any runs.
    ``fail_fast`` stops at the first check that fails the run (under ``strict``, a differing choice too).
    """
    names = list(checks) if only is None else list(only)
    unknown = [name for name in names if name not in checks]
    if unknown:
        raise KeyError(f"unknown check(s): {', '.join(unknown)}")
    results: list[CheckResult] = []
    for name in names:
        result = checks[name](subject, **options)
        results.append(result)
        if fail_fast and result.fails_run(strict):
            break
    return results
