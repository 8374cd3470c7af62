"""Contract results per provider and operation: terminal summary, fidelity matrix, JSON, known deviations.

The pytest plugin feeds a :class:`ContractReport` one :class:`TestRecord` per contract test phase, counts
Hypothesis examples, and at the end prints :meth:`ContractReport.summary_lines` and, with
``--sandproof-report=DIR``, writes ``DIR/fidelity.md`` and ``DIR/results.json`` (plus ``DIR/junit.xml``
through pytest's own JUnit writer). Any module can call :func:`register_deviation` to document a known
difference between a mock and the real service; the matrix lists them.

A test that runs tagged checks (:mod:`harness.strength`) hands their outcomes to :meth:`ContractReport.add_checks`;
the report then counts checks per strength (``spec 58 passed · observed 4 passed · choice 12 passed, 2
differ``; a test without tagged checks counts as one ``untagged`` check; a registered contract no test recorded
counts as skipped), lists every check that "differs from sandproof's choice" and every "documented deviation" of
a real target (:mod:`harness.strength.deviations`) with its counterexample.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from harness.strength.model import Contract, contract_provider

__all__ = [
    "DIFFERS",
    "PROVIDERS",
    "STRENGTH_COLUMNS",
    "ContractReport",
    "Deviation",
    "Outcome",
    "Tally",
    "TestRecord",
    "deviations",
    "register_deviation",
    "unregister_deviation",
]

PROVIDERS = ("tensorlake", "opensandbox")
Outcome = Literal["passed", "failed", "skipped", "xfailed", "xpassed", "error"]
_ORDER: dict[str, int] = {"passed": 0, "xpassed": 0, "skipped": 1, "xfailed": 1, "failed": 2, "error": 2}
_MAX_REASON = 300
#: The strengths the summary counts, in order; ``untagged`` is a test that recorded no tagged check.
STRENGTH_COLUMNS = ("spec", "observed", "choice", "untagged")
#: What the strength counts hold, in the order the summary prints them, and the words it prints.
COUNTED = ("passed", "failed", "skipped", "deviation", "differs")
WORDS = {
    "passed": "passed",
    "failed": "failed",
    "skipped": "skipped",
    "deviation": "documented deviation",
    "differs": "differ",
}
DEVIATION = "documented deviation"
#: How the reports name a choice that does not hold.
DIFFERS = "differs from sandproof's choice"


@dataclass(frozen=True)
class Deviation:
    """A known, accepted difference between a mock and the service it imitates."""

    provider: str
    operation: str
    description: str
    reason: str


_DEVIATIONS: list[Deviation] = []
_DEVIATIONS_LOCK = threading.Lock()


def register_deviation(provider: str, operation: str, description: str, reason: str) -> Deviation:
    """Record a known deviation for the fidelity matrix; registering the same one twice keeps one."""
    for name, value in (("provider", provider), ("operation", operation), ("description", description)):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"register_deviation: {name} must be a non-empty string")
    deviation = Deviation(provider.strip(), operation.strip(), description.strip(), reason.strip())
    with _DEVIATIONS_LOCK:
        if deviation not in _DEVIATIONS:
            _DEVIATIONS.append(deviation)
    return deviation


def unregister_deviation(deviation: Deviation) -> None:
    """Forget a registered deviation (no error when it is not registered)."""
    with _DEVIATIONS_LOCK:
        if deviation in _DEVIATIONS:
            _DEVIATIONS.remove(deviation)


def deviations() -> list[Deviation]:
    """Return the registered deviations in registration order."""
    with _DEVIATIONS_LOCK:
        return list(_DEVIATIONS)


@dataclass
class TestRecord:
    """The outcome of one contract test (all phases folded together)."""

    __test__ = False  # not a pytest test class

    nodeid: str
    provider: str
    operation: str
    outcome: Outcome
    reason: str = ""
    duration: float = 0.0
    examples: int = 0
    checks: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Tally:
    """Counts for one provider and operation cell."""

    passed: int = 0
    failed: int = 0
    skipped: int = 0
    reasons: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Return how many tests the cell holds."""
        return self.passed + self.failed + self.skipped

    def add(self, record: TestRecord) -> None:
        """Count one test."""
        if record.outcome in ("passed", "xpassed"):
            self.passed += 1
        elif record.outcome in ("failed", "error"):
            self.failed += 1
        else:
            self.skipped += 1
        if record.reason and record.outcome != "passed" and record.reason not in self.reasons:
            self.reasons.append(record.reason)


