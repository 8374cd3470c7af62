"""Named TensorLake faults of the lifecycle API: gateway errors, rate limits, 500s, resets and slow answers."""

from __future__ import annotations

from mockserver.admin.catalogue import named_fault
from mockserver.core import ApiError, FaultRule

from .base import LIFECYCLE, TensorLakeFaultHost

__all__ = ["LifecycleFaults"]


class LifecycleFaults:
    """Faults of the lifecycle routes."""

    mock: TensorLakeFaultHost

    @named_fault(
        "SDK: a GET is tried 3 times, a PATCH/DELETE/suspend/resume 6 times (printing 'Retrying sandbox "
        "update...'); a create is not retried.",
        status="502, 503 or 504",
    )
    def api_unavailable(
        self, method: str = "*", path: str = LIFECYCLE, status: int = 503, times: int | None = 1
    ) -> FaultRule:
        """The lifecycle API answers ``status`` (a gateway error) ``times`` times."""
        if status not in (502, 503, 504):
            raise ApiError(400, "invalid_fault_params", "status must be 502, 503 or 504")
        body = {"code": f"http_{status}", "message": "injected fault"}
        return self.mock.faults.respond(method, path, status, body, times=times, name="api_unavailable")

    @named_fault(
        "SDK: a GET is retried; a create or a mutation raises RemoteAPIError(429) at once.",
        retry_after="the Retry-After header, in seconds",
    )
    def rate_limited(
        self, method: str = "POST", path: str = LIFECYCLE, retry_after: int = 1, times: int | None = 1
    ) -> FaultRule:
        """The lifecycle API answers ``429`` with ``Retry-After``."""
        body = {"code": "rate_limited", "message": "too many requests"}
        headers = {"Retry-After": str(retry_after)}
        return self.mock.faults.respond(method, path, 429, body, times=times, headers=headers, name="rate_limited")

    @named_fault("SDK: RemoteAPIError(500), never retried.", code="the code in the JSON body")
    def server_error(
        self, method: str = "*", path: str = LIFECYCLE, code: str = "internal", times: int | None = 1
    ) -> FaultRule:
        """The lifecycle API answers a JSON ``500``."""
        body = {"code": code, "message": "boom"}
        return self.mock.faults.respond(method, path, 500, body, times=times, name="server_error")

    @named_fault("SDK: connection failures are retried, then raise SandboxConnectionError.")
    def connection_reset(self, method: str = "*", path: str = "*", times: int | None = 1) -> FaultRule:
        """The connection is reset before any answer."""
        return self.mock.faults.add(method=method, path=path, action="drop", times=times, name="reset")

    @named_fault(
        "SDK: a read past its per-attempt budget (about 3 s) is tried again; other calls wait or time out.",
        seconds="how late the answer comes (real seconds)",
    )
    def slow(self, seconds: float, method: str = "*", path: str = LIFECYCLE, times: int | None = 1) -> FaultRule:
        """The answer comes ``seconds`` (real time) late."""
        return self.mock.faults.add(method=method, path=path, action="delay", delay=seconds, times=times, name="slow")
