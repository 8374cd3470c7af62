"""The model-backed specification frame: filesystems out of the state, refusals as outputs, memoised steps."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import pytest

from harness.concurrency.history import Operation
from harness.concurrency.modeling import ModelSpec, canonical
from mockserver.core import ApiError


class _Invalid(Exception):
    pass


class _Counter:
    """A toy model: one sandbox with a count and a filesystem."""

    def __init__(self) -> None:
        self.sandboxes: list[dict[str, Any]] = []

    def dump(self) -> dict[str, Any]:
        return {"sandboxes": [dict(sb) for sb in self.sandboxes]}

    def load(self, data: dict[str, Any]) -> None:
        assert all(sb["fs"] == {"empty": True} for sb in data["sandboxes"])
        self.sandboxes = [dict(sb, fs="written") for sb in data["sandboxes"]]


class _CounterSpec(ModelSpec[_Counter]):
    input_of = "a counter"
    sandbox_groups = ("sandboxes",)
    empty_fs = {"empty": True}
    invalid_request = (_Invalid,)

    def __init__(self) -> None:
        self.applied = 0
        super().__init__(strict=True)

    def _model(self) -> _Counter:
        return _Counter()

    def _ident(self, model: _Counter) -> str:
        return "sb" if model.sandboxes else "not-created"

    def _output(self, kind: str, status: int, body: Any) -> Hashable:
        return (kind, status, canonical(body))

    def _answer(self, model: _Counter, kind: str, ident: str, request: tuple[Any, ...]) -> Hashable:
        self.applied += 1
        if kind == "create":
            model.sandboxes.append({"count": 0, "fs": "written"})
            return self._output(kind, 200, None)
        if kind == "bump" and model.sandboxes:
            model.sandboxes[0]["count"] += 1
            return self._output(kind, 200, model.sandboxes[0]["count"])
        if kind == "invalid":
            raise _Invalid
        raise ApiError(404, "not_found", ident)


def _op(*request: str) -> Operation:
    return Operation(0, 0, request[0], "sb", request, None, 0, 0)


def test_the_state_leaves_the_filesystem_out_and_refusals_become_outputs() -> None:
    spec = _CounterSpec()
    assert spec.initial() == canonical({"sandboxes": []})
    state, output = spec.step(spec.initial(), _op("bump"))
    assert (state, output) == (spec.initial(), ("bump", 404, canonical({"code": "not_found"})))
    state, _ = spec.step(state, _op("create"))
    state, output = spec.step(state, _op("bump"))
    assert state == canonical({"sandboxes": [{"count": 1}]}) and output == ("bump", 200, "1")
    assert spec.step(state, _op("invalid"))[1] == ("invalid", 422, "null")


def test_a_step_is_memoised_on_state_and_input_and_a_bad_input_is_refused() -> None:
    spec = _CounterSpec()
    first = spec.step(spec.initial(), _op("create"))
    assert spec.step(spec.initial(), _op("create")) == first and spec.applied == 1
    with pytest.raises(ValueError, match="not a counter concurrency input"):
        spec.step(spec.initial(), Operation(0, 0, "create", "sb", "create", None, 0, 0))
