"""Linearizability of a concurrent history against a sequential specification (Wing & Gong, Lowe, porcupine).

A history is linearizable when every operation can be given one instant between its invocation and its
response such that running the operations one at a time, in the order of those instants, through the
sequential specification gives every output the clients saw. :func:`check_history` decides this per key
(linearizability is local: a history is linearizable iff each object's sub-history is) with a depth-first
search over the **entry list**: every operation contributes a call entry and a return entry, sorted by time
(a call before a return at equal times, so touching intervals count as concurrent), in a doubly linked list.
The search walks the list from the head: at a call entry it tries to linearize that operation next (the
specification must produce the observed output); on success it *lifts* the call and its return out of the
list and starts again from the head; at a return entry the operation returning there was not linearized in
time, so it backtracks (pops the last choice and *unlifts* it). The list is empty when everything is
linearized. Memoising the pairs (set of linearized operations, state) already explored prunes the orders
that reach a known configuration, which makes the common case close to linear.

A :class:`Spec` gives the initial state, ``step(state, op) -> (state, output)`` and output equality; states
must be hashable (and should be small and canonical: equal states compare equal whatever the path). An
operation that got no answer (``ret is None``) may take effect at any point after its invocation and its
output is not checked.

The search is bounded (``max_steps`` entry visits and a ``timeout``): past either it answers ``unknown``
rather than hang. On a violation the :class:`KeyResult` is the witness: the key's sub-history, the longest
linearizable prefix the search found, the state after it, and the operations that could come next, each
with the output the specification predicts there.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

from harness.concurrency.history import Operation, ms

__all__ = [
    "DEFAULT_MAX_STEPS",
    "DEFAULT_TIMEOUT",
    "Candidate",
    "CheckResult",
    "KeyResult",
    "Spec",
    "Verdict",
    "check_history",
    "check_key",
]

S = TypeVar("S", bound=Hashable)
Verdict = Literal["linearizable", "violation", "unknown"]

DEFAULT_MAX_STEPS = 2_000_000
DEFAULT_TIMEOUT = 10.0
_NIL = -1
_CLOCK_EVERY = 4096


class Spec(Generic[S]):
    """A sequential specification: subclasses give :meth:`initial` and :meth:`step`."""

    def initial(self) -> S:
        """Return the state before any operation."""
        raise NotImplementedError

    def step(self, state: S, op: Operation) -> tuple[S, Hashable]:
        """Apply ``op`` to ``state``; return the new state and the output the specification answers."""
        raise NotImplementedError

    def matches(self, predicted: Hashable, observed: Hashable) -> bool:
        """Tell whether an observed output is the predicted one (default: equality)."""
        return predicted == observed

    def describe(self, state: S) -> str:
        """Return a short human-readable form of ``state`` for witnesses."""
        return repr(state)


@dataclass(frozen=True)
class Candidate:
    """An operation that could have come next after the longest linearizable prefix, and why it did not fit."""

    op: Operation
    predicted: Hashable
    fits: bool


@dataclass(frozen=True)
class KeyResult:
    """The verdict on one key's sub-history and, unless linearizable, the witness."""

    key: str
    verdict: Verdict
    operations: tuple[Operation, ...]
    order: tuple[Operation, ...]
    state_after: str
    candidates: tuple[Candidate, ...] = ()
    steps: int = 0
    seconds: float = 0.0

    def witness(self, origin: int | None = None) -> str:
        """Return the witness as text: the sub-history, the longest linearizable prefix, what could come next."""
        start = origin if origin is not None else min((op.call for op in self.operations), default=0)
        lines = [
            f"key {self.key}: {self.verdict} ({len(self.operations)} operations, {self.steps} search steps, "
            f"{self.seconds * 1000:.1f} ms)",
            "  history (client, invoked..returned ms, operation -> observed output):",
        ]
        lines += [f"    {_describe(op, start)}" for op in self.operations]
        if self.verdict == "linearizable":
            return "\n".join(lines)
        done = "longest linearizable prefix" if self.verdict == "violation" else "deepest prefix reached"
        lines.append(f"  {done} ({len(self.order)} of {len(self.operations)} operations):")
        lines += [f"    {n}. {_describe(op, start)}" for n, op in enumerate(self.order, 1)]
        lines.append(f"  state after it: {self.state_after}")
        if self.candidates:
            lines.append("  no operation can come next:")
            for c in self.candidates:
                why = "fits, but no order of the rest does" if c.fits else f"the specification says {c.predicted!r}"
                lines.append(f"    {_describe(c.op, start)}: {why}")
        return "\n".join(lines)


@dataclass
class CheckResult:
    """The verdicts on every key of a history."""

    keys: dict[str, KeyResult] = field(default_factory=dict)

    def count(self, verdict: Verdict) -> int:
        """Return how many keys got ``verdict``."""
        return sum(1 for r in self.keys.values() if r.verdict == verdict)

    @property
    def linearizable(self) -> bool:
        """Tell whether every key's sub-history is linearizable."""
        return all(r.verdict == "linearizable" for r in self.keys.values())

    def failures(self) -> list[KeyResult]:
        """Return the keys that are not (known to be) linearizable: violations first."""
        bad = [r for r in self.keys.values() if r.verdict != "linearizable"]
        return sorted(bad, key=lambda r: (r.verdict != "violation", len(r.operations)))

    @property
    def seconds(self) -> float:
        """Return the total search time."""
        return sum(r.seconds for r in self.keys.values())

    @property
    def slowest(self) -> float:
        """Return the longest search time of one key."""
        return max((r.seconds for r in self.keys.values()), default=0.0)


