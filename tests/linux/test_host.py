"""LinuxHost: one mock's sandboxes by provider id, made once however many callers ask at the same time."""

from __future__ import annotations

import threading
import time

import pytest

from mockserver.core.dns import DnsTable
from mockserver.linux import LinuxRuntime, LinuxSandbox
from mockserver.linux.host import LinuxHost

from .conftest import needs_runtime

pytestmark = needs_runtime


def test_ensure_makes_one_sandbox_for_concurrent_callers_and_forget_destroys_it() -> None:
    host = LinuxHost(DnsTable(), warm=0)
    made: list[str] = []

    def make(runtime: LinuxRuntime) -> LinuxSandbox:
        made.append("x")
        time.sleep(0.05)  # stay in the maker while the others ask
        return runtime.create_sandbox("provider-id")

    try:
        results: list[LinuxSandbox] = []
        threads = [threading.Thread(target=lambda: results.append(host.ensure("provider-id", make))) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert made == ["x"] and len({id(r) for r in results}) == 1
        sandbox = results[0]
        assert host.get("provider-id") is sandbox and host.held() == ["provider-id"]
        assert sandbox.run("echo up").stdout == b"up\n"
        host.forget("provider-id")
        assert sandbox.state == "destroyed" and host.get("provider-id") is None
        again = host.ensure("provider-id", make)
        assert again is not sandbox and len(made) == 2
    finally:
        host.close()
    with pytest.raises(RuntimeError):
        host.ensure("later", make)


def test_a_failed_make_is_reported_to_every_caller_and_retried_later() -> None:
    host = LinuxHost(DnsTable(), warm=0)
    attempts: list[int] = []

    def broken(runtime: LinuxRuntime) -> LinuxSandbox:
        attempts.append(1)
        raise OSError("no room")

    try:
        with pytest.raises(OSError, match="no room"):
            host.ensure("k", broken)
        assert host.get("k") is None
        sandbox = host.ensure("k", lambda runtime: runtime.create_sandbox("k"))
        assert sandbox.alive and attempts == [1]
    finally:
        host.close()
