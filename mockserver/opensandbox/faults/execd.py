"""Named faults of execd (port 44772), on the direct endpoint and through the server proxy alike (``*/44772``).

Numbers refer to the wire notes (F1-F34) and the NeMo Gym notes (NG-F1...); the SDK reactions are SDK 1.1.1's
and NeMo Gym 0.7.0's as measured.
"""

from __future__ import annotations

from typing import Any

from mockserver.admin.catalogue import named_fault
from mockserver.core import FaultRule

from ..model import faults as model_faults
from ..model.errors import backend_connection_failed
from ..model.execd import frame
from ..model.profiles import EXECD_PORT
from .base import EXECD, OpenSandboxFaultHost

__all__ = ["ExecdFaults"]

BAD_GATEWAY_JSON = backend_connection_failed(EXECD_PORT).body()
_POLL = f"{EXECD}/command/status/*"


class ExecdFaults:
    """Faults of execd's command, status, file and health routes."""

    mock: OpenSandboxFaultHost

    @named_fault("SDK: SandboxApiException(404, INVALID_REQUEST_BODY); NeMo Gym: a non-retryable 4xx, exec fails.")
    def command_not_found_on_poll(self, sandbox_id: str | None = None, times: int | None = 1) -> FaultRule:
        """F1: a command-status poll answers 404 ``INVALID_REQUEST_BODY`` (the record was evicted, execd restarted)."""
        body = {"code": "INVALID_REQUEST_BODY", "message": "command not found: evicted"}
        return self.mock.faults.respond("GET", _POLL, 404, body, sandbox_id=sandbox_id, times=times)

    @named_fault("SDK: SandboxApiException(410), not retried; NeMo Gym: exec fails after one poll (no 410 handling).")
    def status_410_on_poll(self, sandbox_id: str | None = None, times: int | None = 1) -> FaultRule:
        """F2 / NG-F2: a command-status poll answers 410 Gone (no real execd sends it)."""
        body = {"code": "COMMAND_GONE", "message": "command finished and was reaped"}
        return self.mock.faults.respond("GET", _POLL, 410, body, sandbox_id=sandbox_id, times=times)

    @named_fault("SDK: InvalidArgumentException (the body is not JSON), not SandboxApiException.")
    def plain_text_404(self, path: str = _POLL, sandbox_id: str | None = None) -> FaultRule:
        """F3: a 404 whose body is text, as a bare proxy answers it."""
        return self.mock.faults.respond("GET", path, 404, "404 page not found", sandbox_id=sandbox_id)

    @named_fault(
        "SDK: GET/PUT/DELETE retried (4 attempts), then SandboxApiException(502); POST not retried.",
        method="the method it matches (GET: the SDK retries it)",
    )
    def bad_gateway(
        self, method: str = "GET", path: str = "*", sandbox_id: str | None = None, times: int | None = 3
    ) -> FaultRule:
        """F4/F5: ``502 Bad Gateway`` (text), ``times`` times."""
        return self.mock.faults.respond(method, path, 502, "Bad Gateway", sandbox_id=sandbox_id, times=times)

    @named_fault("NeMo Gym: status polls retried per operations.retries; an exhausted 502 goes to its OOM check.")
    def bad_gateway_on_poll(self, sandbox_id: str | None = None, times: int | None = 3) -> FaultRule:
        """NG-F2: 502 on command-status polls."""
        return self.bad_gateway("GET", _POLL, sandbox_id, times)

    @named_fault("SDK: a GET waits Retry-After, then retries.")
    def unavailable(
        self,
        method: str = "GET",
        path: str = "*",
        retry_after: int = 1,
        sandbox_id: str | None = None,
        times: int | None = 1,
    ) -> FaultRule:
        """F6: 503 with ``Retry-After``."""
        headers = {"Retry-After": str(retry_after)}
        body = {"code": "SERVICE_UNAVAILABLE", "message": "service unavailable"}
        return self.mock.faults.respond(method, path, 503, body, sandbox_id=sandbox_id, times=times, headers=headers)

    @named_fault("SDK: not retried; the code is parsed into SandboxApiException.")
    def server_error(
        self,
        method: str = "GET",
        path: str = "*",
        code: str = "RUNTIME_ERROR",
        sandbox_id: str | None = None,
        times: int | None = 1,
    ) -> FaultRule:
        """F7: a JSON 500."""
        return self.mock.faults.respond(
            method, path, 500, {"code": code, "message": "boom"}, sandbox_id=sandbox_id, times=times
        )

    @named_fault(
        "SDK: SandboxApiException(401, UNEXPECTED_RESPONSE); at /ping during create it fails fast, then DELETE."
    )
    def execd_unauthorized(
        self, path: str = f"{EXECD}/*", sandbox_id: str | None = None, times: int | None = 1
    ) -> FaultRule:
        """F8: execd's token middleware refuses the call: 401 ``{"error": ...}``."""
        body = {"error": "Unauthorized: invalid or missing header X-EXECD-ACCESS-TOKEN"}
        return self.mock.faults.respond("*", path, 401, body, sandbox_id=sandbox_id, times=times)

    @named_fault('SDK: InvalidArgumentException("499 is not a valid HTTPStatus").')
    def nonstandard_status(
        self, status: int = 499, method: str = "GET", path: str = "*", sandbox_id: str | None = None
    ) -> FaultRule:
        """F9: a status code outside ``http.HTTPStatus`` (499, 520)."""
        return self.mock.faults.respond(method, path, status, {"code": "X", "message": "odd"}, sandbox_id=sandbox_id)

    @named_fault(
        "SDK: no retry, SandboxApiException(502); NeMo Gym: resubmits up to operations.retries+1 times, then "
        "SandboxBackendUnreachableError after checking the sandbox for OOM evidence.",
        json_body="answer the server proxy's JSON body (false: the text Bad Gateway)",
    )
    def submit_502(self, sandbox_id: str | None = None, times: int | None = 1, json_body: bool = True) -> FaultRule:
        """F10 / NG-F1: 502 on ``POST /command`` (the proxy never reached execd)."""
        body: Any = BAD_GATEWAY_JSON if json_body else "Bad Gateway"
        return self.mock.faults.respond("POST", f"{EXECD}/command", 502, body, sandbox_id=sandbox_id, times=times)

    @named_fault(
        "SDK: SandboxApiException with the code (429: SandboxRateLimitException); NeMo Gym: not resubmitted "
        "(aiohttp backend: a 429 is replayed up to 3 times)."
    )
    def submit_error(
        self,
        status: int = 400,
        code: str = "INVALID_REQUEST_BODY",
        sandbox_id: str | None = None,
        times: int | None = 1,
        retry_after: int | None = None,
    ) -> FaultRule:
        """F11 (and NG-F15 with 429): an error answer to ``POST /command`` before streaming."""
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        body = {"code": code, "message": "invalid request, validation error"}
        return self.mock.faults.respond(
            "POST", f"{EXECD}/command", status, body, sandbox_id=sandbox_id, times=times, headers=headers
        )

    @named_fault("SDK: SandboxConnectionException (Content-Type must contain text/event-stream).")
    def sse_wrong_content_type(self, sandbox_id: str | None = None) -> FaultRule:
        """F12: the command stream arrives as ``application/json``."""
        body = {"type": "init", "text": "x", "timestamp": 1}
        return self.mock.faults.respond("POST", f"{EXECD}/command", 200, body, sandbox_id=sandbox_id)

    @named_fault("SDK: returns normally with exit_code=None and the partial stdout.", stdout="the output sent")
    def sse_truncated(self, sandbox_id: str | None = None, stdout: str = "partial\n") -> FaultRule:
        """F13: the stream ends cleanly after ``init`` and some output, with no terminal event."""
        ts = self.mock.clock.now_ms()
        events = [
            {"type": "init", "text": "truncated", "timestamp": ts},
            {"type": "stdout", "text": stdout, "timestamp": ts},
        ]
        body = b"".join(frame(e) for e in events).decode()
        return self.mock.faults.respond(
            "POST", f"{EXECD}/command", 200, body, sandbox_id=sandbox_id, content_type="text/event-stream"
        )

    @named_fault("SDK: no retry on a stream; the cut surfaces as a connection error.", after_chunks="frames sent first")
    def sse_cut(self, sandbox_id: str | None = None, after_chunks: int = 2) -> FaultRule:
        """F13 (abrupt): the connection is reset after ``after_chunks`` SSE frames."""
        return self.mock.faults.add(
            method="POST",
            path=f"{EXECD}/command",
            action="cut_stream",
            after_chunks=after_chunks,
            sandbox_id=sandbox_id,
            times=1,
            name="sse_cut",
        )

    @named_fault(
        "SDK: hangs (its SSE read timeout is None) until the stream drops.",
        after_chunks="frames sent first",
        seconds="how long it stays silent (real seconds)",
    )
    def sse_stall(self, sandbox_id: str | None = None, after_chunks: int = 1, seconds: float = 30.0) -> FaultRule:
        """F14: the stream goes silent after ``after_chunks`` frames for ``seconds``, then drops."""
        return self.mock.faults.add(
            method="POST",
            path=f"{EXECD}/command",
            action="stall_stream",
            after_chunks=after_chunks,
            stall_seconds=seconds,
            sandbox_id=sandbox_id,
            times=1,
            name="sse_stall",
        )

    @named_fault("SDK: drops events without timestamp and malformed frames silently (a lost init gives id None).")
    def sse_malformed(self, sandbox_id: str | None = None) -> FaultRule:
        """F15: events without ``timestamp`` and a malformed frame."""
        body = '{"type":"init","text":"no-ts"}\n\n{"type":"stdout","text":"lost"}\n\n{not json\n\n'
        return self.mock.faults.respond(
            "POST", f"{EXECD}/command", 200, body, sandbox_id=sandbox_id, content_type="text/event-stream"
        )

    @named_fault("SDK: keeps polling /ping (each poll retried); ready once 200, else SandboxReadyTimeoutException.")
    def ping_unavailable(self, sandbox_id: str | None = None, times: int | None = 3, status: int = 503) -> FaultRule:
        """F21 / NG-F8: ``/ping`` answers 502/503 ``times`` times."""
        return self.mock.faults.respond(
            "GET", f"{EXECD}/ping", status, "Service Unavailable", sandbox_id=sandbox_id, times=times
        )

    @named_fault("SDK: SandboxApiException(404, FILE_NOT_FOUND).")
    def download_not_found(self, sandbox_id: str | None = None) -> FaultRule:
        """F29: ``GET /files/download`` answers 404 ``FILE_NOT_FOUND``."""
        body = {"code": "FILE_NOT_FOUND", "message": "file not found"}
        return self.mock.faults.respond("GET", f"{EXECD}/files/download", 404, body, sandbox_id=sandbox_id)

    @named_fault(
        "SDK: get_command_status reports running; NeMo Gym (background_exec): keeps polling, then reads the logs.",
        polls="how many status polls report it running",
    )
    def command_running_for_polls(self, sandbox_id: str | None = None, polls: int = 3) -> None:
        """The next command's first ``polls`` status polls report it running, whatever it did (then the truth)."""
        model_faults.hold_command_running(self.mock.state, sandbox_id, polls)
