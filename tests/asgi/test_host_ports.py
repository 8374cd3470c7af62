"""Host-port listeners: a published port answers through the relayed app, an unpublished one refuses.

An in-process bridge-mode OpenSandbox mock on a manual clock: the endpoint lookup binds the sandbox's host
ports before its answer, a request on them reaches the sandbox's ports, and a timeout that passes (no request
at all) closes them on the next periodic reconcile; a port another process holds is reported, not fatal.
"""

from __future__ import annotations

import socket

import httpx

from mockserver.asgi.server import MockServer
from mockserver.core import VirtualClock
from mockserver.opensandbox import OpenSandboxMock
from mockserver.opensandbox.model.endpoints import PublishedPort
from mockserver.opensandbox.model.server_file import parse_server_file
from tests.serving import refused

CONFIG = '[runtime]\ntype = "docker"\nexecd_image = "e:1"\n[docker]\nnetwork_mode = "bridge"\n'


def _free_low() -> int:
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            low = int(probe.getsockname()[1])
        if low + 100 <= 65535:
            return low
    raise AssertionError("no free port")


def test_host_ports_listen_while_the_sandbox_lives_and_a_held_port_is_reported() -> None:
    low = _free_low()
    held = socket.socket()
    held.bind(("127.0.0.1", low + 1))  # another process's port: 8080's host port cannot be bound
    held.listen(1)
    clock = VirtualClock("manual")
    config = parse_server_file(CONFIG + f"port_range_min = {low}\nport_range_max = {low + 100}\n")
    mock = OpenSandboxMock(seed=3, api_key="k", clock=clock, config=config)
    reports: list[str] = []
    listeners = mock.host_port_listeners(report=reports.append, interval=0.05)
    assert listeners.host == "127.0.0.1"  # the file names no host: loopback, never any address
    body = {"image": {"uri": "python:3.11"}, "entrypoint": ["sleep"], "timeout": 60, "resourceLimits": {"cpu": "1"}}
    try:
        with (
            MockServer(listeners.in_step(mock.app)) as server,
            httpx.Client(base_url=server.url, headers={"OPEN-SANDBOX-API-KEY": "k"}) as api,
        ):
            listeners.start()
            sb = api.post("/v1/sandboxes", json=body).json()["id"]
            assert api.get(f"/v1/sandboxes/{sb}/endpoints/44772").json()["endpoint"].endswith(f":{low}/proxy/44772")
            answer = httpx.get(f"http://127.0.0.1:{low}/proxy/5000/x")  # bound before the endpoint was answered
            assert (answer.json()["sandbox_id"], answer.json()["port"], answer.json()["path"]) == (sb, 5000, "/x")
            assert httpx.get(f"http://127.0.0.1:{low}/files/info?path=/tmp").status_code == 200  # execd itself
            assert reports == [f"cannot listen on host port 127.0.0.1:{low + 1}: Address already in use; retrying"]
            assert listeners.ports() == {low: PublishedPort(sb, 44772)}
            clock.advance(60)  # the timeout passes; no request comes
            assert refused(low)
            assert listeners.ports() == {}
    finally:
        listeners.close()
        held.close()
