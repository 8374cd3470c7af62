"""Known, intended differences between the OpenSandbox mock and the real opensandbox-server 1.1.1.

The differential runner (:mod:`harness.differential.runner`) ignores a divergence only when an entry here covers
it: ``operation`` is matched against the step's ``operation:variant`` key and ``field_or_aspect`` against
the difference's path (both ``fnmatch`` patterns; an operation pattern without ``:`` means any variant).
An entry may narrow itself with ``values``, a pattern over ``<real> -> <candidate>`` (compact JSON).
:data:`KNOWN_DEVIATIONS` are intended; :data:`OPEN_FINDINGS` are mock bugs written up in
``docs/differential-findings.md`` and tested on their own, so the generated programs look only for new ones.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase

PROVIDER = "opensandbox"


@dataclass(frozen=True)
class Deviation:
    """One accepted divergence: where it shows, what each side does, and why it is fine."""

    operation: str
    field_or_aspect: str
    real: str
    mock: str
    reason: str
    finding: str = ""
    values: str = "*"

    def covers(self, step_key: str, path: str, values: str = "") -> bool:
        """Return whether this entry covers a difference at `path` in the step `operation:variant`."""
        pattern = self.operation if ":" in self.operation else f"{self.operation}:*"
        return (
            fnmatchcase(step_key, pattern)
            and fnmatchcase(path, self.field_or_aspect)
            and fnmatchcase(values, self.values)
        )


KNOWN_DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "endpoint:direct*",
        "body.endpoint",
        "`127.0.0.1:<execdHostPort>/proxy/<port>` (8080: its own host port)",
        "`127.0.0.1:<mockPort>/direct/<id>/<port>`",
        "The mock's own endpoints (no server configuration file): it serves every sandbox port from its own socket; "
        "the real Docker runtime publishes a host port per container. Both are scheme-less `host:port/path` "
        "endpoints the SDK uses the same way. Built from the real server's file (`--opensandbox-config`, as the "
        "differential runs it) the mock answers the real shapes.",
        values="*/direct/*",
    ),
    Deviation(
        "create:network-policy*",
        "status",
        '400 `SANDBOX::INVALID_PARAMETER` "egress.image must be configured when networkPolicy is provided."',
        "202: the sandbox gets an emulated egress sidecar that enforces the policy",
        "A setting, not a behaviour: the real server here has no egress sidecar image configured (it could not "
        "run it on the fake Docker anyway), and the mock's default has one, since enforcing policies is the point "
        "of the mock. Built from the same configuration file (`--opensandbox-config`, as the differential "
        "runs it), the mock answers this 400 too; the entry covers comparisons with a default mock (replay).",
        values="400 -> 202",
    ),
    Deviation(
        "create:huge-body",
        "status",
        "202: the server reads a body of any size",
        "413 `payload_too_large` for a body over 1 MiB (`mockserver.asgi.requests.MAX_BODY`)",
        "A choice: the mock bounds what it buffers per request, so one client cannot exhaust the memory of a "
        "test server others share. The SDKs' create bodies are a few KiB.",
        values="202 -> 413",
    ),
)

#: Mock bugs not yet fixed, written up in docs/differential-findings.md (F1-F13 are all fixed). Each entry covers
#: a finding's divergences so the canonical and generated programs report only new ones; its own test in
#: tests/harness/differential/test_runner.py shows when it is fixed.
OPEN_FINDINGS: tuple[Deviation, ...] = ()


def covering(
    step_key: str, path: str, values: str = "", table: Iterable[Deviation] = KNOWN_DEVIATIONS + OPEN_FINDINGS
) -> Deviation | None:
    """Return the first entry of `table` that covers a difference, or None."""
    return next((d for d in table if d.covers(step_key, path, values)), None)


def _cell(text: str) -> str:
    """Escape a value for a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def deviations_markdown(table: Iterable[Deviation] = KNOWN_DEVIATIONS) -> str:
    """Render a deviations table as Markdown."""
    lines = [
        "| Operation | Field / aspect | Real server 1.1.1 | Mock | Reason |",
        "|---|---|---|---|---|",
    ]
    for d in table:
        reason = f"{d.reason} ({d.finding})" if d.finding else d.reason
        cells = (f"`{d.operation}`", f"`{d.field_or_aspect}`", d.real, d.mock, reason)
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def register_known_deviations() -> int:
    """Register the known deviations with :func:`harness.reporting.report.register_deviation`; return how many."""
    from harness.reporting.report import register_deviation as register

    for d in KNOWN_DEVIATIONS:
        register(PROVIDER, d.operation, f"{d.field_or_aspect}: real {d.real}; mock {d.mock}", d.reason)
    return len(KNOWN_DEVIATIONS)
