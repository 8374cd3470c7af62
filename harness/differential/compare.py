"""Compare two sides' normalised replies: the differences, per step and per program, and their reports."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from harness.differential.deviations import Deviation
from harness.differential.programs import Program, Step, compact
from harness.differential.session import ABSENT, Observed

__all__ = ["Comparison", "Difference", "ProgramResult", "diff", "difference_values", "report"]

_SHOW = 400


@dataclass(frozen=True)
class Difference:
    """One place where the normalised replies differ, and the deviation that covers it if any."""

    path: str
    real: Any
    candidate: Any
    deviation: Deviation | None = None

    def describe(self) -> str:
        """Return ``path: real X != candidate Y`` plus the covering deviation."""
        text = f"{self.path}: real {compact(self.real)} != candidate {compact(self.candidate)}"
        if self.deviation is not None:
            tag = self.deviation.finding or "known deviation"
            text += f"  [{tag}: {self.deviation.operation} / {self.deviation.field_or_aspect}]"
        return text


@dataclass(frozen=True)
class Comparison:
    """The outcome of one step: both normalised replies and every difference between them."""

    step: Step
    real: Observed
    candidate: Observed
    differences: tuple[Difference, ...]
    index: int = 0
    key: str = ""

    @property
    def unlisted(self) -> tuple[Difference, ...]:
        """Return the differences no deviation covers."""
        return tuple(d for d in self.differences if d.deviation is None)

    @property
    def ok(self) -> bool:
        """Return whether every difference is covered."""
        return not self.unlisted

    def report(self, *, covered: bool = False) -> str:
        """Return a readable diff of this step (only unlisted differences unless `covered`)."""
        shown = self.differences if covered else self.unlisted
        lines = [
            f"step {self.index}: {self.step.describe()}"
            + (" (no such sandbox)" if self.key.endswith("@missing") else "")
        ]
        lines += [f"    - {d.describe()}" for d in shown]
        for label, seen in (("real", self.real), ("candidate", self.candidate)):
            lines.append(f"      {label:<9} {seen.request} -> {seen.status} {_clip(seen.raw)}")
        return "\n".join(lines)


@dataclass(frozen=True)
class ProgramResult:
    """Every comparison of one program run."""

    program: Program
    comparisons: tuple[Comparison, ...]

    @property
    def divergences(self) -> tuple[Comparison, ...]:
        """Return the comparisons with unlisted differences."""
        return tuple(c for c in self.comparisons if not c.ok)

    @property
    def ok(self) -> bool:
        """Return whether no step diverged."""
        return not self.divergences

    def report(self, *, covered: bool = False) -> str:
        """Return the program and a readable diff of its divergent steps."""
        chosen = [c for c in self.comparisons if (c.differences if covered else c.unlisted)]
        return "\n".join([self.program.describe(), *(c.report(covered=covered) for c in chosen)])


def report(results: Iterable[ProgramResult]) -> str:
    """Return the readable diff of every divergent program."""
    return "\n\n".join(r.report() for r in results if not r.ok)


def _clip(text: str) -> str:
    """Shorten long text for reports."""
    text = text.replace("\n", " ")
    return text if len(text) <= _SHOW else text[:_SHOW] + "..."


def difference_values(real: Any, candidate: Any) -> str:
    """Return the ``<real> -> <candidate>`` text a deviation's `values` pattern matches."""
    return f"{compact(real)} -> {compact(candidate)}"


def diff(real: Observed, candidate: Observed) -> list[tuple[str, Any, Any]]:
    """Return ``(path, real, candidate)`` for every place the normalised replies differ."""
    if real.status != candidate.status:
        return [("status", real.status, candidate.status)]
    out: list[tuple[str, Any, Any]] = []
    for name in sorted(set(real.headers) | set(candidate.headers)):
        a, b = real.headers.get(name, ABSENT), candidate.headers.get(name, ABSENT)
        if a != b:
            out.append((f"header.{name}", a, b))
    _diff("body", real.body, candidate.body, out)
    return out


def _diff(path: str, a: Any, b: Any, out: list[tuple[str, Any, Any]]) -> None:
    """Collect differences between two JSON values: keys, types, lengths and leaf values."""
    if type(a) is not type(b):
        out.append((path, a, b))
    elif isinstance(a, dict):
        for key in a:
            if key not in b:
                out.append((f"{path}.{key}", a[key], ABSENT))
            else:
                _diff(f"{path}.{key}", a[key], b[key], out)
        out.extend((f"{path}.{key}", ABSENT, b[key]) for key in b if key not in a)
    elif isinstance(a, list):
        if len(a) != len(b):
            out.append((f"{path}.length", len(a), len(b)))
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            _diff(f"{path}.{i}", x, y, out)
    elif a != b:
        out.append((path, a, b))
