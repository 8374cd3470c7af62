"""The provider documents sandproof's contracts cite, vendored in the repository, and their testable sentences.

A :class:`Document` is a vendored copy (``harness/specs/seeds/`` for the provider pages and the SDK docstring,
``harness/specs/opensandbox/`` for the OpenAPI documents); nothing outside the repository is read at run time. A
:class:`Sentence` quotes one sentence or table row of a document verbatim (whitespace collapsed, checked by
:func:`missing_quotes`) and says how it can be tested:

* ``level="policy"``: by a check of a policy engine or of ``restrict_sandbox_network`` (a tagged contract
  must cite it; :mod:`harness.reporting.contracts_doc` counts the coverage);
* ``level="api"``: only through the provider's HTTP API; ``rule`` names the API state machine rule that
  checks it today (its assertions are tagged in a later step) or says that no rule does yet;
* ``level="none"``: not testable by a contract suite, with the reason in ``why``.

The seed documents (``seed=True``) are the three provider pages; the coverage number is over their testable
sentences.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from harness.strength.documents import DOCUMENTS, Document, Level, Sentence
from harness.strength.sentences_gym_opensandbox import NEMO_GYM, OPENSANDBOX
from harness.strength.sentences_tensorlake import TENSORLAKE

__all__ = ["DOCUMENTS", "ROOT", "SENTENCES", "Document", "Level", "Sentence", "document_text", "missing_quotes"]

ROOT = Path(__file__).resolve().parents[2]


#: Every quoted sentence, by id.
SENTENCES: dict[str, Sentence] = {s.id: s for s in (*TENSORLAKE, *NEMO_GYM, *OPENSANDBOX)}


def _collapse(text: str) -> str:
    """Collapse every run of whitespace to one space."""
    return " ".join(text.split())


@cache
def document_text(key: str) -> str:
    """Return a vendored document's text with whitespace collapsed."""
    return _collapse((ROOT / DOCUMENTS[key].path).read_text(encoding="utf-8"))


def missing_quotes() -> list[str]:
    """Return the ids of sentences whose quote is not, verbatim, in their vendored document."""
    return [s.id for s in SENTENCES.values() if _collapse(s.quote) not in document_text(s.doc)]
