"""The named TensorLake fault catalogue: the situations the SDK reacts to, from Python or over HTTP.

Built on what the mock already offers: the create outcomes and timings of :mod:`.model.admin`, the release of
a stuck sandbox, and the core's fault rules. Served at ``/_mock/faults/catalogue`` (see
:mod:`mockserver.admin.catalogue`); the SDK reactions are those of tensorlake 0.5.161 as measured (its HTTP
calls are made in Rust: reads are tried 3 times on 429/502/503/504, mutations 6 times on 502/503/504, a
create and anything answered 500 never).
"""

from __future__ import annotations

from typing import Any, Protocol

from mockserver.admin.catalogue import NamedFault, catalogue_of, named_fault
from mockserver.core import ApiError, FaultRule, FaultSet

from .model import admin
from .model.operations import TensorLakeModel
from .routes.common import daemon_error_body

__all__ = ["TensorLakeFaultHost", "TensorLakeFaults"]

LIFECYCLE = "*sandboxes*"
DAEMON = "/api/v1/*"
#: A transition this long (virtual seconds, about 31 years) never settles in any test.
NEVER = 1e9
TRANSITIONS = ("startup", "suspend", "resume", "snapshot", "resize")

COMMON_PARAMS = {
    "sandbox_id": "the sandbox it applies to (null: any sandbox)",
    "times": "how many matching requests it answers (null: every one)",
    "method": "the HTTP method it matches (* for any)",
    "path": "the request-path glob it matches (* crosses /)",
    "status": "the HTTP status it answers",
    "transition": "startup, suspend, resume, snapshot or resize",
}


class TensorLakeFaultHost(Protocol):
    """What the catalogue arms: the mock's fault rules and its state model."""

    @property
    def faults(self) -> FaultSet:
        """The fault rules the HTTP layer applies."""
        ...

    @property
    def model(self) -> TensorLakeModel:
        """The mock's state model."""
        ...


def _transition(name: str) -> str:
    if name not in TRANSITIONS:
        raise ApiError(400, "invalid_transition", f"transition must be one of {list(TRANSITIONS)}, not {name!r}")
    return name


