"""A real runtime: sandboxes that run real programs in Linux namespaces, with egress enforced by nftables.

Each sandbox is one bubblewrap instance (new mount, PID, IPC and UTS namespaces, in the runtime's user
namespace) joined to a network namespace linked to the runtime's *world* namespace, which holds the DNS
server and the test hosts and has no route anywhere else. See ``docs/runtime.md``.
"""

from .egress import EgressPlan, opensandbox_plan, render_ruleset, tensorlake_plan
from .firewall import Firewall, opensandbox_apply, tensorlake_apply, tensorlake_update
from .forward import PortForwarder, connect, open_connection
from .limits import SandboxLimits
from .process import ExitStatus, LinuxProcess, OutputChunk, ProcessEvent
from .requirements import Requirements, RuntimeUnavailable, check_requirements, require
from .runner import StepRunner
from .runtime import LinuxRuntime, SandboxStartError
from .sandbox import Limits, LinuxSandbox, RunResult, SandboxStateError, SpawnError, Usage

__all__ = [
    "EgressPlan",
    "ExitStatus",
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
    "SandboxLimits",
    "SandboxStartError",
    "SandboxStateError",
    "SpawnError",
    "StepRunner",
    "Usage",
    "check_requirements",
    "connect",
    "open_connection",
    "opensandbox_apply",
    "opensandbox_plan",
    "render_ruleset",
    "require",
    "tensorlake_apply",
    "tensorlake_plan",
    "tensorlake_update",
]
