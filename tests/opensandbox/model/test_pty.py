"""execd's PTY rules without HTTP: create bodies, attach queries, refusals and frames."""

from __future__ import annotations

import json

import pytest

from mockserver.core import ApiError
from mockserver.opensandbox.model import pty


def test_create_bodies() -> None:
    assert pty.parse_create(None) == pty.PtyRequest(None, None)
    assert pty.parse_create({"cwd": "/tmp", "command": "top"}) == pty.PtyRequest("/tmp", "top")
    for bad in ([], {"cwd": 3}, {"command": ["ls"]}):
        with pytest.raises(ApiError) as caught:
            pty.parse_create(bad)
        assert (caught.value.status, caught.value.code) == (400, "INVALID_REQUEST_BODY")


def test_attach_queries() -> None:
    assert pty.parse_attach({}) == pty.Attach(pipe=False, since=None, takeover=False)
    assert pty.parse_attach({"pty": "0", "since": "42", "takeover": "1"}) == pty.Attach(True, 42, True)
    assert pty.parse_attach({"pty": "1", "since": "x"}) == pty.Attach(False, None, False)


def test_refusals_are_execds() -> None:
    missing = pty.session_not_found("abc")
    assert (missing.status, missing.code, missing.message) == (404, "CONTEXT_NOT_FOUND", "pty session abc not found")
    held = pty.already_connected("abc")
    assert (held.status, held.code) == (409, "ALREADY_CONNECTED")


def test_frames() -> None:
    assert json.loads(pty.connected_frame("s", pipe=True)) == {"type": "connected", "session_id": "s", "mode": "pipe"}
    assert json.loads(pty.exit_frame(3)) == {"type": "exit", "exit_code": 3}
    assert pty.client_frame('{"type":"resize","cols":120,"rows":40}') == pty.ClientFrame("resize", rows=40, cols=120)
    assert pty.client_frame('{"type":"signal","signal":"SIGINT"}') == pty.ClientFrame("signal", signal=2)
    assert pty.client_frame('{"type":"signal","signal":"SIGUSR1"}') == pty.ClientFrame("signal", signal=None)
    assert pty.client_frame('{"type":"ping"}') == pty.ClientFrame("ping")
    assert pty.client_frame("not json") is None
