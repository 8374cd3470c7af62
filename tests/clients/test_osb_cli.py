"""The ``osb`` CLI (``opensandbox-cli`` 1.1.1, in ``.venv-clients``) through a sandbox's lifecycle against ``sandproof serve``.

One process per runtime (``drivers/osb_flow.py``) invokes the CLI's own entry point once per command a user types:
create (with a policy file and the credential proxy), get, list, health, command run (output, env, exit code,
workdir), file write/cat/info/search/rm, endpoint, metrics, renew, egress, diagnostics logs and events, credential
vault create and get, pause, resume, kill. Every command's exit status and output are checked, and none of its
requests may miss every route of the mock.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.clients.flows import RUNTIMES, ServedMocks, clients_python_or_skip, judge, run_lines

pytestmark = pytest.mark.clients

DRIVER = Path(__file__).resolve().parent / "drivers" / "osb_flow.py"


def ok(check: Any) -> Any:
    """Expect exit status 0 and an output ``check`` accepts (a function) or equals."""

    def judge_output(value: dict[str, Any]) -> bool:
        if value["exit"] != 0:
            return False
        out = value["out"]
        return bool(check(out)) if callable(check) else out == check

    return judge_output


def fails(*parts: str) -> Any:
    """Expect a non-zero exit whose output holds every one of ``parts``."""
    return lambda value: value["exit"] != 0 and all(p in str(value["out"]) for p in parts)


def expected(runtime: str) -> dict[str, Any]:
    """Return each command's expected exit status and output on ``runtime``."""
    vault = {"revision": 1, "credentials": [{"name": "pypi-token", "source_type": "inline", "revision": 1}]}
    return {
        "create": ok(lambda out: out["status"] == "created" and out["image"] == "python:3.11" and len(out["id"]) == 36),
        "get": ok(lambda out: out["status"]["state"] == "Running" and out["metadata"] == {"suite": "clients-cli"}),
        "list": ok(lambda out: [item["metadata"] for item in out["items"]] == [{"suite": "clients-cli"}]),
        "health": ok(lambda out: out["healthy"] is True),
        "run": ok("hello cli"),
        "run_env": ok("hello cli"),
        "run_exit_code": fails("before", "CommandExecError: 5"),
        "run_workdir": ok("/tmp"),
        "file_write": ok({"status": "ok", "message": "Written: /tmp/cli/note.txt"}),
        "file_cat": ok("written by osb"),
        "file_info": ok(
            lambda out: [(e["path"], e["entry_type"], e["size"]) for e in out] == [("/tmp/cli/note.txt", "file", 14)]
        ),
        "file_search": ok(lambda out: [e["path"] for e in out] == ["/tmp/cli/note.txt"]),
        "file_rm": ok([{"path": "/tmp/cli/note.txt", "status": "deleted"}]),
        "endpoint": ok(lambda out: out["endpoint"].endswith("/8000") and "OpenSandbox-Secure-Access" in out["headers"]),
        "metrics": ok(lambda out: out["cpu_count"] == 1.0 and out["memory_total_in_mib"] > 0),
        "renew": ok(lambda out: out["expires_at"] is not None),
        "egress_get": ok({"default_action": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]}),
        "diagnostics_logs": ok(lambda out: out["kind"] == "logs" and out["delivery"] == "inline" and out["content"]),
        "diagnostics_events": ok(lambda out: out["kind"] == "events" and "Status:     running" in out["content"]),
        "vault_create": ok(lambda out: {k: out[k] for k in vault} == vault and "cli-secret" not in str(out)),
        "vault_get": ok(lambda out: {k: out[k] for k in vault} == vault and out["bindings"][0]["name"] == "pypi-token"),
        "pause": ok(lambda out: out["status"] == "ok"),
        "get_paused": ok(lambda out: out["status"]["state"] == "Paused"),
        "resume": ok(lambda out: out["status"] == "ok"),
        "run_after_resume": ok("back"),
        "kill": ok(lambda out: [e["status"] for e in out] == ["terminated"]),
        "get_killed": fails("DOCKER::SANDBOX_NOT_FOUND"),
    }


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_osb_cli_lifecycle(runtime: str, mocks: ServedMocks) -> None:
    python = clients_python_or_skip("opensandbox_cli")
    served = mocks(runtime)
    since = served.journal_seq("opensandbox")
    lines = run_lines([str(python), str(DRIVER)], served.env(f"osb-cli-{runtime}"))
    print(judge(f"osb CLI on {runtime}", lines, expected(runtime)))
    assert served.route_misses("opensandbox", since) == []
