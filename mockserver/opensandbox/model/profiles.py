"""Runtime profiles: how a Docker-like or Kubernetes-like OpenSandbox server names things and paces them."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

ProfileName = Literal["docker", "kubernetes"]
EXECD_PORT = 44772
EGRESS_PORT = 18080
SERVER_VERSION = "1.1.1"


#: How an OOM kill (exit 137) is worded in a sandbox's status, by where the wording comes from:
#:
#: * ``docker-1.1.1``: the real 1.1.1 Docker runtime, which words a dead container by its exit code only
#:   (NeMo Gym's OOM pattern ``oom[\s_-]*killed|out of memory`` does not match it);
#: * ``docker-oomkilled-flag``: the Docker wording with Docker's ``State.OOMKilled`` flag added, which the
#:   1.1.1 server reads only in its diagnostics (NeMo Gym reports "Sandbox was OOM-killed" on it);
#: * ``kubernetes-1.1.1``: the real Kubernetes runtime's pod summary.
OOM_WORDINGS: dict[str, tuple[str, str]] = {
    "docker-1.1.1": ("CONTAINER_EXITED_ERROR", "Sandbox container exited with code 137."),
    "docker-oomkilled-flag": ("CONTAINER_EXITED_ERROR", "Sandbox container exited with code 137 (OOMKilled)."),
    "kubernetes-1.1.1": (
        "FAILED",
        "1/1 observed pods failed; primary reason=OOMKilled; container sandbox terminated "
        "with OOMKilled (exit code 137)",
    ),
}


@dataclass(frozen=True)
class RuntimeProfile:
    """Describe one runtime: its error-code prefix, state reasons and transition times (virtual seconds).

    Docker is synchronous: a create answers ``Running``, pause/resume have no visible
    Pausing/Resuming state and a delete removes the sandbox at once. The Kubernetes-like
    profile keeps a new sandbox ``Pending`` for ``pending_seconds`` (its endpoints answer
    404 ``KUBERNETES::POD_IP_NOT_AVAILABLE`` meanwhile) and shows Pausing/Resuming/Stopping.
    """

    name: ProfileName
    pending_seconds: float = 0.0
    pause_seconds: float = 0.0
    resume_seconds: float = 0.0
    stop_seconds: float = 0.0

    @property
    def prefix(self) -> str:
        """Return the error-code prefix (``DOCKER`` or ``KUBERNETES``)."""
        return "DOCKER" if self.name == "docker" else "KUBERNETES"

    @property
    def not_found_code(self) -> str:
        """Return the code of a missing sandbox."""
        return f"{self.prefix}::SANDBOX_NOT_FOUND"

    def running_status(self, created: bool = False) -> tuple[str, str]:
        """Return (reason, message) for a running sandbox."""
        if self.name == "docker":
            verb = "started successfully" if created else "is running"
            return "CONTAINER_RUNNING", f"Sandbox container {verb}."
        return "POD_READY_WITH_IP", "Pod is ready and has an IP address."

    def status_for(self, state: str) -> tuple[str, str]:
        """Return (reason, message) for a state other than Running and Failed."""
        docker = {
            "Pending": ("CONTAINER_STARTING", "Sandbox container is starting."),
            "Paused": ("CONTAINER_PAUSED", "Sandbox container is paused."),
            "Pausing": ("CONTAINER_PAUSING", "Sandbox container is pausing."),
            "Resuming": ("CONTAINER_RESUMING", "Sandbox container is resuming."),
            "Stopping": ("CONTAINER_STOPPING", "Sandbox container is stopping."),
            "Terminated": ("CONTAINER_EXITED", "Sandbox container exited successfully."),
        }
        k8s = {
            "Pending": ("POD_SCHEDULED", "Pod is scheduled and waiting for an IP address."),
            "Paused": ("PAUSED", "Sandbox is paused."),
            "Pausing": ("PAUSING", "Sandbox is pausing."),
            "Resuming": ("RESUMING", "Sandbox is resuming."),
            "Stopping": ("DELETING", "Sandbox is being deleted."),
            "Terminated": ("SANDBOX_TERMINATED", "Sandbox terminated."),
        }
        table = docker if self.name == "docker" else k8s
        return table.get(state, ("CONTAINER_STATE_UNKNOWN", f"Sandbox is in state '{state}'."))

    @property
    def default_oom_wording(self) -> str:
        """Return the name of the OOM wording this runtime reports (see :data:`OOM_WORDINGS`)."""
        return "docker-1.1.1" if self.name == "docker" else "kubernetes-1.1.1"

    def oom_status(self, wording: str | None = None) -> tuple[str, str]:
        """Return (reason, message) of a sandbox whose container was OOM-killed (exit 137).

        ``wording`` names one of :data:`OOM_WORDINGS` (default: this runtime's own); ValueError for another.
        """
        name = wording or self.default_oom_wording
        if name not in OOM_WORDINGS:
            raise ValueError(f"unknown OOM wording {name!r}: expected one of {sorted(OOM_WORDINGS)}")
        return OOM_WORDINGS[name]

    def failed_status(self) -> tuple[str, str]:
        """Return (reason, message) of a sandbox whose container died of an ordinary error (exit 1)."""
        if self.name == "docker":
            return "CONTAINER_EXITED_ERROR", "Sandbox container exited with code 1."
        return (
            "FAILED",
            "1/1 observed pods failed; primary reason=Error; container sandbox terminated with Error (exit code 1)",
        )

    def to_json(self) -> dict[str, Any]:
        """Return the profile as JSON."""
        return {
            "name": self.name,
            "pending_seconds": self.pending_seconds,
            "pause_seconds": self.pause_seconds,
            "resume_seconds": self.resume_seconds,
            "stop_seconds": self.stop_seconds,
        }


DOCKER = RuntimeProfile("docker")
KUBERNETES = RuntimeProfile("kubernetes", pending_seconds=3.0, pause_seconds=1.0, resume_seconds=1.0, stop_seconds=0.0)


def make_profile(name: str, **overrides: float | None) -> RuntimeProfile:
    """Return the named profile with the given timings overridden (None keeps the default)."""
    if name not in ("docker", "kubernetes"):
        raise ValueError(f"unknown profile {name!r}: expected 'docker' or 'kubernetes'")
    base = DOCKER if name == "docker" else KUBERNETES
    changes = {k: float(v) for k, v in overrides.items() if v is not None}
    for key, value in changes.items():
        if value < 0:
            raise ValueError(f"{key} must not be negative")
    return replace(
        base,
        pending_seconds=changes.get("pending_seconds", base.pending_seconds),
        pause_seconds=changes.get("pause_seconds", base.pause_seconds),
        resume_seconds=changes.get("resume_seconds", base.resume_seconds),
        stop_seconds=changes.get("stop_seconds", base.stop_seconds),
    )
