"""The ``osb`` CLI (opensandbox-cli) through a sandbox's lifecycle, in one process: one JSON line per step.

Run with the clients' venv (``.venv-clients/bin/python osb_flow.py``); the environment gives
``OPEN_SANDBOX_DOMAIN`` and ``OPEN_SANDBOX_API_KEY``. Each step invokes the CLI's own click entry point
(``opensandbox_cli.main:cli``) with the arguments a user types, and prints ``{"step", "ok", "value"}`` with
``value`` ``{"exit": status, "out": output}``, the output parsed when it is JSON; ``ok`` is false only when the CLI
raised an exception of its own (not an exit).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from opensandbox_cli.main import cli

RUNNER = CliRunner()
CONFIG = Path(tempfile.mkdtemp(prefix="osb-flow-")) / "config.toml"
BASE = ["--config", str(CONFIG), "--no-color", "--domain", os.environ["OPEN_SANDBOX_DOMAIN"]]
BASE += ["--api-key", os.environ["OPEN_SANDBOX_API_KEY"], "--protocol", "http"]
POLICY = CONFIG.with_name("policy.json")
VAULT = {
    "credentials": [{"name": "pypi-token", "source": {"value": "cli-secret"}}],
    "bindings": [
        {"name": "pypi-token", "match": {"hosts": ["pypi.org"]}, "auth": {"type": "bearer", "credential": "pypi-token"}}
    ],
}
POLICY.write_text(json.dumps({"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]}))


def osb(step: str, *args: str, stdin: str | None = None) -> Any:
    """Run ``osb ARGS`` and print the step's line; return the parsed output (None when it exited non-zero)."""
    result = RUNNER.invoke(cli, [*BASE, *args], input=stdin, catch_exceptions=True)
    out = result.output.strip()
    try:
        value: Any = json.loads(out)
    except ValueError:
        value = out
    crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
    line: dict[str, Any] = {"step": step, "ok": not crashed, "value": {"exit": result.exit_code, "out": value}}
    if crashed:
        line["error"] = repr(result.exception)
    print(json.dumps(line), flush=True)
    return value if result.exit_code == 0 else None


def main() -> int:
    """Drive the lifecycle; exit 0 (the steps' lines say what passed)."""
    created = osb(
        "create",
        "sandbox", "create", "-i", "python:3.11", "-t", "10m", "-e", "GREETING=cli",
        "--network-policy-file", str(POLICY), "--credential-proxy",
        "--metadata", "suite=clients-cli", "--ready-timeout", "20s", "-o", "json",
    )  # fmt: skip
    if not isinstance(created, dict) or "id" not in created:
        return 0
    sid = created["id"]
    osb("get", "sandbox", "get", sid, "-o", "json")
    osb("list", "sandbox", "list", "-o", "json")
    osb("health", "sandbox", "health", sid, "-o", "json")
    osb("run", "command", "run", sid, "-o", "raw", "--", "echo", "hello", "cli")
    osb("run_env", "command", "run", sid, "-o", "raw", "--", "sh", "-c", "echo hello $GREETING")
    osb("run_exit_code", "command", "run", sid, "-o", "raw", "--", "sh", "-c", "echo before; exit 5")
    osb("run_workdir", "command", "run", sid, "-w", "/tmp", "-o", "raw", "--", "pwd")
    osb("file_write", "file", "write", sid, "/tmp/cli/note.txt", "-c", "written by osb", "-o", "json")
    osb("file_cat", "file", "cat", sid, "/tmp/cli/note.txt")
    osb("file_info", "file", "info", sid, "/tmp/cli/note.txt", "-o", "json")
    osb("file_search", "file", "search", sid, "/tmp/cli", "-p", "*.txt", "-o", "json")
    osb("file_rm", "file", "rm", sid, "/tmp/cli/note.txt", "-o", "json")
    osb("endpoint", "sandbox", "endpoint", sid, "-p", "8000", "-o", "json")
    osb("metrics", "sandbox", "metrics", sid, "-o", "json")
    osb("renew", "sandbox", "renew", sid, "-t", "30m", "-o", "json")
    osb("egress_get", "egress", "get", sid, "-o", "json")
    osb("diagnostics_logs", "diagnostics", "logs", sid, "-s", "container", "-o", "json")
    osb("diagnostics_events", "diagnostics", "events", sid, "-s", "all", "-o", "json")
    osb("vault_create", "credential-vault", "create", sid, "--file", "-", "-o", "json", stdin=json.dumps(VAULT))
    osb("vault_get", "credential-vault", "get", sid, "-o", "json")
    osb("pause", "sandbox", "pause", sid, "-o", "json")
    osb("get_paused", "sandbox", "get", sid, "-o", "json")
    osb("resume", "sandbox", "resume", sid, "-o", "json")
    osb("run_after_resume", "command", "run", sid, "-o", "raw", "--", "echo", "back")
    osb("kill", "sandbox", "kill", sid, "-o", "json")
    osb("get_killed", "sandbox", "get", sid, "-o", "json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
