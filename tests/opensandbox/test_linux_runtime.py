"""The OpenSandbox SDKs on the linux runtime: what only real processes can show.

A background server reached through the endpoints (direct and through the server proxy, HTTP and a
WebSocket), the headers a real app receives through the server proxy, a bash session keeping its directory and variables, a code context keeping a variable (the
code-interpreter SDK), the sidecar's two enforcement modes and a policy PATCH during a loop of connections,
a real OOM kill and what NeMo Gym makes of it, metrics of the real processes, pause freezing, PTY
refusals, and escapes tried through the APIs.
"""

from __future__ import annotations

import asyncio
import importlib
import shutil
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
import websockets.sync.client as ws_client
from code_interpreter import CodeInterpreter, SupportedLanguage
from opensandbox import Sandbox
from opensandbox.config import ConnectionConfig
from opensandbox.exceptions import SandboxApiException
from opensandbox.models.execd import RunCommandOpts
from opensandbox.models.sandboxes import NetworkPolicy, NetworkRule

from mockserver.asgi.server import MockServer
from mockserver.core import DnsTable
from mockserver.opensandbox import OpenSandboxMock

from ..linux_programs import CONNECT_LOOP, WS_ECHO, after_swap
from .conftest import API_KEY, run

pytestmark = pytest.mark.runtime("linux")
NAMES = {"pypi.org": ["198.51.100.20"], "evil.example.com": ["203.0.113.13"], "api.example.com": ["203.0.113.11"]}


@pytest.fixture
def mock() -> Iterator[OpenSandboxMock]:
    """A linux-runtime mock whose DNS table names a few hosts."""
    made = OpenSandboxMock(seed=21, api_key=API_KEY, runtime="linux", dns=DnsTable(NAMES))
    yield made
    made.close()


@pytest.fixture
def srv(mock: OpenSandboxMock) -> Iterator[MockServer]:
    with mock.server() as server:
        yield server


@pytest.fixture(params=[False, True], ids=["direct", "proxy"])
def config(request: pytest.FixtureRequest, mock: OpenSandboxMock, srv: MockServer) -> ConnectionConfig:
    """The SDK's connection config, direct and through the server proxy."""
    return mock.connection_config(srv.url, use_server_proxy=bool(request.param))


