"""A short run of the crash test (``bench/crash.py``): SIGKILL ``sandproof serve`` under load, restart, audit."""

from __future__ import annotations

from pathlib import Path

from tests.serving import bench_module as _bench


def test_killed_servers_lose_no_acknowledged_write_and_invent_none(tmp_path: Path) -> None:
    crash = _bench("crash")
    found = crash.run(3, 3, tmp_path / "state.db", min_load=0.3, max_load=0.6, seed=7)
    assert found["acknowledged"] > 0, "the load never got an answer: nothing was tested"
    assert (found["lost"], found["phantom"]) == (0, 0), found["examples"]
    assert found["stray_files"] == []


def test_the_audit_catches_a_server_that_forgets(tmp_path: Path) -> None:
    crash = _bench("crash")
    ledger = crash.Ledger()
    ledger.add(crash.Op("tl-create", "tl-forgotten", outcome=crash.ACKED))
    ledger.add(crash.Op("dns", "h-invented.crash.test", outcome=crash.REFUSED))
    support = _bench("support")
    with support.start_serve(["--api-key", support.API_KEY]) as served:
        import httpx

        httpx.post(served.url("opensandbox") + "/_mock/dns", json={"h-invented.crash.test": ["10.0.0.1"]})
        found = crash.audit(ledger, served)
    assert [line.split(":")[0] for line in found.lost] == ["tensorlake tl-forgotten"]
    assert [line.split(":")[0] for line in found.phantom] == ["dns h-invented.crash.test"]
