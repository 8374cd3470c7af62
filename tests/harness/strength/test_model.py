"""Contract strength: bases, contracts, the registry, the tagged decorator and how a result counts."""

from __future__ import annotations

import pytest

from harness.strength import (
    REGISTRY,
    CheckResult,
    Contract,
    choice,
    contracts,
    define,
    fails_run,
    observed,
    spec,
    status_of,
    tagged,
)
from harness.strength.observations import capture


def test_spec_cites_the_quoted_sentences() -> None:
    basis = spec("tl.dns.row-4", "tl.allow.wildcards-allow-only")
    assert basis.strength == "spec" and basis.sentences == ("tl.dns.row-4", "tl.allow.wildcards-allow-only")
    assert basis.source.startswith("TensorLake docs, Networking: “| `false` | empty | All egress blocked")
    with pytest.raises(ValueError, match="unknown source sentence"):
        spec("tl.no-such-sentence")
    with pytest.raises(ValueError, match="at least one"):
        spec()


def test_observed_and_choice_need_their_text() -> None:
    at = capture("docs/sources/captures/x.txt", "null")
    seen = observed(at, "the SDK sends null", sentences=("tl.update.clear",))
    assert seen.source == "the SDK sends null (observed: docs/sources/captures/x.txt: “null”)"
    assert seen.sentences == ("tl.update.clear",) and seen.observations == (at,)
    with pytest.raises(ValueError):
        observed(at, " ")
    assert choice("sources silent").source == "sources silent"
    with pytest.raises(ValueError):
        observed(" ", "x")  # type: ignore[arg-type]  # a place is an Observation, not text
    with pytest.raises(ValueError, match="one line"):
        choice("two\nlines")
    with pytest.raises(ValueError, match="needs a source"):
        choice("  ")


def test_define_registers_once_and_refuses_a_conflicting_redefinition() -> None:
    first = define("test-suite", "c1", choice("because"), "a check")
    assert define("test-suite", "c1", choice("because"), "a check") == first
    assert REGISTRY["test-suite:c1"] is first and first in contracts("test-suite")
    with pytest.raises(ValueError, match="already defined"):
        define("test-suite", "c1", choice("another reason"), "a check")
    with pytest.raises(ValueError):
        define("bad:suite", "x", choice("r"))


def test_tagged_attaches_the_contract_to_the_function_and_every_result() -> None:
    @tagged("test-suite", "c2", spec("tl.dns.row-1"))
    def check(flag: bool) -> CheckResult:
        """Say whether the flag is set.

        More text.
        """
        return CheckResult("whatever", flag)

    contract: Contract = check.contract  # type: ignore[attr-defined]
    assert contract.key == "test-suite:c2" and contract.summary == "Say whether the flag is set."
    result = check(False)
    assert result.name == "c2" and result.contract is contract and result.strength == "spec"


@pytest.mark.parametrize(
    ("passed", "strength", "strict", "status"),
    [
        (True, "choice", False, "passed"),
        (False, "spec", False, "failed"),
        (False, "observed", False, "failed"),
        (False, None, False, "failed"),
        (False, "choice", False, "differs"),
        (False, "choice", True, "failed"),
    ],
)
def test_only_spec_observed_and_untagged_fail_a_default_run(
    passed: bool, strength: str | None, strict: bool, status: str
) -> None:
    assert status_of(passed, strength, strict) == status
    assert fails_run(strength, strict) == (strict or strength != "choice")
    contract = (
        None if strength is None else Contract("s", "n", choice("r") if strength == "choice" else spec("ng.inherit"))
    )
    if contract is not None and contract.strength == strength:
        assert CheckResult("n", passed, contract=contract).status(strict) == status
