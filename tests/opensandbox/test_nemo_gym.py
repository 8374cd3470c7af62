"""NeMo Gym 0.7.0's real ``OpenSandboxProvider`` (httpx backend) against the mock over a socket.

Every flow runs on the command emulator and on the linux runtime; ``create_pty`` and ``attach_pty`` need
real terminals, so they run on the linux runtime, both direct and through the server proxy.
"""

from __future__ import annotations

import importlib
import pathlib
import time
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import httpx
import pytest
from opensandbox.exceptions import SandboxApiException

from mockserver.asgi.server import MockServer
from mockserver.opensandbox import OpenSandboxMock

from .conftest import API_KEY, RUNTIMES, run

RUN_ID, USER = "run-1", "u"
CREATE = {"image": {"uri": "python:3.11"}, "entrypoint": ["sleep"], "resourceLimits": {"cpu": "1"}, "timeout": 600}


@pytest.fixture(scope="module")
def gym() -> ModuleType:
    """Import the provider; fail loudly (never skip) when NeMo Gym is missing."""
    try:
        return importlib.import_module("nemo_gym.sandbox.providers.opensandbox")
    except Exception as exc:  # the test must fail with the reason, not skip
        pytest.fail(
            f"nemo_gym 0.7.0 cannot be imported ({type(exc).__name__}: {exc}); install it with "
            "`pip install --no-deps --ignore-requires-python nemo-gym==0.7.0` plus PyYAML pydantic omegaconf "
            "tenacity aiohttp"
        )


@pytest.fixture(params=RUNTIMES)
def runtime(request: pytest.FixtureRequest) -> str:
    """Run every provider flow on the emulator and on the linux runtime."""
    return str(request.param)


@pytest.fixture
def srv(mock: OpenSandboxMock) -> Iterator[MockServer]:
    with mock.server() as server:
        yield server


def provider(gym: ModuleType, url: str, **overrides: Any) -> Any:
    """Build the provider the way the NeMo Gym notes recommend for tests (fast retries, fixed attribution)."""
    blocks: dict[str, dict[str, Any]] = {
        "connection": {
            "domain": url.split("://", 1)[1],
            "protocol": "http",
            "api_key": API_KEY,
            "transport_backend": "httpx",
            "request_timeout_s": 10,
        },
        "create": {"retries": 0, "connect_poll_s": 0.2},
        "operations": {"retries": 1, "retry_delay_s": 0.05, "retry_max_delay_s": 0.1},
        "attribution": {"team": "t", "user": USER, "workload": "w", "run": RUN_ID},
    }
    for name, values in overrides.items():
        blocks[name] = {**blocks.get(name, {}), **values}
    return gym.OpenSandboxProvider(**blocks)


def spec(**kwargs: Any) -> Any:
    from nemo_gym.sandbox.providers.base import SandboxSpec

    return SandboxSpec(image="python:3.11", **kwargs)


def test_lifecycle_exec_files_pause_resume_close(
    gym: ModuleType, mock: OpenSandboxMock, srv: MockServer, tmp_path: pathlib.Path
) -> None:
    from nemo_gym.sandbox.providers.base import SandboxStatus

    async def scenario() -> None:
        p = provider(gym, srv.url)
        handle = await p.create(spec(env={"A": "1"}, metadata={"task": "demo/1"}))
        record = mock.sandbox(handle.sandbox_id)
        assert record.spec.metadata["task"] == "demo_1" and record.spec.metadata["nemo-gym.nvidia.com/run"] == RUN_ID
        mock.journal.assert_called("POST", "/direct/*/44772/command")  # the readiness probe
        ok = await p.exec(handle, "echo hello $A", cwd="/tmp")
        assert (ok.stdout, ok.return_code) == ("hello 1\n", 0)
        bad = await p.exec(handle, "exit 3")
        assert bad.return_code == 3 and bad.stderr == "CommandExecError: 3"
        src = tmp_path / "in.txt"
        src.write_text("payload")
        await p.upload_file(handle, src, "/work/in.txt")
        assert record.fs.read("/work/in.txt") == b"payload"
        await p.download_file(handle, "/work/in.txt", tmp_path / "out.txt")
        assert (tmp_path / "out.txt").read_text() == "payload"
        await p.pause(handle)
        assert await p.status(handle) == SandboxStatus.PAUSED
        await p.resume(handle)
        assert await p.status(handle) == SandboxStatus.RUNNING
        await p.close(handle)
        assert mock.sandbox_ids() == []
        await p.close(handle)  # NG-F10: a kill of a missing sandbox (404) counts as success
        assert mock.journal.entries(method="DELETE", status=404)
        await p.aclose()

    run(scenario())