class TensorLakeFaults:
    """Trigger the failures the TensorLake SDK has a reaction to."""

    def __init__(self, mock: TensorLakeFaultHost) -> None:
        self.mock = mock

    def named(self) -> dict[str, NamedFault]:
        """Return the named faults by name (what ``GET /_mock/faults/catalogue`` lists)."""
        return catalogue_of(self, COMMON_PARAMS)

    def _respond(self, method: str, path: str, status: int, body: Any, **rule: Any) -> FaultRule:
        return self.mock.faults.add(FaultRule(method=method, path=path, status=status, body=body, **rule))

    # -- create -----------------------------------------------------------------------------------

    @named_fault(
        "SDK: create raises SandboxError with the reason (the failure payload names the sandbox); the sandbox "
        "is listed as failed.",
        reason="the termination reason (ConfigurationError, no_capacity, ...)",
        status="the HTTP status of the failure payload (the SDK parses 422)",
        error_details="the error_details object of the payload",
    )
    def create_fails(
        self, reason: str = "ConfigurationError", status: int = 422, error_details: dict[str, Any] | None = None
    ) -> None:
        """The next create fails: the sandbox is recorded ``failed`` and the failure payload is answered."""
        body = {"kind": "failed", "reason": reason, "status": status, "error_details": error_details}
        admin.queue_outcome(self.mock.model, body)

    @named_fault(
        "SDK: a 504 timeout body is allowed; the blocking create polls GET every 2 s until the sandbox runs "
        "(release it), and raises SandboxPending with the sandbox id when its request budget runs out."
    )
    def create_times_out(self) -> None:
        """The next create answers ``504 {"status": "timeout"}`` and its sandbox stays pending until released."""
        admin.queue_outcome(self.mock.model, {"kind": "timeout"})

    @named_fault("SDK: the next GET of a polling create sees running and connects.", sandbox="the sandbox id or name")
    def release(self, sandbox: str) -> None:
        """A sandbox left pending (by ``create_times_out``) starts now."""
        found = self.mock.model.find_any(sandbox)
        if found is None:
            raise ApiError(404, "sandbox_not_found", f"no live sandbox {sandbox!r}")
        self.mock.model.release(found)

    # -- transitions ------------------------------------------------------------------------------

    @named_fault(
        "SDK: a blocking create, suspend or resume waits out its request budget (create: 504 timeout, then "
        "polls); the sandbox stays pending, suspending or resuming until the timing is set again."
    )
    def transition_never_settles(self, transition: str = "startup") -> None:
        """Every later ``transition`` takes about 31 virtual years (set the timing again to undo it)."""
        self.slow_transition(transition, NEVER)

    @named_fault(
        "SDK: blocking calls wait for the transition (within their budget) and poll otherwise.",
        seconds="how many virtual seconds the transition takes",
    )
    def slow_transition(self, transition: str = "startup", seconds: float = 30.0) -> None:
        """Every later ``transition`` takes ``seconds`` of virtual time."""
        try:
            timings = admin.timings_from(self.mock.model.timings, {_transition(transition): seconds})
        except ValueError as exc:
            raise ApiError(400, "invalid_timings", str(exc)) from exc
        self.mock.model.timings = timings

    # -- the sandbox proxy -------------------------------------------------------------------------

    @named_fault(
        "SDK: the management call is retried for 30 s (12 attempts, backoff up to 3.75 s, 'Retrying rust sandbox "
        "proxy request ...' on stderr), then raises RemoteAPIError(503) with .code SANDBOX_NOT_READY.",
        path="the daemon path glob it matches (/api/v1/* is the management API)",
    )
    def proxy_not_ready(self, sandbox_id: str | None = None, path: str = DAEMON, times: int | None = 1) -> FaultRule:
        """The sandbox proxy answers ``503 SANDBOX_NOT_READY`` (the sandbox is pending or suspended)."""
        body = daemon_error_body(ApiError(503, "SANDBOX_NOT_READY", "sandbox is not ready"))
        return self._respond("*", path, 503, body, sandbox_id=sandbox_id, times=times, name="proxy_not_ready")

    @named_fault(
        "SDK: the management call is retried for 30 s (12 attempts), then raises RemoteAPIError(502) with .code "
        "SANDBOX_UNREACHABLE.",
        path="the daemon path glob it matches (/api/v1/* is the management API)",
    )
    def proxy_unreachable(self, sandbox_id: str | None = None, path: str = DAEMON, times: int | None = 1) -> FaultRule:
        """The sandbox proxy answers ``502 SANDBOX_UNREACHABLE`` (the sandbox ended)."""
        body = daemon_error_body(ApiError(502, "SANDBOX_UNREACHABLE", "sandbox is unreachable"))
        return self._respond("*", path, 502, body, sandbox_id=sandbox_id, times=times, name="proxy_unreachable")

    @named_fault(
        "SDK: run() raises SandboxError ('EventSource error'): the stream ended without an exit event.",
        after_chunks="how many SSE chunks pass first",
    )
    def run_stream_cut(self, sandbox_id: str | None = None, after_chunks: int = 1) -> FaultRule:
        """The next ``POST /api/v1/processes/run`` stream is cut after ``after_chunks`` chunks."""
        return self.mock.faults.add(
            FaultRule(
                method="POST",
                path="/api/v1/processes/run",
                action="cut_stream",
                after_chunks=after_chunks,
                sandbox_id=sandbox_id,
                times=1,
                name="run_stream_cut",
            )
        )

    # -- the lifecycle API -------------------------------------------------------------------------

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
        return self._respond(method, path, status, body, times=times, name="api_unavailable")

    @named_fault(
        "SDK: a GET is retried; a create or a mutation raises RemoteAPIError(429) at once.",
        retry_after="the Retry-After header, in seconds",
    )
    def rate_limited(
        self, method: str = "POST", path: str = LIFECYCLE, retry_after: int = 1, times: int | None = 1
    ) -> FaultRule:
        """The lifecycle API answers ``429`` with ``Retry-After``."""
        body = {"code": "rate_limited", "message": "too many requests"}
        return self._respond(
            method, path, 429, body, times=times, headers={"Retry-After": str(retry_after)}, name="rate_limited"
        )

    @named_fault("SDK: RemoteAPIError(500), never retried.", code="the code in the JSON body")
    def server_error(
        self, method: str = "*", path: str = LIFECYCLE, code: str = "internal", times: int | None = 1
    ) -> FaultRule:
        """The lifecycle API answers a JSON ``500``."""
        return self._respond(method, path, 500, {"code": code, "message": "boom"}, times=times, name="server_error")

    @named_fault("SDK: connection failures are retried, then raise SandboxConnectionError.")
    def connection_reset(self, method: str = "*", path: str = "*", times: int | None = 1) -> FaultRule:
        """The connection is reset before any answer."""
        return self.mock.faults.add(FaultRule(method=method, path=path, action="drop", times=times, name="reset"))

    @named_fault(
        "SDK: a read past its per-attempt budget (about 3 s) is tried again; other calls wait or time out.",
        seconds="how late the answer comes (real seconds)",
    )
    def slow(self, seconds: float, method: str = "*", path: str = LIFECYCLE, times: int | None = 1) -> FaultRule:
        """The answer comes ``seconds`` (real time) late."""
        return self.mock.faults.add(
            FaultRule(method=method, path=path, action="delay", delay=seconds, times=times, name="slow")
        )
