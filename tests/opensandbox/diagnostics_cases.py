"""What the real opensandbox-server 1.1.1 answers on ``/v1/sandboxes/{id}/diagnostics/*`` (Docker runtime).

Measured with httpx against the real server on the fake Docker Engine API. :func:`check_diagnostics` runs
against the real server (``tests/harness/differential/test_real_server.py``) and the mock
(``tests/opensandbox/routes/test_diagnostics.py``) alike. Values that name the container or a time are
matched by pattern; the real server's ``Ports`` section and its host-port labels have no counterpart on the
mock (it serves every sandbox port itself), so the check reads the sections both carry.
"""

from __future__ import annotations

import re
from typing import Any

import httpx

from .create_cases import BODY

#: The create body the diagnostics cases use: the SDK's defaults with an env (one secret-looking name) and metadata.
DIAGNOSED_BODY: dict[str, Any] = {**BODY, "env": {"FOO": "bar", "MY_TOKEN": "x"}, "metadata": {"team": "a"}}
DOCKER_TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z"
TEXT = "text/plain; charset=utf-8"
KINDS = ("logs", "events", "inspect", "summary")


def _head(status: str, running: bool, paused: bool) -> list[str]:
    """Return the patterns of inspect's first section for a live container."""
    return [
        r"Container ID:   [0-9a-f]{12}",
        r"Name:           sandbox-{id}",
        r"Image:          python:3\.11",
        rf"Status:         {status}",
        rf"Running:        {running}",
        rf"Paused:         {paused}",
        r"OOMKilled:      False",
        r"Exit Code:      0",
        rf"Started At:     {DOCKER_TIME}",
        r"Finished At:    0001-01-01T00:00:00Z",
    ]


def _sections(text: str) -> dict[str, list[str]]:
    """Split inspect text on blank lines: the first section under ``""``, the others under their heading."""
    out: dict[str, list[str]] = {}
    for i, block in enumerate(text.split("\n\n")):
        lines = block.split("\n")
        out["" if i == 0 else lines[0]] = lines if i == 0 else lines[1:]
    return out


def _matches(patterns: list[str], lines: list[str], sandbox_id: str) -> None:
    assert len(lines) == len(patterns), lines
    for pattern, line in zip(patterns, lines, strict=True):
        assert re.fullmatch(pattern.replace("{id}", re.escape(sandbox_id)), line), (pattern, line)


def check_inspect(client: httpx.Client, sandbox_id: str, *, status: str, running: bool, paused: bool) -> None:
    """Inspect is text (no ``Deprecation`` header): the container's state, limits, labels and masked env."""
    resp = client.get(f"/v1/sandboxes/{sandbox_id}/diagnostics/inspect")
    assert (resp.status_code, resp.headers["content-type"], resp.headers.get("deprecation")) == (200, TEXT, None)
    sections = _sections(resp.text)
    _matches(_head(status, running, paused), sections[""], sandbox_id)
    assert sections["Resources:"] == ["  CPU:          1.00 cores", "  Memory:       2048 MiB", "  PIDs Limit:   4096"]
    assert sections["Network:"] == ["  bridge: 127.0.0.1"]
    labels = sections["Labels:"]
    assert {f"  opensandbox.io/id={sandbox_id}", "  team=a"} <= set(labels) and labels == sorted(labels)
    assert any(re.fullmatch(r"  opensandbox\.io/expires-at=\S+\+00:00", line) for line in labels)
    assert sections["Environment:"] == ["  FOO=bar", "  MY_TOKEN=***", f"  OPENSANDBOX_ID={sandbox_id}"]


def check_events(client: httpx.Client, sandbox_id: str, *, status: str) -> None:
    """Events without a scope: the deprecated text, the Docker runtime's container summary."""
    resp = client.get(f"/v1/sandboxes/{sandbox_id}/diagnostics/events")
    assert (resp.status_code, resp.headers["content-type"], resp.headers.get("deprecation")) == (200, TEXT, "true")
    patterns = [
        r"Container:  [0-9a-f]{12} \(sandbox-{id}\)",
        rf"Status:     {status}",
        rf"Created:    {DOCKER_TIME}",
        rf"Started:    {DOCKER_TIME}",
    ]
    _matches(patterns, resp.text.split("\n"), sandbox_id)


