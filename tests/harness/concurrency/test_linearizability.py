"""The linearizability checker: hand-made histories, a brute-force cross-check, partitioning, bounds and scale."""

from __future__ import annotations

import itertools
import random
from collections.abc import Hashable, Sequence

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from harness.concurrency.history import Operation
from harness.concurrency.linearizability import Spec, check_history, check_key

Pair = tuple[int, int]


class PairRegister(Spec[Pair]):
    """Two integer fields: ``write`` sets both at once, ``add`` increments the first, ``read`` returns both."""

    def initial(self) -> Pair:
        return (0, 0)

    def step(self, state: Pair, op: Operation) -> tuple[Pair, Hashable]:
        kind = op.input[0] if isinstance(op.input, tuple) else op.input
        if kind == "write":
            assert isinstance(op.input, tuple)
            return (op.input[1], op.input[2]), "ok"
        if kind == "add":
            assert isinstance(op.input, tuple)
            return (state[0] + op.input[1], state[1]), "ok"
        return state, state

    def describe(self, state: Pair) -> str:
        return f"a={state[0]} b={state[1]}"


SPEC = PairRegister()
_ids = itertools.count()


def op(
    call: int, ret: int | None, input: Hashable, output: Hashable = "ok", client: int = 0, key: str = "x"
) -> Operation:
    """Return one operation (times in arbitrary units)."""
    kind = input[0] if isinstance(input, tuple) else str(input)
    return Operation(next(_ids), client, str(kind), key, input, output, call, ret)


def write(a: int, b: int) -> tuple[str, int, int]:
    return ("write", a, b)


READ = ("read",)


def verdict(ops: Sequence[Operation]) -> str:
    return check_key("x", ops, SPEC).verdict


# --- hand-made histories ---------------------------------------------------------------------------------


def test_a_sequential_history_is_linearizable() -> None:
    result = check_key(
        "x", [op(0, 1, write(1, 1)), op(2, 3, READ, (1, 1)), op(4, 5, ("add", 2)), op(6, 7, READ, (3, 1))], SPEC
    )
    assert result.verdict == "linearizable"
    assert [o.input for o in result.order] == [write(1, 1), READ, ("add", 2), READ]
    assert result.state_after == "a=3 b=1"


def test_a_stale_read_after_the_write_returned_is_a_violation() -> None:
    w = op(0, 1, write(1, 1), client=1)
    r = op(2, 3, READ, (0, 0), client=2)
    result = check_key("x", [w, r], SPEC)
    assert result.verdict == "violation"
    assert result.order == (w,)
    assert result.state_after == "a=1 b=1"
    assert [(c.op, c.predicted, c.fits) for c in result.candidates] == [(r, (1, 1), False)]
    text = result.witness()
    assert "longest linearizable prefix (1 of 2 operations)" in text
    assert "the specification says (1, 1)" in text


def test_a_read_overlapping_a_write_may_see_either_value() -> None:
    w = op(0, 10, write(1, 1), client=1)
    assert verdict([w, op(1, 2, READ, (0, 0), client=2), op(3, 4, READ, (1, 1), client=2)]) == "linearizable"
    assert verdict([w, op(1, 2, READ, (1, 1), client=2), op(3, 4, READ, (1, 1), client=2)]) == "linearizable"


def test_new_then_old_is_a_violation_even_while_the_write_is_in_flight() -> None:
    w = op(0, 10, write(1, 1), client=1)
    assert verdict([w, op(1, 2, READ, (1, 1), client=2), op(3, 4, READ, (0, 0), client=3)]) == "violation"


def test_a_lost_update_is_a_violation() -> None:
    adds = [op(0, 5, ("add", 1), client=1), op(1, 6, ("add", 1), client=2)]
    assert verdict([*adds, op(7, 8, READ, (1, 0), client=3)]) == "violation"
    assert verdict([*adds, op(7, 8, READ, (2, 0), client=3)]) == "linearizable"


def test_a_half_applied_two_step_write_is_a_violation() -> None:
    w = op(0, 10, write(1, 1), client=1)
    assert verdict([w, op(2, 3, READ, (1, 0), client=2)]) == "violation"
    assert verdict([w, op(2, 3, READ, (0, 0), client=2), op(4, 5, READ, (1, 1), client=2)]) == "linearizable"


