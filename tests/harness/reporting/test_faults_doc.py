from pathlib import Path

from harness.reporting import faults_doc

ROOT = Path(__file__).resolve().parents[3]


def test_the_faults_doc_is_current() -> None:
    assert (ROOT / "docs" / "faults.md").read_text(encoding="utf-8") == faults_doc.render(), (
        "run: python -m harness.reporting.faults_doc --write docs/faults.md"
    )


def test_every_fault_of_both_catalogues_is_a_row() -> None:
    page = faults_doc.render()
    for provider, faults in faults_doc.catalogues().items():
        assert faults, provider
        for name in faults:
            assert f"| {provider} | `{name}` |" in page
    assert "`wording` (string or null, default `null`)" in page