def check_diagnostics(client: httpx.Client, sandbox_id: str) -> None:
    """Run every diagnostics case on a Running sandbox made from :data:`DIAGNOSED_BODY`; pause it at the end."""
    base = f"/v1/sandboxes/{sandbox_id}/diagnostics"
    check_inspect(client, sandbox_id, status="running", running=True, paused=False)
    check_events(client, sandbox_id, status="running")
    logs = client.get(f"{base}/logs")
    assert (logs.status_code, logs.text, logs.headers.get("deprecation")) == (200, "(no logs)", "true")
    stable = client.get(f"{base}/logs", params={"scope": "all"})
    assert stable.json() == {
        "sandboxId": sandbox_id,
        "kind": "logs",
        "scope": "all",
        "delivery": "inline",
        "contentType": TEXT,
        "content": "(no logs)",
        "contentLength": 9,
        "truncated": False,
        "warnings": ["The current backend only contributes sandbox container logs to the all scope."],
    }
    runtime = client.get(f"{base}/events", params={"scope": " Runtime"}).json()
    assert (runtime["scope"], "warnings" in runtime, runtime["content"]) == (
        "runtime",
        False,
        client.get(f"{base}/events").text,
    )
    assert runtime["contentLength"] == len(runtime["content"].encode())
    bad = client.get(f"{base}/events", params={"scope": "x"})
    assert (bad.status_code, bad.json()) == (
        400,
        {
            "code": "DIAGNOSTICS_SCOPE_UNSUPPORTED",
            "message": "Unsupported events diagnostics scope 'x'. Supported scopes: runtime, all.",
        },
    )
    summary = client.get(f"{base}/summary").text
    headings = [line for line in summary.split("\n") if line in ("INSPECT", "EVENTS", "LOGS (last 50 lines)")]
    assert headings == ["INSPECT", "EVENTS", "LOGS (last 50 lines)"] and summary.endswith("(no logs)\n")
    assert summary.startswith("=" * 72 + "\nSANDBOX DIAGNOSTICS SUMMARY\n" + f"Sandbox ID: {sandbox_id}\n")
    head = client.head(f"{base}/inspect")
    assert (head.status_code, head.headers["allow"]) == (405, "GET")
    assert client.post(f"/v1/sandboxes/{sandbox_id}/pause").status_code == 202
    check_inspect(client, sandbox_id, status="paused", running=True, paused=True)
    check_events(client, sandbox_id, status="paused")


def check_refusals(client: httpx.Client) -> None:
    """Query checks first (422), then the scope (400), then the sandbox (404 ``DOCKER::SANDBOX_NOT_FOUND``)."""
    tail = client.get("/v1/sandboxes/nope/diagnostics/logs", params={"tail": "0", "scope": "bogus"})
    assert (tail.status_code, tail.json()["detail"][0]["type"]) == (422, "greater_than_equal")
    limit = client.get("/v1/sandboxes/nope/diagnostics/summary", params={"event_limit": "501"})
    assert (limit.status_code, limit.json()["detail"][0]["loc"]) == (422, ["query", "event_limit"])
    scope = client.get("/v1/sandboxes/nope/diagnostics/logs", params={"scope": "bogus"})
    assert (scope.status_code, scope.json()["code"]) == (400, "DIAGNOSTICS_SCOPE_UNSUPPORTED")
    for kind in KINDS:
        for prefix in ("/v1", ""):
            resp = client.get(f"{prefix}/sandboxes/nope/diagnostics/{kind}")
            assert (resp.status_code, resp.json()) == (
                404,
                {"code": "DOCKER::SANDBOX_NOT_FOUND", "message": "Sandbox nope not found."},
            ), (prefix, kind)