def test_once_overlapping_writes_returned_their_order_is_decided() -> None:
    writes = [op(0, 10, write(1, 1), client=1), op(0, 10, write(2, 2), client=2)]
    assert verdict([*writes, op(11, 12, READ, (1, 1), client=3), op(13, 14, READ, (1, 1), client=3)]) == "linearizable"
    assert verdict([*writes, op(11, 12, READ, (2, 2), client=3), op(13, 14, READ, (2, 2), client=3)]) == "linearizable"
    assert verdict([*writes, op(11, 12, READ, (1, 1), client=3), op(13, 14, READ, (2, 2), client=3)]) == "violation"
    # while both are in flight a read may see the first, a later one the second
    assert verdict([*writes, op(2, 3, READ, (1, 1), client=3), op(11, 12, READ, (2, 2), client=3)]) == "linearizable"


def test_touching_intervals_count_as_concurrent() -> None:
    assert verdict([op(0, 5, write(1, 1), client=1), op(5, 6, READ, (0, 0), client=2)]) == "linearizable"
    assert verdict([op(0, 5, write(1, 1), client=1), op(6, 7, READ, (0, 0), client=2)]) == "violation"


def test_an_operation_without_an_answer_may_take_effect_at_any_later_point() -> None:
    lost = op(0, None, write(1, 1), client=1)
    assert lost.lost
    assert verdict([lost, op(5, 6, READ, (0, 0), client=2), op(7, 8, READ, (1, 1), client=2)]) == "linearizable"
    assert verdict([lost, op(5, 6, READ, (0, 0), client=2)]) == "linearizable"
    assert verdict([lost, op(5, 6, READ, (1, 1), client=2), op(7, 8, READ, (0, 0), client=2)]) == "violation"
    # but never before it was invoked
    assert verdict([op(0, 1, READ, (1, 1), client=2), op(2, None, write(1, 1), client=1)]) == "violation"


def test_the_search_is_bounded_and_says_unknown() -> None:
    ops = [op(0, 100, write(i, i), client=i) for i in range(6)] + [op(101, 102, READ, (9, 9), client=9)]
    assert check_key("x", ops, SPEC).verdict == "violation"
    bounded = check_key("x", ops, SPEC, max_steps=5)
    assert bounded.verdict == "unknown"
    assert bounded.steps == 6
    assert "deepest prefix reached" in bounded.witness()


def test_each_key_is_checked_on_its_own() -> None:
    ops = [
        op(0, 1, write(1, 1), key="x"),
        op(2, 3, READ, (1, 1), key="x"),
        op(0, 1, write(2, 2), key="y"),
        op(2, 3, READ, (0, 0), key="y"),
        op(0, 1, READ, (0, 0), key="z"),
    ]
    result = check_history(ops, SPEC)
    assert {k: r.verdict for k, r in result.keys.items()} == {
        "x": "linearizable",
        "y": "violation",
        "z": "linearizable",
    }
    assert (result.count("linearizable"), result.count("violation"), result.count("unknown")) == (2, 1, 0)
    assert not result.linearizable
    assert [r.key for r in result.failures()] == ["y"]


def test_operations_must_be_keyed() -> None:
    unkeyed = Operation(0, 0, "list", None, ("list",), (), 0, 1)
    with pytest.raises(ValueError, match="no key"):
        check_history([unkeyed], SPEC)


# --- cross-check against a brute-force search ------------------------------------------------------------


def brute_force(ops: Sequence[Operation], spec: Spec[Pair]) -> bool:
    """Try every order that respects real time (a before b when a returned before b was invoked)."""

    def extend(rest: tuple[Operation, ...], state: Pair) -> bool:
        if not rest:
            return True
        for candidate in rest:
            if any(o.ret is not None and o.ret < candidate.call for o in rest if o is not candidate):
                continue
            after, out = spec.step(state, candidate)
            if (candidate.ret is None or out == candidate.output) and extend(
                tuple(o for o in rest if o is not candidate), after
            ):
                return True
        return False

    by_key: dict[str | None, list[Operation]] = {}
    for o in ops:
        by_key.setdefault(o.key, []).append(o)
    return all(extend(tuple(group), spec.initial()) for group in by_key.values())


@st.composite
def histories(draw: st.DrawFn) -> list[Operation]:
    """Draw up to seven operations on one or two keys: from a real sequential run, then maybe disturbed."""
    count = draw(st.integers(1, 7))
    ops: list[Operation] = []
    points: list[float] = []
    for ident in range(count):
        call = draw(st.integers(0, 12))
        ret = None if draw(st.integers(0, 9)) == 0 else call + draw(st.integers(0, 8))
        kind = draw(st.sampled_from(("write", "read", "read", "add")))
        key = draw(st.sampled_from(("x", "x", "y")))
        input: Hashable = (
            write(draw(st.integers(0, 1)), draw(st.integers(0, 1)))
            if kind == "write"
            else ("add", 1)
            if kind == "add"
            else READ
        )
        ops.append(Operation(ident, ident, kind, key, input, None, call, ret))
        end = call + 20 if ret is None else ret
        points.append(draw(st.floats(call, end)))
    # outputs from running the operations in the order of their drawn linearization points
    states: dict[str | None, Pair] = {}
    outputs: dict[int, Hashable] = {}
    for index in sorted(range(count), key=lambda i: points[i]):
        o = ops[index]
        states[o.key], outputs[index] = SPEC.step(states.get(o.key, SPEC.initial()), o)
    disturbed = draw(st.one_of(st.none(), st.integers(0, count - 1)))
    result = []
    for index, o in enumerate(ops):
        out = outputs[index]
        if index == disturbed and o.kind == "read":
            out = (draw(st.integers(0, 2)), draw(st.integers(0, 1)))
        result.append(Operation(o.id, o.client, o.kind, o.key, o.input, out, o.call, o.ret))
    return result