def check_history(
    operations: Iterable[Operation],
    spec: Spec[S],
    *,
    max_steps: int = DEFAULT_MAX_STEPS,
    timeout: float = DEFAULT_TIMEOUT,
) -> CheckResult:
    """Check every key's sub-history of ``operations`` against ``spec`` (each from ``spec.initial()``)."""
    by_key: dict[str, list[Operation]] = defaultdict(list)
    for op in operations:
        if op.key is None:
            raise ValueError(f"operation {op.id} ({op.kind}) has no key; project multi-key operations first")
        by_key[op.key].append(op)
    result = CheckResult()
    for key, ops in by_key.items():
        result.keys[key] = check_key(key, ops, spec, max_steps=max_steps, timeout=timeout)
    return result


def check_key(
    key: str,
    operations: Sequence[Operation],
    spec: Spec[S],
    *,
    max_steps: int = DEFAULT_MAX_STEPS,
    timeout: float = DEFAULT_TIMEOUT,
) -> KeyResult:
    """Decide whether one object's history is linearizable (see the module docstring for the search)."""
    started = time.perf_counter()
    ops = tuple(sorted(operations, key=lambda op: (op.call, op.id)))
    n = len(ops)
    # Entry list: node 0 is the head; nodes 1..2n are the entries sorted by (time, call-before-return).
    never = max((t for op in ops for t in (op.call, op.ret) if t is not None), default=0) + 1
    entries = sorted(
        [(op.call, 0, i) for i, op in enumerate(ops)]
        + [(never if op.ret is None else op.ret, 1, i) for i, op in enumerate(ops)]
    )
    size = 2 * n + 1
    nxt = [*range(1, size), _NIL]
    prv = [_NIL, *range(size - 1)]
    is_call = [False] * size
    index = [0] * size
    match = [0] * size
    call_node = [0] * n
    for node, (_, kind, i) in enumerate(entries, 1):
        index[node] = i
        if kind == 0:
            is_call[node] = True
            call_node[i] = node
        else:
            match[call_node[i]] = node

    def lift(c: int) -> None:
        r = match[c]
        nxt[prv[c]] = nxt[c]
        if nxt[c] != _NIL:
            prv[nxt[c]] = prv[c]
        nxt[prv[r]] = nxt[r]
        if nxt[r] != _NIL:
            prv[nxt[r]] = prv[r]

    def unlift(c: int) -> None:
        r = match[c]
        nxt[prv[r]] = r
        if nxt[r] != _NIL:
            prv[nxt[r]] = r
        nxt[prv[c]] = c
        if nxt[c] != _NIL:
            prv[nxt[c]] = c

    tried: dict[tuple[S, int], tuple[S, bool]] = {}
    seen: set[tuple[int, S]] = set()
    calls: list[tuple[int, S]] = []
    state: S = spec.initial()
    linearized = 0
    deepest, snapshot_depth = 0, -1
    snapshot: tuple[list[int], S] = ([], state)
    node = nxt[0]
    steps = 0
    deadline = started + timeout
    verdict: Verdict = "linearizable"
    while nxt[0] != _NIL:
        steps += 1
        if steps > max_steps or (steps % _CLOCK_EVERY == 0 and time.perf_counter() > deadline):
            verdict = "unknown"
            break
        if is_call[node]:
            i = index[node]
            memo = tried.get((state, i))
            if memo is None:
                after, predicted = spec.step(state, ops[i])
                memo = (after, ops[i].ret is None or spec.matches(predicted, ops[i].output))
                tried[(state, i)] = memo
            after, fits = memo
            if fits:
                grown = linearized | (1 << i)
                if (grown, after) not in seen:
                    seen.add((grown, after))
                    calls.append((node, state))
                    state, linearized = after, grown
                    lift(node)
                    deepest = max(deepest, len(calls))
                    node = nxt[0]
                    continue
            node = nxt[node]
        else:
            if not calls:
                verdict = "violation"
                break
            if len(calls) == deepest and snapshot_depth != deepest:
                snapshot, snapshot_depth = ([index[c] for c, _ in calls], state), deepest
            node, state = calls.pop()
            linearized &= ~(1 << index[node])
            unlift(node)
            node = nxt[node]
    if verdict == "linearizable":
        order, final = [index[c] for c, _ in calls], state
    elif snapshot_depth == deepest or not calls:
        order, final = snapshot
    else:
        order, final = [index[c] for c, _ in calls], state
    candidates = _candidates(ops, order, final, spec) if verdict == "violation" else ()
    return KeyResult(
        key=key,
        verdict=verdict,
        operations=ops,
        order=tuple(ops[i] for i in order),
        state_after=spec.describe(final),
        candidates=candidates,
        steps=steps,
        seconds=time.perf_counter() - started,
    )


def _candidates(ops: Sequence[Operation], order: Sequence[int], state: S, spec: Spec[S]) -> tuple[Candidate, ...]:
    """Return the operations that could follow the prefix ``order`` in real time, with the spec's outputs."""
    placed = set(order)
    rest = [op for i, op in enumerate(ops) if i not in placed]
    if not rest:
        return ()
    first_return = min((op.ret for op in rest if op.ret is not None), default=None)
    found = []
    for op in rest:
        if first_return is not None and op.call > first_return:
            continue
        _, predicted = spec.step(state, op)
        found.append(Candidate(op, predicted, op.ret is None or spec.matches(predicted, op.output)))
    return tuple(found)


def _describe(op: Operation, origin: int) -> str:
    """Return one operation as a line: client, interval, kind, input and observed output."""
    returned = "lost" if op.ret is None else f"{ms(op.ret - origin):.3f}"
    seen = "(no answer)" if op.ret is None else repr(op.output)
    return f"[c{op.client}] {ms(op.call - origin):.3f}..{returned} {op.kind} {op.input!r} -> {seen}"
