"""execd's code-interpreter rules without HTTP: context and run bodies, and the refusals."""

from __future__ import annotations

import pytest

from mockserver.core import ApiError
from mockserver.opensandbox.model import code


def status(call: object, *args: object) -> tuple[int, str]:
    assert callable(call)
    with pytest.raises(ApiError) as caught:
        call(*args)
    return caught.value.status, caught.value.code


def test_context_and_run_bodies() -> None:
    assert code.parse_context({"language": "python", "cwd": "/tmp"}) == ("python", "/tmp")
    assert status(code.parse_context, {"language": 3}) == (400, "INVALID_REQUEST_BODY")
    assert code.parse_run({"code": "1", "context": {"id": "c", "language": "python"}}) == code.CodeRun(
        "1", "c", "python"
    )
    assert code.parse_run({"code": "echo"}) == code.CodeRun("echo", None, None)
    for bad in ({}, {"code": ""}, {"code": "1", "context": []}, {"code": "1", "context": {"id": 1}}):
        assert status(code.parse_run, bad) == (400, "INVALID_REQUEST_BODY")


def test_refusals() -> None:
    assert status(code.require_id, None) == (400, "MISSING_QUERY")
    assert status(code.require_language, "") == (400, "MISSING_QUERY")
    missing = code.context_not_found("c1")
    assert (missing.status, missing.code, missing.message) == (404, "CONTEXT_NOT_FOUND", "context c1 not found")
    assert code.busy().message == "error running codes session is busy"
    assert code.create_failed("kernel not found").status == 500
    assert code.context_body(code.CodeContext("c", "python", "/w")) == {"id": "c", "language": "python", "cwd": "/w"}
