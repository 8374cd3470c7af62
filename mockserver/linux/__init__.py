"""A real runtime: sandboxes that run real programs in Linux namespaces, with egress enforced by nftables.

Each sandbox is one bubblewrap instance (new mount, PID, IPC and UTS namespaces, in the runtime's user
namespace) joined to a network namespace linked to the runtime's *world* namespace, which holds the DNS
server and the test hosts and has no route anywhere else. See ``docs/runtime.md``.

The names below load on first use, so ``python -m mockserver.linux.requirements`` (or importing one module)
loads nothing else of the package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockserver.core.lazy import lazy_dir, lazy_name

if TYPE_CHECKING:
    from .egress import EgressPlan, render_ruleset
    from .firewall import Firewall
    from .forward import PortForwarder, connect, open_connection
    from .limits import SandboxLimits
    from .process import Exited, LinuxProcess, OutputChunk, ProcessEvent
    from .requirements import Requirements, RuntimeUnavailable, check_requirements, require
    from .runtime import LinuxRuntime, SandboxCapacityError, SandboxStartError
    from .sandbox import Limits, LinuxSandbox, RunResult, SandboxStateError, SpawnError, Usage

_HOMES = {
    "EgressPlan": ".egress",
    "Exited": ".process",
    "Firewall": ".firewall",
    "Limits": ".sandbox",
    "LinuxProcess": ".process",
    "LinuxRuntime": ".runtime",
    "LinuxSandbox": ".sandbox",
    "OutputChunk": ".process",
    "PortForwarder": ".forward",
    "ProcessEvent": ".process",
    "Requirements": ".requirements",
    "RunResult": ".sandbox",
    "RuntimeUnavailable": ".requirements",
    "SandboxCapacityError": ".runtime",
    "SandboxLimits": ".limits",
    "SandboxStartError": ".runtime",
    "SandboxStateError": ".sandbox",
    "SpawnError": ".sandbox",
    "Usage": ".sandbox",
    "check_requirements": ".requirements",
    "connect": ".forward",
    "open_connection": ".forward",
    "render_ruleset": ".egress",
    "require": ".requirements",
}

__all__ = [
    "EgressPlan",
    "Exited",
    "Firewall",
    "Limits",
    "LinuxProcess",
    "LinuxRuntime",
    "LinuxSandbox",
    "OutputChunk",
    "PortForwarder",
    "ProcessEvent",
    "Requirements",
    "RunResult",
    "RuntimeUnavailable",
    "SandboxCapacityError",
    "SandboxLimits",
    "SandboxStartError",
    "SandboxStateError",
    "SpawnError",
    "Usage",
    "check_requirements",
    "connect",
    "open_connection",
    "render_ruleset",
    "require",
]


def __getattr__(name: str) -> Any:
    """Import a public name from the module that defines it, on first use."""
    return lazy_name(__name__, _HOMES, name)


def __dir__() -> list[str]:
    """List the public names, loaded or not."""
    return lazy_dir(__name__, __all__)
