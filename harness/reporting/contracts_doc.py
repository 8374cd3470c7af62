"""Render every contract with its strength, source and mutants, and the source sentences each one checks.

``python -m harness.reporting.contracts_doc --mutants MODULE:ATTR --write PATH`` writes the table the
repository keeps as ``docs/contracts.md`` (a test checks it is current). The contracts come from their tags
(:mod:`harness.strength`: the ``CONTRACTS`` mapping of each module in :data:`CONTRACT_MODULES`); the sentences from
:mod:`harness.strength.sources`; the mutants from a catalogue, a callable returning
:class:`harness.reporting.mutation.Family` objects (sandproof's own: ``tests.mutants.__main__:families``),
each mutant naming the contract aimed at it (``contract``, else ``caught_by``: the check or rule group).

Seed coverage is the number of testable sentences of the seed documents that a tagged contract cites, over
all their testable sentences; a testable sentence no check can reach yet says why (its ``rule`` starts with
``skipped:``) and is listed apart.
"""

from __future__ import annotations

import argparse
import importlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.reporting.page import print_or_write
from harness.strength import DOCUMENTS, SENTENCES, STRENGTHS, Contract, Sentence

__all__ = ["CONTRACT_MODULES", "Coverage", "coverage", "main", "mutants_by_contract", "render"]

#: The modules whose import defines every tagged contract, each with its ``CONTRACTS`` mapping.
CONTRACT_MODULES = (
    "harness.policy.tensorlake.checks",
    "harness.policy.opensandbox",
    "harness.policy.sandbox_network",
    "harness.machines.tensorlake.driver",
    "harness.machines.tensorlake.answers",
    "harness.machines.tensorlake.ingress",
    "harness.machines.tensorlake.steps",
    "harness.machines.tensorlake.machine",
    "harness.machines.opensandbox.driver",
    "harness.machines.opensandbox.lifecycle_rules",
    "harness.machines.opensandbox.execd_rules",
    "harness.machines.opensandbox.proxy_rules",
    "harness.machines.opensandbox.machine",
    "harness.concurrency.runner",
)
SKIPPED = "skipped:"
COMMAND = (
    "python -m harness.reporting.contracts_doc --mutants tests.mutants.__main__:families --write docs/contracts.md"
)


def load_contracts() -> list[Contract]:
    """Return the contracts of :data:`CONTRACT_MODULES`, each module's ``CONTRACTS`` mapping in order."""
    found: list[Contract] = []
    for name in CONTRACT_MODULES:
        found += importlib.import_module(name).CONTRACTS.values()
    return found


def mutants_by_contract(families: Iterable[Any]) -> dict[str, list[str]]:
    """Return ``suite:check`` → the names of the mutants aimed at it (``contract``, else ``caught_by``)."""
    found: dict[str, list[str]] = defaultdict(list)
    for family in families:
        for name, mutant in family.mutants.items():
            aimed = getattr(mutant, "contract", "") or getattr(mutant, "caught_by", "")
            if family.suite and aimed:
                choice = " (choice mutant)" if getattr(mutant, "choice", "") else ""
                found[f"{family.suite}:{aimed}"].append(name + choice)
    return dict(found)


@dataclass(frozen=True)
class Coverage:
    """Seed sentences: the testable ones, those a tagged contract cites, and those skipped with a reason."""

    testable: tuple[Sentence, ...]
    tagged: tuple[Sentence, ...]
    skipped: tuple[Sentence, ...]

    def text(self) -> str:
        """Return the coverage as the doc states it."""
        n, tagged = len(self.testable), len(self.tagged)
        line = f"**{tagged}/{n}** testable seed sentences have a tagged check ({tagged / max(n, 1):.0%})"
        if self.skipped:
            names = ", ".join(f"`{s.id}`" for s in self.skipped)
            line += f"; {len(self.skipped)} skipped with the reason given below ({names})"
        return line + "."


def _citations(found: Sequence[Contract]) -> dict[str, list[Contract]]:
    cited: dict[str, list[Contract]] = defaultdict(list)
    for contract in found:
        for sentence in contract.sentences:
            cited[sentence].append(contract)
    return cited


def _skipped(sentence: Sentence) -> bool:
    return sentence.level == "api" and sentence.rule.startswith(SKIPPED)


def coverage(found: Sequence[Contract]) -> Coverage:
    """Return the coverage of the seed documents' testable sentences by ``found`` contracts."""
    cited = _citations(found)
    testable = tuple(s for s in SENTENCES.values() if s.document.seed and s.testable)
    tagged = tuple(s for s in testable if s.id in cited)
    skipped = tuple(s for s in testable if s.id not in cited and _skipped(s))
    return Coverage(testable, tagged, skipped)


