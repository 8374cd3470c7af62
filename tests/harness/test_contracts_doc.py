"""docs/contracts.md: current, with the seed coverage, every contract, its mutants and the sentences."""

from __future__ import annotations

from pathlib import Path

from harness.reporting import contracts_doc
from harness.strength import Contract, spec
from tests.mutants.__main__ import families

ROOT = Path(__file__).resolve().parents[2]


def test_the_contracts_doc_is_current() -> None:
    kills = contracts_doc.mutants_by_contract(families())
    assert (ROOT / "docs" / "contracts.md").read_text(encoding="utf-8") == contracts_doc.render(kills=kills), (
        f"run: {contracts_doc.COMMAND}"
    )


def test_the_doc_lists_strengths_sources_mutants_and_coverage() -> None:
    text = (ROOT / "docs" / "contracts.md").read_text(encoding="utf-8")
    assert "| `patch_tristate` | spec |" in text and "| `stored_form` | choice |" in text
    assert "PatchNullIgnored" in text and "CaseSensitive (choice mutant)" in text
    assert "| `ingress_admission` | spec |" in text and "| `execd_sse_framing` | observed |" in text
    assert "| `error_code` | choice |" in text and "| `tensorlake_linearizable` | spec |" in text
    assert "tensorlake-api:project-key-forwarded (choice mutant)" in text
    assert "| `tl.dns.row-4` | \\| `false` \\| empty \\| All egress blocked, including DNS \\| | policy |" in text
    assert "Seed coverage: **" in text


def test_coverage_counts_tagged_and_skipped_sentences() -> None:
    found = contracts_doc.load_contracts()
    full = contracts_doc.coverage(found)
    assert len(full.tagged) + len(full.skipped) == len(full.testable), (
        "every testable seed sentence is checked or skipped"
    )
    assert [s.id for s in full.skipped] == ["tl.ingress.grpc"]
    assert all(s.document.seed and s.testable for s in full.testable)
    none = contracts_doc.coverage([])
    assert none.tagged == () and len(none.testable) == len(full.testable)
    one = contracts_doc.coverage([Contract("x", "y", spec("tl.dns.row-1"))])
    assert [s.id for s in one.tagged] == ["tl.dns.row-1"]
    assert one.text().startswith(f"**1/{len(one.testable)}** testable seed sentences")


def test_mutants_are_mapped_to_the_contract_aimed_at(capsys: object) -> None:
    kills = contracts_doc.mutants_by_contract(families())
    assert "WildcardMatchesApex" in kills["tensorlake-policy:wildcard_apex"]
    assert "WildcardMatchesApex (choice mutant)" in kills["opensandbox-policy:wildcard_apex"]
    assert "UnknownModeInherits (choice mutant)" in kills["nemo-gym-network:unknown_settings_rejected"]
    assert "tensorlake-api:connection-dropped-on-update" in kills["tensorlake-api:update_keeps_connection"]
    assert "opensandbox-api:data-prefixed-frames" in kills["opensandbox-api:execd_sse_framing"]
    assert "opensandbox-api:retry-after-dropped (choice mutant)" in kills["opensandbox-api:admin_api"]
    assert "concurrency:two-step-patch-tensor-lake" in kills["concurrency:tensorlake_linearizable"]


def test_every_machine_contract_is_in_the_doc_and_every_api_sentence_is_cited() -> None:
    found = contracts_doc.load_contracts()
    suites = {c.suite for c in found}
    assert {"tensorlake-api", "opensandbox-api", "concurrency"} <= suites
    cited = {s for c in found for s in c.sentences}
    from harness.strength import SENTENCES

    uncited = [s.id for s in SENTENCES.values() if s.level == "api" and s.id not in cited]
    assert uncited == ["tl.ingress.grpc"]
