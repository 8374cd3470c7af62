"""The named OpenSandbox fault catalogue: helpers over the core ``FaultSet`` plus state-driven faults.

Every helper takes an optional ``sandbox_id`` (None: any sandbox) and ``times`` (None: forever) and
returns the core ``FaultRule`` it added, so tests can inspect ``rule.fired``. Numbers refer to the
wire notes (F1-F34) and the NeMo Gym notes (NG-F1...NG-F15). Execd paths match both the direct
endpoint and the server proxy (``*/44772/...``).
"""

from __future__ import annotations

from typing import Any, Protocol

from mockserver.core import FaultRule, FaultSet, VirtualClock

from .model.auth import invalid_key, missing_key
from .model.errors import backend_connection_failed
from .model.execd import frame
from .model.profiles import EXECD_PORT
from .model.records import SandboxRecord
from .model.state import OpenSandboxState

EXECD = "*/44772"
CREATE = "*/sandboxes"
ONE_SANDBOX = "*/sandboxes/*"
BAD_GATEWAY_JSON = backend_connection_failed(EXECD_PORT).body()


class FaultHost(Protocol):
    """What the catalogue arms: the mock's fault rules, clock and state, and a way to serve it."""

    @property
    def faults(self) -> FaultSet:
        """The fault rules the HTTP layer applies."""
        ...

    @property
    def clock(self) -> VirtualClock:
        """The mock's virtual clock."""
        ...

    @property
    def state(self) -> OpenSandboxState:
        """The mock's sandboxes."""
        ...

    def server(self, **options: Any) -> Any:
        """Return a server for the mock (started with ``with``)."""
        ...