async def wait_for(predicate: Callable[[], Any], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not await predicate():
        assert time.monotonic() < deadline, "the condition never became true"
        await asyncio.sleep(0.05)


def text(execution: Any) -> str:
    return "".join(o.text for o in execution.logs.stdout)


def test_a_background_server_behind_the_endpoints(config: ConnectionConfig) -> None:
    async def flow() -> None:
        sb = await Sandbox.create("python:3.11", connection_config=config)
        await sb.files.write_file("/workspace/index.html", "from the sandbox\n")
        opts = RunCommandOpts(background=True)
        await sb.commands.run("cd /workspace && exec python3 -m http.server 8000 --bind 127.0.0.1", opts=opts)
        await sb.commands.run(f"exec python3 -c '{WS_ECHO}' 8001", opts=opts)
        probe = "python3 -c \"import socket; [socket.create_connection(('127.0.0.1', p), 1) for p in (8000, 8001)]\""

        async def up() -> bool:
            return bool((await sb.commands.run(probe)).exit_code == 0)

        await wait_for(up)
        endpoint = await sb.get_endpoint(8000)
        headers = {**endpoint.headers, "OPEN-SANDBOX-API-KEY": API_KEY}
        page = httpx.get(f"http://{endpoint.endpoint}/index.html", headers=headers)
        assert (page.status_code, page.text) == (200, "from the sandbox\n")
        socket_endpoint = await sb.get_endpoint(8001)
        url = f"ws://{socket_endpoint.endpoint}/chat"
        with ws_client.connect(url, additional_headers=headers) as ws:
            ws.send("hello")
            assert ws.recv(timeout=10) == "echo:hello"
        await sb.kill()
        await sb.close()

    run(flow())


def test_a_bash_session_keeps_its_directory_and_variables(config: ConnectionConfig) -> None:
    async def flow() -> None:
        sb = await Sandbox.create("python:3.11", connection_config=config)
        session = await sb.commands.create_session(working_directory="/tmp")
        first = await sb.commands.run_in_session(session, "cd /work && export COLOR=blue && echo moved")
        assert [o.text for o in first.logs.stdout] == ["moved"]
        second = await sb.commands.run_in_session(session, "pwd; echo $COLOR; exit 4")
        assert [o.text for o in second.logs.stdout] == ["/work", "blue"]
        assert second.error is not None and second.error.value == "4"
        fresh = await sb.commands.run("pwd; echo ${COLOR:-unset}")
        assert text(fresh) == "/\nunset\n"  # a plain command shares nothing with the session
        await sb.commands.delete_session(session)
        await sb.kill()
        await sb.close()

    run(flow())


def test_a_code_context_keeps_a_variable(config: ConnectionConfig) -> None:
    async def flow() -> None:
        sb = await Sandbox.create("python:3.11", connection_config=config)
        interpreter = await CodeInterpreter.create(sb, skip_health_check=True)
        context = await interpreter.codes.create_context(SupportedLanguage.PYTHON)
        first = await interpreter.codes.run("answer = 6 * 7\nprint('set')", context=context)
        assert text(first) == "set\n" and first.error is None
        second = await interpreter.codes.run("answer + 1", context=context)
        assert [r.text for r in second.result] == ["43"] and second.execution_count == 2
        failed = await interpreter.codes.run("1 / 0", context=context)
        assert failed.error is not None and failed.error.name == "ZeroDivisionError"
        bash = await interpreter.codes.create_context(SupportedLanguage.BASH)
        await interpreter.codes.run("cd /tmp; export N=5", context=bash)
        assert text(await interpreter.codes.run("echo $N $(pwd)", context=bash)) == "5 /tmp\n"
        listed = await interpreter.codes.list_contexts(SupportedLanguage.PYTHON)
        assert [c.id for c in listed] == [context.id]
        await interpreter.codes.delete_context(context.id)
        with pytest.raises(SandboxApiException) as gone:
            await interpreter.codes.get_context(context.id)
        assert gone.value.status_code == 404
        await sb.kill()
        await sb.close()

    run(flow())


def test_the_strict_health_check_passes_and_each_language_runs(mock: OpenSandboxMock, srv: MockServer) -> None:
    """The SDK's own health check finds Jupyter's port; python, bash and (where ``node`` is) javascript run."""
    has_node = shutil.which("node") is not None  # the sandbox sees the host's system folders

    async def flow() -> None:
        sb = await Sandbox.create(
            "opensandbox/code-interpreter:v1.1.0", connection_config=mock.connection_config(srv.url)
        )
        interpreter = await CodeInterpreter.create(sb, ready_timeout=timedelta(seconds=20))
        assert await interpreter.is_healthy()
        python = await interpreter.codes.run("import sys; sys.version_info[0]", language=SupportedLanguage.PYTHON)
        assert [r.text for r in python.result] == ["3"]
        bash = await interpreter.codes.run("echo $((6 * 7))", language=SupportedLanguage.BASH)
        assert text(bash) == "42\n"
        if has_node:
            js = await interpreter.codes.create_context(SupportedLanguage.JAVASCRIPT)
            first = await interpreter.codes.run("let n = 6 * 7; console.log('set')", context=js)
            assert text(first) == "set\n" and first.error is None
            second = await interpreter.codes.run("n + 1", context=js)
            assert [r.text for r in second.result] == ["43"]
            failed = await interpreter.codes.run("null.x", context=js)
            assert failed.error is not None and failed.error.name == "TypeError"
            assert all("node:" not in line for line in failed.error.traceback)  # the kernel's own frames are cut
        await sb.kill()
        await sb.close()

    run(flow())
    if not has_node:
        pytest.skip("no node on this host: javascript contexts were not tried")


@pytest.mark.parametrize("mode", ["dns", "dns+nft"])
def test_the_sidecar_modes_and_a_patch_during_a_connection_loop(mode: str) -> None:
    mock = OpenSandboxMock(seed=22, api_key=API_KEY, runtime="linux", dns=DnsTable(NAMES), enforcement_mode=mode)

    async def flow(cfg: ConnectionConfig) -> None:
        policy = NetworkPolicy(default_action="deny", egress=[NetworkRule(action="allow", target="pypi.org")])
        sb = await Sandbox.create("python:3.11", connection_config=cfg, network_policy=policy)
        probes = await sb.commands.run(
            "curl -s -o /dev/null -m 3 http://pypi.org/; echo allowed=$?; getent hosts evil.example.com; "
            "echo denied=$?; curl -s -o /dev/null -m 3 http://203.0.113.11/; echo raw=$?"
        )
        expected_raw = "raw=0" if mode == "dns" else "raw=7"  # dns: names only, raw addresses pass
        assert f"allowed=0\ndenied=2\n{expected_raw}\n" == text(probes)
        loop = f"exec python3 -c '{CONNECT_LOOP}' pypi.org 80 1.5 > /tmp/loop.log"
        await sb.commands.run(loop, opts=RunCommandOpts(background=True))

        async def started() -> bool:
            return "ok" in text(await sb.commands.run("cat /tmp/loop.log"))

        await wait_for(started)
        await sb.patch_egress_rules([NetworkRule(action="deny", target="pypi.org")])
        returned_at = time.time()
        await asyncio.sleep(1.6)
        log = await sb.files.read_file("/tmp/loop.log")
        before, refused_after, late = after_swap(log, returned_at)
        assert before > 0 and refused_after > 0
        assert late == [], f"connections to the denied host succeeded after the PATCH returned: {late}"
        await sb.kill()
        await sb.close()

    try:
        with mock.server() as server:
            run(flow(mock.connection_config(server.url)))
    finally:
        mock.close()


def test_a_real_oom_kill_fails_the_sandbox_and_nemo_gym_sees_it(mock: OpenSandboxMock, srv: MockServer) -> None:
    gym = importlib.import_module("nemo_gym.sandbox.providers.opensandbox")
    from nemo_gym.sandbox.providers.base import SandboxSpec

    async def scenario() -> None:
        p = gym.OpenSandboxProvider(
            connection={"domain": srv.url.split("://")[1], "protocol": "http", "api_key": API_KEY,
                        "transport_backend": "httpx", "request_timeout_s": 10},
            create={"retries": 0, "connect_poll_s": 0.2},
            operations={"retries": 1, "retry_delay_s": 0.05, "retry_max_delay_s": 0.1},
            attribution={"team": "t", "user": "u", "workload": "w", "run": "r"},
        )  # fmt: skip
        handle = await p.create(SandboxSpec(image="python:3.11", resources={"memory_mib": 128}))
        hog = await p.exec(handle, "python3 -c 'b = []\nwhile True: b.append(bytearray(16 << 20))'")
        assert hog.return_code == 137
        record = mock.sandbox(handle.sandbox_id)
        assert record.state == "Failed" and (record.reason, record.message) == mock.profile.oom_status()
        # The default status is real 1.1.1 Docker's wording, which NeMo Gym's OOM pattern does not name.
        with pytest.raises(gym.provider.SandboxBackendUnreachableError, match="likely dead") as caught:
            await p.exec(handle, "echo after")
        assert "OOM-killed" not in str(caught.value)
        await p.close(handle)
        await p.aclose()

    run(scenario())


def test_metrics_pause_and_pty_refusals(mock: OpenSandboxMock, config: ConnectionConfig) -> None:
    async def flow() -> None:
        sb = await Sandbox.create("python:3.11", connection_config=config, resource={"memory": "1Gi"})
        idle = await sb.get_metrics()
        hog = "exec python3 -c 'import time; b = bytearray(200 << 20); b[::4096] = b\"x\" * len(b[::4096]); time.sleep(60)'"
        await sb.commands.run(hog, opts=RunCommandOpts(background=True))

        async def grown() -> bool:
            return bool((await sb.get_metrics()).memory_used_in_mib > idle.memory_used_in_mib + 150)

        await wait_for(grown)
        assert (await sb.get_metrics()).memory_total_in_mib == 1024
        await sb.commands.run(
            "exec sh -c 'while :; do date +%s%N >> /tmp/ticks; sleep 0.02; done'", opts=RunCommandOpts(background=True)
        )
        linux = mock.linux
        assert linux is not None
        real = linux.host.get(sb.id)
        assert real is not None

        async def ticking() -> bool:
            try:
                return len(real.read_file("/tmp/ticks").splitlines()) >= 2
            except OSError:
                return False

        await wait_for(ticking)  # the loop runs before the pause (a loaded machine may start it late)
        await sb.pause()
        assert real is not None and real.state == "frozen"
        ticks = real.read_file("/tmp/ticks")
        await asyncio.sleep(0.2)
        assert real.read_file("/tmp/ticks") == ticks
        await Sandbox.resume(sb.id, connection_config=config)
        assert real.state == "running"
        endpoint = await sb.get_endpoint(44772)
        base = f"http://{endpoint.endpoint}"
        headers = {**endpoint.headers, "OPEN-SANDBOX-API-KEY": API_KEY}
        async with httpx.AsyncClient(base_url=base, headers=headers) as http:
            missing = await http.get("/pty/nope")
            assert missing.status_code == 404 and missing.json()["code"] == "CONTEXT_NOT_FOUND"
            created = await http.post("/pty", json={"cwd": "/tmp"})
            assert created.status_code == 201
            session = created.json()["session_id"]
            status = (await http.get(f"/pty/{session}")).json()
            assert status == {"session_id": session, "running": True, "output_offset": 0}
            bad_cwd = await http.post("/pty", json={"cwd": "/no/such/dir"})
            assert bad_cwd.status_code >= 400
            assert (await http.delete(f"/pty/{session}")).status_code == 200
            assert (await http.get(f"/pty/{session}")).status_code == 404
        await sb.kill()
        await sb.close()

    run(flow())


def test_escapes_through_the_apis_are_refused(config: ConnectionConfig, srv: MockServer) -> None:
    async def flow() -> None:
        sb = await Sandbox.create("python:3.11", connection_config=config)
        for path in ("/etc/shadow", "/proc/1/environ", "/../../../etc/shadow"):
            with pytest.raises(SandboxApiException):
                await sb.files.read_file(path)
        await sb.commands.run("ln -s / /tmp/up")
        with pytest.raises(SandboxApiException):
            await sb.files.write_file("/tmp/up/usr/bin/evil", "x")
        assert (await sb.commands.run(f"cat {__file__}")).exit_code != 0  # the host's files are not there
        port = srv.url.rsplit(":", 1)[1]
        reach = await sb.commands.run(f"curl -s -m 2 http://127.0.0.1:{port}/v1/sandboxes")
        assert reach.exit_code != 0  # the host's loopback is not the sandbox's
        processes = text(await sb.commands.run("ps -e -o comm=")).split()
        assert set(processes) <= {"python3", "bash", "sh", "ps"} and len(processes) <= 4, processes
        await sb.kill()
        await sb.close()

    run(flow())


HEADER_ECHO = (
    "import http.server, json, sys\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    def do_GET(self):\n"
    "        body = json.dumps({k.lower(): v for k, v in self.headers.items()}).encode()\n"
    "        self.send_response(200); self.send_header('Content-Length', str(len(body))); self.end_headers()\n"
    "        self.wfile.write(body)\n"
    "http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()\n"
)


def test_a_real_app_behind_the_server_proxy_gets_no_credentials(mock: OpenSandboxMock, srv: MockServer) -> None:
    """The linux runtime's relay gets the headers the proxy rule leaves: a real process in the sandbox sees no
    credentials and X-Forwarded-* rebuilt, through the proxy; directly, the request as sent."""
    config = mock.connection_config(srv.url, use_server_proxy=True)

    async def flow() -> None:
        sb = await Sandbox.create("python:3.11", connection_config=config)
        await sb.files.write_file("/workspace/echo.py", HEADER_ECHO)
        await sb.commands.run("exec python3 /workspace/echo.py 8002", opts=RunCommandOpts(background=True))
        probe = "python3 -c \"import socket; socket.create_connection(('127.0.0.1', 8002), 1)\""

        async def up() -> bool:
            return bool((await sb.commands.run(probe)).exit_code == 0)

        await wait_for(up)
        sent = {"OPEN-SANDBOX-API-KEY": API_KEY, "Authorization": "Bearer t", "Cookie": "a=1", "X-App": "kept",
                "X-Forwarded-Host": "spoofed.example", "X-Real-IP": "198.51.100.7"}  # fmt: skip
        seen = httpx.get(f"{srv.url}/v1/sandboxes/{sb.id}/proxy/8002/", headers=sent).json()
        assert not {"open-sandbox-api-key", "authorization", "cookie", "x-real-ip"} & set(seen), seen
        assert (seen["x-app"], seen["x-forwarded-host"], seen["x-forwarded-proto"]) == (
            "kept",
            httpx.URL(srv.url).netloc.decode(),
            "http",
        )
        direct = httpx.get(f"{srv.url}/direct/{sb.id}/8002/", headers=sent).json()
        assert (direct["authorization"], direct["x-real-ip"]) == ("Bearer t", "198.51.100.7")
        await sb.kill()
        await sb.close()

    run(flow())