@settings(max_examples=400, deadline=None)
@given(histories())
def test_the_search_agrees_with_brute_force(ops: list[Operation]) -> None:
    expected = brute_force(ops, SPEC)
    found = check_history(ops, SPEC)
    event("linearizable" if expected else "violation")
    assert found.linearizable == expected, "\n".join(r.witness() for r in found.keys.values())
    assert found.count("unknown") == 0


def test_brute_force_cross_check_sees_both_verdicts() -> None:
    rng = random.Random(7)
    verdicts = []
    for _ in range(300):
        ops = []
        for ident in range(rng.randint(2, 6)):
            call = rng.randint(0, 10)
            input: Hashable = rng.choice([write(rng.randint(0, 1), rng.randint(0, 1)), READ, ("add", 1)])
            output: Hashable = (rng.randint(0, 2), rng.randint(0, 1)) if input == READ else "ok"
            ops.append(Operation(ident, ident, str(input[0]), "x", input, output, call, call + rng.randint(0, 6)))
        expected = brute_force(ops, SPEC)
        assert check_history(ops, SPEC).linearizable == expected
        verdicts.append(expected)
    assert 20 < sum(verdicts) < 280


# --- scale -------------------------------------------------------------------------------------------------


def simulated_history(rng: random.Random, *, clients: int, per_client: int, keys: int) -> list[Operation]:
    """Return a linearizable history: clients run operations back to back, each taking effect inside its interval."""
    raw: list[tuple[float, Operation]] = []
    ident = 0
    for client in range(clients):
        t = rng.randint(0, 50)
        for _ in range(per_client):
            call, ret = t, t + rng.randint(1, 40)
            key = f"k{rng.randrange(keys)}"
            roll = rng.random()
            input: Hashable = (
                write(rng.randint(0, 3), rng.randint(0, 3)) if roll < 0.3 else ("add", 1) if roll < 0.4 else READ
            )
            raw.append((rng.uniform(call, ret), Operation(ident, client, str(input[0]), key, input, None, call, ret)))
            ident += 1
            t = ret + rng.randint(0, 3)
    states: dict[str | None, Pair] = {}
    ops = []
    for _, o in sorted(raw, key=lambda pair: pair[0]):
        states[o.key], out = SPEC.step(states.get(o.key, SPEC.initial()), o)
        ops.append(Operation(o.id, o.client, o.kind, o.key, o.input, out, o.call, o.ret))
    return ops


def test_thousands_of_operations_check_in_few_steps_per_operation() -> None:
    ops = simulated_history(random.Random(3), clients=8, per_client=400, keys=10)
    result = check_history(ops, SPEC)
    assert len(ops) == 3200
    assert result.linearizable
    for key_result in result.keys.values():
        # not a wall-clock assertion: the number of entry visits stays a small multiple of the operations
        assert key_result.steps <= 40 * len(key_result.operations), key_result.key
    print(
        f"3200 operations on 10 keys: {result.seconds * 1000:.0f} ms in total, slowest key {result.slowest * 1000:.0f} ms"
    )


def test_one_busy_key_with_thousands_of_operations() -> None:
    ops = simulated_history(random.Random(4), clients=6, per_client=400, keys=1)
    result = check_key("k0", ops, SPEC)
    assert result.verdict == "linearizable"
    assert result.steps <= 40 * len(ops)
    stale = list(ops)
    reads = [i for i, o in enumerate(ops) if o.kind == "read" and i > len(ops) // 2]
    index = reads[0]
    o = stale[index]
    wrong = (o.output[0] + 100, 0) if isinstance(o.output, tuple) else (100, 0)
    stale[index] = Operation(o.id, o.client, o.kind, o.key, o.input, wrong, o.call, o.ret)
    broken = check_key("k0", stale, SPEC)
    assert broken.verdict == "violation"
    assert any(c.op.id == o.id for c in broken.candidates)
