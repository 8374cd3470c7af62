"""Differential fidelity runner: replay one request program against the real server and a candidate.

A :class:`Program` is a sequence of :class:`Step` s against the OpenSandbox lifecycle API (create, get,
list, renew, pause, resume, delete, endpoint), valid or not. :class:`DifferentialRunner` sends every step
to both sides and compares normalised replies:

* the status code (a status mismatch is one difference; bodies are shown, not diffed);
* the headers ``content-type`` (media type only), ``x-request-id`` (echoed or 32 hex digits) and ``vary``;
* the JSON body, recursively: missing or extra keys, value types and values.

Normalisation makes the two sides comparable:

* sandbox ids become ``<sandbox#N>`` where N is the create step that made them, on each side, so later
  steps naming "sandbox #N" hit the right id on each side; other UUIDs become ``<foreign-id>``;
* timestamps must be RFC 3339 and become placeholders that keep their format (``sZ`` whole seconds,
  ``f6Z`` microseconds, ...): a time we sent is ``<requested@K>``, a time a whole number of seconds
  from the sandbox's create-reply ``createdAt`` is ``<created#N+600s>`` (so ``expiresAt`` is compared
  relative to ``createdAt``), one within a few seconds of it is ``<created#N~>``, and
  ``status.lastTransitionAt`` equal to the object's ``createdAt`` is ``<same-as-createdAt>``;
* ``127.0.0.1:<port>`` becomes ``<server>`` (the side's own port) or ``<host-port>``.

If a create succeeds on one side only, the runner deletes that orphan and both sides treat the slot as a
sandbox that never existed, so one divergent create does not cascade. Each step yields a
:class:`Comparison`; a :class:`Difference` not covered by a :class:`~harness.differential.deviations.Deviation` is a
divergence. Relative times (:class:`RelTime`) assume the candidate's clock follows the wall clock.

The parts live in their own modules: the program model (:mod:`harness.differential.programs`), the canonical
programs (:mod:`harness.differential.canonical`), the generated ones (:mod:`harness.differential.strategies`),
sending and normalising (:mod:`harness.differential.session`) and comparing (:mod:`harness.differential.compare`).
This module holds the runner and re-exports the public names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from types import TracebackType

from harness.differential.canonical import BASE_CREATE, CANONICAL_PROGRAMS, DROP, INVALID_CREATES, create, create_body
from harness.differential.compare import Comparison, Difference, ProgramResult, diff, difference_values, report
from harness.differential.deviations import KNOWN_DEVIATIONS, OPEN_FINDINGS, Deviation, covering
from harness.differential.programs import Program, RelTime, Step
from harness.differential.session import ABSENT, Observed, Session, Side, created_sandbox
from harness.differential.strategies import programs, steps
from mockserver.asgi import clients

__all__ = [
    "ABSENT",
    "BASE_CREATE",
    "CANONICAL_PROGRAMS",
    "DROP",
    "INVALID_CREATES",
    "Comparison",
    "Difference",
    "DifferentialRunner",
    "Observed",
    "Program",
    "ProgramResult",
    "RelTime",
    "Side",
    "Step",
    "create",
    "create_body",
    "diff",
    "difference_values",
    "programs",
    "report",
    "steps",
]


class DifferentialRunner:
    """Send programs to a real server and a candidate and compare the normalised replies.

    `deviations` defaults to the known deviations plus the open findings of :mod:`harness.differential.deviations`.
    """

    def __init__(
        self,
        real: Side,
        candidate: Side,
        *,
        deviations: Sequence[Deviation] | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.real = real
        self.candidate = candidate
        self.deviations = tuple(KNOWN_DEVIATIONS + OPEN_FINDINGS if deviations is None else deviations)
        self._clients = (
            clients.client(trust_env=False, timeout=timeout),
            clients.client(trust_env=False, timeout=timeout),
        )

    def close(self) -> None:
        """Close both HTTP clients."""
        for client in self._clients:
            client.close()

    def __enter__(self) -> DifferentialRunner:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def run(self, program: Program) -> ProgramResult:
        """Run one program on both sides, then delete what it created."""
        real = Session(self.real, self._clients[0])
        candidate = Session(self.candidate, self._clients[1])
        comparisons: list[Comparison] = []
        slots = 0
        try:
            for index, step in enumerate(program.steps, 1):
                slot = 0
                if step.operation == "create":
                    slots += 1
                    slot = slots
                comparisons.append(self._step(index, step, slot, real, candidate))
        finally:
            real.cleanup()
            candidate.cleanup()
        return ProgramResult(program, tuple(comparisons))

    def run_all(self, programs: Iterable[Program]) -> list[ProgramResult]:
        """Run several programs."""
        return [self.run(p) for p in programs]

    def _step(self, index: int, step: Step, slot: int, real: Session, candidate: Session) -> Comparison:
        """Send one step to both sides and compare."""
        real_line, real_out = real.send(step, index)
        cand_line, cand_out = candidate.send(step, index)
        if step.operation == "create":
            made = (created_sandbox(real_out), created_sandbox(cand_out))
            if made[0] and made[1]:
                real.register(slot, *made[0])
                candidate.register(slot, *made[1])
            else:
                for session, one in zip((real, candidate), made, strict=True):
                    if one:
                        session.delete(one[0])
        observed = (real.observe(step, real_line, real_out), candidate.observe(step, cand_line, cand_out))
        resolved = step.sandbox is None or (step.sandbox in real.ids and step.sandbox in candidate.ids)
        key = step.key if resolved else f"{step.key}@missing"
        differences = tuple(
            Difference(path, a, b, covering(key, path, difference_values(a, b), self.deviations))
            for path, a, b in diff(*observed)
        )
        return Comparison(step, observed[0], observed[1], differences, index, key)
