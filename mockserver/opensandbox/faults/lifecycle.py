"""Named faults of the lifecycle server: create, endpoints, the sandbox JSON, pause, resume, delete, auth, timing.

Numbers refer to the wire notes (F1-F34) and the NeMo Gym notes (NG-F1...); the SDK reactions are SDK 1.1.1's
and NeMo Gym 0.7.0's as measured.
"""

from __future__ import annotations

from typing import Any

from mockserver.admin.catalogue import named_fault
from mockserver.core import ApiError, FaultRule

from ..model.auth import invalid_key, missing_key
from ..model.errors import capacity_exhausted
from .base import CREATE, ONE_SANDBOX, OpenSandboxFaultHost

__all__ = ["LifecycleFaults"]

_DROP: Any = object()


class LifecycleFaults:
    """Faults of the lifecycle routes."""

    mock: OpenSandboxFaultHost

    def sandbox_body(self, sandbox_id: str, **changes: Any) -> FaultRule:
        """F17/F18: answer ``GET /sandboxes/{id}`` with the sandbox JSON altered (``_DROP`` deletes a key)."""
        sb = self.mock.state.lookup(sandbox_id)
        if sb is None:
            raise ApiError(404, "sandbox_not_found", f"no sandbox {sandbox_id}")
        body = sb.to_json()
        for key, value in changes.items():
            if value is _DROP:
                body.pop(key, None)
            else:
                body[key] = value
        return self.mock.faults.respond("GET", f"*/sandboxes/{sandbox_id}", 200, body, times=None)

    @named_fault("SDK: InvalidArgumentException on the null date.", sandbox_id="the sandbox whose GET is altered")
    def null_expires_at(self, sandbox_id: str) -> FaultRule:
        """F17: ``"expiresAt": null`` in the sandbox JSON."""
        return self.sandbox_body(sandbox_id, expiresAt=None)

    @named_fault("SDK: SandboxInternalException (\"...'entrypoint'\").", sandbox_id="the sandbox whose GET is altered")
    def missing_entrypoint(self, sandbox_id: str) -> FaultRule:
        """F18: the sandbox JSON lacks ``entrypoint``."""
        return self.sandbox_body(sandbox_id, entrypoint=_DROP)

    @named_fault(
        "SDK 1.1.1: polls the endpoints every 0.2 s until ready_timeout, then SandboxReadyTimeoutException and "
        "DELETE; NeMo Gym retries the create (SDK 0.1.16 fails at once, not retried)."
    )
    def pending_pod(self, sandbox_id: str | None = None, times: int | None = 3) -> FaultRule:
        """F19 / NG-F5: endpoint lookups answer 404 ``KUBERNETES::POD_IP_NOT_AVAILABLE`` ``times`` times."""
        body = {
            "code": "KUBERNETES::POD_IP_NOT_AVAILABLE",
            "message": "Pod IP is not yet available. The Pod may still be starting.",
        }
        return self.mock.faults.respond(
            "GET", f"{ONE_SANDBOX}/endpoints/*", 404, body, sandbox_id=sandbox_id, times=times
        )

    @named_fault("SDK: the create fails at once and the SDK DELETEs the sandbox.")
    def endpoint_not_found(self, sandbox_id: str | None = None, code: str = "DOCKER::SANDBOX_NOT_FOUND") -> FaultRule:
        """F20: an endpoint lookup fails with a 404 the SDK does not retry."""
        body = {"code": code, "message": "gone"}
        return self.mock.faults.respond("GET", f"{ONE_SANDBOX}/endpoints/*", 404, body, sandbox_id=sandbox_id)

    @named_fault(
        "NeMo Gym: endpoint() raises RuntimeError('OpenSandbox returned an empty endpoint for sandbox ... port N'); "
        "SDK: an empty endpoint for 44772 or 18080 breaks the create.",
        port="the port whose endpoint lookup is emptied (* for every port)",
    )
    def empty_endpoint(self, sandbox_id: str | None = None, port: str = "8080", times: int | None = None) -> FaultRule:
        """An endpoint lookup answers 200 ``{"endpoint": ""}``."""
        return self.mock.faults.respond(
            "GET", f"{ONE_SANDBOX}/endpoints/{port}", 200, {"endpoint": ""}, sandbox_id=sandbox_id, times=times
        )

    @named_fault(
        "NeMo Gym: each renewal is retried per operations.retries; when they keep failing the renewal task ends and "
        "the next operation on the sandbox raises RuntimeError('OpenSandbox lifetime renewal failed for sandbox "
        "...') without sending anything (close() still deletes it, then raises the same).",
    )
    def renew_fails(self, sandbox_id: str | None = None, times: int | None = None) -> FaultRule:
        """NG-F12: ``POST …/renew-expiration`` answers a JSON 500."""
        body = {"code": "DOCKER::SANDBOX_QUERY_FAILED", "message": "Failed to renew sandbox expiration."}
        return self.mock.faults.respond(
            "POST", f"{ONE_SANDBOX}/renew-expiration", 500, body, sandbox_id=sandbox_id, times=times
        )

    @named_fault(
        "SDK: SandboxRateLimitException(retry_after), no retry (POST); NeMo Gym retries the create "
        "(aiohttp backend: replayed up to 3 times first)."
    )
    def create_rate_limited(self, retry_after: int = 1, times: int | None = 1) -> FaultRule:
        """F22 / NG-F15: 429 ``POOL_CAPACITY_EXHAUSTED`` with ``Retry-After`` on create."""
        refusal = capacity_exhausted(retry_after, "No Pool capacity")
        return self.mock.faults.respond(
            "POST", CREATE, refusal.status, refusal.body(), times=times, headers=refusal.headers
        )

    @named_fault(
        "SDK: SandboxApiException(status, UNEXPECTED_RESPONSE), the code only in the message; NeMo Gym retries "
        "5xx creates up to create.retries.",
        status="504 (POD_READY_TIMEOUT), 503 (Docker unavailable) or 500 (start failed)",
    )
    def create_error(self, status: int = 504, times: int | None = 1) -> FaultRule:
        """F23 / NG-F7: 504 ``POD_READY_TIMEOUT``, 503 or 500 on create."""
        codes = {
            504: ("KUBERNETES::POD_READY_TIMEOUT", "Timeout waiting for sandbox"),
            503: ("DOCKER::INITIALIZATION_ERROR", "Docker unavailable"),
            500: ("DOCKER::SANDBOX_START_FAILED", "Failed to start sandbox container"),
        }
        code, message = codes.get(status, ("SANDBOX::UNKNOWN_ERROR", "error"))
        return self.mock.faults.respond("POST", CREATE, status, {"code": code, "message": message}, times=times)

    @named_fault("SDK: SandboxApiException(422, UNEXPECTED_RESPONSE).")
    def validation_422(self, method: str = "POST", path: str = CREATE) -> FaultRule:
        """F24: a FastAPI validation error body."""
        body = {"detail": [{"type": "missing", "loc": ["body", "image"], "msg": "Field required", "input": {}}]}
        return self.mock.faults.respond(method, path, 422, body)

    @named_fault(
        "SDK: SandboxApiException(409, <code>).",
        operation="pause, resume or delete",
        code="the error code in the 409 body",
    )
    def conflict(
        self, operation: str = "pause", sandbox_id: str | None = None, code: str = "KUBERNETES::INVALID_STATE"
    ) -> FaultRule:
        """F25: 409 on ``pause``, ``resume`` or ``delete``."""
        if operation not in ("pause", "resume", "delete"):
            raise ValueError("operation must be pause, resume or delete")
        method, path = ("DELETE", ONE_SANDBOX) if operation == "delete" else ("POST", f"{ONE_SANDBOX}/{operation}")
        return self.mock.faults.respond(
            method, path, 409, {"code": code, "message": "Sandbox is Stopping"}, sandbox_id=sandbox_id
        )

    @named_fault("SDK: SandboxApiException(401, <code>).", missing="MISSING_API_KEY instead of INVALID_API_KEY")
    def unauthorized(self, missing: bool = False, path: str = "*/sandboxes*") -> FaultRule:
        """F26: the lifecycle's 401 ``INVALID_API_KEY`` / ``MISSING_API_KEY``."""
        return self.mock.faults.respond("*", path, 401, (missing_key() if missing else invalid_key()).body())

    @named_fault(
        "SDK: a GET past request_timeout is retried silently (up to 4 times); a POST raises SandboxTimeoutException.",
        seconds="how late the answer comes (real seconds)",
    )
    def slow(
        self,
        seconds: float,
        method: str = "GET",
        path: str = "*",
        sandbox_id: str | None = None,
        times: int | None = 1,
    ) -> FaultRule:
        """F27: the answer comes ``seconds`` (real time) late."""
        return self.mock.faults.add(
            method=method, path=path, action="delay", delay=seconds, sandbox_id=sandbox_id, times=times, name="slow"
        )

    @named_fault("SDK: ConnectError is retried even for POST (before sending), then SandboxConnectionException.")
    def connection_reset(
        self, method: str = "*", path: str = "*", sandbox_id: str | None = None, times: int | None = 1
    ) -> FaultRule:
        """F28: the connection is reset before any answer."""
        return self.mock.faults.add(
            method=method, path=path, action="drop", sandbox_id=sandbox_id, times=times, name="reset"
        )

    def keepalive_server(self, idle_seconds: float = 1.0, **options: Any) -> Any:
        """F30: a threaded server that closes idle keep-alive sockets after ``idle_seconds``."""
        return self.mock.server(timeout_keep_alive=idle_seconds, **options)

    @named_fault(
        "NeMo Gym: OpenSandboxCreateTimeoutError (retryable); the sandbox it created is an orphan its reaper removes.",
        seconds="how late the create's answer comes (real seconds; the create takes effect at once)",
    )
    def create_timeout(self, seconds: float, times: int | None = 1) -> FaultRule:
        """F33 / NG-F6: the create takes effect at once but answers ``seconds`` later."""
        return self.mock.faults.add(
            method="POST",
            path=CREATE,
            action="delay",
            delay=seconds,
            delay_phase="after",
            times=times,
            name="create_timeout",
        )

    @named_fault("SDK: InvalidArgumentException (a JSON decode error) on routes that parse a 500.")
    def plain_text_500(self, method: str = "GET", path: str = ONE_SANDBOX, sandbox_id: str | None = None) -> FaultRule:
        """F34: Starlette's unhandled-exception answer ``500 text/plain Internal Server Error``."""
        return self.mock.faults.respond(
            method, path, 500, "Internal Server Error", sandbox_id=sandbox_id, content_type="text/plain"
        )
