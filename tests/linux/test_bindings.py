"""SandboxBindings: the provider-independent part of binding records to real sandboxes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from mockserver.core.dns import DnsTable
from mockserver.linux import LinuxRuntime, LinuxSandbox
from mockserver.linux.bindings import SandboxBindings, empty_dump
from mockserver.sandbox.filesystem import FileSystem

from .conftest import needs_runtime


class Bindings(SandboxBindings[str, tuple[str, int]]):
    """Records are their own ids; what is applied is a (policy, generation) pair."""

    def __init__(self) -> None:
        super().__init__(DnsTable())
        self.made: list[str] = []

    def _policy_of(self, applied: tuple[str, int]) -> object:
        return applied[0]

    def _make(self, key: str) -> LinuxSandbox:
        def make(runtime: LinuxRuntime) -> LinuxSandbox:
            sandbox = runtime.create_sandbox(key)
            self._applied[key] = (f"policy-of-{key}", len(self.made))
            self._write_restored(key, sandbox)
            self.made.append(key)
            return sandbox

        return self.host.ensure(key, make)

    async def ensure_async(self, record: str) -> LinuxSandbox:
        return self._make(record)


@pytest.fixture
def bindings() -> Iterator[Bindings]:
    made = Bindings()
    try:
        yield made
    finally:
        made.close()


def test_applied_policy_is_unknown_until_applied_then_the_providers_part() -> None:
    bindings = Bindings()
    try:
        assert bindings.applied_policy("a") == (False, None)
        bindings._applied["a"] = ("open", 3)
        assert bindings.applied_policy("a") == (True, "open")
        bindings._applied.clear()
        assert bindings.applied_policy("a") == (False, None)
    finally:
        bindings.close()


@needs_runtime
def test_a_restored_record_waits_with_its_files_then_has_them_written_in(bindings: Bindings) -> None:
    files = FileSystem(user="root")
    files.write("/tmp/kept.txt", b"from the snapshot\n")
    dump = files.dump()
    with bindings._lock:
        bindings._restore["a"] = dump
    assert bindings._unmade("a") == dump
    assert bindings._unmade("b") == empty_dump()
    sandbox = bindings._make("a")
    assert bindings._unmade("a") is None  # made: the files are the sandbox's now
    assert sandbox.run("cat /tmp/kept.txt").stdout == b"from the snapshot\n"
    assert "a" not in bindings._restore
    assert bindings.applied_policy("a") == (True, "policy-of-a")


@needs_runtime
def test_forget_destroys_one_and_clear_every_one(bindings: Bindings) -> None:
    first, second = bindings._make("a"), bindings._make("b")
    with bindings._lock:
        bindings._restore["c"] = empty_dump()
    bindings.forget("a")
    assert first.state == "destroyed" and bindings.host.get("a") is None
    assert bindings.applied_policy("a") == (False, None) and bindings.applied_policy("b")[0]
    bindings.clear()
    assert second.state == "destroyed" and bindings.host.held() == []
    assert bindings.applied_policy("b") == (False, None) and not bindings._restore


@needs_runtime
def test_a_port_app_makes_the_records_sandbox_on_first_use(bindings: Bindings) -> None:
    app = bindings.port_app("a", 8080)
    assert bindings.made == []  # building the app makes nothing

    async def nothing() -> Any:
        return {}

    async def ignore(message: Any) -> None:
        return None

    async def serve_one() -> None:
        await app({"type": "neither http nor websocket"}, nothing, ignore)

    asyncio.run(serve_one())
    assert bindings.made == ["a"] and bindings.host.get("a") is not None