def test_background_exec_and_status_410(gym: ModuleType, mock: OpenSandboxMock, srv: MockServer) -> None:
    async def scenario() -> None:
        p = provider(gym, srv.url, operations={"background_exec": True, "background_poll_initial_s": 0.01})
        handle = await p.create(spec())
        done = await p.exec(handle, "echo bg; echo err >&2")
        assert done.return_code == 0 and done.stdout == "bg\nerr\n"
        rule = mock.catalogue.status_410_on_poll(handle.sandbox_id)
        with pytest.raises(SandboxApiException) as caught:
            await p.exec(handle, "echo again")
        assert caught.value.status_code == 410 and rule.fired == 1
        await p.close(handle)
        await p.aclose()

    run(scenario())


def test_submit_502_raises_backend_unreachable(gym: ModuleType, mock: OpenSandboxMock, srv: MockServer) -> None:
    async def scenario() -> None:
        p = provider(gym, srv.url)
        handle = await p.create(spec())
        rule = mock.catalogue.submit_502(handle.sandbox_id, times=None)
        with pytest.raises(gym.provider.SandboxBackendUnreachableError, match="unreachable through 2 submissions"):
            await p.exec(handle, "echo x")
        assert rule.fired == 2
        mock.faults.clear()
        await p.close(handle)
        await p.aclose()

    run(scenario())


@pytest.mark.parametrize(
    ("wording", "message", "reported"),
    [
        # The real 1.1.1 Docker wording: NeMo Gym's OOM pattern does not match it, so the OOM goes unnamed.
        ("docker-1.1.1", "Sandbox container exited with code 137.", "unreachable through 2 submissions"),
        ("docker-oomkilled-flag", "Sandbox container exited with code 137 (OOMKilled).", "OOM-killed"),
    ],
)
def test_oom_evidence_after_502(
    gym: ModuleType, mock: OpenSandboxMock, srv: MockServer, wording: str, message: str, reported: str
) -> None:
    async def scenario() -> None:
        p = provider(gym, srv.url)
        handle = await p.create(spec())
        mock.catalogue.oom_on_next_exec(handle.sandbox_id, wording)
        with pytest.raises(gym.provider.SandboxBackendUnreachableError, match=reported) as caught:
            await p.exec(handle, "echo x")
        if reported == "OOM-killed":
            assert "state='Failed'" in str(caught.value) and "137" in str(caught.value)
        else:
            assert "OOM-killed" not in str(caught.value)
        sb = mock.sandbox(handle.sandbox_id)
        assert (sb.state, sb.message) == ("Failed", message)
        await p.close(handle)
        await p.aclose()

    run(scenario())


def test_the_default_oom_wording_is_the_real_docker_one(mock: OpenSandboxMock) -> None:
    """Issue 12.13: real 1.1.1 Docker words an OOM kill by its exit code only."""
    with mock.server() as server, httpx.Client(base_url=server.url, headers={"OPEN-SANDBOX-API-KEY": API_KEY}) as c:
        sid = c.post("/v1/sandboxes", json=CREATE).json()["id"]
        mock.oom_kill(sid)
        assert c.get(f"/v1/sandboxes/{sid}").json()["status"] | {"lastTransitionAt": None} == {
            "state": "Failed",
            "reason": "CONTAINER_EXITED_ERROR",
            "message": "Sandbox container exited with code 137.",
            "lastTransitionAt": None,
        }


def test_pending_pod_times_out_and_create_is_retried(gym: ModuleType, mock: OpenSandboxMock, srv: MockServer) -> None:
    rule = mock.catalogue.pending_pod(times=None)

    async def scenario() -> BaseException:
        p = provider(gym, srv.url, create={"retries": 1, "retry_delay_s": 0.05, "retry_max_delay_s": 0.1})
        try:
            with pytest.raises(Exception) as caught:
                await p.create(spec(ready_timeout_s=0.6))
            return caught.value
        finally:
            await p.aclose()

    error = run(scenario())
    calls = mock.journal.calls()
    assert "POD_IP_NOT_AVAILABLE" in str(error) or "Timed out" in str(error), (error, calls)
    assert len(mock.journal.entries(method="POST", path="/v1/sandboxes")) == 2, calls
    assert rule.fired > 4
    deadline = time.monotonic() + 3

    def deletes() -> int:
        return len(mock.journal.entries(method="DELETE", path="/v1/sandboxes/*"))

    while (mock.sandbox_ids() or deletes() < 2) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mock.sandbox_ids() == [], calls
    assert deletes() >= 2, mock.journal.calls()


