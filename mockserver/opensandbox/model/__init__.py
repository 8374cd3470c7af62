"""The OpenSandbox model: every rule of the lifecycle server, execd and the egress sidecar, with no web stack.

The routes (:mod:`mockserver.opensandbox.routes`) parse a request, call one function here and render its
answer; the contract oracle (:mod:`harness.machines.opensandbox.oracle`) calls the same functions to
predict a target's answers. A refusal is an :class:`~mockserver.core.ApiError` (or one of its kinds in
:mod:`.errors`) or a :class:`.validation.RequestValidationError`; nothing here imports starlette, uvicorn,
httpx or the HTTP layer.

Modules: :mod:`.profiles` (runtimes), :mod:`.bodies` (the request bodies, declared as pydantic models),
:mod:`.validation` (FastAPI's body decoding and 422), :mod:`.spec` (the create request's runtime checks),
:mod:`.records` (sandbox, command and snapshot records), :mod:`.store` (the sandboxes, their lookups and the clock's
transitions), :mod:`.operations` (what changes them),
:mod:`.auth` (keys and tenants), :mod:`.config` (server settings; :mod:`.server_file` reads them from the real
server's TOML file), :mod:`.query` (query strings),
:mod:`.lifecycle` (the lifecycle operations), :mod:`.endpoints` (endpoint resolution), :mod:`.ports` (the
sandbox-port gate), :mod:`.execd` and :mod:`.files` (execd), :mod:`.egress` (policies and the sidecar),
:mod:`.admin` (the ``/_mock/opensandbox`` operations), :mod:`.errors` (refusal kinds).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockserver.core.lazy import lazy_dir, lazy_name

if TYPE_CHECKING:
    from .auth import ANY_KEY, AnyKey, KeyOption, KeyTable
    from .config import DEFAULT_HOST, ServerConfig
    from .errors import ExecdAuthError, TextError, wire_code
    from .operations import OpenSandboxModel
    from .ports import PortCall, admit_port
    from .profiles import EGRESS_PORT, EXECD_PORT, SERVER_VERSION, ProfileName, RuntimeProfile, make_profile
    from .records import CommandRecord, SandboxRecord, SnapshotRecord
    from .spec import CreateSpec, parse_create
    from .store import OpenSandboxState
    from .validation import Checker, RequestValidationError

#: Where each public name lives; it is imported on first use, so loading one rule loads no other.
_HOMES = {
    "ANY_KEY": ".auth",
    "AnyKey": ".auth",
    "Checker": ".validation",
    "CommandRecord": ".records",
    "CreateSpec": ".spec",
    "DEFAULT_HOST": ".config",
    "EGRESS_PORT": ".profiles",
    "EXECD_PORT": ".profiles",
    "ExecdAuthError": ".errors",
    "KeyOption": ".auth",
    "KeyTable": ".auth",
    "OpenSandboxModel": ".operations",
    "OpenSandboxState": ".store",
    "PortCall": ".ports",
    "ProfileName": ".profiles",
    "RequestValidationError": ".validation",
    "RuntimeProfile": ".profiles",
    "SERVER_VERSION": ".profiles",
    "SandboxRecord": ".records",
    "ServerConfig": ".config",
    "SnapshotRecord": ".records",
    "TextError": ".errors",
    "admit_port": ".ports",
    "make_profile": ".profiles",
    "parse_create": ".spec",
    "wire_code": ".errors",
}

__all__ = [
    "ANY_KEY",
    "DEFAULT_HOST",
    "EGRESS_PORT",
    "EXECD_PORT",
    "SERVER_VERSION",
    "AnyKey",
    "Checker",
    "CommandRecord",
    "CreateSpec",
    "ExecdAuthError",
    "KeyOption",
    "KeyTable",
    "OpenSandboxModel",
    "OpenSandboxState",
    "PortCall",
    "ProfileName",
    "RequestValidationError",
    "RuntimeProfile",
    "SandboxRecord",
    "ServerConfig",
    "SnapshotRecord",
    "TextError",
    "admit_port",
    "make_profile",
    "parse_create",
    "wire_code",
]


def __getattr__(name: str) -> Any:
    """Import a public name from the module that defines it, on first use."""
    return lazy_name(__name__, _HOMES, name)


def __dir__() -> list[str]:
    return lazy_dir(__name__, __all__)
