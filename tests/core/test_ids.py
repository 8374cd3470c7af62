import random
import uuid

import pytest

from mockserver.core.ids import IdFactory


def test_uuid4_is_the_standard_version_4_form_of_one_draw() -> None:
    ids, rng = IdFactory(7), random.Random(7)
    for _ in range(200):
        expected = uuid.UUID(int=rng.getrandbits(128), version=4)
        assert ids.uuid4() == str(expected)
    assert IdFactory(7).uuid4_hex() == IdFactory(7).uuid4().replace("-", "")


def test_a_seeded_sequence_continues_where_its_dump_stood() -> None:
    first = IdFactory(3)
    [first.token() for _ in range(5)]
    dumped = first.dump()
    second = IdFactory(99)
    second.load(dumped)
    assert [second.uuid4() for _ in range(3)] == [first.uuid4() for _ in range(3)]


def test_every_draw_and_reseed_moves_the_counter() -> None:
    ids = IdFactory(1)
    before = ids.draws
    ids.token()
    ids.uuid4()
    ids.random()
    ids.seed(2)
    assert ids.draws == before + 4


def test_an_unseeded_dump_keeps_no_sequence_and_garbage_is_refused() -> None:
    assert IdFactory().dump() == {"seed": None}
    with pytest.raises(ValueError):
        IdFactory().load({"seed": 1, "state": [3, "nope", None]})
    with pytest.raises(ValueError):
        IdFactory().load({"seed": "x"})