def shorten(text: str, limit: int = _MAX_REASON) -> str:
    """Collapse whitespace and cut ``text`` to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class ContractReport:
    """Collect contract outcomes for one run and render them."""

    def __init__(self, target: str, profile: str | None = None, *, strict: bool = False) -> None:
        self.target = target
        self.profile = profile
        self.strict = strict
        self.records: dict[str, TestRecord] = {}
        self._examples_by_test: dict[str, int] = defaultdict(int)
        self.examples = 0
        self.example_runs = 0
        self.started = time.monotonic()
        self.started_at = datetime.now(UTC)
        self.finished: float | None = None
        self.unknown_fields: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
        self.unknown_sources: dict[tuple[str, str, str], set[str]] = defaultdict(set)
        self.exit_status: int | None = None
        #: The registered contracts (set by the plugin): one a covered provider's tests did not record was not
        #: judged on this target and counts as skipped under its strength.
        self.known_contracts: list[Contract] = []

    # --- collecting ------------------------------------------------------------------------------------

    def record(
        self,
        nodeid: str,
        provider: str,
        operation: str,
        outcome: Outcome,
        reason: str = "",
        duration: float = 0.0,
    ) -> TestRecord:
        """Fold one phase's outcome into the test's record: the worst outcome wins."""
        reason = shorten(reason)
        current = self.records.get(nodeid)
        if current is None:
            current = self.records[nodeid] = TestRecord(nodeid, provider, operation, outcome, reason)
        elif _ORDER[outcome] > _ORDER[current.outcome]:
            current.outcome, current.reason = outcome, reason
        current.duration += duration
        current.examples = self._examples_by_test.get(nodeid, 0)
        return current

    def add_checks(self, nodeid: str, outcomes: Iterable[Mapping[str, Any]]) -> None:
        """Attach the tagged check outcomes a test recorded (``CheckOutcome.to_json()`` dicts) to its record."""
        found = [dict(outcome) for outcome in outcomes]
        record = self.records.get(nodeid)
        if record is not None and found:
            record.checks = found

    def add_examples(self, nodeid: str | None, count: int) -> None:
        """Count Hypothesis examples run by one test (or outside any test when ``nodeid`` is None)."""
        self.examples += count
        self.example_runs += 1
        if nodeid is not None:
            self._examples_by_test[nodeid] += count
            if nodeid in self.records:
                self.records[nodeid].examples = self._examples_by_test[nodeid]

    def add_unknown_fields(self, provider: str, found: Mapping[str, Iterable[str]], source: str | None = None) -> None:
        """Merge the request fields a mock did not recognise, keyed by call (``METHOD path``), and who sent them."""
        for call, names in found.items():
            for name in names:
                self.unknown_fields[provider][call].add(name)
                if source:
                    self.unknown_sources[(provider, call, name)].add(source)

    def sources(self, provider: str, call: str, name: str) -> list[str]:
        """Return the tests that sent an unknown field, sorted."""
        return sorted(self.unknown_sources.get((provider, call, name), ()))

    def finish(self, exit_status: int | None = None) -> None:
        """Stop the clock."""
        if self.finished is None:
            self.finished = time.monotonic()
        self.exit_status = exit_status

    # --- views -----------------------------------------------------------------------------------------

    @property
    def duration(self) -> float:
        """Return the run's wall time in seconds so far."""
        return (self.finished if self.finished is not None else time.monotonic()) - self.started

    def examples_per_second(self) -> float | None:
        """Return Hypothesis examples per second, or None when no examples were counted."""
        if not self.examples or self.duration <= 0:
            return None
        return self.examples / self.duration

    def providers(self) -> list[str]:
        """Return the known providers, then any other provider seen."""
        seen = {r.provider for r in self.records.values()}
        return list(PROVIDERS) + sorted(seen - set(PROVIDERS))

    def operations(self) -> list[str]:
        """Return the operations seen, in first-seen order."""
        return list(dict.fromkeys(r.operation for r in self.records.values()))

    def tallies(self) -> dict[tuple[str, str], Tally]:
        """Return the counts per (provider, operation)."""
        cells: dict[tuple[str, str], Tally] = {}
        for record in self.records.values():
            cells.setdefault((record.provider, record.operation), Tally()).add(record)
        return cells

    def totals(self) -> Tally:
        """Return the counts over every contract test."""
        total = Tally()
        for record in self.records.values():
            total.add(record)
        return total

    def failed(self) -> bool:
        """Tell whether any contract test failed."""
        return self.totals().failed > 0

    def strength_counts(self) -> dict[str, dict[str, int]]:
        """Return, per strength (and ``untagged``), how many checks passed, failed, were skipped, are documented
        deviations of a real target, and differ from a choice.

        A test's tagged checks count one each; a test that ran and recorded none counts as one untagged check,
        a skipped test without checks as one skipped untagged check. A registered contract of a provider this run
        covered that no test recorded was not judged here: it counts as skipped under its strength.
        """
        counts = {column: dict.fromkeys(COUNTED, 0) for column in STRENGTH_COLUMNS}
        seen: set[str] = set()
        providers: set[str] = set()
        for record in self.records.values():
            if record.outcome not in ("skipped", "xfailed"):
                providers.add(record.provider)
            if record.checks:
                for check in record.checks:
                    column = check["strength"] if check["strength"] in counts else "untagged"
                    counts[column][check["status"]] += 1
                    seen.add(check["contract"])
            elif record.outcome in ("passed", "xpassed"):
                counts["untagged"]["passed"] += 1
            elif record.outcome in ("failed", "error"):
                counts["untagged"]["failed"] += 1
            else:
                counts["untagged"]["skipped"] += 1
        for contract in self.known_contracts:
            if contract.key not in seen and contract_provider(contract) in providers:
                counts[contract.strength]["skipped"] += 1
        return counts

    def strength_line(self) -> str:
        """Return the checks per strength as one line, e.g. ``spec 58 passed, 2 skipped · choice 2 differ``.

        The three strengths show once any tagged check ran; ``untagged`` shows when an untagged test ran.
        """
        counts = self.strength_counts()
        tagged = any(counts[s]["passed"] + counts[s]["failed"] + counts[s]["deviation"] for s in STRENGTH_COLUMNS[:3])
        parts = []
        for column, count in counts.items():
            shown = [f"{count[s]} {WORDS[s]}" for s in COUNTED if count[s]]
            if shown or (tagged and column != "untagged"):
                parts.append(f"{column} {', '.join(shown) or '0'}")
        line = " · ".join(parts) or "no checks ran"
        return line + (" (strict: choices fail the run)" if self.strict else "")

    def documented_deviations(self) -> list[tuple[TestRecord, dict[str, Any]]]:
        """Return every (test, check outcome) whose failure is a documented deviation of the real target."""
        return [(r, c) for r in self.records.values() for c in r.checks if c["status"] == "deviation"]

    def differences(self) -> list[tuple[TestRecord, dict[str, Any]]]:
        """Return every (test, check outcome) whose check differs from sandproof's choice."""
        return [(r, c) for r in self.records.values() for c in r.checks if c["status"] == "differs"]

    def pace(self) -> str:
        """Return the duration and example rate as one phrase."""
        text = f"{self.duration:.1f} s"
        rate = self.examples_per_second()
        if rate is not None:
            text += f", {self.examples:,} Hypothesis examples ({rate:,.0f}/s)"
        return text

    def summary_lines(self) -> list[str]:
        """Return the terminal summary: one line per provider and operation, then totals."""
        if not self.records:
            return []
        cells = self.tallies()
        width = max(len("operation"), *(len(op) for _, op in cells))
        lines = [f"target {self.target}" + (f", Hypothesis profile {self.profile}" if self.profile else "")]
        lines.append(f"{'provider':<12} {'operation':<{width}}  passed failed skipped  notes")
        for provider in self.providers():
            for operation in self.operations():
                tally = cells.get((provider, operation))
                if tally is None:
                    continue
                note = "; ".join(tally.reasons[:2]) + (" …" if len(tally.reasons) > 2 else "")
                lines.append(
                    f"{provider:<12} {operation:<{width}}  {tally.passed:>6} {tally.failed:>6} "
                    f"{tally.skipped:>7}  {shorten(note, 160)}".rstrip()
                )
        total = self.totals()
        lines.append(f"{total.passed} passed, {total.failed} failed, {total.skipped} skipped in {self.pace()}")
        lines.append("checks by strength: " + self.strength_line())
        for record, check in self.documented_deviations():
            lines.append(f"{DEVIATION}: {check['contract']} ({record.nodeid}): {shorten(_example(check), 240)}")
        for record, check in self.differences():
            lines.append(f"{DIFFERS}: {check['contract']} ({record.nodeid}): {shorten(_example(check), 240)}")
        return lines

    def to_json(self) -> dict[str, Any]:
        """Return the whole report as JSON."""
        total = self.totals()
        return {
            "target": self.target,
            "profile": self.profile,
            "started_at": self.started_at.isoformat(timespec="seconds"),
            "duration_seconds": round(self.duration, 3),
            "examples": self.examples,
            "examples_per_second": self.examples_per_second(),
            "exit_status": self.exit_status,
            "totals": {"passed": total.passed, "failed": total.failed, "skipped": total.skipped},
            "strict": self.strict,
            "strength": self.strength_counts(),
            "documented_deviations": [
                {"nodeid": record.nodeid, "provider": record.provider, "operation": record.operation, **check}
                for record, check in self.documented_deviations()
            ],
            "choice_differences": [
                {"nodeid": record.nodeid, "provider": record.provider, "operation": record.operation, **check}
                for record, check in self.differences()
            ],
            "tests": [asdict(r) for r in self.records.values()],
            "cells": [{"provider": p, "operation": o, **asdict(t)} for (p, o), t in sorted(self.tallies().items())],
            "deviations": [asdict(d) for d in deviations()],
            "unknown_fields": {
                provider: {call: sorted(names) for call, names in sorted(calls.items())}
                for provider, calls in sorted(self.unknown_fields.items())
            },
            "unknown_field_sources": {
                provider: {
                    call: {name: self.sources(provider, call, name) for name in sorted(names)}
                    for call, names in sorted(calls.items())
                }
                for provider, calls in sorted(self.unknown_fields.items())
            },
        }

    def fidelity_markdown(self) -> str:
        """Return the fidelity matrix: operations by providers backed by test outcomes, then details."""
        known = deviations()
        cells = self.tallies()
        providers = self.providers()
        operations = self.operations()
        for deviation in known:
            if deviation.operation not in operations and deviation.provider in providers:
                operations.append(deviation.operation)
        flagged = {(d.provider, d.operation) for d in known}
        lines = [
            "# sandproof fidelity matrix",
            "",
            f"Target `{self.target}`"
            + (f", Hypothesis profile `{self.profile}`" if self.profile else "")
            + f"; run started {self.started_at.strftime('%Y-%m-%d %H:%M:%S')} UTC, took {self.pace()}.",
            "",
            "Each cell counts the contract tests for that operation: ✅ all ran and passed, ❌ some failed, "
            "⏭ all skipped, — none; ⚠ marks a known deviation (listed below).",
            "",
            "| operation | " + " | ".join(providers) + " |",
            "|---|" + "---|" * len(providers),
        ]
        for operation in operations:
            row = [_cell(cells.get((p, operation)), (p, operation) in flagged) for p in providers]
            lines.append(f"| {_md(operation)} | " + " | ".join(row) + " |")
        total = self.totals()
        lines += ["", f"Totals: {total.passed} passed, {total.failed} failed, {total.skipped} skipped."]
        lines += ["", f"Checks by strength: {self.strength_line()}."]
        problems = [r for r in self.records.values() if r.outcome in ("failed", "error")]
        if problems:
            lines += ["", "## Failures", ""]
            lines += [f"- **{r.provider} · {r.operation}** `{r.nodeid}`: {_md(r.reason)}" for r in problems]
        documented = self.documented_deviations()
        if documented:
            lines += [
                "",
                "## Documented deviations of the real server",
                "",
                "The target contradicts its own documents here, as `docs/differential-findings.md` records; the "
                "check still states the documented rule. These do not fail the run.",
                "",
                "| contract | test | deviation | counterexample |",
                "|---|---|---|---|",
            ]
            for record, check in documented:
                lines.append(
                    f"| `{check['contract']}` | `{_md(record.nodeid)}` | {_md(check.get('message') or '')} | "
                    f"{_md(shorten(check.get('counterexample') or '', 400))} |"
                )
        differing = self.differences()
        if differing:
            lines += [
                "",
                "## Checks that differ from sandproof's choice",
                "",
                "The sources are silent here and sandproof chose; the target decided otherwise. These do not fail a "
                "default run (`sandproof check --strict` fails on them).",
                "",
                "| contract | test | sandproof's choice | counterexample |",
                "|---|---|---|---|",
            ]
            for record, check in differing:
                example = _example(check)
                lines.append(
                    f"| `{check['contract']}` | `{_md(record.nodeid)}` | {_md(check.get('source', ''))} | "
                    f"{_md(shorten(example, 400))} |"
                )
        skips: dict[tuple[str, str, str], int] = defaultdict(int)
        for r in self.records.values():
            if r.outcome in ("skipped", "xfailed"):
                skips[(r.provider, r.operation, r.reason)] += 1
        if skips:
            lines += ["", "## Skipped", ""]
            lines += [
                f"- **{p} · {o}** ({n} test{'s' if n != 1 else ''}): {_md(why) or 'no reason given'}"
                for (p, o, why), n in skips.items()
            ]
        lines += ["", "## Known deviations", ""]
        if known:
            lines += ["| provider | operation | deviation | why |", "|---|---|---|---|"]
            lines += [
                f"| {_md(d.provider)} | {_md(d.operation)} | {_md(d.description)} | {_md(d.reason)} |" for d in known
            ]
        else:
            lines.append("None registered.")
        if self.unknown_fields:
            lines += ["", "## Request fields the mocks did not recognise", ""]
            lines += ["| provider | call | fields | sent by |", "|---|---|---|---|"]
            for provider, calls in sorted(self.unknown_fields.items()):
                for call, names in sorted(calls.items()):
                    senders = sorted({s for n in names for s in self.sources(provider, call, n)})
                    shown = ", ".join(f"`{_md(s.rsplit('::', 1)[-1])}`" for s in senders[:3])
                    shown += f" and {len(senders) - 3} more" if len(senders) > 3 else ""
                    lines.append(f"| {provider} | `{_md(call)}` | {_md(', '.join(sorted(names)))} | {shown} |")
        return "\n".join(lines) + "\n"

    def write(self, directory: Path) -> list[Path]:
        """Write ``fidelity.md`` and ``results.json`` into ``directory``; return the paths."""
        directory.mkdir(parents=True, exist_ok=True)
        matrix = directory / "fidelity.md"
        matrix.write_text(self.fidelity_markdown(), encoding="utf-8")
        results = directory / "results.json"
        results.write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")
        return [matrix, results]


def _example(check: Mapping[str, Any]) -> str:
    """Return a differing check's counterexample, with what the check said about it first."""
    message, example = check.get("message"), check.get("counterexample")
    if message and example:
        return f"{message} (input: {example})"
    return str(message or example or "")


def _cell(tally: Tally | None, flagged: bool) -> str:
    """Render one matrix cell."""
    mark = " ⚠" if flagged else ""
    if tally is None or tally.total == 0:
        return "—" + mark
    if tally.failed:
        text = f"❌ {tally.passed}/{tally.passed + tally.failed} passed"
    elif tally.passed:
        text = f"✅ {tally.passed} passed"
    else:
        return "⏭ skipped" + mark
    if tally.skipped:
        text += f", {tally.skipped} skipped"
    return text + mark


def _md(text: str) -> str:
    """Escape text for a markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")
