"""Fixtures of the linux runtime tests: one runtime per session, a fresh sandbox per test, all torn down.

Namespace tests skip, with the requirements message as the reason, where the runtime cannot run (not
root, tools missing); the pure tests (compiler, DNS wire format, path confinement, framing) always run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from mockserver.core.dns import DnsTable
from mockserver.linux import LinuxRuntime, LinuxSandbox
from mockserver.linux.requirements import check_requirements

REPORT = check_requirements()
needs_runtime = pytest.mark.skipif(not REPORT.ok, reason=REPORT.message())

#: The DNS table of the session runtime (names used by the egress matrix); unknown names are synthesised.
NAMES = {
    "example.com": ["203.0.113.10"],
    "api.example.com": ["203.0.113.11"],
    "v1.api.example.com": ["203.0.113.12"],
    "evil.example.com": ["203.0.113.13"],
    "pypi.org": ["198.51.100.20"],
    "files.pythonhosted.org": ["198.51.100.21"],
    "other.test": ["203.0.113.50"],
}


def _ours(runtime_id: str) -> list[str]:
    try:
        return [n for n in os.listdir("/run/netns") if n.startswith(f"sandproof-{runtime_id}-")]
    except FileNotFoundError:
        return []


@pytest.fixture(scope="session")
def runtime() -> Iterator[LinuxRuntime]:
    """The session's runtime (skips when the machine cannot run it); checks it leaves nothing behind."""
    if not REPORT.ok:
        pytest.skip(REPORT.message())
    rt = LinuxRuntime(dns=DnsTable(NAMES))
    try:
        yield rt
    finally:
        rt.close()
        assert _ours(rt.id) == [], "the runtime left network namespaces behind"


@pytest.fixture
def sandbox(runtime: LinuxRuntime) -> Iterator[LinuxSandbox]:
    """A fresh sandbox of the session runtime, destroyed after the test."""
    sb = runtime.create_sandbox()
    try:
        yield sb
    finally:
        sb.destroy()
