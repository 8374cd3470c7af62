"""``opensandbox-mcp`` 1.1.1 (in ``.venv-clients``) driven over stdio with JSON-RPC against ``sandproof serve``.

One MCP server process per runtime: initialize, tools/list, then tool calls through a sandbox's lifecycle (create,
run a command, write and read a file, an endpoint, list, kill, list again). Every answer is checked, and none of the
server's requests may miss every route of the mock.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.clients.flows import CLIENTS_VENV, RUNTIMES, ServedMocks, clients_python_or_skip, judge
from tests.clients.mcp_client import PROTOCOL_VERSION, McpError, StdioMcpClient

pytestmark = pytest.mark.clients

#: The tools a lifecycle needs; opensandbox-mcp 1.1.1 lists them among its 19.
TOOLS = {
    "sandbox_create",
    "sandbox_kill",
    "sandbox_list",
    "command_run",
    "file_write",
    "file_read",
    "sandbox_get_endpoint",
}


def conversation(client: StdioMcpClient) -> list[dict[str, Any]]:
    """Drive the server through the lifecycle; return one step line per exchange (as the other flows print)."""
    lines: list[dict[str, Any]] = []

    def step(name: str, call: Any) -> Any:
        try:
            value = call()
        except McpError as exc:
            lines.append({"step": name, "ok": False, "error": str(exc)})
            return None
        lines.append({"step": name, "ok": True, "value": value})
        return value

    init = {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "sandproof", "version": "1"},
    }
    step("initialize", lambda: client.request("initialize", init))
    client.notify("notifications/initialized")
    step("tools_list", lambda: sorted(tool["name"] for tool in client.request("tools/list")["tools"]))
    metadata = {"suite": "clients-mcp"}
    created = step("create", lambda: client.call_tool("sandbox_create", {"image": "python:3.11", "metadata": metadata}))
    if not created or created["error"]:
        return lines
    sid = created["value"]["sandbox_id"]
    step("run", lambda: client.call_tool("command_run", {"sandbox_id": sid, "command": "echo hello mcp"}))
    step("run_exit_code", lambda: client.call_tool("command_run", {"sandbox_id": sid, "command": "sh -c 'exit 6'"}))
    step(
        "file_write",
        lambda: client.call_tool("file_write", {"sandbox_id": sid, "path": "/tmp/mcp.txt", "content": "via mcp"}),
    )
    step("file_read", lambda: client.call_tool("file_read", {"sandbox_id": sid, "path": "/tmp/mcp.txt"}))
    step("endpoint", lambda: client.call_tool("sandbox_get_endpoint", {"sandbox_id": sid, "port": 8000}))
    listing = {"filter": {"metadata": metadata}}
    step("list", lambda: client.call_tool("sandbox_list", listing))
    step("kill", lambda: client.call_tool("sandbox_kill", {"sandbox_id": sid}))
    step("list_after_kill", lambda: client.call_tool("sandbox_list", listing))
    return lines


def tool_ok(check: Any) -> Any:
    """Expect a tool answer that is not an error and whose value ``check`` accepts."""
    return lambda answer: answer["error"] is False and check(answer["value"])


def expected(sid: str) -> dict[str, Any]:
    """Return each exchange's expected answer (``sid``: the sandbox the create answered)."""

    def created(value: dict[str, Any]) -> bool:
        info = value["info"]
        return (
            info["id"] == sid and info["status"]["state"] == "Running" and info["metadata"] == {"suite": "clients-mcp"}
        )

    def listed(value: dict[str, Any]) -> bool:
        return [item["id"] for item in value["sandbox_infos"]] == [sid]

    return {
        "initialize": lambda r: r["serverInfo"]["name"] and "tools" in r["capabilities"] and r["protocolVersion"],
        "tools_list": lambda names: set(names) >= TOOLS,
        "create": tool_ok(created),
        "run": tool_ok(lambda v: v["exit_code"] == 0 and [m["text"] for m in v["logs"]["stdout"]] == ["hello mcp\n"]),
        "run_exit_code": tool_ok(lambda v: v["exit_code"] == 6 and v["error"]["value"] == "6"),
        "file_write": tool_ok(lambda v: v == {"status": "written"}),
        "file_read": tool_ok(lambda v: v == {"path": "/tmp/mcp.txt", "content": "via mcp"}),
        "endpoint": tool_ok(lambda v: v["endpoint"].endswith(f"{sid}/8000") and v["headers"]),
        "list": tool_ok(listed),
        "kill": tool_ok(lambda v: v == {"status": "killed"}),
        "list_after_kill": tool_ok(lambda v: v["sandbox_infos"] == []),
    }


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_mcp_server_lifecycle(runtime: str, mocks: ServedMocks) -> None:
    clients_python_or_skip("opensandbox_mcp")
    served = mocks(runtime)
    since = served.journal_seq("opensandbox")
    key = f"mcp-{runtime}"
    argv = [str(CLIENTS_VENV / "bin" / "opensandbox-mcp"), "--domain", served.opensandbox_domain, "--api-key", key]
    client = StdioMcpClient(argv, served.env(key))
    try:
        lines = conversation(client)
    finally:
        client.close()
    sid = next(
        (str(line["value"]["value"]["sandbox_id"]) for line in lines if line["step"] == "create" and line["ok"]), ""
    )
    print(judge(f"opensandbox-mcp on {runtime}", lines, expected(sid)))
    assert served.route_misses("opensandbox", since) == []
