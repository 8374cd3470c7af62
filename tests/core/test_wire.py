import json
from typing import Any

import pytest

from mockserver.core.wire import WireDict, encode_json


def _starlette(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode()


@pytest.mark.parametrize(
    "value",
    [
        {"items": [WireDict({"id": "a", "n": 1.5, "ü": None}), WireDict({"id": "b", "l": [1, {"x": "é"}]})]},
        {"sandboxes": [], "pagination": {"page": 1, "hasNextPage": False}},
        [WireDict({"a": 1}), {"plain": True}, 3, "s"],
        WireDict({"nested": {"deep": [1, 2]}}),
        {"mixed": {"inner": [WireDict({"k": "v"})]}, 1: "int key"},
        "text",
        None,
    ],
)
def test_the_bytes_are_starlettes(value: Any) -> None:
    assert encode_json(value) == _starlette(value)


def test_a_wire_dict_is_encoded_once() -> None:
    body = WireDict({"id": "a"})
    first = encode_json({"items": [body]})
    assert body.encoded == b'{"id":"a"}'
    body.encoded = b'{"id":"cached"}'  # the cache is what a later encoding splices in
    assert encode_json({"items": [body]}) == b'{"items":[{"id":"cached"}]}' != first


def test_nan_is_refused_as_starlette_does() -> None:
    with pytest.raises(ValueError):
        encode_json({"x": float("nan")})
