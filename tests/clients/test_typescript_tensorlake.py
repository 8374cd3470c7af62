"""The TypeScript TensorLake SDK (``tensorlake``, npm; Node >= 22) through a full flow against ``sandproof serve``.

One node process per runtime runs ``js/tensorlake_flow.cjs``: create a named sandbox, run commands, files (text,
binary, list, delete, a missing one), processes (start, wait, output, list, kill, follow, stdin), a PTY, exposed
ports, a TCP tunnel, list, suspend and resume, terminate. Every step's answer is checked; no request may miss every
route of the mock, and the SDK may send no field the mock does not know.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.clients.flows import JS, NODE_MODULES, RUNTIMES, ServedMocks, judge, node_or_skip, run_lines

pytestmark = pytest.mark.clients

PACKAGE = "tensorlake"
#: Steps that fail on a runtime for a reason being fixed elsewhere (each must still fail there).
GAPS: dict[str, dict[str, str]] = {}


def expected(runtime: str) -> dict[str, Any]:
    """Return each step's expected answer on ``runtime``."""
    linux = runtime == "linux"
    return {
        "create": lambda sid: isinstance(sid, str) and len(sid) > 0,
        "info": lambda v: (
            v["status"] == "running"
            and v["name"].startswith("clients-flow-")
            and (v["cpus"], v["memoryMb"], v["timeoutSecs"]) == (1, 1024, 600)
        ),
        "health": True,
        "run": {"exitCode": 0, "stdout": "hello tensorlake", "stderr": ""},
        "run_shell_exit_code": {"exitCode": 4, "stdout": "out", "stderr": "err"},
        "run_env_cwd": "/tmp\nf1",
        "files_write_read": "hello file",
        "files_binary": [0, 1, 2, 255],
        "files_by_command": "hello file",
        "files_list": [
            {"name": "data.bin", "isDir": False, "size": 4},
            {"name": "hello.txt", "isDir": False, "size": 10},
        ],
        "files_delete": ["hello.txt"],
        "files_read_missing": "RemoteAPIError",
        "process_start": {"pid": "number", "command": "sh"},
        "process_wait": {"status": "exited", "exitCode": 2},
        "process_output": {"stdout": ["line1", "line2"], "stderr": ["oops"]},
        "process_list": True,
        "process_kill": {"status": "signaled", "signal": 9, "exitCode": None},
        "process_follow": ["f1", "f2"],
        "process_stdin": {"status": "exited", "stdout": ["fed through stdin"]},
        # A real PTY on linux; the emulator refuses PTY sessions with 501 not_supported (docs/emulator.md).
        "pty": {"exitCode": 7, "saw": True} if linux else {"refused": 501, "code": "not_supported"},
        "expose_ports": [8080],
        # The emulator has no ports: its tunnel WebSocket is refused with an HTTP 501 (docs/emulator.md).
        "tunnel": {"status": 200, "body": "through the tunnel"} if linux else {"refused": 501},
        "list": True,
        "suspend": "suspended",
        "resume": {"status": "running", "stdout": "hello file"},
        "terminate": True,
        "get_after_terminate": {"error": "SandboxNotFoundError"},
    }


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_typescript_tensorlake_sdk_flow(runtime: str, mocks: ServedMocks) -> None:
    node = node_or_skip(PACKAGE)
    served = mocks(runtime)
    since = served.journal_seq("tensorlake")
    env = {**served.env(f"ts-tensorlake-{runtime}"), "NODE_PATH": str(NODE_MODULES)}
    lines = run_lines([str(node), str(JS / "tensorlake_flow.cjs")], env)
    print(judge(f"{PACKAGE} (TypeScript) on {runtime}", lines, expected(runtime), GAPS.get(runtime, {})))
    assert served.route_misses("tensorlake", since) == []
    assert served.unknown_fields("tensorlake") == {}
