"""The TypeScript OpenSandbox SDK (``@alibaba-group/opensandbox``, npm) through a full flow against ``sandproof serve``.

One node process per runtime runs ``js/opensandbox_flow.cjs``: create (with a network policy and the credential
proxy), commands (output, env, exit code, handlers, cwd, background, a bash session), files, endpoints and a request
to the sandbox's port, metrics, the egress sidecar's policy and credential vault, renew, metadata, list, pause and
resume, kill. Every step's answer is checked; no request may miss every route of the mock, and the SDK may send no
field the mock does not know.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.clients.flows import JS, NODE_MODULES, RUNTIMES, ServedMocks, judge, node_or_skip, run_lines

pytestmark = pytest.mark.clients

PACKAGE = "@alibaba-group/opensandbox"
#: Steps that fail on a runtime for a reason being fixed elsewhere (each must still fail there).
GAPS: dict[str, dict[str, str]] = {}


def expected(runtime: str) -> dict[str, Any]:
    """Return each step's expected answer on ``runtime``."""

    def served_page(value: dict[str, Any]) -> bool:
        if runtime == "linux":  # python3 -m http.server runs in the sandbox and serves the file
            return value == {"status": 200, "body": "served from the sandbox"}
        return value["status"] == 200 and '"port": 8000' in value["body"] and '"path": "/index.html"' in value["body"]

    return {
        "create": lambda sid: isinstance(sid, str) and len(sid) == 36,
        "info": {
            "state": "Running",
            "metadata": {"suite": "clients"},
            "image": {"uri": "python:3.11"},
            "expires": True,
        },
        "healthy": True,
        "run_echo": {"stdout": "hello sandbox\n", "error": None},
        "run_env": "hello from env\n",
        "run_exit_code": {"stderr": "oops\n", "error": {"name": "CommandExecError", "value": "3"}},
        "run_handlers": "a\nb\n",
        "run_cwd_envs": "/tmp\nx1\n",
        "run_background": {"running": False, "exitCode": 0, "logs": "started\ndone\n"},
        "session": ["/tmp/sess", "kept"],
        "files_write": True,
        "files_read": "Hello World",
        "files_read_bytes": [0, 1, 2, 255],
        "files_read_by_command": "Hello World",
        "files_info": {"size": 11},
        "files_search": ["/tmp/demo/hello.txt"],
        "files_move_delete": {"moved": "Hello World", "left": []},
        "endpoint": lambda v: v["url"] == "http://" + v["endpoint"] and v["endpoint"].endswith("/8000"),
        "endpoint_fetch": served_page,
        "metrics": lambda v: v["cpuCount"] == 1 and v["memoryTotalMiB"] > 0,
        "egress_get": {"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]},
        "egress_patch": ["allow:pypi.org", "allow:www.github.com"],
        "credential_vault": {"revision": 1, "credentials": ["pypi-token"], "bindings": ["pypi-token"], "leaked": False},
        "renew": True,
        "patch_metadata": {"suite": "clients", "stage": "patched"},
        "manager_list": lambda ids: len(ids) == 1,
        "pause": "Paused",
        "resume": {"state": "Running", "stdout": "back\n"},
        "kill": True,
        "info_after_kill": {"error": "DOCKER::SANDBOX_NOT_FOUND"},
    }


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_typescript_opensandbox_sdk_flow(runtime: str, mocks: ServedMocks) -> None:
    node = node_or_skip(PACKAGE)
    served = mocks(runtime)
    key = f"ts-opensandbox-{runtime}"
    since = served.journal_seq("opensandbox")
    env = {**served.env(key), "NODE_PATH": str(NODE_MODULES)}
    lines = run_lines([str(node), str(JS / "opensandbox_flow.cjs")], env)
    print(judge(f"{PACKAGE} on {runtime}", lines, expected(runtime), GAPS.get(runtime, {})))
    assert served.route_misses("opensandbox", since) == []
    assert served.unknown_fields("opensandbox") == {}
