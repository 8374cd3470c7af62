"""The TensorLake SDK on the linux runtime: what only real processes can show.

Real programs (``python3``, a shell ``for`` loop), stdin, signals a program handles, timeouts in real time,
a PTY session that echoes typed input, a TCP tunnel, a background server reached through the ingress (with
its auth rules) and a WebSocket through it, suspend freezing the processes, an OOM kill, delete killing the
tree, a PATCH swapping the firewall while a loop of connections runs, and escapes tried through the APIs.
"""

from __future__ import annotations

import socket
import time
from typing import Any

import httpx
import pytest
import websockets.sync.client as ws_client
from tensorlake.sandbox import CommandExitReason, NetworkConfig, Sandbox, SandboxError

from mockserver.tensorlake import TensorLakeMock

from ..linux_programs import CONNECT_LOOP, WS_ECHO, after_swap
from .conftest import API_KEY

pytestmark = pytest.mark.runtime("linux")


@pytest.fixture
def runtime() -> str:
    """Every test here runs on the linux runtime."""
    return "linux"


def wait_for(predicate: Any, timeout: float = 10.0) -> None:
    """Poll ``predicate`` until it is true (fail after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "the condition never became true"
        time.sleep(0.02)


def listening(sandbox: Sandbox, port: int) -> bool:
    """Tell whether something listens on ``port`` inside the sandbox."""
    probe = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=1).close()"
    return sandbox.run("python3", ["-c", probe]).exit_code == 0


def test_real_programs_and_shell_loops(tl: dict[str, Any]) -> None:
    sandbox = Sandbox.create(**tl)
    assert sandbox.run("python3", ["-c", "print(6*7)"]).stdout == "42"
    loop = sandbox.run("bash", ["-c", "for i in 1 2 3; do echo $((i * i)); done; exit 4"])
    assert (loop.stdout, loop.exit_code) == ("1\n4\n9", 4)
    env = sandbox.run("sh", ["-c", 'echo "$GREETING from $(pwd)"'], env={"GREETING": "hi"}, working_dir="/tmp")
    assert env.stdout == "hi from /tmp"
    missing = sandbox.run("no-such-program")
    assert missing.exit_code == 127 and "not found" in missing.stderr


def test_stdin_signals_and_a_real_timeout(tl: dict[str, Any]) -> None:
    sandbox = Sandbox.create(**tl)
    cat = sandbox.start_process("cat", stdin_mode="pipe").value
    sandbox.write_stdin(cat.pid, b"typed line\n")
    sandbox.close_stdin(cat.pid)
    wait_for(lambda: sandbox.get_process(cat.pid).value.status.value == "exited")
    assert sandbox.get_stdout(cat.pid).lines == ["typed line"]
    trap = sandbox.start_process("bash", ["-c", "trap 'echo got TERM' TERM; echo ready; while :; do sleep 0.05; done"])
    wait_for(lambda: sandbox.get_stdout(trap.value.pid).lines == ["ready"])
    assert sandbox.send_signal(trap.value.pid, 15).success
    wait_for(lambda: "got TERM" in sandbox.get_stdout(trap.value.pid).lines)
    assert sandbox.get_process(trap.value.pid).value.status.value == "running"
    sandbox.kill_process(trap.value.pid)
    killed = sandbox.get_process(trap.value.pid).value
    assert killed.status.value == "signaled" and killed.signal == 9
    slow = sandbox.run("sh", ["-c", "echo started; sleep 30"], timeout=0.5)
    assert slow.timed_out and slow.exit_code == -9 and slow.stdout == "started"


def test_a_pty_session_echoes_what_is_typed(tl: dict[str, Any]) -> None:
    sandbox = Sandbox.create(**tl)
    seen: list[bytes] = []
    pty = sandbox.create_pty("/bin/bash", ["--norc", "-i"], rows=30, cols=100, on_data=seen.append)
    pty.send_input("echo typed-$((6*7))\n")
    wait_for(lambda: b"typed-42" in b"".join(seen))
    pty.send_input("stty size\n")
    wait_for(lambda: b"30 100" in b"".join(seen))
    pty.resize(120, 40)
    pty.send_input("stty size; exit 5\n")
    assert pty.wait(timeout=10) == 5
    assert b"40 120" in b"".join(seen)


def test_a_tcp_tunnel_reaches_a_port_inside(tl: dict[str, Any]) -> None:
    sandbox = Sandbox.create(**tl)
    server = "import socket\ns=socket.create_server(('127.0.0.1', 7777))\nwhile True:\n c,_=s.accept(); c.sendall(b'pong:'+c.recv(64)); c.close()"
    sandbox.start_process("python3", ["-c", server])
    wait_for(lambda: listening(sandbox, 7777))
    with sandbox.create_tunnel(7777, local_port=0) as tunnel:
        conn = socket.create_connection(("127.0.0.1", tunnel.local_port), timeout=10)
        try:
            conn.sendall(b"ping")
            assert conn.recv(64) == b"pong:ping"
        finally:
            conn.close()


def test_a_background_server_behind_the_ingress(
    tl: dict[str, Any], server_url: str, http: httpx.Client, anon: httpx.Client
) -> None:
    sandbox = Sandbox.create(**tl, exposed_ports=[8000, 8001])
    sandbox.write_file("/workspace/index.html", b"served from the sandbox\n")
    sandbox.start_process("python3", ["-m", "http.server", "8000", "--bind", "127.0.0.1"], working_dir="/workspace")
    sandbox.start_process("python3", ["-c", WS_ECHO, "8001"])
    wait_for(lambda: listening(sandbox, 8000) and listening(sandbox, 8001))
    host = f"8000-{sandbox.sandbox_id}.sandbox.localhost"
    page = anon.get("/index.html", headers={"host": host, "authorization": f"Bearer {API_KEY}"})
    assert (page.status_code, page.text) == (200, "served from the sandbox\n")
    assert anon.get("/index.html", headers={"host": host}).status_code == 401
    closed = anon.get("/", headers={"host": f"9000-{sandbox.sandbox_id}.sandbox.localhost"})
    assert closed.status_code == 403 and closed.json()["code"] == "PORT_NOT_EXPOSED"
    http.patch(f"/sandboxes/{sandbox.sandbox_id}", json={"allow_unauthenticated_access": True}).raise_for_status()
    assert anon.get("/index.html", headers={"host": host}).status_code == 200
    port = int(server_url.rsplit(":", 1)[1])
    ws_url = f"ws://8001-{sandbox.sandbox_id}.sandbox.localhost:{port}/chat?room=1"
    with ws_client.connect(ws_url, sock=socket.create_connection(("127.0.0.1", port))) as ws:
        ws.send("hello")
        assert ws.recv(timeout=10) == "echo:hello"


def test_suspend_freezes_and_resume_thaws(mock: TensorLakeMock, tl: dict[str, Any]) -> None:
    sandbox = Sandbox.create(**tl, name="frozen")
    sandbox.start_process("sh", ["-c", "while :; do date +%s%N >> /tmp/ticks; sleep 0.02; done"])
    wait_for(lambda: sandbox.run("sh", ["-c", "test $(wc -l < /tmp/ticks) -gt 2"]).exit_code == 0)
    sandbox.suspend()
    linux = mock.linux
    assert linux is not None
    real = linux.host.get(sandbox.sandbox_id)
    assert real is not None and real.state == "frozen"
    ticks = real.read_file("/tmp/ticks")
    time.sleep(0.2)
    assert real.read_file("/tmp/ticks") == ticks  # nothing ran while suspended
    sandbox.resume()
    assert real.state == "running"
    wait_for(lambda: len(real.read_file("/tmp/ticks")) > len(ticks))


def test_an_oom_kill_is_reported_as_such(tl: dict[str, Any]) -> None:
    sandbox = Sandbox.create(**tl, memory_mb=128)
    hog = sandbox.run("python3", ["-c", "blocks = []\nwhile True: blocks.append(bytearray(16 << 20))"])
    assert hog.reason == CommandExitReason.OOM_KILLED and hog.exit_code == -9
    assert sandbox.run("echo", ["still", "here"]).stdout == "still here"


def test_delete_kills_the_whole_tree(mock: TensorLakeMock, tl: dict[str, Any]) -> None:
    sandbox = Sandbox.create(**tl)
    sandbox.start_process("sh", ["-c", "sleep 300 & sleep 300 & wait"])
    linux = mock.linux
    assert linux is not None
    real = linux.host.get(sandbox.sandbox_id)
    assert real is not None
    wait_for(lambda: len(real.host_pids()) >= 4)
    pids = real.host_pids()
    sandbox.terminate()
    assert linux.host.get(sandbox.sandbox_id) is None
    wait_for(lambda: not any(_alive(pid) for pid in pids))


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_patch_swaps_the_firewall_while_connections_run(mock: TensorLakeMock, tl: dict[str, Any]) -> None:
    mock.dns.update({"busy.example.net": ["198.51.100.30"]})
    sandbox = Sandbox.create(**tl)
    loop = sandbox.start_process("python3", ["-c", CONNECT_LOOP, "busy.example.net", "80", "1.5"]).value
    wait_for(lambda: any(line.startswith("ok") for line in sandbox.get_stdout(loop.pid).lines))
    sandbox.update(network=NetworkConfig(deny_out=["busy.example.net"]))
    returned_at = time.time()
    wait_for(lambda: sandbox.get_process(loop.pid).value.status.value == "exited")
    before, refused_after, late = after_swap("\n".join(sandbox.get_stdout(loop.pid).lines), returned_at)
    assert before > 0 and refused_after > 0
    assert late == [], f"connections to the denied host succeeded after the PATCH returned: {late}"


def test_escapes_through_the_apis_are_refused(tl: dict[str, Any], server_url: str) -> None:
    sandbox = Sandbox.create(**tl)
    for path in ("/etc/shadow", "/proc/1/environ", "/../../etc/shadow"):
        with pytest.raises(SandboxError):
            sandbox.read_file(path)
    sandbox.run("sh", ["-c", "ln -s / /tmp/up; ln -s /etc/hostname /tmp/name"])
    assert sandbox.read_file("/tmp/name").value.decode().strip() == sandbox.sandbox_id
    with pytest.raises(SandboxError):
        sandbox.write_file("/tmp/up/usr/bin/evil", b"x")
    assert sandbox.run("cat", [__file__]).exit_code != 0  # the host's files are not there
    port = server_url.rsplit(":", 1)[1]
    reach = sandbox.run("curl", ["-s", "-m", "2", f"http://127.0.0.1:{port}/sandboxes"])
    assert reach.exit_code != 0  # the host's loopback is not the sandbox's
    processes = sandbox.run("ps", ["-e", "-o", "comm="]).stdout.split()
    assert set(processes) <= {"python3", "ps"} and len(processes) <= 3, processes  # its init and ps: nothing else


def test_dumping_the_state_makes_no_sandbox_and_a_restore_brings_the_files(
    mock: TensorLakeMock, tl: dict[str, Any]
) -> None:
    untouched = Sandbox.create(**tl)
    used = Sandbox.create(**tl)
    used.write_file("/workspace/kept.txt", b"kept")
    linux = mock.linux
    assert linux is not None
    state = mock.dump_state()
    assert linux.host.get(untouched.sandbox_id) is None  # the dump did not make it
    dumped = {s["id"]: s["fs"] for s in state["sandboxes"]}
    assert any(e["path"] == "/workspace/kept.txt" for e in dumped[used.sandbox_id]["entries"])
    snapshot = used.checkpoint()
    assert snapshot is not None
    restored = Sandbox.create(**tl, snapshot_id=snapshot.snapshot_id)
    assert restored.run("cat", ["/workspace/kept.txt"]).stdout == "kept"
