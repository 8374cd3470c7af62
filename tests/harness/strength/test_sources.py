"""The vendored documents and their quoted sentences: every quote is verbatim and every policy sentence is checked."""

from __future__ import annotations

from pathlib import Path

from harness.reporting.contracts_doc import load_contracts
from harness.strength.sources import DOCUMENTS, ROOT, SENTENCES, missing_quotes

SEEDS = ("tensorlake-networking.md", "nemo-gym-sandbox-network.md", "nemo-gym-opensandbox-provider.md")


def test_every_quote_is_verbatim_in_its_vendored_document() -> None:
    assert missing_quotes() == []


def test_the_seed_documents_are_vendored_in_the_repository() -> None:
    paths = {Path(d.path).name for d in DOCUMENTS.values() if d.seed}
    assert paths == set(SEEDS)
    assert all((ROOT / d.path).is_file() and not d.path.startswith("/") for d in DOCUMENTS.values())


def test_sentences_say_how_they_are_tested() -> None:
    for sentence in SENTENCES.values():
        assert sentence.doc in DOCUMENTS, sentence.id
        if sentence.level == "none":
            assert sentence.why and not sentence.rule, sentence.id
        elif sentence.level == "api":
            assert sentence.rule and not sentence.why, sentence.id
        else:
            assert not sentence.rule and not sentence.why, sentence.id


def test_every_policy_level_sentence_is_cited_by_a_contract() -> None:
    cited = {s for contract in load_contracts() for s in contract.sentences}
    missing = [s.id for s in SENTENCES.values() if s.level == "policy" and s.id not in cited]
    assert missing == []
