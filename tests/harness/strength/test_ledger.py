"""The per-test ledger: recording outcomes, the strict mode, and breaches that raise or only record."""

from __future__ import annotations

import pytest

from harness.strength import (
    CheckOutcome,
    CheckResult,
    Contract,
    ContractBreach,
    breach,
    choice,
    current,
    ledger,
    record,
    record_results,
    spec,
    strict_mode,
)

SPEC = Contract("s", "spec-one", spec("tl.dns.row-4"))
CHOICE = Contract("s", "choice-one", choice("silent"))


def test_outside_a_ledger_record_only_says_the_status() -> None:
    assert current() is None and not strict_mode()
    assert record(CHOICE, False) == "differs" and record(SPEC, False) == "failed"


def test_a_ledger_keeps_one_outcome_per_contract_the_worst_first_counterexample() -> None:
    with ledger() as book:
        record(SPEC, True)
        record(CHOICE, True)
        record(CHOICE, False, "first", "m1")
        record(CHOICE, False, "second", "m2")
        record(SPEC, True)
    assert [o.contract for o in book.outcomes] == ["s:spec-one", "s:choice-one"]
    spec_outcome, choice_outcome = book.outcomes
    assert spec_outcome.status == "passed" and spec_outcome.strength == "spec"
    assert (choice_outcome.status, choice_outcome.counterexample, choice_outcome.source) == (
        "differs",
        "first",
        "silent",
    )
    assert CheckOutcome.from_json(choice_outcome.to_json()) == choice_outcome
    assert current() is None


def test_strict_mode_turns_a_differing_choice_into_a_failure() -> None:
    with ledger(strict=True) as book:
        assert strict_mode()
        assert record(CHOICE, False) == "failed"
    assert book.outcomes[0].status == "failed"


def test_record_results_returns_what_fails_the_run_and_skips_untagged_results() -> None:
    results = [
        CheckResult("a", False, contract=CHOICE),
        CheckResult("b", True, contract=SPEC),
        CheckResult("c", False),
    ]
    with ledger() as book:
        failing = record_results(results)
    assert [r.name for r in failing] == ["c"] and len(book.outcomes) == 2
    with ledger(strict=True):
        assert [r.name for r in record_results(results)] == ["a", "c"]


def test_breach_raises_for_spec_and_records_a_choice_without_raising() -> None:
    with ledger() as book:
        breach(CHOICE, "stored differently", "{'a': 1}")
        with pytest.raises(ContractBreach, match=r"\[s:spec-one · spec\] blocked"):
            breach(SPEC, "blocked")
        with pytest.raises(KeyError) as raised:
            breach(SPEC, "blocked", error=KeyError)
        assert raised.value.contract is SPEC  # type: ignore[attr-defined]
    assert [o.status for o in book.outcomes] == ["differs", "failed"]
    with ledger(strict=True), pytest.raises(ContractBreach):
        breach(CHOICE, "stored differently")
