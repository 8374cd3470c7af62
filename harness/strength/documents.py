"""The provider documents sandproof's contracts cite, vendored in the repository, and the shape of a quoted sentence.

A :class:`Document` is a vendored copy (``harness/specs/seeds/`` for the provider pages and the SDK docstring,
``harness/specs/opensandbox/`` for the OpenAPI documents); nothing outside the repository is read at run time. A
:class:`Sentence` quotes one sentence or table row of a document verbatim and says how it can be tested
(``level``: ``policy``, ``api`` with the API machine ``rule`` that checks it, or ``none`` with ``why``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["DOCUMENTS", "Document", "Level", "Sentence", "sentence"]

Level = Literal["policy", "api", "none"]


@dataclass(frozen=True)
class Document:
    """A vendored provider document: key, title, repository path, where it came from, and whether it is a seed."""

    key: str
    title: str
    path: str
    origin: str
    seed: bool


DOCUMENTS: dict[str, Document] = {
    d.key: d
    for d in (
        Document(
            "tl-net",
            "TensorLake docs, Networking",
            "harness/specs/seeds/tensorlake-networking.md",
            "docs.tensorlake.ai, Sandboxes > Networking",
            True,
        ),
        Document(
            "ng-net",
            "NeMo Gym 0.7.0 docs, nemo_gym.agents.utils.sandbox_network",
            "harness/specs/seeds/nemo-gym-sandbox-network.md",
            "docs.nvidia.com/nemo/gym/v0.7.0, nemo_gym.agents.utils.sandbox_network",
            True,
        ),
        Document(
            "ng-os",
            "NeMo Gym docs, nemo_gym.sandbox.providers.opensandbox",
            "harness/specs/seeds/nemo-gym-opensandbox-provider.md",
            "docs.nvidia.com/nemo/gym/v0.4.0, nemo_gym.sandbox.providers.opensandbox",
            True,
        ),
        Document(
            "tl-sdk",
            "tensorlake SDK 0.5.163, NetworkConfig docstring",
            "harness/specs/seeds/tensorlake-sdk-networkconfig.md",
            "the installed tensorlake 0.5.163 wheel, tensorlake/sandbox/models.py",
            False,
        ),
        Document(
            "os-egress",
            "OpenSandbox Egress API (OpenAPI)",
            "harness/specs/opensandbox/egress.yaml",
            "the OpenSandbox egress sidecar's OpenAPI document",
            False,
        ),
        Document(
            "os-proxy",
            "opensandbox-server 1.1.1 source, api/proxy.py (excerpts)",
            "harness/specs/opensandbox/server-proxy-1.1.1.txt",
            "the opensandbox-server 1.1.1 wheel on PyPI: opensandbox_server/api/proxy.py and the header constants",
            False,
        ),
        Document(
            "os-lifecycle",
            "OpenSandbox Lifecycle API 1.1.1 (OpenAPI)",
            "harness/specs/opensandbox/lifecycle-1.1.1.yaml",
            "the OpenSandbox lifecycle OpenAPI document, version 1.1.1",
            False,
        ),
    )
}


@dataclass(frozen=True)
class Sentence:
    """One quoted sentence (or table row) of a document and how a contract can test it."""

    id: str
    doc: str
    quote: str
    level: Level = "policy"
    rule: str = ""
    why: str = ""

    @property
    def document(self) -> Document:
        """Return the document the sentence is quoted from."""
        return DOCUMENTS[self.doc]

    @property
    def testable(self) -> bool:
        """Tell whether a contract can test the sentence (at the policy or the API level)."""
        return self.level != "none"


def sentence(id: str, doc: str, quote: str, level: Level = "policy", rule: str = "", why: str = "") -> Sentence:
    """Build one quoted sentence (positional shorthand for the catalogues)."""
    return Sentence(id, doc, quote, level, rule, why)
