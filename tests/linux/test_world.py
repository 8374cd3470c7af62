"""The world namespace: DNS from the table, identifiable test hosts, and no way out to the host."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
from collections.abc import Iterator

import pytest

from mockserver.linux import LinuxRuntime, LinuxSandbox, dnswire
from mockserver.linux.addresses import RESOLVER
from mockserver.linux.kernel import socket_in

from .conftest import needs_runtime

pytestmark = needs_runtime


def _host_addresses() -> list[str]:
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True, text=True)
    return [line.split()[3].split("/")[0] for line in out.stdout.splitlines() if len(line.split()) > 3]


@contextlib.contextmanager
def _listeners() -> Iterator[list[tuple[socket.socket, str, int]]]:
    """Host listeners on loopback and every global address of the host."""
    made = []
    for address in ["127.0.0.1", *_host_addresses()]:
        sock = socket.socket()
        sock.bind((address, 0))
        sock.listen()
        sock.setblocking(False)
        made.append((sock, address, sock.getsockname()[1]))
    try:
        yield made
    finally:
        for sock, _, _ in made:
            sock.close()


def _accepted_nothing(listeners: list[tuple[socket.socket, str, int]]) -> bool:
    for sock, _, _ in listeners:
        try:
            conn, _ = sock.accept()
        except BlockingIOError:
            continue
        conn.close()
        return False
    return True


PROBE = """
import json, socket, sys
results = {}
for host, port in json.loads(sys.argv[1]):
    try:
        socket.create_connection((host, port), timeout=3).close()
        results[f"{host}:{port}"] = "connected"
    except OSError as exc:
        results[f"{host}:{port}"] = type(exc).__name__
print(json.dumps(results))
"""


def probe(sandbox: LinuxSandbox, targets: list[tuple[str, int]]) -> dict[str, str]:
    """Try a TCP connection to each target from inside the sandbox; return the outcome per target."""
    result = sandbox.run(["python3", "-c", PROBE, json.dumps(targets)], timeout=60)
    assert result.exit_code == 0, result.stderr
    outcome: dict[str, str] = json.loads(result.stdout)
    return outcome


def test_nothing_on_the_host_is_reachable_from_the_world_or_a_sandbox(
    runtime: LinuxRuntime, sandbox: LinuxSandbox
) -> None:
    assert runtime.world is not None
    with _listeners() as listeners:
        for _, address, port in listeners:
            world_sock = socket_in(runtime.world.fd)
            world_sock.settimeout(3)
            with pytest.raises(OSError), world_sock:
                world_sock.connect((address, port))
        outcome = probe(sandbox, [(address, port) for _, address, port in listeners])
        assert all(result != "connected" for result in outcome.values()), outcome
        assert _accepted_nothing(listeners)


def test_the_namespaces_have_no_link_but_their_own(runtime: LinuxRuntime, sandbox: LinuxSandbox) -> None:
    assert runtime.world is not None
    links = json.loads(subprocess.run(["ip", "-n", runtime.world.name, "-j", "link"], capture_output=True).stdout)
    names = {link["ifname"] for link in links}
    assert "lo" in names and all(n == "lo" or n.startswith(f"sp{runtime.id}x") for n in names), names
    inner = json.loads(subprocess.run(["ip", "-n", sandbox.netns_name, "-j", "link"], capture_output=True).stdout)
    assert {link["ifname"] for link in inner} == {"lo", "eth0"}
    routes = subprocess.run(
        ["ip", "-n", runtime.world.name, "route", "show", "table", "all"], capture_output=True, text=True
    )
    for line in routes.stdout.splitlines():
        if " dev " in line:
            device = line.split(" dev ")[1].split()[0]
            assert device == "lo" or device.startswith(f"sp{runtime.id}x"), line
    assert "unreachable default" in routes.stdout


def test_dns_answers_from_the_table(runtime: LinuxRuntime, sandbox: LinuxSandbox) -> None:
    result = sandbox.run("getent hosts example.com; getent hosts nothing.invalid; echo rc=$?")
    assert result.stdout == b"203.0.113.10    example.com\nrc=2\n"
    synthetic = runtime.dns.resolve("some-unknown-name.example.org")[0]
    assert sandbox.run("getent ahostsv4 some-unknown-name.example.org | head -1").stdout.startswith(synthetic.encode())
    assert runtime.world is not None
    assert any(q.source == sandbox.address and q.name == "example.com" for q in runtime.world.queries)


def test_dns_over_tcp(sandbox: LinuxSandbox) -> None:
    script = f"""
import socket, struct, sys
sys.path.insert(0, "/.sandproof")
q = bytes.fromhex("{dnswire.build_query(42, "pypi.org").hex()}")
s = socket.create_connection(("{RESOLVER}", 53), timeout=5)
s.sendall(struct.pack("!H", len(q)) + q)
n = struct.unpack("!H", s.recv(2))[0]
data = b""
while len(data) < n:
    data += s.recv(n - len(data))
print(data.hex())
"""
    answer = bytes.fromhex(sandbox.run(["python3", "-c", script]).stdout.decode().strip())
    assert dnswire.parse_response(answer) == (42, dnswire.NOERROR, ["198.51.100.20"])


def test_http_test_hosts_answer_identifiably(sandbox: LinuxSandbox) -> None:
    result = sandbox.run(
        "curl -sS -m 10 http://example.com/some/path; curl -sS -m 10 -o /dev/null -w '%{http_code}' http://192.0.2.9:8080/status/404"
    )
    assert result.stdout == (
        b"sandproof world host 203.0.113.10:80\nmethod: GET\npath: /some/path\nhost: example.com\n404"
    ), result.stderr


def test_tcp_echo_on_a_world_host(sandbox: LinuxSandbox) -> None:
    script = "import socket; s = socket.create_connection(('198.51.100.77', 7), timeout=5); s.sendall(b'ping-42'); print(s.recv(100).decode())"
    assert sandbox.run(["python3", "-c", script]).stdout == b"ping-42\n"


def test_other_table_addresses_become_world_hosts_and_the_rest_is_unreachable(
    runtime: LinuxRuntime, sandbox: LinuxSandbox
) -> None:
    runtime.dns.update({"intranet.test": ["10.20.30.40"]})
    before = probe(sandbox, [("10.20.30.40", 80)])
    assert before == {"10.20.30.40:80": "OSError"}  # not served until the DNS hands it out
    assert sandbox.run("curl -sS -m 10 http://intranet.test/").stdout.startswith(b"sandproof world host 10.20.30.40:80")
    assert probe(sandbox, [("10.20.30.41", 80)]) == {"10.20.30.41:80": "OSError"}


def test_sandboxes_cannot_reach_each_other(runtime: LinuxRuntime, sandbox: LinuxSandbox) -> None:
    other = runtime.create_sandbox()
    try:
        other.start_process(["python3", "-m", "http.server", "8000", "--bind", "0.0.0.0"])
        assert sandbox.run(f"curl -s -m 3 http://{other.address}:8000/ ; echo rc=$?").stdout.endswith(b"rc=7\n")
    finally:
        other.destroy()


@pytest.mark.skipif(shutil.which("ping") is None, reason="ping is not installed")
def test_ping_ends(sandbox: LinuxSandbox) -> None:
    assert sandbox.run("ping -c 1 -W 5 192.0.2.1", timeout=30).exit_code == 0
