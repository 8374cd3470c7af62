"""execd's command stream: a foreground command whose client goes away is killed, leaving no task behind."""

from __future__ import annotations

import time

import httpx
import pytest
from code_interpreter import CodeInterpreter, SupportedLanguage
from opensandbox import Sandbox
from opensandbox.exceptions import SandboxApiException

from mockserver.core import VirtualClock
from mockserver.linux.requirements import check_requirements
from mockserver.opensandbox import OpenSandboxMock
from mockserver.opensandbox.mock import RuntimeName

from ..conftest import run
from ..create_cases import BODY

DROPPED = 50
LINUX = check_requirements()
needs_linux = pytest.mark.skipif(not LINUX.ok, reason=LINUX.message())


def _wait(predicate: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "the mock never noticed the clients were gone"
        time.sleep(0.02)


def test_dropped_streams_leave_no_running_command() -> None:
    mock = OpenSandboxMock(clock=VirtualClock("manual"))  # sleep 3600 never ends by itself
    with mock.server() as srv, httpx.Client(base_url=srv.url, timeout=10) as client:
        sid = client.post("/v1/sandboxes", json=BODY).json()["id"]
        for _ in range(DROPPED):
            with client.stream("POST", f"/direct/{sid}/44772/command", json={"command": "sleep 3600"}) as resp:
                assert resp.status_code == 200
                assert b'"type":"init"' in next(resp.iter_raw())
        records = mock.sandbox(sid).commands
        assert len(records) == DROPPED
        _wait(lambda: mock.commands.running() == 0 and not any(r.running for r in records.values()))
        statuses = [client.get(f"/direct/{sid}/44772/command/status/{cid}").json() for cid in records]
        assert {(s["running"], s["exit_code"], s["error"]) for s in statuses} == {(False, -1, "signal: killed")}


def test_a_stream_read_to_its_end_is_not_abandoned() -> None:
    mock = OpenSandboxMock(clock=VirtualClock("manual"))
    with mock.server() as srv, httpx.Client(base_url=srv.url, timeout=10) as client:
        sid = client.post("/v1/sandboxes", json=BODY).json()["id"]
        done = client.post(f"/direct/{sid}/44772/command", json={"command": "echo hi"})
        assert done.text.endswith("\n\n") and '"type":"execution_complete"' in done.text
        [record] = mock.sandbox(sid).commands.values()
        assert (record.running, record.exit_code) == (False, 0)
        background = client.post(f"/direct/{sid}/44772/command", json={"command": "sleep 3600", "background": True})
        assert '"type":"execution_complete"' in background.text
        time.sleep(0.2)
        assert mock.commands.running() == 1  # a background command runs on without a reader, as on execd


@pytest.mark.parametrize("runtime", ["emulator", pytest.param("linux", marks=needs_linux)])
def test_one_advance_that_crosses_a_sleep_releases_it_at_once(runtime: RuntimeName) -> None:
    """On both runtimes: an advance short of the deadline holds ``sleep 5``; the one that crosses it releases it."""
    mock = OpenSandboxMock(clock=VirtualClock("manual"), runtime=runtime)
    with mock.server() as srv, httpx.Client(base_url=srv.url, timeout=30) as client:
        sid = client.post("/v1/sandboxes", json=BODY).json()["id"]
        started = client.post(f"/direct/{sid}/44772/command", json={"command": "sleep 5", "background": True})
        assert started.status_code == 200
        [record] = mock.sandbox(sid).commands.values()
        time.sleep(0.3)
        assert record.running, "a manual clock that has not moved holds the sleep"
        assert client.post("/_mock/clock/advance", json={"seconds": 4}).status_code == 200
        time.sleep(0.3)
        assert record.running, "an advance short of the deadline holds it still"
        assert client.post("/_mock/clock/advance", json={"seconds": 60}).status_code == 200
        _wait(lambda: not record.running, timeout=5.0)
        assert record.exit_code == 0
    mock.close()


def test_the_emulator_refuses_the_code_interpreter_naming_the_linux_runtime() -> None:
    """Every code route answers 501 ``NOT_SUPPORTED`` (not a bare 404); the code-interpreter SDK reports it."""
    mock = OpenSandboxMock()
    with mock.server() as srv, httpx.Client(base_url=srv.url, timeout=10) as client:
        sid = client.post("/v1/sandboxes", json=BODY).json()["id"]
        calls = [
            ("POST", "/code/context", {"language": "python"}),
            ("POST", "/code", {"code": "1"}),
            ("DELETE", "/code?id=x", None),
            ("GET", "/code/contexts", None),
            ("DELETE", "/code/contexts?language=python", None),
            ("GET", "/code/contexts/x", None),
            ("DELETE", "/code/contexts/x", None),
        ]
        for method, path, body in calls:
            resp = client.request(method, f"/direct/{sid}/44772{path}", json=body)
            assert resp.status_code == 501, (method, path)
            assert resp.json()["code"] == "NOT_SUPPORTED" and "--runtime linux" in resp.json()["message"]

        async def flow() -> None:
            sb = await Sandbox.connect(sid, connection_config=mock.connection_config(srv.url))
            interpreter = await CodeInterpreter.create(sb, skip_health_check=True)
            with pytest.raises(SandboxApiException) as refused:
                await interpreter.codes.create_context(SupportedLanguage.PYTHON)
            assert refused.value.status_code == 501 and "--runtime linux" in str(refused.value)
            await sb.close()

        run(flow())
