"""``sandproof serve`` in bridge network mode: the endpoints' host ports answer while their sandbox lives.

The real ``opensandbox`` SDK creates a sandbox on a server started from a bridge-mode file, runs a command
through the direct endpoint it was handed (``127.0.0.1:{hostPort}/proxy/44772``), reaches port 8080 on its own
host port, and after the delete the host ports refuse connections.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import httpx
from opensandbox import Sandbox
from opensandbox.config import ConnectionConfig

from tests.serving import refused, served_opensandbox

KEY = "bridge-key"


def _free_range() -> int:
    """Return the low end of 101 ports whose first two are free now (the mock draws the lowest pair)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            low = int(probe.getsockname()[1])
        if low + 100 > 65535:
            continue
        with socket.socket() as other:
            try:
                other.bind(("127.0.0.1", low + 1))
            except OSError:
                continue
        return low
    raise AssertionError("no two free adjacent ports")


def test_bridge_host_ports_serve_the_sandbox_until_it_is_deleted(tmp_path: Path) -> None:
    low = _free_range()
    config = tmp_path / "server.toml"
    config.write_text(
        '[runtime]\ntype = "docker"\nexecd_image = "opensandbox/execd:v1.1.0"\n'
        f'[server]\nhost = "127.0.0.1"\napi_key = "{KEY}"\n'
        f'[docker]\nnetwork_mode = "bridge"\nport_range_min = {low}\nport_range_max = {low + 100}\n'
    )
    with served_opensandbox("--opensandbox-config", str(config)) as url:
        cfg = ConnectionConfig(domain=url.split("://", 1)[1], api_key=KEY, disable_metrics=True)

        async def flow() -> str:
            sb = await Sandbox.create("python:3.11", connection_config=cfg)
            execd = await sb.get_endpoint(44772)
            assert execd.endpoint == f"127.0.0.1:{low}/proxy/44772"
            ran = await sb.commands.run("echo through the host port")
            assert ran.exit_code == 0 and ran.logs.stdout[0].text == "through the host port\n"
            web = await sb.get_endpoint(8080)
            assert web.endpoint == f"127.0.0.1:{low + 1}"
            echoed = httpx.get(f"http://{web.endpoint}/status?x=1").json()
            assert (echoed["sandbox_id"], echoed["port"], echoed["path"]) == (sb.id, 8080, "/status")
            other = httpx.get(f"http://127.0.0.1:{low}/proxy/9000/hello").json()
            assert (other["sandbox_id"], other["port"], other["path"]) == (sb.id, 9000, "/hello")
            await sb.kill()
            await sb.close()
            return sb.id

        asyncio.run(flow())
        assert refused(low) and refused(low + 1)
