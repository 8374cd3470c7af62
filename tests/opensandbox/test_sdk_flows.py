"""The real ``opensandbox`` 1.1.1 SDK against the mock: socket and in-process, direct and server-proxy, on the
command emulator and on the linux runtime (real processes)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from opensandbox import Sandbox, SandboxManager
from opensandbox.config import ConnectionConfig
from opensandbox.models.execd import RunCommandOpts
from opensandbox.models.sandboxes import NetworkPolicy, NetworkRule, SandboxFilter

from mockserver.core import VirtualClock
from mockserver.opensandbox import OpenSandboxMock

from .conftest import API_KEY, RUNTIMES, run


@pytest.fixture(params=RUNTIMES)
def runtime(request: pytest.FixtureRequest) -> str:
    """Run every flow on the emulator and on the linux runtime."""
    return str(request.param)


@pytest.fixture
def mock(runtime: str) -> Iterator[OpenSandboxMock]:
    """Use a manual clock: background commands stay running until the test moves time (or interrupts them)."""
    made = OpenSandboxMock(
        seed=11, api_key=API_KEY, clock=VirtualClock("manual"), runtime="linux" if runtime == "linux" else "emulator"
    )
    yield made
    made.close()


async def _wait(predicate: Callable[[], object], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition never became true"
        await asyncio.sleep(0.01)


def test_full_sdk_flow(mock: OpenSandboxMock, mode_config: Callable[..., ConnectionConfig]) -> None:
    cfg = mode_config()

    async def flow() -> None:
        policy = NetworkPolicy(default_action="deny", egress=[NetworkRule(action="allow", target="pypi.org")])
        sb = await Sandbox.create(
            "python:3.11",
            connection_config=cfg,
            metadata={"team": "a", "purpose": "flow"},
            env={"FOO": "bar"},
            network_policy=policy,
        )
        assert mock.sandbox(sb.id).spec.metadata == {"team": "a", "purpose": "flow"}

        ok = await sb.commands.run("echo hi $FOO")
        assert ok.exit_code == 0 and "".join(o.text for o in ok.logs.stdout) == "hi bar\n"
        assert ok.id and ok.complete is not None
        bad = await sb.commands.run("echo boom >&2; exit 3")
        assert bad.exit_code == 3 and bad.error is not None and bad.error.name == "CommandExecError"
        assert "".join(o.text for o in bad.logs.stderr) == "boom\n" and bad.complete is None

        net = await sb.commands.run("getent hosts pypi.org; echo allowed=$?; getent hosts evil.com; echo denied=$?")
        out = "".join(o.text for o in net.logs.stdout)
        assert "pypi.org" in out and "allowed=0" in out and "denied=2" in out

        bg = await sb.commands.run("echo first; sleep 100; echo late", opts=RunCommandOpts(background=True))
        assert bg.id is not None and bg.exit_code is None
        await _wait(lambda: bytes(mock.sandbox(sb.id).commands[str(bg.id)].output) == b"first\n")
        status = await sb.commands.get_command_status(bg.id)
        assert status.running is True and status.exit_code is None and status.content.startswith("echo first")
        logs = await sb.commands.get_background_command_logs(bg.id, 0)
        assert logs.content == "first\n" and logs.cursor == 6
        tail = await sb.commands.get_background_command_logs(bg.id, logs.cursor)
        assert tail.content == "" and tail.cursor == 6
        await sb.commands.interrupt(bg.id)
        await _wait(lambda: not mock.sandbox(sb.id).commands[str(bg.id)].running)
        stopped = await sb.commands.get_command_status(bg.id)
        assert stopped.running is False and stopped.exit_code == -1 and stopped.error == "signal: terminated"

        await sb.files.write_file("/tmp/a.txt", "hi there")
        assert await sb.files.read_file("/tmp/a.txt") == "hi there"
        info = (await sb.files.get_file_info(["/tmp/a.txt"]))["/tmp/a.txt"]
        assert info.size == 8 and info.entry_type == "file"
        assert mock.sandbox(sb.id).fs.read("/tmp/a.txt") == b"hi there"

        got = await sb.get_egress_policy()
        assert got.default_action == "deny" and [r.target for r in got.egress] == ["pypi.org"]
        await sb.patch_egress_rules([NetworkRule(action="allow", target="*.example.com")])
        got = await sb.get_egress_policy()
        assert [r.target for r in got.egress] == ["*.example.com", "pypi.org"]
        now_allowed = await sb.commands.run("getent hosts api.example.com")
        assert now_allowed.exit_code == 0

        sb_info = await sb.get_info()
        assert sb_info.status.state == "Running" and sb_info.metadata == {"team": "a", "purpose": "flow"}
        before = mock.sandbox(sb.id).expires_at
        renewed = await sb.renew(timedelta(minutes=30))
        assert renewed.expires_at.timestamp() == pytest.approx(mock.sandbox(sb.id).expires_at)
        assert mock.sandbox(sb.id).expires_at != before

        manager = await SandboxManager.create(connection_config=cfg)
        other = await Sandbox.create("python:3.11", connection_config=cfg, metadata={"team": "b"})
        listed = await manager.list_sandbox_infos(SandboxFilter(states=["running"], metadata={"team": "a"}))
        assert [i.id for i in listed.sandbox_infos] == [sb.id]
        everyone = await manager.list_sandbox_infos(SandboxFilter(states=["Running", "Paused"]))
        assert {i.id for i in everyone.sandbox_infos} == {sb.id, other.id}

        await sb.pause()
        assert (await sb.get_info()).status.state == "Paused"
        paused = await manager.list_sandbox_infos(SandboxFilter(states=["Paused"]))
        assert [i.id for i in paused.sandbox_infos] == [sb.id]
        resumed = await Sandbox.resume(sb.id, connection_config=cfg)
        assert (await resumed.get_info()).status.state == "Running"
        assert (await resumed.commands.run("cat /tmp/a.txt")).logs.stdout[0].text == "hi there"

        again = await Sandbox.connect(other.id, connection_config=cfg)
        assert (await again.commands.run("echo connected")).exit_code == 0

        await resumed.kill()
        await other.kill()
        assert mock.sandbox_ids() == []
        left = await manager.list_sandbox_infos(SandboxFilter())
        assert left.sandbox_infos == []
        for handle in (sb, resumed, other, again):
            await handle.close()
        await manager.close()

    run(flow())
    if cfg.use_server_proxy:
        assert mock.journal.entries(path="/v1/sandboxes/*/proxy/44772/command")
    else:
        assert mock.journal.entries(path="/direct/*/44772/command")


def test_sessions_metrics_and_file_operations(mock: OpenSandboxMock) -> None:
    from .conftest import sdk_config

    cfg = sdk_config(mock, "inproc-direct")

    async def flow() -> None:
        sb = await Sandbox.create("python:3.11", connection_config=cfg, resource={"cpu": "2", "memory": "1Gi"})
        session = await sb.commands.create_session(working_directory="/tmp")
        ran = await sb.commands.run_in_session(session, "pwd")
        assert ran.logs.stdout[0].text.rstrip("\n") == "/tmp"  # real execd sends a session's lines bare
        await sb.commands.delete_session(session)
        metrics = await sb.get_metrics()
        assert metrics.cpu_count == 2 and metrics.memory_total_in_mib == 1024
        await sb.files.write_file("/work/src/app.py", "print('old')\n")
        found = await sb.files.search(_search("/work", "*.py"))
        assert [e.path for e in found] == ["/work/src/app.py"]
        await sb.files.replace_contents([_replace("/work/src/app.py", "old", "new")])
        assert await sb.files.read_file("/work/src/app.py") == "print('new')\n"
        await sb.files.move_files([_move("/work/src/app.py", "/work/main.py")])
        assert mock.sandbox(sb.id).fs.is_file("/work/main.py")
        assert await sb.files.read_file("/work/main.py", range_header="bytes=0-4") == "print"
        await sb.files.write_file("/work/lines.txt", "one\ntwo\nthree\nfour\n")
        assert await sb.files.read_file("/work/lines.txt", offset=2, limit=2) == "two\nthree\n"
        await sb.files.create_directories([_entry("/work/a/b", mode=700)])
        await sb.files.set_permissions([_perm("/work/main.py", mode=600)])
        infos = await sb.files.get_file_info(["/work/a/b", "/work/main.py"])
        assert infos["/work/a/b"].entry_type == "directory" and infos["/work/a/b"].mode == 700
        assert infos["/work/main.py"].mode == 600
        await sb.files.delete_files(["/work/lines.txt"])
        await sb.files.delete_directories(["/work/a"])
        assert not mock.sandbox(sb.id).fs.exists("/work/a") and not mock.sandbox(sb.id).fs.exists("/work/lines.txt")
        await sb.kill()
        await sb.close()

    run(flow())


def test_a_bash_session_keeps_exports_and_directory_on_both_runtimes(mock: OpenSandboxMock) -> None:
    """One session scenario, one result on each runtime: ``export`` and ``cd`` carry to the next run."""
    from .conftest import sdk_config

    cfg = sdk_config(mock, "inproc-direct")

    async def flow() -> list[list[str]]:
        sb = await Sandbox.create("python:3.11", connection_config=cfg)
        session = await sb.commands.create_session(working_directory="/tmp")
        runs = []
        for command in ("export SESS_A=42", "mkdir -p /tmp/sessdir && cd /tmp/sessdir", "echo A=$SESS_A; pwd"):
            ran = await sb.commands.run_in_session(session, command)
            assert ran.error is None, (command, ran.error)
            runs.append([o.text for o in ran.logs.stdout])
        fresh = await sb.commands.run("echo A=${SESS_A:-unset}; pwd")
        runs.append(["".join(o.text for o in fresh.logs.stdout)])
        await sb.commands.delete_session(session)
        await sb.kill()
        return runs

    assert run(flow()) == [[], [], ["A=42", "/tmp/sessdir"], ["A=unset\n/\n"]]


def _search(path: str, pattern: str) -> object:
    from opensandbox.models.filesystem import SearchEntry

    return SearchEntry(path=path, pattern=pattern)


def _replace(path: str, old: str, new: str) -> object:
    from opensandbox.models.filesystem import ContentReplaceEntry

    return ContentReplaceEntry(path=path, old_content=old, new_content=new)


def _move(src: str, dest: str) -> object:
    from opensandbox.models.filesystem import MoveEntry

    return MoveEntry(src=src, dest=dest)


def test_sdk_env_points_default_config_at_the_mock(mock: OpenSandboxMock, monkeypatch: pytest.MonkeyPatch) -> None:
    with mock.server() as srv:
        for name, value in mock.sdk_env(srv.url).items():
            monkeypatch.setenv(name, value)

        async def flow() -> str:
            sb = await Sandbox.create("python:3.11", connection_config=ConnectionConfig())
            try:
                return "".join(o.text for o in (await sb.commands.run("hostname")).logs.stdout)
            finally:
                await sb.kill()
                await sb.close()

        hostname = run(flow())
    assert hostname.strip() and mock.journal.entries(method="POST", path="/v1/sandboxes", status=202)
    assert mock.journal.entries(method="POST", path="/v1/metrics/events") == []


def _entry(path: str, mode: int) -> object:
    from opensandbox.models.filesystem import WriteEntry

    return WriteEntry(path=path, mode=mode)


def _perm(path: str, mode: int) -> object:
    from opensandbox.models.filesystem import SetPermissionEntry

    return SetPermissionEntry(path=path, mode=mode)


@pytest.mark.parametrize("api_key", ["pinned", "any"])
def test_multi_tenant_sdk_flow_in_every_mode(api_key: str, runtime: str) -> None:
    """With tenants isolated (two pinned keys, or any key), the SDK still reaches its own sandbox's ports.

    In direct mode the SDK sends no API key to execd: the endpoint's secure-access header carries it in.
    """
    from mockserver.opensandbox import ANY_KEY

    from .conftest import sdk_config

    keys = {"key-a": "a", "key-b": "b"} if api_key == "pinned" else ANY_KEY
    mock = OpenSandboxMock(seed=12, api_key=keys, runtime="linux" if runtime == "linux" else "emulator")
    with mock.server() as server:
        for mode in ("socket-direct", "socket-proxy"):
            mine = sdk_config(mock, mode, server.url, api_key="key-a")

            async def flow(cfg: ConnectionConfig = mine) -> None:
                policy = NetworkPolicy(default_action="deny", egress=[NetworkRule(action="allow", target="pypi.org")])
                sb = await Sandbox.create("python:3.11", connection_config=cfg, network_policy=policy)
                ran = await sb.commands.run("echo mine")
                assert ran.exit_code == 0 and "".join(o.text for o in ran.logs.stdout) == "mine\n"
                await sb.files.write_file("/tmp/x", "x")
                assert [r.target for r in (await sb.get_egress_policy()).egress] == ["pypi.org"]
                await sb.kill()
                await sb.close()

            run(flow())
    mock.close()
