"""Builders for the model tests: a state on a manual clock and valid create bodies."""

from __future__ import annotations

from typing import Any

from mockserver.core import IdFactory, VirtualClock
from mockserver.opensandbox.model.operations import OpenSandboxModel
from mockserver.opensandbox.model.profiles import make_profile
from mockserver.opensandbox.model.records import SandboxRecord
from mockserver.opensandbox.model.spec import parse_create

BODY: dict[str, Any] = {
    "image": {"uri": "python:3.11"},
    "entrypoint": ["tail", "-f", "/dev/null"],
    "timeout": 600,
    "resourceLimits": {"cpu": "1", "memory": "2Gi"},
}
POLICY = {"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]}


def new_state(profile: str = "docker", **timings: float) -> OpenSandboxModel:
    """Return an empty state of ``profile`` on a manual clock."""
    return OpenSandboxModel(make_profile(profile, **timings), VirtualClock("manual"), IdFactory(1))


def create(state: OpenSandboxModel, tenant: str = "default", **fields: Any) -> SandboxRecord:
    """Create a sandbox from the valid body with ``fields`` changed."""
    return state.create(tenant, parse_create({**BODY, **fields}, state.profile.name))
