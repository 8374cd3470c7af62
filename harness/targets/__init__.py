"""What the contracts run against: ``--target`` strings parsed into :class:`Target` objects.

- :mod:`.target`: :class:`Target` and :func:`parse_target`.
- :mod:`.common`: providers, capabilities, :class:`TargetError`, default keys.
- :mod:`.engines`: loading alternative policy engines (``policy:MODULE:ATTR``).
- :mod:`.mocks`: the in-process mocks served on loopback (:class:`MockStack`, :class:`RunningMock`).
- :mod:`.containers`: both mocks in one Docker container (``--container``).
- :mod:`.live`: what a run may do to a server it did not start (preflight, read-only admin, ``--allow-reset``).
"""

from harness.targets.common import CAPABILITIES, DEFAULT_API_KEY, PROVIDERS, Capability, TargetError
from harness.targets.mocks import RunningMock
from harness.targets.target import ACCEPTED_FORMS, Target, parse_target

__all__ = [
    "ACCEPTED_FORMS",
    "CAPABILITIES",
    "DEFAULT_API_KEY",
    "PROVIDERS",
    "Capability",
    "RunningMock",
    "Target",
    "TargetError",
    "parse_target",
]
