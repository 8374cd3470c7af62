"""The TensorLake mock's rules, with no web stack: every decision the routes and the contract oracle share.

* :mod:`.settings` - a sandbox's settings declared once; :mod:`.bodies` the create and PATCH bodies derived from
  them; :mod:`.wire` the value types, resources, mounts and policies; :mod:`.answers` the answer bodies; :mod:`.refusals` pydantic's errors as TensorLake's error answers;
* :mod:`.records` - sandboxes, snapshots and sessions as plain data, and their JSON forms;
* :mod:`.validation` - request bodies and query parameters, checked completely before anything changes;
* :mod:`.operations` - :class:`TensorLakeModel`: the tenants' state and its transitions on the virtual clock;
* :mod:`.auth` - bearer keys, the accepted key set, tenants, session cookies;
* :mod:`.urls` - ``sandbox_url`` and ``ingress_endpoint`` from the request's origin;
* :mod:`.waits` - waits returned as decisions (:class:`Settle`), the SDK's request budget;
* :mod:`.lifecycle` - the lifecycle operations: one function per lifecycle route, answers as plain dicts;
* :mod:`.ingress` - :class:`IngressRules`: the sandbox proxy's routing, admission and forwarded headers;
* :mod:`.daemon` and :mod:`.management` - the in-sandbox daemon's state and the management API's rules;
* :mod:`.admin` - the ``/_mock/tensorlake`` verbs (timings, sessions, create outcomes, API keys);
* :mod:`.egress` - :class:`TensorLakeGate`, the egress gate a sandbox's commands go through.

Importing this package loads no starlette, uvicorn or httpx, and no pydantic until a body is first validated or a
record first stored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockserver.core.lazy import lazy_dir, lazy_name

if TYPE_CHECKING:
    from .auth import SESSION_COOKIES, KeyRing, Tenant
    from .daemon import CommandSpec, Daemon, ProcessRecord
    from .egress import TensorLakeGate
    from .ingress import Admission, IngressRules, ProxyRequest, Target
    from .lifecycle import Answer, Call
    from .operations import TensorLakeModel
    from .records import Sandbox, Session, Snapshot
    from .store import CreateOutcome, Timings
    from .urls import Origin
    from .validation import MANAGEMENT_PORT
    from .waits import Settle, without_waiting

#: Where each public name lives; it is imported on first use, so loading one rule loads no other.
_HOMES = {
    "Admission": ".ingress",
    "Answer": ".lifecycle",
    "Call": ".lifecycle",
    "CommandSpec": ".daemon",
    "CreateOutcome": ".store",
    "Daemon": ".daemon",
    "IngressRules": ".ingress",
    "KeyRing": ".auth",
    "MANAGEMENT_PORT": ".validation",
    "Origin": ".urls",
    "ProcessRecord": ".daemon",
    "ProxyRequest": ".ingress",
    "SESSION_COOKIES": ".auth",
    "Sandbox": ".records",
    "Session": ".records",
    "Settle": ".waits",
    "Snapshot": ".records",
    "Target": ".ingress",
    "Tenant": ".auth",
    "TensorLakeGate": ".egress",
    "TensorLakeModel": ".operations",
    "Timings": ".store",
    "without_waiting": ".waits",
}

__all__ = [
    "MANAGEMENT_PORT",
    "SESSION_COOKIES",
    "Admission",
    "Answer",
    "Call",
    "CommandSpec",
    "CreateOutcome",
    "Daemon",
    "IngressRules",
    "KeyRing",
    "Origin",
    "ProcessRecord",
    "ProxyRequest",
    "Sandbox",
    "Session",
    "Settle",
    "Snapshot",
    "Target",
    "Tenant",
    "TensorLakeGate",
    "TensorLakeModel",
    "Timings",
    "without_waiting",
]


def __getattr__(name: str) -> Any:
    """Import a public name from the module that defines it, on first use."""
    return lazy_name(__name__, _HOMES, name)


def __dir__() -> list[str]:
    return lazy_dir(__name__, __all__)