def test_pending_pod_ready_in_time(gym: ModuleType, mock: OpenSandboxMock, srv: MockServer) -> None:
    rule = mock.catalogue.pending_pod(times=3)

    async def scenario() -> None:
        p = provider(gym, srv.url)
        handle = await p.create(spec())
        await p.close(handle)
        await p.aclose()

    run(scenario())
    assert rule.fired == 3


def test_create_timeout_orphan_is_reaped_by_cleanup_script(
    gym: ModuleType, mock: OpenSandboxMock, srv: MockServer, capsys: pytest.CaptureFixture[str]
) -> None:
    mock.catalogue.create_timeout(1.0)
    cleanup = importlib.import_module("nemo_gym.sandbox.providers.opensandbox.cleanup_sandboxes")

    async def scenario() -> None:
        p = provider(gym, srv.url, create={"timeout_s": 0.3})
        with pytest.raises(gym.provider.OpenSandboxCreateTimeoutError):
            await p.create(spec())
        await p.aclose()

    run(scenario())
    time.sleep(0.8)
    orphans = mock.sandbox_ids(**{"nemo-gym.nvidia.com/run": RUN_ID})
    assert len(orphans) == 1
    argv = ["--domain", srv.url, "--api-key", API_KEY, "--run-id", RUN_ID, "--user", USER]
    assert cleanup.main(argv) == 0  # audit only: the orphan is reported, not deleted
    assert "Would delete 1 OpenSandbox sandbox(es)" in capsys.readouterr().out
    assert mock.sandbox_ids() == orphans
    assert cleanup.main([*argv, "--reap"]) == 0
    assert mock.sandbox_ids() == []


@pytest.mark.runtime("linux")
@pytest.mark.parametrize("runtime", ["linux"], indirect=False)
@pytest.mark.parametrize("use_proxy", [False, True], ids=["direct", "proxy"])
def test_create_pty_and_attach_pty_drive_a_real_shell(
    gym: ModuleType, mock: OpenSandboxMock, srv: MockServer, use_proxy: bool
) -> None:
    from nemo_gym.sandbox.providers.base import SandboxPtyError, SandboxPtySpec

    async def read_until(session: Any, needle: bytes) -> bytes:
        seen = b""
        while needle not in seen:
            seen += await session.read(timeout_s=10)
        return seen

    async def scenario() -> None:
        p = provider(gym, srv.url, connection={"use_server_proxy": use_proxy})
        handle = await p.create(spec())
        pty = await p.create_pty(handle, SandboxPtySpec(cwd="/tmp", rows=40, cols=120))
        assert pty.mode == "pty"
        await pty.write(b"echo typed-$((6*7)) in $(pwd); stty size\n")
        shown = await read_until(pty, b"40 120")  # one buffer: both may come in one chunk
        assert b"typed-42 in /tmp" in shown
        await pty.detach()
        again = await p.attach_pty(handle, pty.session_id, since=0)
        await again.write(b"exit 3\n")
        assert await again.wait_exit(timeout_s=10) == 3
        with pytest.raises(SandboxPtyError, match="not found"):
            await p.attach_pty(handle, "no-such-session")
        pipe = await p.create_pty(
            handle, SandboxPtySpec(command="echo out; echo err >&2; read x; echo got $x", pty=False)
        )
        assert pipe.mode == "pipe"
        await pipe.write(b"hello\n")
        assert await read_until(pipe, b"got hello")
        assert await pipe.read_stderr(timeout_s=10) == b"err\n"
        assert await pipe.wait_exit(timeout_s=10) == 0
        await p.close(handle)
        await p.aclose()

    run(scenario())


def test_pty_attach_to_a_missing_session_fails_at_once(gym: ModuleType, mock: OpenSandboxMock, srv: MockServer) -> None:
    """NG-F13: ``GET /pty/{sid}`` answers 404 ``CONTEXT_NOT_FOUND``, so ``attach_pty`` raises without a WebSocket.

    The emulator has no PTY: creating one answers 501 (the linux runtime's PTYs are tested above).
    """
    from nemo_gym.sandbox.providers.base import SandboxPtyError, SandboxPtySpec

    async def scenario() -> None:
        p = provider(gym, srv.url)
        handle = await p.create(spec())
        try:
            with pytest.raises(SandboxPtyError, match="PTY session nope not found"):
                await p.attach_pty(handle, "nope")
            if mock.linux is None:
                with pytest.raises(SandboxPtyError, match="501"):
                    await p.create_pty(handle, SandboxPtySpec(command="bash"))
        finally:
            await p.close(handle)
            await p.aclose()

    run(scenario())
