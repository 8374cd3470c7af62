"""Named TensorLake faults of the sandbox proxy in front of the in-sandbox management API (``/api/v1/*``)."""

from __future__ import annotations

from mockserver.admin.catalogue import named_fault
from mockserver.core import ApiError, FaultRule

from ..routes.common import daemon_error_body
from .base import DAEMON, TensorLakeFaultHost

__all__ = ["ManagementFaults"]


class ManagementFaults:
    """Faults of the sandbox proxy and the management API's process stream."""

    mock: TensorLakeFaultHost

    @named_fault(
        "SDK: the management call is retried for 30 s (12 attempts, backoff up to 3.75 s, 'Retrying rust sandbox "
        "proxy request ...' on stderr), then raises RemoteAPIError(503) with .code SANDBOX_NOT_READY.",
        path="the daemon path glob it matches (/api/v1/* is the management API)",
    )
    def proxy_not_ready(self, sandbox_id: str | None = None, path: str = DAEMON, times: int | None = 1) -> FaultRule:
        """The sandbox proxy answers ``503 SANDBOX_NOT_READY`` (the sandbox is pending or suspended)."""
        body = daemon_error_body(ApiError(503, "SANDBOX_NOT_READY", "sandbox is not ready"))
        return self.mock.faults.respond(
            "*", path, 503, body, sandbox_id=sandbox_id, times=times, name="proxy_not_ready"
        )

    @named_fault(
        "SDK: the management call is retried for 30 s (12 attempts), then raises RemoteAPIError(502) with .code "
        "SANDBOX_UNREACHABLE.",
        path="the daemon path glob it matches (/api/v1/* is the management API)",
    )
    def proxy_unreachable(self, sandbox_id: str | None = None, path: str = DAEMON, times: int | None = 1) -> FaultRule:
        """The sandbox proxy answers ``502 SANDBOX_UNREACHABLE`` (the sandbox ended)."""
        body = daemon_error_body(ApiError(502, "SANDBOX_UNREACHABLE", "sandbox is unreachable"))
        return self.mock.faults.respond(
            "*", path, 502, body, sandbox_id=sandbox_id, times=times, name="proxy_unreachable"
        )

    @named_fault(
        "SDK: run() raises SandboxError ('EventSource error'): the stream ended without an exit event.",
        after_chunks="how many SSE chunks pass first",
    )
    def run_stream_cut(self, sandbox_id: str | None = None, after_chunks: int = 1) -> FaultRule:
        """The next ``POST /api/v1/processes/run`` stream is cut after ``after_chunks`` chunks."""
        return self.mock.faults.add(
            method="POST",
            path="/api/v1/processes/run",
            action="cut_stream",
            after_chunks=after_chunks,
            sandbox_id=sandbox_id,
            times=1,
            name="run_stream_cut",
        )
