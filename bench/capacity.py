"""How many sandboxes ``sandproof serve --runtime linux`` holds, and what it answers past that.

Starts the server (its own process: ``--max-sandboxes``, an open-files limit, other ``serve`` options as
given), then creates TensorLake sandboxes one after another, each running ``sleep 600`` (so each is a
real sandbox), until a create is refused or ``--count`` is reached. Every ``--probe-every`` sandboxes, and
after the refusal, the server must still answer ``/_mock/clock`` on both ports and an OpenSandbox create
must get the same verdict. Prints the figures (sandboxes held, the refusal's status and body, the server's
open files and memory per sandbox, the create time) and deletes every sandbox it made before it stops the
server. It never leaves sandboxes behind: ``sleep 600`` ends with the server in any case.

    python bench/capacity.py                          # the default cap (docs/runtime.md, "Capacity")
    python bench/capacity.py --max-sandboxes 3        # a small cap
    python bench/capacity.py --nofile 256 --max-sandboxes 1000   # the fd limit decides
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from support import API_KEY, Served, emit, start_serve

TENSORLAKE_CAPACITY = (422, "no_capacity")
OPENSANDBOX_CAPACITY = (429, "KUBERNETES::POOL_CAPACITY_EXHAUSTED")
OPENSANDBOX_BODY: dict[str, Any] = {
    "image": {"uri": "python:3.11"},
    "entrypoint": ["sleep", "600"],
    "timeout": 600,
    "resourceLimits": {"cpu": "1", "memory": "512Mi"},
}


@dataclass
class Found:
    """What a fill found."""

    held: int = 0
    refusal: tuple[int, dict[str, Any]] | None = None
    opensandbox_refusal: tuple[int, dict[str, Any]] | None = None
    probes: int = 0
    probe_failures: list[str] = field(default_factory=list)
    server_alive: bool = True
    fds_before: int = 0
    fds_after: int = 0
    rss_before_kb: int = 0
    rss_after_kb: int = 0
    available_drop_kb: int = 0
    seconds: float = 0.0

    def figures(self) -> dict[str, Any]:
        """Return the headline figures."""
        per = max(1, self.held)
        return {
            "held": self.held,
            "refused_status": self.refusal[0] if self.refusal else None,
            "fds_per_sandbox": round((self.fds_after - self.fds_before) / per, 2),
            "server_rss_kb_per_sandbox": round((self.rss_after_kb - self.rss_before_kb) / per),
            "machine_kb_per_sandbox": round(self.available_drop_kb / per),
            "create_ms": round(self.seconds / per * 1000, 1),
            "probe_failures": len(self.probe_failures),
        }


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _available_kb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1])
    return 0


def _probe(served: Served, found: Found) -> None:
    found.probes += 1
    for name in ("tensorlake", "opensandbox"):
        try:
            status = httpx.get(served.url(name) + "/_mock/clock", timeout=5, trust_env=False).status_code
        except httpx.HTTPError as exc:
            found.probe_failures.append(f"{name}: {exc!r}")
            continue
        if status != 200:
            found.probe_failures.append(f"{name}: /_mock/clock answered {status}")


def fill(served: Served, count: int, *, probe_every: int = 50, made: list[str] | None = None) -> Found:
    """Create sandboxes running ``sleep 600`` until one is refused or ``count`` are held; ids go into ``made``."""
    made = made if made is not None else []
    found = Found()
    pid = served.proc.pid
    found.fds_before, found.rss_before_kb, available = _fds(pid), _rss_kb(pid), _available_kb()
    headers = {"authorization": f"Bearer {API_KEY}"}
    started = time.monotonic()
    with httpx.Client(base_url=served.url("tensorlake"), headers=headers, timeout=60, trust_env=False) as http:
        while found.held < count:
            answer = http.post("/sandboxes", json={})
            if answer.status_code != 200:
                found.refusal = (answer.status_code, answer.json())
                break
            ident = answer.json()["sandbox_id"]
            made.append(ident)
            started_sleep = http.post(
                "/api/v1/processes",
                json={"command": "sleep", "args": ["600"]},
                headers={"host": f"{ident}.sandbox.localhost"},
            )
            if started_sleep.status_code >= 300:
                raise RuntimeError(f"sleep did not start in {ident}: {started_sleep.status_code} {started_sleep.text}")
            found.held += 1
            if probe_every and found.held % probe_every == 0:
                _probe(served, found)
    found.seconds = time.monotonic() - started
    found.fds_after, found.rss_after_kb = _fds(pid), _rss_kb(pid)
    found.available_drop_kb = max(0, available - _available_kb())
    _probe(served, found)
    keyed = {"open-sandbox-api-key": API_KEY}
    with httpx.Client(base_url=served.url("opensandbox"), headers=keyed, timeout=60, trust_env=False) as http:
        answer = http.post("/v1/sandboxes", json=OPENSANDBOX_BODY)
        if answer.status_code == 202:
            http.delete(f"/v1/sandboxes/{answer.json()['id']}")
        else:
            found.opensandbox_refusal = (answer.status_code, answer.json())
    found.server_alive = served.proc.poll() is None
    return found


def clean(served: Served, made: list[str]) -> None:
    """Delete every sandbox in ``made`` (the server destroys their processes, namespaces and files)."""
    if served.proc.poll() is not None:
        return
    headers = {"authorization": f"Bearer {API_KEY}"}
    with httpx.Client(base_url=served.url("tensorlake"), headers=headers, timeout=60, trust_env=False) as http:
        for ident in made:
            http.delete(f"/sandboxes/{ident}")


def run(count: int, extra: list[str], *, nofile: int | None = None, probe_every: int = 50) -> Found:
    """Start a linux server with ``extra`` options, fill it, clean up, stop it; return what was found."""
    served = start_serve(["--runtime", "linux", "--api-key", API_KEY, *extra], timeout=60, nofile=nofile)
    made: list[str] = []
    try:
        return fill(served, count, probe_every=probe_every, made=made)
    finally:
        clean(served, made)
        served.stop()


def main(argv: list[str] | None = None) -> int:
    """Run one fill and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000, help="stop after this many sandboxes (default 5000)")
    parser.add_argument("--max-sandboxes", type=int, default=None, help="serve's --max-sandboxes")
    parser.add_argument("--nofile", type=int, default=None, help="the server's open-files limit")
    parser.add_argument("--probe-every", type=int, default=50, help="check the server answers every N sandboxes")
    args = parser.parse_args(argv)
    extra = [] if args.max_sandboxes is None else ["--max-sandboxes", str(args.max_sandboxes)]
    found = run(args.count, extra, nofile=args.nofile, probe_every=args.probe_every)
    print(f"held {found.held} sandboxes running sleep 600 in {found.seconds:.1f} s")
    print(f"refused: {found.refusal}")
    print(f"opensandbox create then: {found.opensandbox_refusal}")
    print(f"server alive: {found.server_alive}; probe failures: {found.probe_failures or 'none'}")
    print(
        f"server fds {found.fds_before} -> {found.fds_after}, RSS {found.rss_before_kb} -> {found.rss_after_kb} kB, "
        f"machine memory used {found.available_drop_kb} kB"
    )
    emit("capacity", found.figures())
    return 0 if found.server_alive and not found.probe_failures else 1


if __name__ == "__main__":
    raise SystemExit(main())