class FaultCatalogue:
    """Trigger each documented OpenSandbox failure, per call and per sandbox."""

    def __init__(self, mock: FaultHost) -> None:
        self.mock = mock

    def _sandbox(self, sandbox_id: str) -> SandboxRecord:
        sb = self.mock.state.lookup(sandbox_id)
        if sb is None:
            raise KeyError(sandbox_id)
        return sb

    def _add(self, **rule: Any) -> FaultRule:
        return self.mock.faults.add(
            FaultRule.from_json({k: v for k, v in rule.items() if v is not None or k == "times"})
        )

    def respond(
        self,
        method: str,
        path: str,
        status: int,
        body: Any = None,
        *,
        sandbox_id: str | None = None,
        times: int | None = 1,
        headers: dict[str, str] | None = None,
        content_type: str | None = None,
        name: str = "",
    ) -> FaultRule:
        """Answer matching requests with ``status`` and ``body`` instead of the mock's own answer."""
        return self._add(
            method=method,
            path=path,
            action="respond",
            status=status,
            body=body,
            sandbox_id=sandbox_id,
            times=times,
            headers=headers or {},
            content_type=content_type,
            name=name or f"respond:{status}",
        )

    # -- execd command faults ------------------------------------------------------------------

    def command_not_found_on_poll(self, sandbox_id: str | None = None, times: int | None = 1) -> FaultRule:
        """F1: the status record vanished (evicted, execd restarted): 404 ``INVALID_REQUEST_BODY``."""
        body = {"code": "INVALID_REQUEST_BODY", "message": "command not found: evicted"}
        return self.respond("GET", f"{EXECD}/command/status/*", 404, body, sandbox_id=sandbox_id, times=times)

    def status_410_on_poll(self, sandbox_id: str | None = None, times: int | None = 1) -> FaultRule:
        """F2 / NG-F2: a 410 Gone on a command-status poll (no real execd sends it)."""
        body = {"code": "COMMAND_GONE", "message": "command finished and was reaped"}
        return self.respond("GET", f"{EXECD}/command/status/*", 410, body, sandbox_id=sandbox_id, times=times)

    def plain_text_404(self, path: str = f"{EXECD}/command/status/*", sandbox_id: str | None = None) -> FaultRule:
        """F3: a 404 whose body is not JSON (a bare proxy's)."""
        return self.respond("GET", path, 404, "404 page not found", sandbox_id=sandbox_id)

    def bad_gateway(
        self, method: str = "GET", path: str = "*", sandbox_id: str | None = None, times: int | None = 3
    ) -> FaultRule:
        """F4/F5: ``502 Bad Gateway`` (text) ``times`` times (None: always)."""
        return self.respond(method, path, 502, "Bad Gateway", sandbox_id=sandbox_id, times=times)

    def bad_gateway_on_poll(self, sandbox_id: str | None = None, times: int | None = 3) -> FaultRule:
        """NG-F2: 502 on command-status polls."""
        return self.bad_gateway("GET", f"{EXECD}/command/status/*", sandbox_id, times)

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
        return self.respond(method, path, 503, body, sandbox_id=sandbox_id, times=times, headers=headers)

    def server_error(
        self,
        method: str = "GET",
        path: str = "*",
        code: str = "RUNTIME_ERROR",
        sandbox_id: str | None = None,
        times: int | None = 1,
    ) -> FaultRule:
        """F7: a JSON 500 (never retried)."""
        return self.respond(method, path, 500, {"code": code, "message": "boom"}, sandbox_id=sandbox_id, times=times)

    def execd_unauthorized(
        self, path: str = f"{EXECD}/*", sandbox_id: str | None = None, times: int | None = 1
    ) -> FaultRule:
        """F8: execd's token middleware rejects the call: 401 ``{"error": ...}``."""
        body = {"error": "Unauthorized: invalid or missing header X-EXECD-ACCESS-TOKEN"}
        return self.respond("*", path, 401, body, sandbox_id=sandbox_id, times=times)

    def nonstandard_status(
        self, status: int = 499, method: str = "GET", path: str = "*", sandbox_id: str | None = None
    ) -> FaultRule:
        """F9: a status code outside ``http.HTTPStatus`` (499, 520)."""
        return self.respond(method, path, status, {"code": "X", "message": "odd"}, sandbox_id=sandbox_id)

    def submit_502(self, sandbox_id: str | None = None, times: int | None = 1, json_body: bool = True) -> FaultRule:
        """F10 / NG-F1: 502 on ``POST /command`` (the proxy never reached execd)."""
        body: Any = BAD_GATEWAY_JSON if json_body else "Bad Gateway"
        return self.respond("POST", f"{EXECD}/command", 502, body, sandbox_id=sandbox_id, times=times)

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
        return self.respond(
            "POST", f"{EXECD}/command", status, body, sandbox_id=sandbox_id, times=times, headers=headers
        )

    def sse_wrong_content_type(self, sandbox_id: str | None = None) -> FaultRule:
        """F12: the command stream arrives as ``application/json``."""
        body = {"type": "init", "text": "x", "timestamp": 1}
        return self.respond("POST", f"{EXECD}/command", 200, body, sandbox_id=sandbox_id)

    def sse_truncated(self, sandbox_id: str | None = None, stdout: str = "partial\n") -> FaultRule:
        """F13: the stream ends cleanly after ``init`` and some output, with no terminal event."""
        ts = self.mock.clock.now_ms()
        events = [
            {"type": "init", "text": "truncated", "timestamp": ts},
            {"type": "stdout", "text": stdout, "timestamp": ts},
        ]
        body = b"".join(frame(e) for e in events).decode()
        return self.respond(
            "POST", f"{EXECD}/command", 200, body, sandbox_id=sandbox_id, content_type="text/event-stream"
        )

    def sse_cut(self, sandbox_id: str | None = None, after_chunks: int = 2) -> FaultRule:
        """F13 (abrupt): the connection is reset after ``after_chunks`` SSE frames."""
        return self._add(
            method="POST",
            path=f"{EXECD}/command",
            action="cut_stream",
            after_chunks=after_chunks,
            sandbox_id=sandbox_id,
            times=1,
            name="sse_cut",
        )

    def sse_stall(self, sandbox_id: str | None = None, after_chunks: int = 1, seconds: float = 30.0) -> FaultRule:
        """F14: the stream goes silent after ``after_chunks`` frames for ``seconds``, then drops."""
        return self._add(
            method="POST",
            path=f"{EXECD}/command",
            action="stall_stream",
            after_chunks=after_chunks,
            stall_seconds=seconds,
            sandbox_id=sandbox_id,
            times=1,
            name="sse_stall",
        )

    def sse_malformed(self, sandbox_id: str | None = None) -> FaultRule:
        """F15: events without ``timestamp`` (dropped by the SDK) and a malformed frame."""
        body = '{"type":"init","text":"no-ts"}\n\n{"type":"stdout","text":"lost"}\n\n{not json\n\n'
        return self.respond(
            "POST", f"{EXECD}/command", 200, body, sandbox_id=sandbox_id, content_type="text/event-stream"
        )

    # -- lifecycle faults ----------------------------------------------------------------------

    def sandbox_body(self, sandbox_id: str, **changes: Any) -> FaultRule:
        """F17/F18: answer ``GET /sandboxes/{id}`` with the sandbox JSON altered (None deletes a key)."""
        body = self._sandbox(sandbox_id).to_json()
        for key, value in changes.items():
            if value is _DROP:
                body.pop(key, None)
            else:
                body[key] = value
        return self.respond("GET", f"*/sandboxes/{sandbox_id}", 200, body, times=None)

    def null_expires_at(self, sandbox_id: str) -> FaultRule:
        """F17: ``"expiresAt": null`` in the sandbox JSON."""
        return self.sandbox_body(sandbox_id, expiresAt=None)

    def missing_entrypoint(self, sandbox_id: str) -> FaultRule:
        """F18: the sandbox JSON lacks ``entrypoint``."""
        return self.sandbox_body(sandbox_id, entrypoint=_DROP)

    def pending_pod(self, sandbox_id: str | None = None, times: int | None = 3) -> FaultRule:
        """F19 / NG-F5: endpoints answer 404 ``KUBERNETES::POD_IP_NOT_AVAILABLE`` ``times`` times."""
        body = {
            "code": "KUBERNETES::POD_IP_NOT_AVAILABLE",
            "message": "Pod IP is not yet available. The Pod may still be starting.",
        }
        return self.respond("GET", f"{ONE_SANDBOX}/endpoints/*", 404, body, sandbox_id=sandbox_id, times=times)

    def endpoint_not_found(self, sandbox_id: str | None = None, code: str = "DOCKER::SANDBOX_NOT_FOUND") -> FaultRule:
        """F20: an endpoint lookup fails with a non-retryable 404 (the SDK then deletes the sandbox)."""
        body = {"code": code, "message": "gone"}
        return self.respond("GET", f"{ONE_SANDBOX}/endpoints/*", 404, body, sandbox_id=sandbox_id)

    def ping_unavailable(self, sandbox_id: str | None = None, times: int | None = 3, status: int = 503) -> FaultRule:
        """F21 / NG-F8: ``/ping`` answers 502/503 ``times`` times."""
        return self.respond("GET", f"{EXECD}/ping", status, "Service Unavailable", sandbox_id=sandbox_id, times=times)

    def create_rate_limited(self, retry_after: int = 1, times: int | None = 1) -> FaultRule:
        """F22 / NG-F15: 429 ``POOL_CAPACITY_EXHAUSTED`` with ``Retry-After`` on create."""
        body = {"code": "KUBERNETES::POOL_CAPACITY_EXHAUSTED", "message": "No Pool capacity"}
        return self.respond("POST", CREATE, 429, body, times=times, headers={"Retry-After": str(retry_after)})

    def create_error(self, status: int = 504, times: int | None = 1) -> FaultRule:
        """F23 / NG-F7: 504 ``POD_READY_TIMEOUT``, 503 or 500 on create."""
        codes = {
            504: ("KUBERNETES::POD_READY_TIMEOUT", "Timeout waiting for sandbox"),
            503: ("DOCKER::INITIALIZATION_ERROR", "Docker unavailable"),
            500: ("DOCKER::SANDBOX_START_FAILED", "Failed to start sandbox container"),
        }
        code, message = codes.get(status, ("SANDBOX::UNKNOWN_ERROR", "error"))
        return self.respond("POST", CREATE, status, {"code": code, "message": message}, times=times)

    def validation_422(self, method: str = "POST", path: str = CREATE) -> FaultRule:
        """F24: a FastAPI validation error body."""
        body = {"detail": [{"type": "missing", "loc": ["body", "image"], "msg": "Field required", "input": {}}]}
        return self.respond(method, path, 422, body)

    def conflict(
        self, operation: str = "pause", sandbox_id: str | None = None, code: str = "KUBERNETES::INVALID_STATE"
    ) -> FaultRule:
        """F25: 409 on ``pause``, ``resume`` or ``delete``."""
        method, path = ("DELETE", ONE_SANDBOX) if operation == "delete" else ("POST", f"{ONE_SANDBOX}/{operation}")
        return self.respond(method, path, 409, {"code": code, "message": "Sandbox is Stopping"}, sandbox_id=sandbox_id)

    def unauthorized(self, missing: bool = False, path: str = "*/sandboxes*") -> FaultRule:
        """F26: the lifecycle's 401 ``INVALID_API_KEY`` / ``MISSING_API_KEY``."""
        return self.respond("*", path, 401, (missing_key() if missing else invalid_key()).body())

    def slow(
        self,
        seconds: float,
        method: str = "GET",
        path: str = "*",
        sandbox_id: str | None = None,
        times: int | None = 1,
    ) -> FaultRule:
        """F27: the answer comes ``seconds`` (real time) late."""
        return self._add(
            method=method,
            path=path,
            action="delay",
            delay=seconds,
            sandbox_id=sandbox_id,
            times=times,
            name="slow",
        )

    def connection_reset(
        self, method: str = "*", path: str = "*", sandbox_id: str | None = None, times: int | None = 1
    ) -> FaultRule:
        """F28: the connection is reset before any answer."""
        return self._add(method=method, path=path, action="drop", sandbox_id=sandbox_id, times=times, name="reset")

    def download_not_found(self, sandbox_id: str | None = None) -> FaultRule:
        """F29: ``GET /files/download`` answers 404 ``FILE_NOT_FOUND``."""
        body = {"code": "FILE_NOT_FOUND", "message": "file not found"}
        return self.respond("GET", f"{EXECD}/files/download", 404, body, sandbox_id=sandbox_id)

    def keepalive_server(self, idle_seconds: float = 1.0, **options: Any) -> Any:
        """F30: a threaded server that closes idle keep-alive sockets after ``idle_seconds``."""
        return self.mock.server(timeout_keep_alive=idle_seconds, **options)

    def create_timeout(self, seconds: float, times: int | None = 1) -> FaultRule:
        """F33 / NG-F6: the create takes effect at once but answers ``seconds`` later (orphan)."""
        return self._add(
            method="POST",
            path=CREATE,
            action="delay",
            delay=seconds,
            delay_phase="after",
            times=times,
            name="create_timeout",
        )

    def plain_text_500(self, method: str = "GET", path: str = ONE_SANDBOX, sandbox_id: str | None = None) -> FaultRule:
        """F34: Starlette's unhandled-exception answer ``500 text/plain Internal Server Error``."""
        return self.respond(
            method, path, 500, "Internal Server Error", sandbox_id=sandbox_id, content_type="text/plain"
        )

    # -- state-driven faults -------------------------------------------------------------------

    def oom_on_next_exec(self, sandbox_id: str) -> None:
        """NG-F4 / F31: the next ``POST /command`` gets a 502 and the sandbox turns Failed (OOMKilled, 137)."""
        self._sandbox(sandbox_id)
        self.mock.state.oom_on_next_exec(sandbox_id)

    def oom_kill(self, sandbox_id: str) -> None:
        """F31: the sandbox turns Failed with an OOMKilled / exit 137 message now."""
        self._sandbox(sandbox_id)
        self.mock.state.fail(sandbox_id, *self.mock.state.profile.oom_status())

    def expire(self, sandbox_id: str) -> None:
        """F31: the sandbox reaches its expiry now (GET then answers 404)."""
        self._sandbox(sandbox_id)
        self.mock.state.expire(sandbox_id)


_DROP: Any = object()
