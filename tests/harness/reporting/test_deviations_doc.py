from pathlib import Path

from harness.reporting import deviations_doc as coverage

ROOT = Path(__file__).resolve().parents[3]


def test_the_deviations_doc_is_current() -> None:
    assert (ROOT / "docs" / "deviations.md").read_text(encoding="utf-8") == coverage.render(), (
        "run: python -m harness.reporting.deviations_doc --write docs/deviations.md"
    )


def test_every_deviation_paragraph_has_text() -> None:
    for package in coverage.PACKAGES:
        found = coverage.deviation_paragraphs(package)
        assert found, package
        assert all(text.strip() for _, text in found), found


def test_a_bullet_list_section_is_joined() -> None:
    text = "\n\n* First thing\n  wraps.\n* Second.\n\nNot a deviation.\n"
    assert coverage._section(text) == "First thing wraps.; Second."
    assert coverage._section(" inline one.\n\nlater") == "inline one."