def _md(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _checked_by(sentence: Sentence, cited: Mapping[str, list[Contract]]) -> str:
    mine = cited.get(sentence.id, [])
    if mine:
        return ", ".join(f"`{c.key}` ({c.strength})" for c in mine)
    if sentence.level == "none":
        return f"not testable: {sentence.why}"
    if _skipped(sentence):
        return f"**skipped**: {sentence.rule.removeprefix(SKIPPED).strip()}"
    return "**no check**" + (f" ({sentence.rule})" if sentence.rule else "")


def _source(contract: Contract) -> str:
    """Return a contract's source for the table: the sentence ids for spec (quoted below), else the text."""
    ids = ", ".join(f"`{s}`" for s in contract.sentences)
    if contract.strength == "spec":
        return ids
    return _md(contract.source) + (f" (about {ids})" if ids else "")


def _contract_rows(found: Sequence[Contract], kills: Mapping[str, list[str]]) -> list[str]:
    lines: list[str] = []
    for suite in dict.fromkeys(c.suite for c in found):
        mine = [c for c in found if c.suite == suite]
        lines += ["", f"### {suite}", "", "| contract | strength | what it checks | source | mutants aimed at it |"]
        lines.append("|---|---|---|---|---|")
        for c in mine:
            killed = ", ".join(kills.get(c.key, [])) or "—"
            lines.append(f"| `{c.name}` | {c.strength} | {_md(c.summary)} | {_source(c)} | {_md(killed)} |")
    return lines


def _untagged_rows(found: Sequence[Contract], kills: Mapping[str, list[str]]) -> list[str]:
    suites = {c.suite for c in found}
    rest = sorted(k for k in kills if k.split(":", 1)[0] not in suites)
    if not rest:
        return []
    lines = [
        "",
        "## Mutants aimed at untagged checks",
        "",
        "These checks fail every run, as `untagged` ones. Rule group and the mutants aimed at it:",
        "",
        "| suite:rule group | mock mutants aimed at it |",
        "|---|---|",
    ]
    lines += [f"| `{key}` | {_md(', '.join(kills[key]))} |" for key in rest]
    return lines


def _sentence_rows(found: Sequence[Contract]) -> list[str]:
    cited = _citations(found)
    lines: list[str] = []
    for doc in DOCUMENTS.values():
        mine = [s for s in SENTENCES.values() if s.doc == doc.key]
        testable = [s for s in mine if s.testable]
        covered = [s for s in testable if s.id in cited]
        kind = "seed" if doc.seed else "also cited"
        lines += [
            "",
            f"### {doc.title} ({kind})",
            "",
            f"`{doc.path}`, from {doc.origin}. Tagged checks cover {len(covered)} of {len(testable)} testable sentences.",
            "",
            "| sentence | quote | level | checked by |",
            "|---|---|---|---|",
        ]
        lines += [f"| `{s.id}` | {_md(s.quote)} | {s.level} | {_md(_checked_by(s, cited))} |" for s in mine]
    return lines


def render(found: Sequence[Contract] | None = None, kills: Mapping[str, list[str]] | None = None) -> str:
    """Return ``docs/contracts.md``: the summary, every contract, the untagged machines and the sentences."""
    found = load_contracts() if found is None else list(found)
    kills = kills or {}
    counts = {suite: {s: 0 for s in STRENGTHS} for suite in dict.fromkeys(c.suite for c in found)}
    for c in found:
        counts[c.suite][c.strength] += 1
    lines = [
        "# Contracts and their strength",
        "",
        f"Generated by `{COMMAND}` from the tags on the checks (`harness.strength`); a test fails when it is stale.",
        "",
        "Every check says where it comes from: **spec**, a sentence of the provider's documents (quoted below, "
        "from the copies vendored in `harness/specs/`); **observed**, a measurement of the real system; "
        "**choice**, sandproof's own decision where the sources are silent. A default run fails only on spec and "
        "observed checks; a choice that does not hold is reported as differing from sandproof's choice and "
        "fails only `sandproof check --strict` (`--sandproof-strict`).",
        "",
        "| suite | spec | observed | choice | total |",
        "|---|---|---|---|---|",
    ]
    for suite, row in counts.items():
        lines.append(f"| {suite} | " + " | ".join(str(row[s]) for s in STRENGTHS) + f" | {sum(row.values())} |")
    total = {s: sum(row[s] for row in counts.values()) for s in STRENGTHS}
    lines.append("| **all** | " + " | ".join(f"**{total[s]}**" for s in STRENGTHS) + f" | **{len(found)}** |")
    lines += [
        "",
        "Seed coverage: " + coverage(found).text(),
        "",
        "## Contracts",
        "",
        "A spec contract's source lists the sentences it checks (quoted in the last section); an observed one says "
        "what was seen and where: the real opensandbox-server 1.1.1 in `make contracts-real`, a capture kept in the "
        "repository (with the quote found there), or a package's published source (the file and the quoted rule, "
        "checked against the installed version); a choice gives sandproof's reason. Each mutant named is verified to fail the check "
        "aimed at it (`tests/harness/policy/`, `tests/harness/machines/`, `tests/harness/concurrency/`); a choice "
        "mutant is caught only by a choice check. The API machines check behaviour (accepted or refused, status, "
        "the policy by what it decides) apart from representation (exact status among equivalent ones, error code, "
        "stored form), which is a choice unless it was specified or observed.",
    ]
    lines += _contract_rows(found, kills)
    lines += _untagged_rows(found, kills)
    lines += ["", "## Source sentences and the checks that cover them"]
    lines += _sentence_rows(found)
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None, *, families: Callable[[], Iterable[Any]] | None = None) -> int:
    """Print the document, or write it to ``--write PATH``; ``--mutants MODULE:ATTR`` names the mutant catalogue."""

    def options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--mutants", metavar="MODULE:ATTR", help="a callable returning the mutant families")

    def page(args: argparse.Namespace) -> str:
        catalogue = families
        if catalogue is None and args.mutants:
            module, _, attr = args.mutants.partition(":")
            catalogue = getattr(importlib.import_module(module), attr)
        return render(kills=mutants_by_contract(catalogue()) if catalogue is not None else {})

    return print_or_write(
        page,
        argv,
        prog="python -m harness.reporting.contracts_doc",
        description=__doc__,
        what="document",
        options=options,
    )


if __name__ == "__main__":
    raise SystemExit(main())
