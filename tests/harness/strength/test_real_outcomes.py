"""Documented deviations of a real target (their own outcome) and where an observed contract was observed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.reporting.report import ContractReport
from harness.strength import (
    DEVIATIONS,
    REGISTRY,
    Contract,
    ContractBreach,
    KnownDeviation,
    breach,
    define,
    ledger,
    observed,
    spec,
)
from harness.strength.observations import REAL_RUN, capture, problems, published

ROOT = Path(__file__).resolve().parents[3]
SPEC = Contract("opensandbox-api", "deviating", spec("tl.dns.row-4"))
KNOWN = (
    KnownDeviation(
        SPEC.key,
        r"-> 500",
        "opensandbox-lifecycle-1.1.1.json: “Sandbox deleted”",
        "a DELETE racing another answers 500",
        "A heading",
    ),
)


def test_a_documented_deviation_of_a_real_target_is_its_own_outcome_and_does_not_raise() -> None:
    with ledger(real_target=True, known=KNOWN) as book:
        breach(SPEC, "DELETE /v1/sandboxes/x -> 500, the model says 404")
    [outcome] = book.outcomes
    assert outcome.status == "deviation" and outcome.message is not None
    assert outcome.message.startswith("documented deviation (A heading): a DELETE racing another answers 500")


@pytest.mark.parametrize(("real", "message"), [(False, "-> 500"), (True, "-> 503, the model says 404")])
def test_anything_else_still_fails(real: bool, message: str) -> None:
    """On a sandproof mock, or a failure the entry does not describe, the contract fails the run."""
    with ledger(real_target=real, known=KNOWN) as book, pytest.raises(ContractBreach):
        breach(SPEC, message)
    assert book.outcomes[0].status == "failed"


def test_the_summary_counts_deviations_and_unjudged_contracts_by_strength() -> None:
    rep = ContractReport("opensandbox:http://real")
    rep.record("t::a", "opensandbox", "lifecycle", "passed")
    check = {"contract": SPEC.key, "strength": "spec", "status": "deviation", "source": "s", "message": "m"}
    rep.add_checks("t::a", [check, {**check, "contract": "opensandbox-api:x", "status": "passed"}])
    rep.record("t::b", "opensandbox", "faults", "skipped", "no admin API")
    unjudged = Contract("opensandbox-api", "unjudged", observed(REAL_RUN, "seen"))
    other = Contract("tensorlake-api", "other", observed(REAL_RUN, "seen"))
    rep.known_contracts = [SPEC, unjudged, other]
    assert rep.strength_line() == (
        "spec 1 passed, 1 documented deviation · observed 1 skipped · choice 0 · untagged 1 skipped"
    )
    assert rep.summary_lines()[-1] == f"documented deviation: {SPEC.key} (t::a): m"
    assert rep.to_json()["documented_deviations"][0]["contract"] == SPEC.key
    assert "## Documented deviations of the real server" in rep.fidelity_markdown()


def test_every_known_deviation_is_written_up() -> None:
    findings = (ROOT / "docs" / "differential-findings.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^#+ (.+)$", findings, re.MULTILINE))
    assert all(d.finding in headings and d.contract in REGISTRY for d in DEVIATIONS)


def test_an_observed_basis_names_where_it_was_observed() -> None:
    with pytest.raises(ValueError, match="where it was observed"):
        observed("opensandbox-wire.md §3", "seen")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="where it was observed"):
        observed((), "seen")
    with pytest.raises(ValueError, match="quotes what it shows"):
        capture("docs/sources/captures/opensandbox-sdk-direct-mode.txt", " ")
    basis = observed(REAL_RUN, "seen", note="opensandbox-wire.md §3")
    assert basis.observations == (REAL_RUN,) and "make contracts-real" in basis.source
    with pytest.raises(ValueError, match="observed"):
        define("s", "n", observed(REAL_RUN, "x").__class__("observed", "no place"))


def test_quotes_are_checked_against_the_capture_and_the_published_source() -> None:
    assert problems(capture("docs/sources/captures/opensandbox-sdk-direct-mode.txt", "### run_foreground")) == []
    assert problems(capture("docs/sources/captures/opensandbox-sdk-direct-mode.txt", "### not there"))
    assert problems(capture("docs/sources/captures/none.txt", "x"))
    source = "opensandbox/adapters/converter/command_execution.py"
    assert problems(published("opensandbox==1.1.1", source, "event_dict = json.loads(data)")) == []
    assert problems(published("opensandbox==1.1.1", source, "not in the SDK"))


def test_every_observed_contract_names_a_place_that_holds_its_quote() -> None:
    import harness.concurrency.runner
    import harness.machines.opensandbox.machine
    import harness.machines.tensorlake.machine
    import harness.policy.sandbox_network  # noqa: F401  (they register the contracts)

    observed_contracts = [c for c in REGISTRY.values() if c.strength == "observed"]
    assert len(observed_contracts) >= 30
    for contract in observed_contracts:
        assert contract.basis.observations, contract.key
        assert [p for o in contract.basis.observations for p in problems(o)] == [], contract.key
        if REAL_RUN in contract.basis.observations:
            assert contract.suite.startswith("opensandbox"), contract.key
