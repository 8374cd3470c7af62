import json
from pathlib import Path

import pytest

from mockserver.state_file import load_state, save_state
from tests.demo_mock import DemoMock


def test_save_then_load_restores_every_mock(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    first = DemoMock()
    first.items["a"] = {"value": 1}
    first.clock.advance(5)
    save_state(path, {"demo": first})
    assert not list(tmp_path.glob(".state.json.*")), "temp file left behind"
    second = DemoMock()
    assert load_state(path, {"demo": second})
    assert second.items == {"a": {"value": 1}} and second.clock.now() == first.clock.now()


def test_load_of_missing_file_is_a_no_op(tmp_path: Path) -> None:
    assert not load_state(tmp_path / "absent.json", {"demo": DemoMock()})


def test_load_rejects_garbage_and_keeps_state(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"demo": {"provider": "demo", "state": {"items": 3}}}))
    mock = DemoMock()
    mock.items["keep"] = {"value": 0}
    with pytest.raises(ValueError):
        load_state(path, {"demo": mock})
    assert mock.items == {"keep": {"value": 0}}
